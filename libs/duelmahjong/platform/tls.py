"""TLS for every gRPC connection: the server's reloading certificate, and the one way clients dial.

Servers (:func:`server_credentials`) serve the certificate chain and key of ``TLS_CERT_FILE`` /
``TLS_KEY_FILE``. The files are watched: when cert-manager (or ``make run``'s local CA) writes new
ones in place, the next connection's handshake presents the new certificate, while connections open
already keep theirs. No restart, no dropped stream.

Clients (:class:`ClientTls`) verify the server against ``TLS_CA_FILE`` (a PEM bundle), or the
system's trust store when none is given, and check the server's name against the target they dial
(``127.0.0.1:7001`` needs a certificate naming 127.0.0.1). ``GRPC_PLAINTEXT=true`` turns TLS off on
both sides: development only, and a service logs a warning at start when it is on.

>>> ClientTls(plaintext=True).describe()
'plaintext (GRPC_PLAINTEXT=true)'
>>> ClientTls().describe()
'TLS, verified with the system trust store'
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from duelmahjong.platform.logging import get_logger

ChannelOptions = Sequence[tuple[str, Any]]

# How often a server looks at its certificate files again (the fetcher runs on every handshake, and a
# burst of thousands of reconnecting seats should not mean thousands of stat calls).
RELOAD_CHECK_SECONDS = 1.0
PLAINTEXT_WARNING = (
    "GRPC_PLAINTEXT=true: gRPC is served without TLS; tokens cross the network in clear "
    "(development only, never in production)"
)

_log = get_logger("tls")


class TlsError(ValueError):
    """Certificate files that cannot be served or trusted: missing, unreadable, or not a pair."""


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise TlsError(f"cannot read {what} {path}: {err.strerror or err}") from None
    if not data.strip():
        raise TlsError(f"{what} {path} is empty")
    return data


def load_pair(cert_file: Path, key_file: Path) -> tuple[bytes, bytes]:
    """The PEM chain and key of ``cert_file`` / ``key_file``, checked to belong together (a half-written
    renewal, a key from another certificate) before they are served."""
    chain, key_pem = _read(cert_file, "certificate"), _read(key_file, "private key")
    try:
        leaf = x509.load_pem_x509_certificate(chain)
    except ValueError as err:
        raise TlsError(f"{cert_file} is not a PEM certificate: {err}") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as err:
        raise TlsError(f"{key_file} is not an unencrypted PEM private key: {err}") from None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if leaf.public_key().public_bytes(der, spki) != key.public_key().public_bytes(der, spki):
        raise TlsError(f"{key_file} is not the key of the certificate in {cert_file}")
    return chain, key_pem


def subject_names(chain: bytes) -> tuple[str, ...]:
    """The DNS names and addresses the first certificate of ``chain`` is good for."""
    leaf = x509.load_pem_x509_certificate(chain)
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    dns = names.get_values_for_type(x509.DNSName)
    addresses = [str(address) for address in names.get_values_for_type(x509.IPAddress)]
    return (*dns, *addresses)


def _stamp(*paths: Path) -> tuple[tuple[int, int, int], ...]:
    """What changes when a file is written again or replaced (a Secret volume swaps a symlink)."""
    stamps = []
    for path in paths:
        st = os.stat(path)
        stamps.append((st.st_mtime_ns, st.st_ino, st.st_size))
    return tuple(stamps)


class ReloadingCertificate:
    """The server certificate of ``cert_file`` / ``key_file``, read again when either file changes.

    grpc calls :meth:`fetch` before each handshake; it answers ``None`` (keep what you have) unless the
    files changed since the last look, and it looks at most every ``check_seconds``. A change that does
    not make a valid pair yet (the certificate written, its key not) is logged and retried at the next
    look; the certificate served so far stays in use meanwhile.
    """

    def __init__(
        self, cert_file: Path, key_file: Path, *, check_seconds: float = RELOAD_CHECK_SECONDS
    ) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self._check_seconds = check_seconds
        self._lock = threading.Lock()  # grpc may call fetch from several of its threads
        self._stamp = _stamp(cert_file, key_file)
        chain, key = load_pair(cert_file, key_file)
        self.names = subject_names(chain)
        self.initial = grpc.ssl_server_certificate_configuration([(key, chain)])
        self._next_check = time.monotonic() + check_seconds
        self.reloads = 0

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        now = time.monotonic()
        if now < self._next_check:
            return None
        with self._lock:
            if now < self._next_check:
                return None
            self._next_check = now + self._check_seconds
            try:
                stamp = _stamp(self.cert_file, self.key_file)
                if stamp == self._stamp:
                    return None
                chain, key = load_pair(self.cert_file, self.key_file)
            except (OSError, TlsError) as err:
                _log.warning(
                    "certificate files changed but cannot be served yet; keeping the current one",
                    extra={"fields": {"error": str(err)}},
                )
                return None
            self._stamp = stamp
            self.reloads += 1
        _log.info("certificate reloaded", extra={"fields": {"cert_file": str(self.cert_file)}})
        return grpc.ssl_server_certificate_configuration([(key, chain)])


def server_credentials(
    cert_file: Path, key_file: Path
) -> tuple[grpc.ServerCredentials, ReloadingCertificate]:
    """Credentials a gRPC server serves TLS with, reloading the files when they change; the watcher is
    returned too (its ``reloads`` count is what a test or a metric reads)."""
    watcher = ReloadingCertificate(cert_file, key_file)
    credentials = grpc.dynamic_ssl_server_credentials(
        watcher.initial,
        watcher.fetch,  # type: ignore[arg-type]  # grpc documents None as "keep the current one"; its stub omits it
        require_client_authentication=False,
    )
    return credentials, watcher


@dataclass(frozen=True)
class ClientTls:
    """How a client dials gRPC servers: verified TLS (``ca_file``, or the system trust store when
    None), or plaintext in development. Every channel of the project comes from :meth:`channel` or
    :meth:`blocking_channel`.

    ``server_name`` overrides the name the server's certificate must carry, for a target whose
    address is not that name (an ``ipv4:`` list of replicas, or a tunnel).
    """

    ca_file: Path | None = None
    plaintext: bool = False
    server_name: str = ""
    # The credentials, and the CA file's stamp they were read at: read again when the bundle changes.
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_settings(cls, ca_file: str | Path | None, plaintext: bool) -> ClientTls:
        """From the ``TLS_CA_FILE`` and ``GRPC_PLAINTEXT`` settings (an empty CA file = the system's)."""
        path = Path(ca_file) if ca_file not in (None, "", Path("")) else None
        return cls(ca_file=path, plaintext=plaintext)

    def describe(self) -> str:
        if self.plaintext:
            return "plaintext (GRPC_PLAINTEXT=true)"
        return f"TLS, verified with {self.ca_file or 'the system trust store'}"

    def credentials(self) -> grpc.ChannelCredentials:
        """The channel credentials: the CA bundle read again when it changed (a CA rotated in place
        reaches the next channel, as a server's renewed certificate reaches its next connection)."""
        if self.plaintext:
            raise TlsError("plaintext clients have no channel credentials")
        try:
            stamp = _stamp(self.ca_file) if self.ca_file is not None else ()
        except OSError as err:
            raise TlsError(f"cannot read CA bundle {self.ca_file}: {err.strerror or err}") from None
        if self._cache.get("stamp") != stamp or "credentials" not in self._cache:
            roots = _read(self.ca_file, "CA bundle") if self.ca_file is not None else None
            self._cache.update(stamp=stamp, credentials=grpc.ssl_channel_credentials(root_certificates=roots))
        credentials: grpc.ChannelCredentials = self._cache["credentials"]
        return credentials

    def _options(self, target: str, options: ChannelOptions) -> list[tuple[str, Any]]:
        merged = list(options)
        if self.plaintext:
            return merged
        name = self.server_name or list_server_name(target)
        if name:
            merged.append(("grpc.ssl_target_name_override", name))
        return merged

    def channel(self, target: str, options: ChannelOptions = ()) -> grpc.aio.Channel:
        """A ``grpc.aio`` channel to ``target``."""
        if self.plaintext:
            return grpc.aio.insecure_channel(target, options=self._options(target, options))
        return grpc.aio.secure_channel(target, self.credentials(), options=self._options(target, options))

    def blocking_channel(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        """A synchronous channel to ``target`` (health probes, one-shot commands)."""
        if self.plaintext:
            return grpc.insecure_channel(target, options=self._options(target, options))
        return grpc.secure_channel(target, self.credentials(), options=self._options(target, options))


def list_server_name(target: str) -> str:
    """The name a server of an ``ipv4:``/``ipv6:`` address list must prove: grpc would check the whole
    list's text, which no certificate names, so the host they all share is checked instead. Several
    hosts have no one name: such a target needs ``ClientTls.server_name``. "" for any other target
    (grpc checks the target's own host).

    >>> list_server_name("ipv4:127.0.0.1:7001,127.0.0.1:7002")
    '127.0.0.1'
    >>> list_server_name("127.0.0.1:7001")
    ''
    """
    scheme, _, rest = target.partition(":")
    if scheme not in ("ipv4", "ipv6") or not rest:
        return ""
    hosts = {address.rpartition(":")[0].strip("[]") for address in rest.split(",")}
    if len(hosts) != 1:
        raise TlsError(
            f"{target}: its addresses have no one host name to verify; give the name their "
            "certificates carry (ClientTls.server_name)"
        )
    return hosts.pop()


def plaintext_requested(environ: Mapping[str, str]) -> bool:
    """Whether ``GRPC_PLAINTEXT`` is true in ``environ``: for the tools that read it without a service
    config (``make run``, ``duel`` commands, the container probe), read as the config reads it."""
    return environ.get("GRPC_PLAINTEXT", "").strip().lower() in {"1", "true", "yes", "on"}


def warn_if_plaintext(plaintext: bool) -> None:
    """The warning a service logs at start when it serves and dials without TLS."""
    if plaintext:
        _log.warning(PLAINTEXT_WARNING)
