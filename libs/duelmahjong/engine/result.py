"""From the state of a table to what scoring needs: the docs/decisions.md §7 hand description and its score.

Every context flag is derived from the play recorded in the state (who drew what from where, what was
declared and when), never typed in by hand. Scoring itself is the rules library's: ``evaluate``.
"""

from __future__ import annotations

import json
from typing import Any

from duelmahjong.engine.state import FROM_FLOWER, FROM_KONG, FROM_POOL, TableState
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.evaluate import Evaluation, evaluate
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tiles import WIND_NAMES, format_tiles, tile_name, tiles_of

MELD_SIZES = {"chi": 3, "pong": 3, "exposed_kong": 4, "concealed_kong": 4, "added_kong": 4}


def meld_tiles(kind: str, tile: int) -> list[int]:
    return [tile, tile + 1, tile + 2] if kind == "chi" else [tile] * MELD_SIZES[kind]


def seat_wind(state: TableState, seat: int) -> str:
    """E17: the dealer sits East, the non-dealer West (对家)."""
    return "east" if seat == state.dealer else "west"


def describe_win(
    state: TableState, seat: int, win_tile: int, *, self_drawn: bool, robbing: bool = False
) -> dict[str, Any]:
    """The §7 description of ``seat`` winning on ``win_tile`` in the current state (JSON form).

    For a self-draw the winning tile is already in the hand; for a discard or a robbed kong it is not.
    """
    counts = list(state.hands[seat])
    if self_drawn:
        counts[win_tile] -= 1
    source = state.draw_source
    visible_others = state.visible[win_tile] - (0 if self_drawn else 1)
    context: dict[str, Any] = {
        "dealer": seat == state.dealer,
        "seat_wind": seat_wind(state, seat),
        "round_wind": WIND_NAMES[state.round_wind],
        "declared_ready": state.ready[seat],
        "declared_first_turn": state.ready_first_turn[seat],
        # E8 一发: a discard win on the opponent's first discard after declaring, no call in between.
        "first_turn_after_declare": not self_drawn and not robbing and state.first_discard_since_ready(seat),
        # D8 / E2: the last tile of the wall self-drawn; the last discard (wall empty) claimed.
        "last_wall_tile": self_drawn and source != FROM_POOL and state.wall_remaining == 0,
        "last_discard": not self_drawn and not robbing and state.wall_remaining == 0,
        "after_kong": self_drawn and source == FROM_KONG,
        "after_flower_replacement": self_drawn and source == FROM_FLOWER,  # E14: scored as a self-draw
        "robbing_kong": robbing,
        "fourth_tile_visible": visible_others == 3,  # E13
        "extra_draw_after_exhaustion": self_drawn and source == FROM_POOL,  # D8 海底捞月
    }
    first_turn = _first_turn_win(state, seat, self_drawn=self_drawn, robbing=robbing)
    if first_turn:
        context["first_turn_win"] = first_turn
    if state.duel:
        context["revealed_bonus_tiles"] = [tile_name(t) for t in state.bonus]
    else:
        context["flowers"] = [tile_name(t) for t in sorted(state.flowers[seat])]
    return {
        "profile": state.settings.profile,
        "concealed": format_tiles(tiles_of(counts)),
        "melds": [
            {"kind": kind, "tiles": format_tiles(meld_tiles(kind, tile))} for kind, tile in state.melds[seat]
        ],
        "win_tile": tile_name(win_tile),
        # D13: robbing a kong scores as a self-draw in duel (seeds 001/002 "记分按自摸计"); erren's 抢杠胡
        # wins the opponent's tile (seed 000 "和别人自抓开明杠的牌").
        "self_drawn": self_drawn or (robbing and state.duel),
        "context": {key: value for key, value in context.items() if value},
    }


def _first_turn_win(state: TableState, seat: int, *, self_drawn: bool, robbing: bool) -> str | None:
    """D10 / 000: which first-turn event this win is, if any (names the event, not the pattern)."""
    if state.calls or robbing:
        return None  # any claim or kong (the dealer's concealed kong included) spoils first-turn wins
    dealer = state.dealer
    if seat == dealer:
        if self_drawn and state.discards[dealer] == 0 and state.last_draw < 0:
            return "dealer_initial_hand"
        return None
    if self_drawn:
        if state.draws[seat] == 1 and state.discards[seat] == 0 and state.draw_source != FROM_KONG:
            return "nondealer_first_draw"
        return None
    if state.discards[dealer] == 1 and state.discards[seat] == 0:
        return "dealer_first_discard"
    return None


# The last description scored and its evaluation: a win offered in the legal actions (the minimum fan,
# E16) is scored again when it is taken. One (key, value) tuple, replaced whole, so threads cannot mix.
_last_scored: tuple[str, Evaluation | None] = ("", None)


def evaluate_json(description: dict[str, Any]) -> Evaluation:
    """The rules library's score of a §7 description (a pure function of it, so the last is kept)."""
    global _last_scored
    key = json.dumps(description, sort_keys=True)
    last_key, last = _last_scored
    if last is not None and last_key == key:
        return last
    evaluation = evaluate(HandDescription.from_json(description))
    _last_scored = (key, evaluation)
    return evaluation


def meets_minimum(evaluation: Evaluation, profile: str, minimum: int) -> bool:
    """Whether a win reaches the room's 起和; flower fans do not count (E16), limit hands always do."""
    if evaluation.limit:
        return True
    catalogue = get_profile(profile).catalogue
    counted = sum(p.fan for p in evaluation.patterns if catalogue[p.id].counts_toward_minimum)
    return counted >= minimum


def task_completed(state: TableState, seat: int, evaluation: Evaluation) -> bool:
    """T8: whether the winner completed the hand's task."""
    task = state.task
    if not task:
        return False
    kind = task["kind"]
    melds = [meld for meld, _ in state.melds[seat]]
    if kind == "pong":
        return "pong" in melds or "added_kong" in melds
    if kind == "kong":
        return any(meld.endswith("kong") for meld in melds)
    if kind == "double":
        return state.win_doublings[seat] > 0
    return evaluation.fan_of(str(task["pattern"])) > 0
