"""Who may do what on NATS: an identity (a user nkey) per service, and what each may publish and
subscribe, derived from what the service produces and consumes.

Every service says what it does on the bus in a :class:`BusUse` (``services/<name>/bus_use.py``): the
streams it owns (it declares them and publishes to their subjects), the durable consumers it reads, the
other services' streams it creates when missing so it may start first, the streams it reads with
ordered consumers or direct gets, the subjects it subscribes to without JetStream, and the key-value
buckets it owns. :func:`permissions` turns that into the allow lists of the NATS server's
``authorization`` block — JetStream is driven through subjects (``$JS.API.<verb>.<stream>…``), so
the allow lists bound the JetStream API a service may call as well as the events it may send — and
:func:`render_server_config` writes the server's configuration (users by public nkey, TLS).

Nothing but allow lists: what a list does not name is refused. Replies come back on an inbox of the
service's own (``_INBOX.<identity>.>``, :func:`inbox_prefix`), so no identity can read another's
replies (a key-value read, a publish acknowledgement).

>>> use = BusUse("demo", owns=(StreamSpec("DEMO", ("duel.demo.>",)),))
>>> granted = permissions(use)
>>> "duel.demo.>" in granted.publish and "$JS.API.STREAM.UPDATE.DEMO" in granted.publish
True
>>> granted.subscribe
('_INBOX.demo.>',)
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nkeys  # type: ignore[import-untyped]  # no type information shipped

from duelmahjong.platform import subjects
from duelmahjong.platform.streams import ConsumerSpec, StreamSpec

API = "$JS.API"
# The services, each an identity of its own; their uses are in services/<name>/bus_use.py.
SERVICES = ("table", "scoring", "wallet", "matchmaking")
# The identity of tooling that reads the bus (duel CLI, benches, the end-to-end tests' readers):
# it reads every platform stream and bucket, publishes no event and changes no stream.
TOOLS = "tools"
# Development and tests only, never in a deployment's config: the in-process test harness plays any
# producer on a server the whole test session shares (private buckets and streams per test).
HARNESS = "harness"


@dataclass(frozen=True)
class BusUse:
    """What one identity does on the bus (see the module's docstring)."""

    name: str
    owns: tuple[StreamSpec, ...] = ()  # declares (creates, updates) and publishes to their subjects
    publishes: tuple[str, ...] = ()  # subjects of streams it does not own that it publishes to
    ensures: tuple[StreamSpec, ...] = ()  # others' streams it creates if missing; never updates
    consumers: tuple[ConsumerSpec, ...] = ()  # durable pull consumers it declares and reads
    reads: tuple[StreamSpec, ...] = ()  # read with ordered consumers and last-message gets
    direct_gets: tuple[StreamSpec, ...] = ()  # read with batched direct gets and last-message gets
    subscribes: tuple[str, ...] = ()  # core NATS subscriptions (no JetStream)
    buckets: tuple[str, ...] = ()  # key-value buckets it owns: creates, reads, writes, watches
    read_buckets: tuple[str, ...] = ()  # key-value buckets it only reads
    inspects: tuple[str, ...] = ()  # lists streams, and reads these streams' consumers' state


@dataclass(frozen=True)
class Permissions:
    """The allow lists of one NATS user."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def inbox_prefix(identity: str) -> str:
    """The inbox an identity's replies come back on (nats-py ``inbox_prefix``)."""
    return f"_INBOX.{identity}"


def _stream_reads(stream: str) -> list[str]:
    # An ordered consumer: an ephemeral push consumer (created unnamed), its flow control answered on
    # $JS.FC; and last-message gets.
    return [
        f"{API}.STREAM.INFO.{stream}",
        f"{API}.STREAM.MSG.GET.{stream}",
        f"{API}.CONSUMER.CREATE.{stream}",
        f"{API}.CONSUMER.INFO.{stream}.*",  # a watcher checking its consumer after a stall
        f"$JS.FC.{stream}.>",
    ]


def _bucket_reads(bucket: str) -> list[str]:
    stream = f"KV_{bucket}"
    return [*_stream_reads(stream), f"{API}.DIRECT.GET.{stream}.>"]


def permissions(use: BusUse) -> Permissions:
    """The least a service needs to do what ``use`` says, as NATS allow lists."""
    publish: list[str] = []
    for stream in use.owns:
        publish += stream.subjects
        publish += [f"{API}.STREAM.{verb}.{stream.name}" for verb in ("CREATE", "UPDATE", "INFO", "MSG.GET")]
    publish += use.publishes
    for stream in use.ensures:
        publish += [f"{API}.STREAM.CREATE.{stream.name}", f"{API}.STREAM.INFO.{stream.name}"]
    for consumer in use.consumers:
        where = f"{consumer.stream}.{consumer.durable}"
        publish += [
            f"{API}.CONSUMER.INFO.{where}",
            f"{API}.CONSUMER.CREATE.{where}.{consumer.filter_subject}",
            f"{API}.CONSUMER.MSG.NEXT.{where}",
            f"$JS.ACK.{where}.>",  # acks and naks are replies to the delivered message
        ]
    if use.reads:  # a reader that names a subject, not its stream, asks which stream holds it
        publish.append(f"{API}.STREAM.NAMES")
    for stream in use.reads:
        publish += _stream_reads(stream.name)
    for stream in use.direct_gets:
        publish += [
            f"{API}.STREAM.INFO.{stream.name}",
            f"{API}.STREAM.MSG.GET.{stream.name}",
            f"{API}.DIRECT.GET.{stream.name}",
            f"{API}.DIRECT.GET.{stream.name}.>",
        ]
    for bucket in use.buckets:
        publish += [
            f"$KV.{bucket}.>",
            f"{API}.STREAM.CREATE.KV_{bucket}",
            f"{API}.STREAM.UPDATE.KV_{bucket}",
            *_bucket_reads(bucket),
        ]
    for bucket in use.read_buckets:
        publish += _bucket_reads(bucket)
    if use.inspects:
        publish += [f"{API}.INFO", f"{API}.STREAM.LIST", f"{API}.STREAM.NAMES"]
    for name in use.inspects:
        publish += [f"{API}.CONSUMER.{verb}.{name}" for verb in ("LIST", "NAMES")]
        publish.append(f"{API}.CONSUMER.INFO.{name}.*")
    return Permissions(
        publish=tuple(dict.fromkeys(publish)),
        subscribe=tuple(dict.fromkeys([*use.subscribes, f"{inbox_prefix(use.name)}.>"])),
    )


PLATFORM_STREAMS = (
    subjects.TABLE_STREAM,
    subjects.TABLE_LOG_STREAM,
    subjects.SCORING_STREAM,
    subjects.WALLET_STREAM,
)


def service_uses() -> dict[str, BusUse]:
    """Every service's :class:`BusUse` with the platform's names, from ``services/<name>/bus_use.py``."""
    return {name: importlib.import_module(f"services.{name}.bus_use").BUS_USE for name in SERVICES}


def tools_use(uses: Mapping[str, BusUse]) -> BusUse:
    """The tools' reader identity: every platform stream and every service's bucket, read only."""
    buckets = tuple(bucket for use in uses.values() for bucket in use.buckets)
    stream = subjects.TABLE_LOG_STREAM
    inspected = (*(spec.name for spec in PLATFORM_STREAMS), *(f"KV_{bucket}" for bucket in buckets))
    return BusUse(
        TOOLS, reads=PLATFORM_STREAMS, direct_gets=(stream,), read_buckets=buckets, inspects=inspected
    )


@dataclass(frozen=True)
class Identity:
    """A NATS user: its name, public nkey, and permissions (None: the test harness, all allowed)."""

    name: str
    public_key: str
    permissions: Permissions | None


def new_seed() -> bytes:
    """A fresh user nkey seed (``SU…``): the secret a service signs the server's challenge with."""
    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))


def public_key(seed: bytes) -> str:
    """The public nkey (``U…``) of ``seed``: the only thing of the identity the server's config holds."""
    return str(nkeys.from_seed(bytearray(seed)).public_key.decode())


def seed_file(directory: Path, identity: str) -> Path:
    """``<directory>/<identity>.nk``: created (readable by this user only) if it does not exist."""
    path = directory / f"{identity}.nk"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(new_seed())
    return path


@dataclass(frozen=True)
class Tls:
    """The server's certificate chain and key, and the CA it trusts for its cluster routes."""

    cert: Path
    key: Path
    ca: Path


@dataclass
class ServerAccess:
    """Everything a NATS server's configuration says about who connects: the identities and TLS."""

    identities: list[Identity] = field(default_factory=list)
    tls: Tls | None = None

    def users(self) -> list[dict[str, object]]:
        users: list[dict[str, object]] = []
        for identity in self.identities:
            user: dict[str, object] = {"nkey": identity.public_key}
            if identity.permissions is not None:
                user["permissions"] = {
                    "publish": {"allow": list(identity.permissions.publish)},
                    "subscribe": {"allow": list(identity.permissions.subscribe)},
                }
            users.append(user)
        return users

    def authorization(self) -> str:
        """The ``authorization`` block: every connection is one of the identities (no anonymous user).
        A public key given as ``$NAME`` stays a variable, which the server reads from its environment."""
        text = json.dumps(self.users(), indent=2)
        for identity in self.identities:
            if identity.public_key.startswith("$"):  # unquoted: a reference, not a string
                text = text.replace(json.dumps(identity.public_key), identity.public_key)
        return "authorization {\n  users: " + text.replace("\n", "\n  ") + "\n}"


def platform_access(
    seeds: Mapping[str, bytes], uses: Mapping[str, BusUse] | None = None, tls: Tls | None = None
) -> ServerAccess:
    """The access of the platform's identities that ``seeds`` has a seed for (``table``…, ``tools``,
    ``harness``), each with the permissions its use derives."""
    uses = dict(uses if uses is not None else service_uses())
    uses[TOOLS] = tools_use(uses)
    identities = []
    for name, seed in seeds.items():
        if name == HARNESS:
            identities.append(Identity(name, public_key(seed), None))
        else:
            identities.append(Identity(name, public_key(seed), permissions(uses[name])))
    return ServerAccess(identities, tls)


def _value(value: object) -> str:
    # The NATS config format reads JSON values; strings are always quoted ($ and . in subjects).
    return json.dumps(value)


def render_server_config(access: ServerAccess, *, extra: Sequence[str] = ()) -> str:
    """The nats-server configuration of ``access``: the ``authorization`` block (every connection is
    one of the identities; no anonymous user) and, with TLS, a ``tls`` block that also verifies the
    certificates clients present if they present one. ``extra`` lines are appended (listen, cluster…)."""
    lines = ["# Rendered by duelmahjong.platform.nats_permissions: edit the services' BusUse, not this."]
    if access.tls is not None:
        lines += [
            "tls {",
            f"  cert_file: {_value(str(access.tls.cert))}",
            f"  key_file: {_value(str(access.tls.key))}",
            f"  ca_file: {_value(str(access.tls.ca))}",
            "  timeout: 2",
            "}",
        ]
    lines.append(access.authorization())
    lines += extra
    return "\n".join(lines) + "\n"


def seeds_in(directory: Path, identities: Iterable[str]) -> dict[str, bytes]:
    """The seed of each identity in ``directory`` (created where missing, see :func:`seed_file`)."""
    return {name: seed_file(directory, name).read_bytes().strip() for name in identities}


@dataclass(frozen=True)
class LocalAccess:
    """A NATS server's access on this machine (``make run``, the tests): certificates from the local
    CA (:mod:`duelmahjong.platform.pki`) and a seed per identity, kept in directories that survive a
    restart so the services and the server keep agreeing."""

    access: ServerAccess
    ca_file: Path
    seeds_dir: Path

    @classmethod
    def create(
        cls,
        tls_dir: Path,
        seeds_dir: Path,
        identities: Sequence[str] = (*SERVICES, TOOLS),
        *,
        hosts: Sequence[str] = ("localhost", "127.0.0.1"),
        uses: Mapping[str, BusUse] | None = None,
    ) -> LocalAccess:
        """The CA in ``tls_dir`` (created or reused) issues the server's certificate ``nats.pem`` for
        ``hosts``; each identity's seed is ``<seeds_dir>/<identity>.nk`` (created or reused)."""
        from duelmahjong.platform.pki import LocalAuthority  # cryptography: only where TLS is made

        authority = LocalAuthority.open(tls_dir)
        leaf = authority.issue("nats", list(hosts))
        tls = Tls(leaf.cert, leaf.key, authority.ca_cert)
        access = platform_access(seeds_in(seeds_dir, identities), uses, tls)
        return cls(access, authority.ca_cert, seeds_dir)

    def seed_file(self, identity: str) -> Path:
        return self.seeds_dir / f"{identity}.nk"

    def config(self, *, extra: Sequence[str] = ()) -> str:
        return render_server_config(self.access, extra=extra)

    def service_env(self, identity: str) -> dict[str, str]:
        """The settings a service connects as ``identity`` with (its seed, the CA to verify NATS)."""
        return {"NATS_NKEY_SEED_FILE": str(self.seed_file(identity)), "TLS_CA_FILE": str(self.ca_file)}


def nkey_variable(identity: str) -> str:
    """The environment variable a deployed NATS server reads ``identity``'s public key from."""
    return f"NATS_NKEY_{identity.upper()}"


def deployment_authorization(uses: Mapping[str, BusUse] | None = None) -> str:
    """The ``authorization`` block of a deployment's NATS (``deploy/k8s/nats/authorization.conf``):
    the services and the tools (never the harness), each public key read from the server's
    environment (:func:`nkey_variable`), since every deployment makes its own keys."""
    uses = dict(uses if uses is not None else service_uses())
    uses[TOOLS] = tools_use(uses)
    identities = [
        Identity(name, f"${nkey_variable(name)}", permissions(uses[name])) for name in (*SERVICES, TOOLS)
    ]
    return (
        "# Rendered by `python -m duelmahjong.platform.nats_permissions authorization` from the services'\n"
        "# BusUse (services/<name>/bus_use.py): render again when one changes; tests/deploy checks it.\n"
        "# Public keys only (no secret here): each from the variable NATS_NKEY_<IDENTITY>.\n"
        + ServerAccess(identities).authorization()
        + "\n"
    )


def compose_files(server: Path, clients: Path, hosts: Sequence[str], ca_dir: Path | None = None) -> None:
    """docker-compose's NATS access: the server's certificate from the CA in ``ca_dir`` (the one that
    issued the services' gRPC certificates, so one ``TLS_CA_FILE`` verifies every server; without it
    a CA of its own in ``server``, which only the NATS container mounts), the configuration, and each
    identity's seed."""
    tls_dir = ca_dir or server / "ca"
    local = LocalAccess.create(tls_dir, clients / "nkeys", (*SERVICES, TOOLS), hosts=hosts)
    (server / "nats.conf").write_text(local.config())
    shutil.copyfile(local.ca_file, clients / "ca.pem")
    # The NATS image runs as a user of its own: its files are readable by others (the server volume,
    # which no service mounts; the CA directory of a local topology, whose keys are readable anyway).
    for path in (server / "nats.conf", *tls_dir.iterdir()):
        if not path.name.startswith("ca-key"):
            path.chmod(0o644)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m duelmahjong.platform.nats_permissions",
        description="NATS identities and their permissions, derived from the services' BusUse.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("authorization", help="print the authorization block of a deployment's NATS")
    keys = commands.add_parser(
        "keys",
        help="create a seed per identity in DIRECTORY (kept if there) and print the public keys as "
        "NATS_NKEY_<IDENTITY>=<key>, the NATS server's environment",
    )
    keys.add_argument("directory", type=Path)
    compose = commands.add_parser(
        "compose",
        help="make what docker-compose's NATS and services need: the server's configuration, "
        "certificate and key in SERVER (readable by the NATS container's user), the seeds and the "
        "CA certificate in CLIENTS (readable by the services' user only); kept across runs",
    )
    compose.add_argument("server", type=Path)
    compose.add_argument("clients", type=Path)
    compose.add_argument("--host", action="append", default=[], help="a name NATS is reached at")
    compose.add_argument("--owner", default="", help="UID:GID the services run as: CLIENTS' files go to them")
    compose.add_argument("--ca", type=Path, default=None, help="the directory of the CA to issue from")
    args = parser.parse_args(argv)
    if args.command == "authorization":
        print(deployment_authorization(), end="")
        return 0
    if args.command == "compose":
        compose_files(args.server, args.clients, args.host or ["nats", "localhost", "127.0.0.1"], args.ca)
        if args.owner:
            uid, _, gid = args.owner.partition(":")
            for path in (args.clients, *args.clients.rglob("*")):
                os.chown(path, int(uid), int(gid or uid))
        return 0
    for name, seed in seeds_in(args.directory, (*SERVICES, TOOLS)).items():
        print(f"{nkey_variable(name)}={public_key(seed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
