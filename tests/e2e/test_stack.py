"""What ``make run`` runs, end to end: the whole stack comes up, ``duel status`` sees all four services
SERVING, and Ctrl-C (SIGINT) or SIGTERM stops every process it started — services, NATS, Postgres."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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
    assert sorted(state.services) == sorted(SERVICE_NAMES)

    status = _duel_status(state_file)
    assert status.returncode == 0, status.stdout + status.stderr
    lines = status.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(SERVICE_NAMES)
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
    """``TABLE_SERVERS=2 make run``, then SIGKILL of ``table-2``: the stack says so, restarts it after a
    backoff (as Kubernetes restarts a container) and keeps everything else running; ``duel status``
    lists ``table-2`` too. Ctrl-C still stops everything."""
    data_dir = scratch_dir / "local"
    with _make_run(data_dir, TABLE_SERVERS="2") as process:
        state_file = data_dir / "stack.json"
        state = _wait_for_state(process, state_file)
        assert sorted(state.services) == sorted([*SERVICE_NAMES, "table-2"])
        status = _duel_status(state_file)
        assert [line.split()[0] for line in status.stdout.strip().splitlines()] == [
            *SERVICE_NAMES,
            "table-2",
        ], status.stdout
        assert status.returncode == 0, status.stdout
        killed = state.services["table-2"].pid
        others = {name: e.pid for name, e in state.services.items() if name != "table-2"}
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        restarted = state
        while time.monotonic() < deadline:
            restarted = StackState.read(state_file) or restarted
            if restarted.services["table-2"].pid != killed:
                break
            assert process.poll() is None, "the stack stopped for one death"
            time.sleep(0.2)
        assert restarted.services["table-2"].pid != killed, "table-2 was not restarted"
        assert {name: e.pid for name, e in restarted.services.items() if name != "table-2"} == others
        assert all(_alive(pid) for pid in others.values())
        status = _duel_status(state_file)
        assert status.returncode == 0 and "table-2" in status.stdout, status.stdout
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
        output = process.stdout.read() if process.stdout else ""
        assert "table-2 exited with code -9; restarting it in 1s (restart 1)" in output, output
        assert "table-2 restarted (pid" in output and "stopped; nothing left running" in output, output
        pids = [e.pid for e in restarted.services.values()]
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in pids if _alive(pid)] == []
