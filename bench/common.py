"""The shared benchmark harness: timed runs, medians, and the one print format of every figure.

``compare`` times our callable and the reference's alternately (ours, ref, ours, ref, …) so both see
the same machine load, each run long enough to dwarf timer noise, and reports the medians::

    bench rules.win ours=3301245/s ref=mahjong 190712/s ratio=17.31
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio

from duelmahjong.platform.pki import LocalAuthority
from duelmahjong.platform.tls import ClientTls, server_credentials
from duelmahjong.v1 import rules_pb2, table_pb2

MIN_RUNS = 5


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured comparison: operations per second, medians over ``runs`` runs."""

    name: str  # e.g. "rules.win"
    ours: float
    reference: str  # library name
    theirs: float
    runs: int

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs if self.theirs else float("inf")

    def line(self) -> str:
        return (
            f"bench {self.name} ours={self.ours:.0f}/s ref={self.reference} {self.theirs:.0f}/s "
            f"ratio={self.ratio:.2f}"
        )


def rate(batch: Callable[[], int], min_seconds: float) -> float:
    """Operations per second of ``batch`` (one call = one pass over a corpus, returning how many
    operations it did), repeating it until ``min_seconds`` have passed."""
    operations = 0
    start = time.perf_counter()
    while True:
        operations += batch()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return operations / elapsed


def compare(
    name: str,
    ours: Callable[[], int],
    reference: str,
    theirs: Callable[[], int],
    *,
    runs: int = MIN_RUNS,
    min_seconds: float = 0.2,
) -> Figure:
    """Median rates of ``ours`` and ``theirs``, measured alternately in the same process."""
    runs = max(runs, MIN_RUNS)
    ours(), theirs()  # warm-up: imports, caches, first-use tables
    our_rates, their_rates = [], []
    for _ in range(runs):
        our_rates.append(rate(ours, min_seconds))
        their_rates.append(rate(theirs, min_seconds))
    return Figure(name, statistics.median(our_rates), reference, statistics.median(their_rates), runs)


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of ``action`` takes."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def arrivals(rate: float, seconds: float, rng: random.Random) -> list[float]:
    """``rate`` x ``seconds`` arrival times (rounded) in [0, seconds), each uniform at random: a
    Poisson process held to its expected count, so every run offers the same load with the same
    bunching as independent arrivals (tables ending hands, players queueing).

    >>> times = arrivals(200.0, 5.0, random.Random(1))
    >>> len(times), times == sorted(times), 0 <= times[0] and times[-1] < 5
    (1000, True, True)
    """
    return sorted(rng.uniform(0.0, seconds) for _ in range(round(rate * seconds)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 where /proc is not available)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_of(pid: int) -> Iterable[int]:
    """The live child processes of ``pid`` (Postgres's backends are its postmaster's children)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            yield int(entry.name)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and its live children — a process that forks per connection."""
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in children_of(pid))


def open_table_request(
    table_id: str,
    pairing_id: str,
    room_id: str,
    rules: rules_pb2.RoomRules,
    player_ids: tuple[str, str],
    carry: int,
) -> table_pb2.OpenTableRequest:
    """An ``OpenTable`` as matchmaking sends it, for a bench's own table: the two players in seat
    order, each with the same carry."""
    seats = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
    return table_pb2.OpenTableRequest(
        table_id=table_id,
        pairing_id=pairing_id,
        room_id=room_id,
        rules=rules,
        players=[
            rules_pb2.SeatPlayer(seat=seat, player_id=player, carry=carry)
            for seat, player in zip(seats, player_ids, strict=True)
        ],
    )


@dataclass(frozen=True)
class BenchTls:
    """TLS for a bench's servers and clients: a certificate for 127.0.0.1 from a local CA of its own,
    served as the services serve theirs, and the client side trusting that CA."""

    cert: Path
    key: Path
    client: ClientTls

    @classmethod
    def issue(cls, directory: Path) -> BenchTls:
        authority = LocalAuthority.open(directory)
        leaf = authority.issue("bench-server", ["127.0.0.1", "localhost"])
        return cls(leaf.cert, leaf.key, ClientTls(ca_file=authority.ca_cert))

    def server_env(self) -> dict[str, str]:
        """The settings a service process serves this certificate with."""
        return {
            "TLS_CERT_FILE": str(self.cert),
            "TLS_KEY_FILE": str(self.key),
            "TLS_CA_FILE": str(self.client.ca_file),
        }


# What a service process is given to serve plaintext: the TLS-off side of a TLS comparison.
PLAINTEXT_ENV = {"GRPC_PLAINTEXT": "true"}
PLAINTEXT = ClientTls(plaintext=True)


def tls_for(environ: Mapping[str, str]) -> ClientTls:
    """How a bench's helper process dials: ``BENCH_CA_FILE`` names the CA, absent = plaintext."""
    ca_file = environ.get("BENCH_CA_FILE", "")
    return ClientTls(ca_file=Path(ca_file)) if ca_file else PLAINTEXT


def add_port(server: grpc.aio.Server, address: str, environ: Mapping[str, str]) -> int:
    """Bind a bench's own server (a fake, a reference) as the services bind theirs: TLS with the
    certificate ``TLS_CERT_FILE`` / ``TLS_KEY_FILE`` name, plaintext when they name none."""
    cert, key = environ.get("TLS_CERT_FILE"), environ.get("TLS_KEY_FILE")
    if cert and key:
        return server.add_secure_port(address, server_credentials(Path(cert), Path(key))[0])
    return server.add_insecure_port(address)
