"""Win check, decompositions, waits and shanten against a brute-force oracle and their definitions.

The oracle below is a plain recursive search written independently of the tables; the properties are
those of issue 3: a hand is winning iff a decomposition exists (or a special form holds); the waits of a
ready hand are exactly the tiles that make it winning; shanten 0 iff ready (13), -1 iff winning (14).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.rules.analysis import (
    decompositions,
    is_seven_pairs,
    is_thirteen_orphans,
    is_winning,
    shanten,
    shape_waits,
    waits,
)
from duelmahjong.rules.errors import InvalidHandError, UnknownProfileError
from duelmahjong.rules.tiles import GREEN_TILES, TERMINALS_AND_HONORS, counts_of, format_tiles, parse_tiles

ERREN_KINDS = [*range(9), *range(27, 34)]


# --- oracle ------------------------------------------------------------------------------------------
def _set_readings(counts: list[int]) -> list[list[str]]:
    """Every multiset of sets covering counts, by removing the lowest tile's set in every possible way."""
    first = next((k for k in range(34) if counts[k]), None)
    if first is None:
        return [[]]
    found: list[list[str]] = []
    candidates = [("pung", (first,) * 3)]
    if first < 27 and first % 9 <= 6:
        candidates.append(("chow", (first, first + 1, first + 2)))
    for name, tiles in candidates:
        if all(counts[k] >= tiles.count(k) for k in tiles):
            for k in tiles:
                counts[k] -= 1
            found.extend([f"{name}{first}", *rest] for rest in _set_readings(counts))
            for k in tiles:
                counts[k] += 1
    return found


def oracle_readings(counts: Sequence[int]) -> set[tuple[int, tuple[str, ...]]]:
    work = list(counts)
    readings = set()
    for pair in range(34):
        if work[pair] >= 2:
            work[pair] -= 2
            readings |= {(pair, tuple(sorted(r))) for r in _set_readings(work)}
            work[pair] += 2
    return readings


def oracle_winning(counts: Sequence[int], profile: str = "duel") -> bool:
    if oracle_readings(counts):
        return True
    if sum(counts) == 14 and all(c % 2 == 0 for c in counts):
        return True
    if profile == "duel" and sum(counts) == 14:
        if all(counts[k] for k in TERMINALS_AND_HONORS) and not any(
            counts[k] for k in range(34) if k not in TERMINALS_AND_HONORS
        ):
            return True
        if all(counts[k] == 0 for k in range(34) if k not in GREEN_TILES):
            return True  # D12 绿一色 free form
    return False


def oracle_waits(counts: Sequence[int], profile: str = "duel") -> list[int]:
    kinds = range(34) if profile == "duel" else ERREN_KINDS
    found = []
    for kind in kinds:
        if counts[kind] < 4:
            more = list(counts)
            more[kind] += 1
            if oracle_winning(more, profile):
                found.append(kind)
    return found


def oracle_shape_waits(counts: Sequence[int], profile: str = "duel") -> list[int]:
    """E15: every kind one more copy of which completes the shape, a fifth copy included."""
    kinds = range(34) if profile == "duel" else ERREN_KINDS
    return [
        kind for kind in kinds if oracle_winning([c + (k == kind) for k, c in enumerate(counts)], profile)
    ]


# --- strategies --------------------------------------------------------------------------------------
@st.composite
def near_winning(draw: st.DrawFn, kinds: Sequence[int] = tuple(range(34)), size: int = 14) -> list[int]:
    """Sets and a pair from ``kinds``, then up to three tiles swapped for random ones: many are wins,
    many are ready, few are far — unlike uniformly random hands."""
    counts = [0] * 34
    tiles: list[int] = []
    blocks = [(k, k, k) for k in kinds] + [(k, k + 1, k + 2) for k in kinds if k < 27 and k % 9 <= 6]
    for _ in range(4):
        fitting = [b for b in blocks if all(counts[k] + b.count(k) <= 4 for k in b)]
        for k in draw(st.sampled_from(fitting)):
            counts[k] += 1
            tiles.append(k)
    pair = draw(st.sampled_from([k for k in kinds if counts[k] <= 2]))
    counts[pair] += 2
    tiles += [pair, pair]
    for _ in range(draw(st.integers(0, 3))):
        out = draw(st.sampled_from(tiles))
        new = draw(st.sampled_from([k for k in kinds if counts[k] < 4]))
        tiles.remove(out)
        counts[out] -= 1
        tiles.append(new)
        counts[new] += 1
    for _ in range(14 - size):
        out = draw(st.sampled_from(tiles))
        tiles.remove(out)
        counts[out] -= 1
    return counts


one_suit = near_winning(kinds=tuple(range(18, 27)))  # dense shapes: many readings, long waits
erren = near_winning(kinds=tuple(ERREN_KINDS))


@st.composite
def random_hand(draw: st.DrawFn, size: int = 14) -> list[int]:
    counts = [0] * 34
    for _ in range(size):
        counts[draw(st.sampled_from([k for k in range(34) if counts[k] < 4]))] += 1
    return counts


hands14 = st.one_of(near_winning(), one_suit, random_hand())
hands13 = st.one_of(near_winning(size=13), near_winning(kinds=tuple(range(18, 27)), size=13), random_hand(13))


# --- properties --------------------------------------------------------------------------------------
@settings(max_examples=300)
@given(hands14)
def test_winning_iff_a_decomposition_or_special_form_exists(counts: list[int]) -> None:
    assert is_winning(counts) == oracle_winning(counts)
    assert bool(decompositions(counts)) == bool(oracle_readings(counts))


@settings(max_examples=300)
@given(hands14)
def test_decompositions_are_exactly_every_distinct_reading(counts: list[int]) -> None:
    found = decompositions(counts)
    as_oracle = {(d.pair, tuple(sorted(f"{b.kind}{b.tile}" for b in d.blocks))) for d in found}
    assert len(as_oracle) == len(found)  # distinct
    assert as_oracle == oracle_readings(counts)
    for reading in found:  # each reading reassembles the hand
        tiles = [reading.pair, reading.pair, *(k for block in reading.blocks for k in block.tiles)]
        assert counts_of(tiles) == counts


@settings(max_examples=300)
@given(hands13)
def test_waits_are_exactly_the_tiles_that_make_it_winning(counts: list[int]) -> None:
    assert waits(counts) == oracle_waits(counts)


@st.composite
def with_a_quad(draw: st.DrawFn, kinds: Sequence[int] = tuple(range(34))) -> list[int]:
    """A 13-tile hand of near-winning shape holding four copies of some kind (E15's fifth copy)."""
    counts = draw(near_winning(kinds=kinds, size=13))
    quad = draw(st.sampled_from([k for k in kinds if counts[k]]))
    while counts[quad] < 4:
        out = draw(st.sampled_from([k for k in range(34) if counts[k] and k != quad]))
        counts[out] -= 1
        counts[quad] += 1
    return counts


@settings(max_examples=300)
@given(st.one_of(hands13, with_a_quad()))
def test_E15_shape_waits_are_exactly_the_kinds_that_complete_the_shape(counts: list[int]) -> None:
    found = shape_waits(counts)
    assert found == oracle_shape_waits(counts)
    assert waits(counts) == [kind for kind in found if counts[kind] < 4]  # availability drops held fours


@settings(max_examples=200)
@given(with_a_quad(kinds=tuple(ERREN_KINDS)))
def test_E15_erren_shape_waits_with_a_kind_held_four_times(counts: list[int]) -> None:
    assert shape_waits(counts, profile="erren") == oracle_shape_waits(counts, "erren")


def test_E15_shape_waits_count_kinds_whose_four_copies_are_held() -> None:
    # Concealed 2222m: a fifth 2m completes 123 234 222 456 55 by shape; only 5m can still come.
    assert format_tiles(shape_waits(c("1222233445556m"), profile="erren")) == "25m"
    assert format_tiles(waits(c("1222233445556m"), profile="erren")) == "5m"
    # The fourth 8m is in the 888m pung: 8m is a winning kind by shape, not one left to draw.
    pung = parse_tiles("888m")
    assert format_tiles(shape_waits(c("5566778m555z"), profile="erren", melded_tiles=pung)) == "58m"
    assert format_tiles(waits(c("5566778m555z"), profile="erren", melded_tiles=pung)) == "5m"
    # 1111m waits on a fifth 1m by shape (111m + 11m) and on nothing that can be drawn.
    assert format_tiles(shape_waits(c("1111m"))) == "1m" and waits(c("1111m")) == []
    assert format_tiles(shape_waits(c("1111z"), profile="erren")) == "1z"


@settings(max_examples=150)
@given(erren)
def test_erren_has_no_thirteen_orphans_or_green_free_form(counts: list[int]) -> None:
    assert is_winning(counts, profile="erren") == oracle_winning(counts, "erren")
    for kind in range(34):
        if counts[kind]:
            fewer = list(counts)
            fewer[kind] -= 1
            assert waits(fewer, profile="erren") == oracle_waits(fewer, "erren")
            break


@settings(max_examples=300)
@given(hands13)
def test_shanten_zero_iff_ready_and_one_draw_moves_one_step(counts: list[int]) -> None:
    value = shanten(counts)
    assert (value == 0) == bool(waits(counts))
    # By definition one useful draw lowers shanten by one and no draw lowers it by more.
    after = [
        shanten([c + (k == kind) for k, c in enumerate(counts)]) for kind in range(34) if counts[kind] < 4
    ]
    assert min(after) == value - 1


@settings(max_examples=300)
@given(hands14)
def test_shanten_minus_one_iff_winning_and_the_best_discard_keeps_it(counts: list[int]) -> None:
    value = shanten(counts)
    assert (value == -1) == is_winning(counts)
    after = [shanten([c - (k == kind) for k, c in enumerate(counts)]) for kind in range(34) if counts[kind]]
    assert min(after) == max(value, 0)


# --- examples ----------------------------------------------------------------------------------------
def c(text: str) -> list[int]:
    return counts_of(parse_tiles(text))


def test_nine_gates_waits_on_all_nine() -> None:
    assert format_tiles(waits(c("1112345678999m"))) == "123456789m"


def test_four_held_copies_are_not_a_wait() -> None:
    assert waits(c("1111m234p567p789s")) == []
    assert shanten(c("1111m234p567p789s")) == 1


def test_seven_pairs_counts_four_identical_tiles_as_two_pairs_e6() -> None:
    assert is_seven_pairs(c("1111m22p33s445566z")) and is_winning(c("1111m22p33s445566z"))
    assert format_tiles(waits(c("111m22p33s445566z"))) == "1m"  # the fourth 1m: 龙七对 shape (D2)
    assert is_winning(c("1111m2233445566z"), profile="erren")


def test_thirteen_orphans_is_duel_only() -> None:
    assert is_thirteen_orphans(c("19m19p19s12345677z")) and is_winning(c("19m19p19s12345677z"))
    assert format_tiles(waits(c("19m19p19s1234567z"))) == "19m19p19s1234567z"  # thirteen-sided
    assert shanten(c("19m19p19s1234567z")) == 0
    assert not is_thirteen_orphans(c("189m19p19s1234567z")) and not is_winning(c("189m19p19s1234567z"))
    with pytest.raises(InvalidHandError, match="not in the erren tile set"):
        is_winning(c("19m19p19s12345677z"), profile="erren")  # erren has no 筒/条


def test_all_green_free_form_d12() -> None:
    assert is_winning(c("22233346888s666z")) and not decompositions(c("22233346888s666z"))
    assert not is_winning(c("22233346888s677z"))
    # 11 concealed tiles are a free-form win only when the melds are given and green too.
    assert not is_winning(c("22233346888s"))
    assert is_winning(c("22233346888s"), melded_tiles=parse_tiles("666z"))
    assert not is_winning(c("22233346888s"), melded_tiles=parse_tiles("777z"))
    assert shanten(c("2223334688s"), melded_tiles=parse_tiles("666z")) == 0


def test_small_hands_after_melds() -> None:
    assert is_winning(c("55z")) and format_tiles(waits(c("5z"))) == "5z"
    assert format_tiles(waits(c("23m55z"))) == "14m" and shanten(c("1m")) == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: is_winning(c("123m456p789s111z")), "needs 2, 5, 8, 11, 14 concealed tiles, got 12"),
        (lambda: waits(c("123m456p789s11z")), "needs 1, 4, 7, 10, 13 concealed tiles, got 11"),
        (lambda: is_winning([0] * 33), "34 entries, got 33"),
        (lambda: is_winning([5] + [0] * 33), "5 copies of 1m"),
        (lambda: shanten([-1] + [0] * 33), "-1 copies of 1m"),
        (lambda: waits(c("1234567899m123p"), profile="erren"), "1p is not in the erren tile set"),
    ],
)
def test_bad_input_raises_invalid_hand_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidHandError, match=message):
        call()


def test_unknown_profile() -> None:
    with pytest.raises(UnknownProfileError):
        is_winning(c("11z"), profile="riichi")
