"""Bot-vs-bot simulation: plays pairings of hands with the baseline bot, optionally checking every
invariant after every event (``duel simulate --check``, the property tests and the benchmark use it).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from duelmahjong.engine import actions as A
from duelmahjong.engine.bot import choose
from duelmahjong.engine.invariants import InvariantViolation, check_state, check_view
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

HANDS_PER_PAIRING = 8  # a new table (pairing) every few hands keeps the event logs short


@dataclass
class SimulationReport:
    hands: int = 0
    seconds: float = 0.0
    wins: list[int] = field(default_factory=lambda: [0, 0])
    drawn: int = 0
    fan_total: int = 0
    patterns: Counter[str] = field(default_factory=Counter)
    events: int = 0

    @property
    def hands_per_second(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        won = sum(self.wins)
        return {
            "hands": self.hands,
            "hands_per_second": round(self.hands_per_second, 1),
            "win_rate": [round(w / self.hands, 4) if self.hands else 0.0 for w in self.wins],
            "draw_rate": round(self.drawn / self.hands, 4) if self.hands else 0.0,
            "average_fan": round(self.fan_total / won, 2) if won else 0.0,
            "top_patterns": self.patterns.most_common(10),
        }


def bot_turn(table: Table) -> bool:
    """Let the bot act for the first seat with a decision; False if nobody has one."""
    for seat in (0, 1):
        legal = table.legal_actions(seat)
        if len(legal) > 1 or (legal and legal[0].kind != A.LEAVE):
            table.apply(choose(table.state, seat, legal))
            return True
    return False


def _check_step(table: Table, shadow: Table, start: int) -> None:
    for event in table.events[start:]:
        shadow.emit(event)
        check_state(shadow.state, at_rest=False)
    check_state(table.state)
    for seat in (0, 1):
        check_view(table.state, table.view(seat))


def _check_replay(table: Table) -> None:
    replayed = Table.replay([event.to_json() for event in table.events])
    if vars(replayed.state) != vars(table.state):
        raise InvariantViolation("replaying the event log does not give the live state")


def simulate(settings: RoomSettings, hands: int, seed: int, *, check: bool = False) -> SimulationReport:
    """Play ``hands`` bot-vs-bot hands; with ``check`` raise :class:`InvariantViolation` on the first
    broken invariant (tile conservation, hand sizes, hidden information, replay = live)."""
    seeds = random.Random(seed)
    report = SimulationReport()
    started = time.perf_counter()
    table = shadow = Table(settings)
    for number in range(hands):
        if number % HANDS_PER_PAIRING == 0:
            table = Table(settings)
            shadow = Table.replay(table.events)
        start = len(table.events)
        table.start_hand(seeds.getrandbits(64))
        if check:
            _check_step(table, shadow, start)
        while True:
            start = len(table.events)
            if not bot_turn(table):
                break
            if check:
                _check_step(table, shadow, start)
        if check:
            _check_replay(table)
        outcome = table.outcome
        if outcome is None:
            raise InvariantViolation(f"hand {number} stopped with nobody to act in phase {table.phase!r}")
        report.hands += 1
        if outcome.win is not None:
            report.wins[outcome.winner] += 1
            report.fan_total += outcome.win.total_fan
            report.patterns.update(outcome.win.pattern_ids)
        else:
            report.drawn += 1
        report.events += len(table.events) - start
    report.seconds = time.perf_counter() - started
    return report
