"""Tiles and notation: constants, helpers, parse/format round trips, readable errors (decisions §1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duelmahjong.rules.errors import InvalidHandError, NotationError, RulesError, UnknownProfileError
from duelmahjong.rules.tiles import (
    EAST,
    F1,
    F8,
    GREEN,
    GREEN_TILES,
    M1,
    M9,
    NORTH,
    P5,
    RED,
    S1,
    S9,
    TERMINALS_AND_HONORS,
    WHITE,
    Tile,
    check_profile_kinds,
    counts_of,
    format_tiles,
    is_honor,
    is_simple,
    is_terminal,
    is_terminal_or_honor,
    parse_tiles,
    profile_kinds,
    rank_of,
    suit_of,
    tiles_of,
)

# Up to four copies of each of the 34 kinds, plus each flower at most once.
_kinds = st.lists(st.integers(0, 41), max_size=20).filter(
    lambda kinds: all(kinds.count(k) <= (1 if k >= 34 else 4) for k in set(kinds))
)


def test_kind_numbering_follows_rules_section_1() -> None:
    assert parse_tiles("1m9m5p1s9s1z4z5z6z7z1f8f") == [
        M1,
        M9,
        P5,
        S1,
        S9,
        EAST,
        NORTH,
        WHITE,
        GREEN,
        RED,
        F1,
        F8,
    ]
    assert [suit_of(k) for k in (M1, P5, S9, RED, F8)] == ["m", "p", "s", "z", "f"]
    assert [rank_of(k) for k in (M9, P5, S1, RED, F8)] == [9, 5, 1, 7, 8]


def test_helpers_classify_tiles() -> None:
    assert is_terminal(M1) and is_terminal(S9) and not is_terminal(EAST) and not is_terminal(P5)
    assert is_honor(RED) and not is_honor(S9)
    assert is_terminal_or_honor(EAST) and not is_terminal_or_honor(P5)
    assert is_simple(P5) and not is_simple(M1) and not is_simple(RED)
    assert format_tiles(TERMINALS_AND_HONORS) == "19m19p19s1234567z"
    assert format_tiles(GREEN_TILES) == "23468s6z"  # D12 绿一色


def test_format_is_canonical_order_m_p_s_z_f() -> None:
    assert format_tiles(parse_tiles("1f7z9s5p1m")) == "1m5p9s7z1f"
    assert format_tiles(parse_tiles("55z123m")) == "123m55z"


@given(_kinds)
def test_notation_round_trips(kinds: list[int]) -> None:
    text = format_tiles(kinds)
    assert sorted(parse_tiles(text)) == sorted(kinds)
    assert format_tiles(parse_tiles(text)) == text


@given(_kinds)
def test_counts_and_tiles_are_inverse(kinds: list[int]) -> None:
    counts = counts_of(kinds)
    assert len(counts) == 34
    assert tiles_of(counts) == sorted(k for k in kinds if k < 34)


@given(st.integers(0, 41))
def test_tile_value_type_round_trips(kind: int) -> None:
    tile = Tile(kind)
    assert Tile.parse(str(tile)) == tile
    assert eval(repr(tile), {"Tile": Tile}) == tile  # a repr you can paste back


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("8z", "there is no tile 8z"),
        ("0m", "there is no tile 0m"),
        ("9f", "there is no tile 9f"),
        ("123", "have no suit letter"),
        ("m", "has no ranks"),
        ("12x", "unexpected character 'x'"),
    ],
)
def test_bad_notation_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(NotationError, match=message):
        parse_tiles(text)


def test_errors_are_value_errors_with_specific_classes() -> None:
    assert issubclass(NotationError, RulesError) and issubclass(InvalidHandError, RulesError)
    assert issubclass(RulesError, ValueError)
    with pytest.raises(InvalidHandError, match="fifth copy of 5p"):
        counts_of(parse_tiles("55555p"))
    with pytest.raises(InvalidHandError, match="not a tile kind"):
        counts_of([42])
    with pytest.raises(NotationError, match="exactly one tile"):
        Tile.parse("12m")
    with pytest.raises(NotationError, match="must be a string"):
        parse_tiles(123)  # type: ignore[arg-type]


def test_profile_tile_sets() -> None:
    assert len(profile_kinds("duel")) == 34
    assert format_tiles(profile_kinds("erren")) == "123456789m1234567z12345678f"
    with pytest.raises(InvalidHandError, match="5p is not in the erren tile set"):
        check_profile_kinds(parse_tiles("1m5p"), "erren")
    with pytest.raises(InvalidHandError, match="1f is not in the duel tile set"):
        check_profile_kinds(parse_tiles("1f"), "duel")
    with pytest.raises(UnknownProfileError, match="unknown profile 'riichi'"):
        profile_kinds("riichi")
