"""Random erren winning hands: the evaluator never crashes and the breakdown keeps the §3 decisions."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.rules.catalogue_erren import ERREN
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.evaluate import evaluate
from duelmahjong.rules.tiles import HONORS, format_tiles

ERREN_KINDS = [*range(9), *sorted(HONORS)]
FLOWER_NAMES = [f"{n}f" for n in range(1, 9)]
WINDS = ["east", "south", "west", "north"]
FLAGS = [
    "declared_ready", "declared_first_turn", "first_turn_after_declare", "last_wall_tile", "last_discard",
    "after_kong", "after_flower_replacement", "robbing_kong", "fourth_tile_visible",
]  # fmt: skip
FLOWER_FANS = {"flower_tiles", "four_seasons", "four_plants", "no_flowers"}
KONGS = ["exposed_kong", "concealed_kong", "added_kong"]
FIRST_TURN_NEVER = [flag for flag in FLAGS if flag != "after_flower_replacement"]


@st.composite
def erren_wins(draw: st.DrawFn) -> dict[str, Any]:
    """A §7 description of a winning erren hand: four sets and a pair, or seven pairs."""
    counts = [0] * 34
    concealed: list[int] = []
    melds: list[dict[str, str]] = []

    def take(kind: int, n: int) -> bool:
        if counts[kind] + n > 4:
            return False
        counts[kind] += n
        return True

    if draw(st.integers(0, 5)) == 0:  # seven pairs, four identical tiles allowed (E6)
        for _ in range(7):
            kind = draw(st.sampled_from(ERREN_KINDS).filter(lambda k: counts[k] <= 2))
            take(kind, 2)
            concealed += [kind, kind]
    else:
        for _ in range(4):
            if draw(st.booleans()):
                low = draw(st.integers(0, 6).filter(lambda k: all(counts[k + i] < 4 for i in range(3))))
                tiles = [low, low + 1, low + 2]
                for kind in tiles:
                    take(kind, 1)
                meld = "chi" if draw(st.integers(0, 3)) == 0 else None
            else:
                kind = draw(st.sampled_from(ERREN_KINDS).filter(lambda k: counts[k] == 0))
                meld = draw(st.sampled_from([None, None, "pong", *KONGS]))
                size = 4 if meld in KONGS else 3
                take(kind, size)
                tiles = [kind] * size
            if meld is None:
                concealed += tiles
            else:
                melds.append({"kind": meld, "tiles": format_tiles(tiles)})
        pair = draw(st.sampled_from(ERREN_KINDS).filter(lambda k: counts[k] <= 2))
        take(pair, 2)
        concealed += [pair, pair]
    win = draw(st.sampled_from(concealed))
    concealed.remove(win)
    context: dict[str, Any] = {flag: True for flag in FLAGS if draw(st.integers(0, 5)) == 0}
    context["flowers"] = draw(st.lists(st.sampled_from(FLOWER_NAMES), unique=True, max_size=8))
    context["dealer"] = draw(st.booleans())
    context["round_wind"] = draw(st.sampled_from(WINDS))
    self_drawn = draw(st.booleans())
    if not melds and draw(st.integers(0, 5)) == 0:
        event = draw(st.sampled_from(["dealer_initial_hand", "nondealer_first_draw", "dealer_first_discard"]))
        context["first_turn_win"] = event
        # The event says who won and how (descriptions that contradict it are rejected).
        self_drawn = event != "dealer_first_discard"
        context["dealer"] = event == "dealer_initial_hand"
        for flag in FIRST_TURN_NEVER:
            context.pop(flag, None)  # before any claim, kong, declaration (T3) or shown copy; wall full
    if counts[win] > 1:
        context.pop("robbing_kong", None)  # the robbed tile is the fourth copy (D13)
    if win in concealed:
        context.pop("fourth_tile_visible", None)  # E13: the other three copies are shown, not held
    if draw(st.booleans()):  # E17: the dealer sits East, the non-dealer West
        context["seat_wind"] = "east" if context["dealer"] else "west"
    if any(meld["kind"] not in ("concealed_kong", "exposed_kong") for meld in melds):
        context.pop("declared_first_turn", None)  # 天听 comes before any claim; then only kongs (T3)
    if not self_drawn or context.get("robbing_kong"):
        context.pop("after_flower_replacement", None)  # a flower replacement is a draw (E14)
    return {
        "profile": "erren",
        "concealed": format_tiles(concealed),
        "melds": melds,
        "win_tile": format_tiles([win]),
        "self_drawn": self_drawn,
        "context": context,
    }


@settings(max_examples=300, deadline=None)
@given(erren_wins())
def test_random_erren_wins_score_consistently(hand: dict[str, Any]) -> None:
    desc = HandDescription.from_json(hand)
    result = evaluate(desc)
    fans = {p.id: p.fan for p in result.patterns}
    assert result.total_fan == sum(fans.values())
    assert not result.capped and not result.limit
    # E1: nothing scored is excluded by something else scored.
    for scored in fans:
        assert not ERREN[scored].excludes & fans.keys(), scored
    # E5: 无字 exactly when there is no honour.
    assert ("no_honors" in fans) == (not any(kind in HONORS for kind in desc.all_tiles()))
    # E14: one fan per flower; 无花牌 exactly when there is none.
    flowers = desc.context.flowers
    assert fans.get("flower_tiles", 0) == len(flowers)
    assert ("no_flowers" in fans) == (not flowers)
    if desc.context.after_flower_replacement:
        assert "out_with_replacement_tile" not in fans
    # E13: a robbed kong is the opponent's tile, never a self-draw (whatever self_drawn says).
    if desc.context.robbing_kong:
        assert not fans.keys() & {"self_drawn", "fully_concealed_hand", "out_with_replacement_tile"}
    # E15: at most one of 边张 / 坎张 / 单钓.
    assert len(fans.keys() & {"edge_wait", "closed_wait", "single_wait"}) <= 1
    # E16: flower fans never count toward 起和.
    toward = sum(fan for pid, fan in fans.items() if pid not in FLOWER_FANS)
    assert result.meets_minimum == (toward >= 8)
