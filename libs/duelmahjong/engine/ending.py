"""Ending hands: exhaustion with duel's extra draws (T9), and the hand result that scoring consumes
(§7, T7, T8).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from duelmahjong.engine.events import Event
from duelmahjong.engine.legal import is_ready
from duelmahjong.engine.sink import Sink
from duelmahjong.rules.tiles import format_tiles, tiles_of

EXTRA_DRAWS = 3  # T9


def exhaust(table: Sink) -> None:
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
def end_hand(table: Sink, *, outcome: str, escaper: int = -1, guess: Mapping[str, Any] | None = None) -> None:
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
