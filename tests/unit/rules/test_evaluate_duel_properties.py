"""Properties of duel evaluation (hypothesis): random winning hands always score within the D9 bounds,
and evaluation fails exactly when the tiles do not win."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.rules.analysis import decompositions, is_winning
from duelmahjong.rules.arrangement import _standard_readings
from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import InvalidHandError
from duelmahjong.rules.evaluate import evaluate
from duelmahjong.rules.tiles import format_tiles, parse_tiles

# --- properties -----------------------------------------------------------------------------------------
MELD_KINDS_OF = {"chow": ("chi",), "pung": ("pong", "exposed_kong", "concealed_kong", "added_kong")}
FLAGS = ("declared_ready", "last_wall_tile", "last_discard", "after_kong", "robbing_kong")


def random_winning_hand(rng: random.Random) -> dict[str, Any]:
    """Four sets and a pair (copies respected), some sets declared, a random winning tile and context."""
    counts = [0] * 34
    sets: list[tuple[str, int]] = []
    while len(sets) < 4:
        if rng.random() < 0.5:
            low = rng.choice([suit * 9 + rank for suit in range(3) for rank in range(7)])
            if all(counts[low + i] < 4 for i in range(3)):
                sets.append(("chow", low))
                for i in range(3):
                    counts[low + i] += 1
        else:
            tile = rng.randrange(34)
            if counts[tile] <= 1:
                sets.append(("pung", tile))
                counts[tile] += 3
    pair = rng.choice([tile for tile in range(34) if counts[tile] <= 2])
    concealed = [pair, pair]
    melds = []
    for kind, tile in sets:
        tiles = [tile, tile + 1, tile + 2] if kind == "chow" else [tile] * 3
        if rng.random() < 0.3:
            meld_kind = rng.choice(MELD_KINDS_OF[kind])
            if meld_kind.endswith("kong"):
                if counts[tile] + counts[pair] * (pair == tile) >= 4:
                    meld_kind = "pong"
                else:
                    tiles.append(tile)
                    counts[tile] += 1
            melds.append({"kind": meld_kind, "tiles": format_tiles(tiles)})
        else:
            concealed.extend(tiles)
    win = concealed.pop(rng.randrange(len(concealed)))
    context = {flag: True for flag in FLAGS if rng.random() < 0.15}
    if win in concealed or any(win in parse_tiles(meld["tiles"]) for meld in melds):
        context.pop("robbing_kong", None)  # D13: the robbed tile is the fourth copy, held only once
    if rng.random() < 0.5:
        context["revealed_bonus_tiles"] = [format_tiles([rng.randrange(34)]) for _ in range(2)]
    return {
        "profile": "duel",
        "concealed": format_tiles(concealed),
        "melds": melds,
        "win_tile": format_tiles([win]),
        "self_drawn": rng.random() < 0.5,
        "context": context,
    }


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_random_winning_hands_always_score_within_the_d9_bounds(rng: random.Random) -> None:
    desc = HandDescription.from_json(random_winning_hand(rng))
    assert HandDescription.from_json(desc.to_json()) == desc
    result = evaluate(desc)
    assert result.patterns and result.meets_minimum
    if result.limit:
        assert result.total_fan in (13, 32, 64)
        assert all(DUEL[p.id].limit_tier is not None for p in result.patterns)
    else:
        assert 1 <= result.total_fan <= 13
        assert result.capped == (sum(p.fan for p in result.patterns) > 13)
        assert ("basic_win" in {p.id for p in result.patterns}) == all(
            p.id in ("basic_win", "bonus_tiles") for p in result.patterns
        )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 33), min_size=14, max_size=14))
def test_evaluate_raises_exactly_when_the_tiles_do_not_win(kinds: list[int]) -> None:
    if max(kinds.count(kind) for kind in kinds) > 4:
        return
    text = format_tiles(kinds[:13])
    desc = HandDescription.from_json(
        {"profile": "duel", "concealed": text, "win_tile": format_tiles(kinds[13:])}
    )
    counts = [kinds.count(kind) for kind in range(34)]
    if is_winning(counts, profile="duel"):
        assert evaluate(desc).total_fan >= 1
    else:
        with pytest.raises(InvalidHandError, match="not a winning hand"):
            evaluate(desc)


def _as_readings(decompositions: list[Any]) -> set[tuple[int, tuple[int, ...], tuple[int, ...]]]:
    return {
        (
            d.pair,
            tuple(sorted(b.tile for b in d.blocks if b.kind == "chow")),
            tuple(sorted(b.tile for b in d.blocks if b.kind == "pung")),
        )
        for d in decompositions
    }


@settings(max_examples=300, deadline=None)
@given(st.randoms(use_true_random=False))
def test_arrangement_readings_are_the_analysis_decompositions(rng: random.Random) -> None:
    # The evaluator reads the per-suit tables itself (memoised); it must find exactly what
    # analysis.decompositions finds, for winning hands and for arbitrary 14-tile hands alike.
    if rng.random() < 0.5:
        data = random_winning_hand(rng)
        kinds = [*parse_tiles(data["concealed"]), *parse_tiles(data["win_tile"])]
        kinds += [kind for meld in data["melds"] for kind in parse_tiles(meld["tiles"])][: 14 - len(kinds)]
    else:
        wall = [kind for kind in range(34) for _ in range(4)]
        kinds = rng.sample(wall, 14)
    counts = [kinds.count(kind) for kind in range(34)]
    if max(counts) > 4:
        return
    assert set(_standard_readings(counts)) == _as_readings(decompositions(counts))
