"""What one seat may know (the mjx split: public / this seat's private / hidden).

A view never holds the opponent's concealed tiles, the wall order, the unused pool's tiles, the seed,
the opponent's secret 开始加倍 choice before both are revealed, or what an opponent's concealed kong is.
The opponent's draws appear only as counts.
"""

from __future__ import annotations

from typing import Any

from duelmahjong.engine.actions import Action
from duelmahjong.engine.result import meld_tiles, seat_wind
from duelmahjong.engine.state import CLAIM, OVER, ROB_KONG, TURN, TableState
from duelmahjong.rules.tiles import WIND_NAMES, format_tiles, tile_name, tile_names, tiles_of


def _melds(state: TableState, seat: int, viewer: int) -> list[dict[str, str]]:
    out = []
    for kind, tile in state.melds[seat]:
        hidden = kind == "concealed_kong" and seat != viewer and state.phase != OVER
        out.append({"kind": kind, "tiles": "" if hidden else format_tiles(meld_tiles(kind, tile))})
    return out


def shown_turn(state: TableState, viewer: int) -> tuple[str, int]:
    """The phase and the seat to move as ``viewer`` may know them.

    A claim or robbing window exists only when the deciding seat has an option (T2, D13), so the other
    seat is shown what follows any discard or added kong: a turn, the discard's receiver to move (it
    draws or claims) or the konger (it draws its replacement unless robbed)."""
    phase, current = state.phase, state.current
    if viewer == current or phase not in (CLAIM, ROB_KONG):
        return phase, current
    return TURN, (current if phase == CLAIM else 1 - current)


def seat_view(state: TableState, viewer: int, legal: list[Action]) -> dict[str, Any]:
    doubling_public = None not in state.doubling
    seats = []
    for seat in (0, 1):
        mine = seat == viewer
        entry: dict[str, Any] = {
            "seat": seat,
            "wind": seat_wind(state, seat) if state.dealer >= 0 else None,
            "dealer": seat == state.dealer,
            "hand_size": sum(state.hands[seat]),
            "melds": _melds(state, seat, viewer),
            "discards": tile_names(state.rivers[seat]),
            "flowers": tile_names(state.flowers[seat]),
            "declared_ready": state.ready[seat],
            "win_doublings": state.win_doublings[seat],
        }
        if mine:
            entry["hand"] = format_tiles(tiles_of(state.hands[seat]))
            entry["items"] = dict(state.items[seat])
        if mine or doubling_public:
            entry["doubling"] = state.doubling[seat]
        seats.append(entry)
    phase, to_move = shown_turn(state, viewer)
    view: dict[str, Any] = {
        "profile": state.settings.profile,
        "seat": viewer,
        "phase": phase,
        "hand_number": state.hand_number,
        "dealer": state.dealer,
        "round_wind": WIND_NAMES[state.round_wind],
        "progressive": state.progressive,
        "to_move": to_move,
        "wall_remaining": state.wall_remaining,
        "pool_remaining": len(state.pool),
        "bonus_tiles": tile_names(state.bonus),
        "task": state.task,
        "last_discard": tile_name(state.last_discard) if state.last_discard >= 0 else None,
        "seats": seats,
        "legal_actions": [str(a) for a in legal],
    }
    if state.current == viewer and state.last_draw >= 0:
        view["drawn"] = tile_name(state.last_draw)
    if state.offer and state.current == viewer:
        view["offer"] = {"kind": state.offer}
        if state.offer_tile >= 0:
            view["offer"]["tile"] = tile_name(state.offer_tile)
    if state.results and state.phase == OVER:
        view["result"] = state.results[-1].to_json()
    return view
