"""``observe(table, seat)``: a seat's :class:`SeatObservation` read from the engine.

The visibility is ``engine/view.py``'s (its ``shown_turn`` decides the phase and seat to move a seat
is shown), read straight from the state rather than through the view's JSON: the env builds one
observation per step, so this is on its hot path.
"""

from __future__ import annotations

from duelmahjong.engine.state import OVER, TableState
from duelmahjong.engine.table import Table
from duelmahjong.engine.view import shown_turn
from duelmahjong.env.observation import HIDDEN_KONG, Meld, SeatObservation, task_of

_CONCEALED_KONG = "concealed_kong"


def _melds(state: TableState, seat: int, viewer: int) -> tuple[Meld, ...]:
    hide = seat != viewer and state.phase != OVER
    return tuple(
        Meld(kind, HIDDEN_KONG if hide and kind == _CONCEALED_KONG else tile)
        for kind, tile in state.melds[seat]
    )


def observe(table: Table, seat: int) -> SeatObservation:
    """What ``seat`` may know now (docs/env.md "No leak"), its legal actions included."""
    state = table.state
    phase, to_move = shown_turn(state, seat)
    mine = state.current == seat
    doubling = state.doubling
    public = None not in doubling
    marks = state.river_marks
    return SeatObservation(
        profile=state.settings.profile,
        seat=seat,
        phase=phase,
        to_move=to_move,
        hand_number=state.hand_number,
        dealer=state.dealer,
        round_wind=state.round_wind,
        progressive=state.progressive,
        wall_remaining=state.wall_remaining,
        pool_remaining=len(state.pool),
        bonus_tiles=tuple(sorted(state.bonus)),
        task=task_of(state.task),
        last_discard=state.last_discard,
        hand=tuple(state.hands[seat]),
        drawn=state.last_draw if mine else -1,
        hand_sizes=(state.sizes[0], state.sizes[1]),
        melds=(_melds(state, 0, seat), _melds(state, 1, seat)),
        rivers=(tuple(m[0] for m in marks[0]), tuple(m[0] for m in marks[1])),
        river_flags=(tuple(m[1] for m in marks[0]), tuple(m[1] for m in marks[1])),
        flowers=(tuple(sorted(state.flowers[0])), tuple(sorted(state.flowers[1]))),
        ready=(state.ready[0], state.ready[1]),
        doubling=(
            doubling[0] if public or seat == 0 else None,
            doubling[1] if public or seat == 1 else None,
        ),
        win_doublings=(state.win_doublings[0], state.win_doublings[1]),
        items=tuple(sorted((item, count) for item, count in state.items[seat].items() if count > 0)),
        offer=state.offer if mine else "",
        offer_tile=state.offer_tile if mine and state.offer else -1,
        legal=tuple(table.legal_actions(seat)),
    )
