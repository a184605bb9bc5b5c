"""``duel status`` against a real service and addresses where nothing listens."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.cli import status
from duelmahjong.platform.embedded import free_port
from duelmahjong.platform.stackfile import SERVICE_NAMES, ServiceEndpoint, StackState, address_variable
from duelmahjong.platform.tls import ClientTls
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def _args(state_file: Path, ca_file: Path | None = None, **addresses: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    status.add_arguments(parser)
    argv = ["--state-file", str(state_file), "--timeout", "1"]
    argv += ["--ca-file", str(ca_file)] if ca_file else []
    for name, address in addresses.items():
        argv += [f"--{name}", address]
    return parser.parse_args(argv)


async def test_status_reports_each_service_and_fails_unless_all_four_serve(
    service_env: dict[str, str],
    database_url: str,
    start_service: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    client_tls: ClientTls,
) -> None:
    monkeypatch.delenv("TLS_CA_FILE", raising=False)  # the CA comes from the state file here
    for name in SERVICE_NAMES:  # addresses come from flags and the state file here, not the shell
        monkeypatch.delenv(address_variable(name), raising=False)
    env = {**service_env, "SCORING_DATABASE_URL": database_url}
    runtime = await start_service(SCORING, ScoringConfig.from_env(env))
    nowhere = f"127.0.0.1:{free_port()}"
    state_file = tmp_path / "stack.json"
    StackState(services={"table": ServiceEndpoint(nowhere, "")}, ca_file=str(client_tls.ca_file)).write(
        state_file
    )

    code = await asyncio.to_thread(status.run, _args(state_file, scoring=runtime.server.address))
    lines = dict(line.split(maxsplit=1) for line in capsys.readouterr().out.strip().splitlines())
    assert code == 1
    assert lines["scoring"].split() == [runtime.server.address, "SERVING"]
    assert lines["table"].split() == [nowhere, "UNREACHABLE"]
    assert lines["wallet"].split() == ["-", "NO", "ADDRESS"]


async def test_status_is_zero_when_all_four_serve(
    service_env: dict[str, str],
    database_url: str,
    start_service: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    client_tls: ClientTls,
) -> None:
    env = {**service_env, "SCORING_DATABASE_URL": database_url}
    runtime = await start_service(SCORING, ScoringConfig.from_env(env))
    # One healthy server standing in for all four is enough to test the verdict.
    address = runtime.server.address
    args = _args(
        tmp_path / "none.json",
        client_tls.ca_file,
        wallet=address,
        matchmaking=address,
        table=address,
        scoring=address,
    )
    assert await asyncio.to_thread(status.run, args) == 0
    assert capsys.readouterr().out.count("SERVING") == 4
