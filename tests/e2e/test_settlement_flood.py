"""A table server keeps nothing of the settlements it hears for hands other servers host.

Every table server of a fleet hears every hand's ``SettlementApplied``. The stack's table server is
sent 10,000 of them for tables it does not host (``duel bench settlement_flood`` sends 40,000) and its
RSS may grow by no more than 200 bytes a message: what keeping them would cost is ≈1.3 KB each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.platform.stackfile import StackState
from tests.e2e.conftest import StackWith

settlement_flood = load("settlement_flood")  # bench/ is not an installed package: loaded as `duel bench` does

pytestmark = pytest.mark.e2e

COUNT = 10_000


@pytest.fixture(scope="module")
def stack(stack_with: StackWith) -> Iterator[StackState]:
    with stack_with("settlement-flood", {}) as state:
        yield state


def test_a_table_server_keeps_none_of_the_fleets_settlements(stack: StackState) -> None:
    result = asyncio.run(settlement_flood.flood(stack, COUNT, within=60.0))
    print(result.line())
    assert result.heard == COUNT, "the table server did not hear every settlement (or did not count it)"
    assert result.bytes_per_message < settlement_flood.BYTES_PER_MESSAGE_GOAL, result.line()
