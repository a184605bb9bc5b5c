"""Ending hands: exhaustion with duel's extra draws (T9), and the hand result that scoring consumes
(§7, T7, T8).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from duelmahjong.engine.events import Exhausted, HandEnded
from duelmahjong.engine.legal import is_ready
from duelmahjong.engine.outcome import ErrenTerms, Guess, Outcome, Termination, Win
from duelmahjong.engine.sink import Sink
from duelmahjong.rules.tiles import format_tiles, tiles_of

EXTRA_DRAWS = 3  # T9


def exhaust(table: Sink) -> None:
    """T9: erren → drawn hand; duel → the ready player (the first ready if both) draws up to 3 extra."""
    state = table.state
    if not state.duel:
        table.emit(Exhausted(ready=(False, False)))
        end_hand(table, Termination.DRAWN)
        return
    ready = [is_ready(state, seat) for seat in (0, 1)]
    if not any(ready):
        table.emit(Exhausted(ready=(False, False)))
        end_hand(table, Termination.DRAWN)
        return
    if all(ready):
        # Both ready: the one who became ready first draws; -1 (never recorded) counts as last.
        since = [s if s >= 0 else 1 << 30 for s in state.tenpai_since]
        first = 0 if since[0] <= since[1] else 1
    else:
        first = ready.index(True)
    extra_draws = min(EXTRA_DRAWS, len(state.pool))
    table.emit(Exhausted(ready=tuple(ready), extra_seat=first, extra_draws=extra_draws))
    if not extra_draws:
        end_hand(table, Termination.DRAWN)


# --- the end of a hand ------------------------------------------------------------------------------------
def end_hand(table: Sink, termination: Termination, *, escaper: int = -1, guess: Guess | None = None) -> None:
    state = table.state
    won = state.win if termination is Termination.WIN else None
    winner = state.winner if won else -1
    win = None
    if won:
        # The description and evaluation in their JSON form (lists, not tuples), as a replayed log reads.
        win = Win(won.self_drawn, _plain(won.description), _plain(won.evaluation))
    erren = None
    if not state.duel:
        erren = ErrenTerms(
            doubling=(bool(state.doubling[0]), bool(state.doubling[1])),
            win_doublings=state.win_doublings[winner] if winner >= 0 else 0,
            task=_plain(state.task) if state.task is not None else None,
            task_completed=bool(won and won.task_completed),
            exchange_fees=(max(0, state.exchange_counts[0] - 1), max(0, state.exchange_counts[1] - 1)),
        )
    outcome = Outcome(
        termination,
        hand=state.hand_number,
        dealer=state.dealer,
        dealer_passes=state.dealer_passes,
        winner=winner,
        escaper=escaper,
        negotiated=state.settings.negotiated_multiplier,
        progressive=state.progressive,
        hands=(format_tiles(tiles_of(state.hands[0])), format_tiles(tiles_of(state.hands[1]))),
        win=win,
        erren=erren,
        guess=guess,
    )
    table.emit(HandEnded(outcome=outcome))


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(value))
    return result
