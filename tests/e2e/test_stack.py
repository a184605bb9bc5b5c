"""What ``make run`` runs, end to end: the whole stack comes up, ``duel status`` sees all four services
SERVING, and Ctrl-C (SIGINT) or SIGTERM stops every process it started — services, NATS, Postgres.
With ``TABLE_SERVERS=2 MATCHMAKING_REPLICAS=2`` it lists and supervises every process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from duelmahjong.cli.status import check_health
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState

pytestmark = pytest.mark.e2e

UP_WITHIN_SECONDS = 90


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def _duel_status(state_file: Path) -> subprocess.CompletedProcess[str]:
    # Addresses must come from the state file, not from the environment of whoever runs the tests.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
    return subprocess.run(
        [str(Path(sys.executable).parent / "duel"), "status", "--state-file", str(state_file)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def _started_pids(data_dir: Path, state: StackState) -> dict[str, int]:
    pids = {name: endpoint.pid for name, endpoint in state.services.items()}
    pids["stack"] = state.stack_pid
    postmaster = data_dir / "postgres" / "pgdata" / "postmaster.pid"
    pids["postgres"] = int(postmaster.read_text().split()[0])
    (ports_file,) = (data_dir / "nats" / "ports").glob("*.ports")
    pids["nats"] = int(ports_file.stem.rsplit("_", 1)[1])
    return pids


@contextmanager
def _make_run(data_dir: Path, **settings: str) -> Iterator[subprocess.Popen[str]]:
    """``make run``'s process on ``data_dir`` with ``settings`` added to the environment (none of the
    caller's servers or secret); SIGTERM at the end if it still runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "TOKEN_SECRET")}
    process = subprocess.Popen(
        [sys.executable, "-m", "duelmahjong.platform.stack", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, **settings},
    )
    with process:  # closes the output pipe
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)


class _Printed:
    """What ``make run`` prints from now on, read by a thread as it comes, so a test can wait for a line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._lines.append(line)
        except (OSError, ValueError):  # the pipe closed under it: the test ended early
            pass

    def text(self) -> str:
        """All it printed, once it has exited (else what it printed so far, after a while)."""
        self._reader.join(10)
        return "".join(self._lines)

    def wait_for(self, pattern: str, within: float) -> re.Match[str]:
        deadline = time.monotonic() + within
        while (found := re.search(pattern, "".join(self._lines))) is None:
            if time.monotonic() > deadline:
                pytest.fail(f"make run did not print {pattern!r} within {within}s:\n{''.join(self._lines)}")
            time.sleep(0.1)
        return found


@pytest.fixture
def stack(scratch_dir: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    data_dir = scratch_dir / "local"
    with _make_run(data_dir) as process:
        yield process, data_dir


def _wait_for_state(process: subprocess.Popen[str], state_file: Path) -> StackState:
    deadline = time.monotonic() + UP_WITHIN_SECONDS
    while time.monotonic() < deadline:
        state = StackState.read(state_file)
        if state is not None:
            return state
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            pytest.fail(f"the stack exited with {process.returncode} before it was up:\n{output}")
        time.sleep(0.2)
    pytest.fail(f"the stack did not write {state_file} within {UP_WITHIN_SECONDS}s")


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_make_run_brings_all_four_services_up_and_stops_leaving_nothing(
    stack: tuple[subprocess.Popen[str], Path], stop_signal: signal.Signals
) -> None:
    process, data_dir = stack
    state_file = data_dir / "stack.json"
    state = _wait_for_state(process, state_file)
    processes = sorted([*SERVICE_NAMES, "matchmaking-2"])  # two matchmaking replicas by default
    assert sorted(state.services) == processes
    replicas = (state.services["matchmaking"].grpc, state.services["matchmaking-2"].grpc)
    assert state.target("matchmaking") == "ipv4:" + ",".join(replicas)  # one target for both
    # TLS: the local CA in .local/tls/ named by the state file, a certificate of its own per process.
    assert state.ca_file == str(data_dir / "tls" / "ca.pem") and not state.plaintext
    for name, endpoint in state.services.items():
        environ = _environ(endpoint.pid)
        assert environ["TLS_CERT_FILE"] == str(data_dir / "tls" / f"{name}.pem")
        assert environ["TLS_CA_FILE"] == state.ca_file and "GRPC_PLAINTEXT" not in environ

    status = _duel_status(state_file)
    assert status.returncode == 0, status.stdout + status.stderr
    lines = status.stdout.strip().splitlines()
    assert sorted(line.split()[0] for line in lines) == processes
    assert all(line.endswith("SERVING") for line in lines), status.stdout

    pids = _started_pids(data_dir, state)
    assert all(_alive(pid) for pid in pids.values()), pids
    process.send_signal(stop_signal)
    assert process.wait(60) == 0
    output = process.stdout.read() if process.stdout else ""
    assert "stopped; nothing left running" in output
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [name for name, pid in pids.items() if _alive(pid)] == []
    assert not state_file.exists()

    after = _duel_status(state_file)
    assert after.returncode == 1
    assert "no running stack found" in after.stdout


def test_make_run_restarts_a_service_that_dies_and_lists_every_process(scratch_dir: Path) -> None:
    """``TABLE_SERVERS=2 MATCHMAKING_REPLICAS=2 make run``: ``duel status`` lists every process; each
    matchmaking replica has its own ports and ``MATCHMAKING_REPLICA_ID``, and clients (the state file)
    and the other services get one target for both. SIGKILL of ``matchmaking`` and ``table-2``: the
    stack says so and restarts each after a backoff (as Kubernetes restarts a container), the target
    answers through ``matchmaking-2`` meanwhile, and everything else keeps running. Ctrl-C still stops
    everything."""
    data_dir = scratch_dir / "local"
    further = ["matchmaking-2", "table-2"]
    replicas = ["matchmaking", "matchmaking-2"]
    killed = ["matchmaking", "table-2"]
    with _make_run(data_dir, TABLE_SERVERS="2", MATCHMAKING_REPLICAS="2") as process:
        state_file = data_dir / "stack.json"
        state = _wait_for_state(process, state_file)
        assert sorted(state.services) == sorted([*SERVICE_NAMES, *further])
        status = _duel_status(state_file)
        lines = status.stdout.strip().splitlines()
        assert [line.split()[:2] for line in lines] == [
            [name, state.services[name].grpc] for name in [*SERVICE_NAMES, *further]
        ], status.stdout
        assert status.returncode == 0, status.stdout
        target = "ipv4:" + ",".join(state.services[name].grpc for name in replicas)
        assert state.target("matchmaking") == target
        assert len({state.services[name].metrics for name in replicas}) == 2
        for name in replicas:
            environ = _environ(state.services[name].pid)
            assert environ["MATCHMAKING_REPLICA_ID"] == name and environ["MATCHMAKING_ADDRESS"] == target

        printed = _Printed(process)
        others = {name: e.pid for name, e in state.services.items() if name not in killed}
        for name in killed:
            os.kill(state.services[name].pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(state.services[name].pid) for name in killed) and time.monotonic() < deadline:
            time.sleep(0.05)
        # matchmaking-2, while matchmaking waits its backoff
        assert check_health(target, 5.0, state.client_tls()) == "SERVING"
        for name in killed:
            printed.wait_for(rf"{name} exited with code -9; restarting it in 1s \(restart 1\)", within=10)
        said = {
            name: printed.wait_for(rf"{name} restarted \(pid (\d+)\) and SERVING", within=60)
            for name in killed
        }
        assert process.poll() is None, "the stack stopped for one death"
        restarted = StackState.read(state_file)
        assert restarted is not None
        assert {name: restarted.services[name].pid for name in killed} == {
            name: int(found[1]) for name, found in said.items()
        }
        assert all(restarted.services[name].pid != state.services[name].pid for name in killed)
        assert {name: e.pid for name, e in restarted.services.items() if name not in killed} == others
        assert all(_alive(pid) for pid in others.values())
        assert restarted.target("matchmaking") == target  # the same ports
        status = _duel_status(state_file)
        assert status.returncode == 0 and "table-2" in status.stdout, status.stdout

        pids = _started_pids(data_dir, restarted)
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
        output = printed.text()
        assert f"clients reach every matchmaking replica at {target}" in output, output
        assert "stopped; nothing left running" in output, output
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [name for name, pid in pids.items() if _alive(pid)] == []
