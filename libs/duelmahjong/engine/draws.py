"""Drawing tiles and ending hands: wall draws, kong and flower replacements (T2, 补花), T5 offers after a
draw, exhaustion with duel's extra draws (T9), and the hand result that scoring consumes (§7, T7, T8).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from duelmahjong.engine.events import Event
from duelmahjong.engine.legal import is_ready, unseen_kinds
from duelmahjong.engine.state import (
    FROM_FLOWER,
    FROM_POOL,
    FROM_WALL,
    TableState,
)
from duelmahjong.engine.wall import derived_random
from duelmahjong.rules.tiles import format_tiles, tiles_of

if TYPE_CHECKING:
    from duelmahjong.engine.table import Table


EXTRA_DRAWS = 3  # T9


# --- drawing -------------------------------------------------------------------------------------------
def draw_event(state: TableState, seat: int, source: str) -> Event:
    if source == FROM_WALL:
        tile = state.wall[state.head]
    elif source == FROM_POOL:
        tile = state.pool[0]
    else:
        tile = state.wall[state.tail - 1]
    if tile >= 34:  # flowers are shown at once (补花)
        return Event("drew", seat, public={"source": source, "tile": tile})
    return Event("drew", seat, public={"source": source}, private={"tile": tile})


def draw_replacement(table: Table, seat: int, source: str) -> bool:
    """Draw from the end of the wall (kong or flower replacement, T2); False if the wall is empty."""
    state = table.state
    while True:
        if state.wall_remaining == 0:
            return False
        event = draw_event(state, seat, source)
        table.emit(event)
        if event.public and "tile" in event.public:  # a flower: replace it too
            source = FROM_FLOWER
            continue
        return True


def draw_for(table: Table, seat: int) -> None:
    """The seat's next draw from the wall (flowers replaced), or exhaustion if the wall is empty (T9)."""
    state = table.state
    if state.wall_remaining == 0:
        exhaust(table)
        return
    event = draw_event(state, seat, FROM_WALL)
    table.emit(event)
    if event.public and "tile" in event.public and not draw_replacement(table, seat, FROM_FLOWER):
        exhaust(table)
        return
    _maybe_offer(table, seat)


def _maybe_offer(table: Table, seat: int) -> None:
    """T5: after a draw, with the room's probabilities, a triplet offer or 搓牌 (duel, not when ready)."""
    state = table.state
    if not state.offers or state.ready[seat]:
        return
    settings = state.settings
    p_triplet, p_rub = settings.triplet_offer_probability, settings.rub_offer_probability
    rng = derived_random(state.seed, state.rng_counter)
    roll = rng.random()
    if roll < p_triplet:
        unseen = state.wall[state.head : state.tail] + state.pool
        triplets = [k for k in range(34) if unseen.count(k) >= 3]
        if triplets:
            table.emit(
                Event("offered", seat, public={"offer": "triplet"}, private={"tile": rng.choice(triplets)})
            )
            return
    elif roll < p_triplet + p_rub and unseen_kinds(state):
        table.emit(Event("offered", seat, public={"offer": "rub"}))
        return
    # Nothing offered: still advance the counter so the next roll differs.
    table.emit(Event("offered", seat, public={"offer": ""}))


def exhaust(table: Table) -> None:
    """T9: erren → drawn hand; duel → the ready player (the first ready if both) draws up to 3 extra."""
    state = table.state
    if not state.duel:
        table.emit(Event("exhausted", public={"ready": (False, False)}))
        end_hand(table, outcome="drawn")
        return
    ready = [is_ready(state, seat) for seat in (0, 1)]
    public: dict[str, Any] = {"ready": tuple(ready)}
    if any(ready):
        if all(ready):
            # Both ready: the one who became ready first draws; -1 (never recorded) counts as last.
            since = [s if s >= 0 else 1 << 30 for s in state.tenpai_since]
            first = 0 if since[0] <= since[1] else 1
        else:
            first = ready.index(True)
        public["extra_seat"] = first
        public["extra_draws"] = min(EXTRA_DRAWS, len(state.pool))
    table.emit(Event("exhausted", public=public))
    if not any(ready) or not public["extra_draws"]:
        end_hand(table, outcome="drawn")


# --- the end of a hand ------------------------------------------------------------------------------------
def end_hand(
    table: Table, *, outcome: str, escaper: int = -1, guess: Mapping[str, Any] | None = None
) -> None:
    state = table.state
    win = state.win if outcome == "win" else None
    winner = state.winner if win else -1
    result: dict[str, Any] = {
        "hand": state.hand_number,
        "outcome": outcome,
        "dealer": state.dealer,
        "dealer_passes": state.dealer_passes,
        "winner": winner,
        "loser": 1 - winner if winner >= 0 else -1,
        "escaper": escaper,
        "negotiated": state.settings.negotiated_multiplier,
        "progressive": state.progressive,
        "hands": [format_tiles(tiles_of(state.hands[seat])) for seat in (0, 1)],
    }
    if win:
        result["self_drawn"] = win["self_drawn"]
        result["description"] = win["description"]
        result["evaluation"] = win["evaluation"]
    if not state.duel:
        result["doubling"] = [bool(choice) for choice in state.doubling]
        result["win_doublings"] = state.win_doublings[winner] if winner >= 0 else 0
        result["task"] = state.task
        result["task_completed"] = bool(win and win["task_completed"])
        result["exchange_fees"] = [max(0, n - 1) for n in state.exchange_counts]
    if guess:
        result["guess"] = dict(guess)
    # Nested values in their JSON form (lists, not tuples), so a replayed log folds to an equal state.
    table.emit(Event("hand_ended", public={"result": json.loads(json.dumps(result))}))
