"""Golden table logs: whole pairings played by a seeded, wandering bot, stored as canonical JSON lines.

Each log is one table (``table_opened`` to ``pairing_ended``) under one room, played by
:func:`play_pairing`: the baseline bot mostly, a seeded random legal action now and then (so 换牌 of
some tiles, declined wins, passes on claims, items, every 猜大小 choice show up), and, in the hands the
case names, a seat leaving mid-hand (an escape) or between hands. The files are the log format the
engine writes; ``test_golden_logs`` reads them back. Regenerate (only when the format is meant to
change) with ``python -m tests.unit.engine.golden_logs``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import choose
from duelmahjong.engine.events import Event, HandEnded, canonical_json, canonical_log
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

GOLDEN_LOGS = Path(__file__).parents[2] / "data" / "golden_logs"
ITEMS = {"swap_item": 2, "shuffle_item": 2, "qiankun": 1}
DUEL_ROOM = RoomSettings(
    profile="duel",
    triplet_offer_probability=0.3,
    rub_offer_probability=0.3,
    guess_enabled=True,
    negotiated_multiplier=2,
)
ERREN_ROOM = RoomSettings(profile="erren", exchange_fee=10, minimum_fan=1)


@dataclass(frozen=True)
class Case:
    room: RoomSettings
    seed: int
    hands: int
    escape_in: int = -1  # the hand in which a seat leaves mid-play (-1: none)
    refuse_wins: tuple[int, ...] = ()  # hands whose wins both seats pass up (to a drawn hand)
    salted: bool = True


CASES = {
    "duel_plain": Case(RoomSettings(profile="duel"), 3, 6, refuse_wins=(1, 3, 4), salted=False),
    "duel_offers": Case(DUEL_ROOM, 11, 8, refuse_wins=(2, 5)),
    "duel_escape": Case(DUEL_ROOM, 29, 3, escape_in=2),
    "erren_plain": Case(ERREN_ROOM, 5, 6, refuse_wins=(2, 4)),
    "erren_escape": Case(ERREN_ROOM, 17, 4, escape_in=3, refuse_wins=(1,)),
}


_WINS = frozenset({A.WIN, A.SELF_DRAW_WIN})


def _wander(table: Table, seat: int, legal: list[Action], rng: random.Random, refuse: bool) -> Action:
    """The bot's choice, or (one time in five) another legal action, never leaving; every 猜大小 choice
    at random; with ``refuse``, never a win."""
    state = table.state
    if refuse:
        legal = [a for a in legal if a.kind not in _WINS]
    guesses = [a for a in legal if a.kind in (A.GUESS_BIG, A.GUESS_SMALL, A.COLLECT)]
    if guesses:
        return guesses[len(table.events) % len(guesses)]
    if rng.random() < 0.2:
        others = [a for a in legal if a.kind != A.LEAVE]
        if others:
            action = rng.choice(others)
            if action.kind == A.EXCHANGE and rng.random() < 0.7:
                held = [t for t in range(34) for _ in range(state.hands[seat][t])]
                return Action(seat, A.EXCHANGE, tiles=tuple(sorted(rng.sample(held, rng.randint(1, 3)))))
            return action
    return choose(state, seat, legal)


def play_pairing(case: Case) -> Table:
    rng = random.Random(case.seed)
    table = Table(case.room)
    for hand in range(case.hands):
        duel = case.room.is_duel
        items = (dict(ITEMS), dict(ITEMS)) if duel else None
        qiankun = {hand % 2} if duel and case.room.items_enabled and hand in (1, 4) else set()
        table.start_hand(
            rng.getrandbits(64),
            salt=rng.randbytes(8) if case.salted else b"",
            items=items,
            qiankun=qiankun,
        )
        moves = 0
        while table.outcome is None:
            deciding = [s for s in (0, 1) if len(table.legal_actions(s)) > 1]
            seat = deciding[0] if len(deciding) == 1 else rng.choice(deciding)
            moves += 1
            if hand == case.escape_in and moves == 12:
                table.apply(Action(seat, A.LEAVE))
                return table
            table.apply(_wander(table, seat, table.legal_actions(seat), rng, hand in case.refuse_wins))
    table.apply(Action(rng.randint(0, 1), A.LEAVE))  # leaving between hands ends the pairing
    return table


def state_digest(table: Table) -> dict[str, Any]:
    """What a replayed table must agree on: both seats' views and the hidden state (tiles, wall, pool,
    rivers, melds, results) after the last event."""
    state = table.state
    return {
        "views": [table.view(0), table.view(1)],
        "results": [outcome.to_json() for outcome in state.results],
        "hands": state.hands,
        "melds": state.melds,
        "rivers": state.river_marks,
        "wall": state.wall[state.head : state.tail],
        "pool": state.pool,
        "phase": state.phase,
        "hand_number": state.hand_number,
        "events_folded": state.events_folded,
    }


def digests(events: list[Event]) -> list[str]:
    """The state digest after each hand's end and after the last event, as canonical JSON."""
    table = Table.replay(events[:1])
    out = []
    for event in events[1:]:
        table.emit(event)
        if isinstance(event, HandEnded):
            out.append(canonical_json(state_digest(table)))
    out.append(canonical_json(state_digest(table)))
    return out


def main() -> None:
    GOLDEN_LOGS.mkdir(parents=True, exist_ok=True)
    for name, case in CASES.items():
        table = play_pairing(case)
        (GOLDEN_LOGS / f"{name}.jsonl").write_text(canonical_log(table.events) + "\n", encoding="utf-8")
        (GOLDEN_LOGS / f"{name}.states.jsonl").write_text(
            "\n".join(digests(table.events)) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
