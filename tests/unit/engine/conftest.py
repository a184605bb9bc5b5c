"""Helpers for scripted engine tests: stacked walls written in tile notation, actions as text."""

from __future__ import annotations

from typing import Any

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Event
from duelmahjong.engine.outcome import Outcome, Win
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.engine.wall import stack_tiles


class Script:
    """A table driven by text actions: ``script.do("0 discard 5m")``."""

    def __init__(self, profile: str = "duel", **settings: Any) -> None:
        self.table = Table(RoomSettings(profile=profile, **settings))

    def deal(self, seed: int = 1, *, exchange: bool = True, **stacked: Any) -> list[Event]:
        """Deal a stacked hand; erren seats decline 开始加倍; both keep their hands at 换牌 (T4)."""
        events = self.table.start_hand(seed, stacked=stack_tiles(self.table.settings.profile, **stacked))
        if self.table.phase == "doubling":
            for seat in (0, 1):
                events += self.do(f"{seat} no_double")
        if exchange:
            for seat in (0, 1):
                events += self.do(f"{seat} exchange")
        return events

    def do(self, text: str) -> list[Event]:
        return self.table.apply(Action.parse(text))

    @staticmethod
    def kinds(events: list[Event]) -> list[str]:
        return [event.kind for event in events]

    def legal(self, seat: int) -> list[str]:
        return [str(a) for a in self.table.legal_actions(seat) if a.kind != A.LEAVE]

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return self.table.state

    def hand(self, seat: int) -> str:
        return self.table.view(seat)["seats"][seat]["hand"]

    @property
    def outcome(self) -> Outcome:
        outcome = self.table.outcome
        assert outcome is not None
        return outcome

    @property
    def win(self) -> Win:
        win = self.outcome.win
        assert win is not None
        return win

    def context(self) -> dict[str, Any]:
        context: dict[str, Any] = self.win.description.get("context", {})
        return context

    def pattern_ids(self) -> list[str]:
        return self.win.pattern_ids


@pytest.fixture
def duel() -> Script:
    return Script("duel")


@pytest.fixture
def erren() -> Script:
    return Script("erren")


@pytest.fixture
def script_of():  # type: ignore[no-untyped-def]
    return Script
