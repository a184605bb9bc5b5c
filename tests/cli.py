"""The ``duel`` command as a player or an operator runs it: the installed script, in a process of its own
(its own event loop, its own imports), for the tests that check a command end to end."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def duel(*args: str) -> tuple[int, str, str]:
    """``duel ARGS``: its exit code, stdout and stderr (within two minutes)."""
    command = Path(sys.executable).parent / "duel"
    process = await asyncio.create_subprocess_exec(
        str(command), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, out.decode(), err.decode()
