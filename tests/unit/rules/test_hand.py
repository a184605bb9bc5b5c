"""Hand and Meld: notation round trips, validation errors, draw/discard, analysis through the hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.rules import analysis
from duelmahjong.rules.errors import InvalidHandError, NotationError, UnknownProfileError
from duelmahjong.rules.hand import MELD_KINDS, Hand, Meld
from duelmahjong.rules.tiles import EAST, format_tiles, parse_tiles


@st.composite
def hands(draw: st.DrawFn) -> Hand:
    """A legal duel hand: 0–4 melds of any kind, the rest concealed, 13 or 14 tiles."""
    held = [0] * 34
    melds = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(MELD_KINDS))
        if kind == "chi":
            first = draw(st.integers(0, 26).filter(lambda k: k % 9 <= 6))
            tiles = (first, first + 1, first + 2)
        else:
            tiles = (draw(st.integers(0, 33)),) * (3 if kind == "pong" else 4)
        if all(held[k] + tiles.count(k) <= 4 for k in tiles):
            for k in tiles:
                held[k] += 1
            melds.append(Meld(kind, tiles))
    wall = [k for k in range(34) for _ in range(4 - held[k])]
    size = 13 + draw(st.integers(0, 1)) - 3 * len(melds)
    concealed = draw(st.permutations(wall))[:size]
    return Hand(tuple(concealed), tuple(melds))


@settings(max_examples=150)
@given(hands())
def test_hand_notation_round_trips(hand: Hand) -> None:
    assert Hand.parse(str(hand)) == hand
    assert eval(repr(hand), {"Hand": Hand}) == hand


def test_hand_prints_canonically_with_melds_and_flowers() -> None:
    hand = Hand.parse("2f 1z 789m 1f 456m chi:231m concealed_kong:5555z", profile="erren")
    assert str(hand) == "456789m1z12f chi:123m concealed_kong:5555z"
    assert repr(hand) == "Hand.parse('456789m1z12f chi:123m concealed_kong:5555z', profile='erren')"


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("123m456p789s11z", InvalidHandError, "13 or 14 tiles"),
        ("123m456p789s11z pong:555z pong:666z", InvalidHandError, "13 or 14 tiles"),
        ("11111m456p789s11z", InvalidHandError, "5 copies of 1m"),
        ("11m456p789s12z pong:111m", InvalidHandError, "5 copies of 1m"),
        (
            "123m456p789s1z chi:135m",
            InvalidHandError,
            "a chi is three consecutive tiles of one suit, not 135m",
        ),
        ("123m456p789s1z chi:123z", InvalidHandError, "a chi is three consecutive tiles of one suit"),
        ("123m456p789s1z chi:89m1p", InvalidHandError, "a chi is three consecutive tiles of one suit"),
        ("123m456p789s1z pong:556z", InvalidHandError, "a pong is three identical tiles, not 556z"),
        (
            "123m456p789s1z exposed_kong:555z",
            InvalidHandError,
            "an exposed kong is four identical tiles, not 555z",
        ),
        ("123m456p789s1z kong:5555z", NotationError, "unknown meld kind 'kong'"),
        ("123m456p789s1z chi234m", NotationError, "unexpected character 'c'"),
        ("123m456p789s1z 1f", InvalidHandError, "1f is not in the duel tile set"),
    ],
)
def test_invalid_hands_say_what_is_wrong(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Hand.parse(text)


def test_profile_tile_set_is_enforced() -> None:
    with pytest.raises(InvalidHandError, match="5p is not in the erren tile set"):
        Hand.parse("123456789m5p111z", profile="erren")
    with pytest.raises(UnknownProfileError):
        Hand.parse("123456789m111z2z", profile="gb")


def test_draw_and_discard_return_new_hands() -> None:
    hand = Hand.parse("123m456p789s1122z")
    drawn = hand.draw(EAST)
    assert str(drawn) == "123m456p789s11122z" and drawn.tile_count == 14 and hand.tile_count == 13
    assert drawn.is_winning() and not hand.is_winning()
    assert drawn.discard(EAST) == hand
    with pytest.raises(InvalidHandError, match="cannot discard 9m"):
        drawn.discard(parse_tiles("9m")[0])
    with pytest.raises(InvalidHandError, match="only draw into a 13-tile hand"):
        drawn.draw(EAST)
    with pytest.raises(InvalidHandError, match="set aside"):
        Hand.parse("123m456789m1122z", profile="erren").draw(parse_tiles("1f")[0])


def test_waits_skip_a_kind_whose_four_copies_are_held_counting_melds() -> None:
    # 111z pong + a single 1z would be a wait on the 1z the hand itself holds as its fourth copy.
    hand = Hand.parse("123m456p789s1z pong:111z")
    assert hand.waits() == [] and not hand.is_ready()
    assert format_tiles(Hand.parse("123m456p789s2z pong:111z").waits()) == "2z"


def test_all_green_free_form_counts_melds_d12() -> None:
    hand = Hand.parse("22233346888s pong:666z")  # 11 concealed, no sets+pair reading
    assert hand.tile_count == 14 and hand.decompositions() == []
    assert hand.is_winning() and hand.shanten() == -1
    assert not Hand.parse("22233346888s pong:777z").is_winning()  # 中 is not green
    # Every green kind completes the free form; 5s completes the standard form 222 333 456 88.
    assert format_tiles(Hand.parse("2223334688s pong:666z").waits()) == "234568s6z"


def test_meld_facts() -> None:
    kong = Meld.parse("concealed_kong:1111m")
    assert kong.is_kong and kong.is_concealed and kong.tile == 0 and str(kong) == "concealed_kong:1111m"
    assert not Hand.parse("123m456p1z chi:789s pong:555z").is_concealed
    assert Hand.parse("123m456p789s1z concealed_kong:5555z").is_concealed
    assert format_tiles(Hand.parse("123m456p1z chi:789s pong:555z").all_tiles) == "123m456p789s1555z"


@settings(max_examples=150)
@given(hands())
def test_hand_analysis_agrees_with_the_count_vector_api(hand: Hand) -> None:
    counts = list(hand.counts)
    melded = hand.melded_tiles
    assert hand.shanten() == analysis.shanten(counts, melded_tiles=melded)
    if hand.tile_count == 14:
        assert hand.is_winning() == analysis.is_winning(counts, melded_tiles=melded)
        assert hand.decompositions() == analysis.decompositions(counts)
    else:
        assert hand.waits() == analysis.waits(counts, melded_tiles=melded)
        assert all(hand.draw(kind).is_winning() for kind in hand.waits())
