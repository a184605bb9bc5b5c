"""The ``duel`` command as a player or an operator runs it: the installed script, in a process of its own
(its own event loop, its own imports), for the tests that check a command end to end."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path


async def duel(*args: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    """``duel ARGS``: its exit code, stdout and stderr (within two minutes); ``env`` replaces the
    environment it inherits."""
    command = Path(sys.executable).parent / "duel"
    process = await asyncio.create_subprocess_exec(
        str(command),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=None if env is None else dict(env),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, out.decode(), err.decode()
