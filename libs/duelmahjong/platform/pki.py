"""A local certificate authority: what ``make run`` and the tests use to serve everything over TLS.

One CA (an ECDSA P-256 key and a self-signed certificate) lives in a directory; it issues leaf
certificates for the names and addresses a server answers at. Nothing here is for production, where
cert-manager (or the operator's own CA) issues the certificates (docs/operations.md "Exposing the
stack"); the services read certificate files either way and never know who issued them.

A CA already in the directory is reused, so clients that trusted it keep trusting what it issues
next; a leaf is issued again on every call (cheap, and a fresh one is what a renewal looks like).

>>> import tempfile
>>> from pathlib import Path
>>> authority = LocalAuthority.open(Path(tempfile.mkdtemp()))
>>> leaf = authority.issue("wallet", ["localhost", "127.0.0.1"])
>>> leaf.cert.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
True
>>> LocalAuthority.open(authority.directory).ca_cert.read_bytes() == authority.ca_cert.read_bytes()
True
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.pem"
CA_KEY = "ca-key.pem"
CA_LIFETIME = datetime.timedelta(days=3650)
LEAF_LIFETIME = datetime.timedelta(days=90)  # what cert-manager issues by default: renewals are routine
# Backdated so a leaf is valid at once on a machine whose clock is a little behind the issuer's.
CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class Leaf:
    """A certificate (PEM, with the CA's after it: the chain a server presents) and its key."""

    cert: Path
    key: Path


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` readable by this user only (a key), replacing the file in one rename."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def _write_public(path: Path, data: bytes) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)  # a reader (a server reloading) never sees half a certificate


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _names(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


class LocalAuthority:
    """The CA in ``directory`` (``ca.pem``, ``ca-key.pem``)."""

    def __init__(self, directory: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        self.directory = directory
        self._key = key
        self._cert = cert

    @property
    def ca_cert(self) -> Path:
        """The CA certificate: the bundle clients trust."""
        return self.directory / CA_CERT

    @classmethod
    def open(cls, directory: Path, *, name: str = "duelmahjong local CA") -> LocalAuthority:
        """The CA in ``directory``, created there first if there is none (or it has expired)."""
        directory.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = directory / CA_CERT, directory / CA_KEY
        now = datetime.datetime.now(datetime.UTC)
        if cert_path.exists() and key_path.exists():
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
            if isinstance(key, ec.EllipticCurvePrivateKey) and cert.not_valid_after_utc > now + LEAF_LIFETIME:
                return cls(directory, key, cert)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + CA_LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _write_private(key_path, _key_pem(key))
        _write_public(cert_path, cert.public_bytes(serialization.Encoding.PEM))
        return cls(directory, key, cert)

    def issue(
        self,
        name: str,
        hosts: Sequence[str],
        *,
        lifetime: datetime.timedelta = LEAF_LIFETIME,
        directory: Path | None = None,
    ) -> Leaf:
        """A leaf for ``hosts`` (DNS names and IP addresses), good for serving and for presenting as a
        client, written as ``<name>.pem`` (the chain) and ``<name>-key.pem`` in ``directory`` (the
        CA's by default)."""
        if not hosts:
            raise ValueError("a certificate needs at least one host name or address")
        where = directory or self.directory
        where.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + lifetime)
            .add_extension(x509.SubjectAlternativeName(_names(hosts)), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        leaf = Leaf(where / f"{name}.pem", where / f"{name}-key.pem")
        # the key first: a server reloading on the certificate's change finds the matching key
        _write_private(leaf.key, _key_pem(key))
        pem = serialization.Encoding.PEM
        chain = cert.public_bytes(pem) + self._cert.public_bytes(pem)
        _write_public(leaf.cert, chain)
        return leaf


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m duelmahjong.platform.pki DIR NAME...``: the CA in DIR (made if missing) and a
    certificate for each NAME (``wallet``, or ``wallet=wallet,wallet.internal``: the names it is good
    for), each also good for ``localhost`` and ``127.0.0.1`` (published ports, health probes).
    ``--readable`` makes the keys readable by every user: for containers whose user is not this one
    (deploy/compose mounts DIR), never for anything but a throwaway local topology."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m duelmahjong.platform.pki", description=main.__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("names", nargs="+", metavar="NAME[=HOST,HOST]")
    parser.add_argument("--readable", action="store_true", help="keys readable by every user (containers)")
    args = parser.parse_args(argv)
    authority = LocalAuthority.open(args.directory)
    for spec in args.names:
        name, _, hosts = spec.partition("=")
        leaf = authority.issue(name, [*(hosts.split(",") if hosts else [name]), "localhost", "127.0.0.1"])
        if args.readable:
            leaf.key.chmod(0o644)
        print(f"{leaf.cert} {leaf.key}")
    print(f"CA: {authority.ca_cert}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
