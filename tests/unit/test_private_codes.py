"""Private table codes: the alphabet has no look-alikes, codes are drawn from the secure source, unique
among the live ones, read back whatever the case and spacing, and dead once their entry stops waiting."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.matchmaking import codes

CONFUSABLE = "0O1IL" + "U"


def test_the_alphabet_has_digits_and_capitals_but_no_look_alikes() -> None:
    assert not set(CONFUSABLE) & set(codes.ALPHABET)
    assert set(codes.ALPHABET) | set(CONFUSABLE) == set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert len(set(codes.ALPHABET)) == len(codes.ALPHABET) == 30
    assert codes.LENGTH == 6


def test_codes_are_drawn_from_the_secure_source_over_the_whole_alphabet() -> None:
    drawn = [codes.draw() for _ in range(2000)]
    assert all(codes.well_formed(code) for code in drawn)
    assert set("".join(drawn)) == set(codes.ALPHABET)  # 12000 symbols: each of 30 appears
    assert len(set(drawn)) == len(drawn)  # 7.3e8 codes: 2000 draws collide with probability ~3e-3
    seen: list[str] = []

    def choose(alphabet: str) -> str:
        seen.append(alphabet)
        return secrets.choice(alphabet)

    codes.draw(choose)
    assert seen == [codes.ALPHABET] * codes.LENGTH


@given(st.text(alphabet=codes.ALPHABET, min_size=6, max_size=6), st.data())
def test_a_code_is_read_back_whatever_its_case_and_spacing(code: str, data: st.DataObject) -> None:
    typed = "".join(
        data.draw(st.sampled_from([" ", "", "\t"])) + (c.lower() if data.draw(st.booleans()) else c)
        for c in code
    )
    assert codes.normalise(f"  {typed} ") == code
    assert codes.well_formed(codes.normalise(typed))


@pytest.mark.parametrize("typed", ["", "ABC23", "ABC2345", "ABC-23", "ABCO23", "ABC123", "ÄBC234"])
def test_what_no_code_can_be_is_not_well_formed(typed: str) -> None:
    assert not codes.well_formed(codes.normalise(typed))


class _Entry:
    def __init__(self) -> None:
        self.waiting = True


def _scripted(*issued: str) -> Iterator[str]:
    return itertools.chain.from_iterable(issued)


def test_a_code_is_unique_among_the_live_ones_and_dead_once_its_entry_stops_waiting() -> None:
    # The source draws AAAAAA twice, then BBBBBB: the second entry must not get the first's code.
    symbols = _scripted("AAAAAA", "AAAAAA", "BBBBBB", "AAAAAA")
    live = codes.LiveCodes[_Entry](lambda e: e.waiting, choose=lambda _alphabet: next(symbols))
    first, second, third = _Entry(), _Entry(), _Entry()
    assert live.issue(first) == "AAAAAA"
    assert live.issue(second) == "BBBBBB"
    assert live.find("AAAAAA") is first and live.find("BBBBBB") is second
    assert live.find("CCCCCC") is None
    first.waiting = False  # joined, expired or cancelled
    assert live.find("AAAAAA") is None
    assert live.issue(third) == "AAAAAA"  # a dead code may be issued again
    assert live.find("AAAAAA") is third
    live.forget("AAAAAA")
    assert live.find("AAAAAA") is None and len(live) == 1
    second.waiting = False
    live.sweep()
    assert len(live) == 0
