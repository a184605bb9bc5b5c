"""Private table codes: the alphabet has no look-alikes, codes are drawn from the secure source, unique
among the live ones, read back whatever the case and spacing, and free again once their table stops
waiting."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking import codes
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServerDirectory
from services.matchmaking.private import PrivateTables
from tests.unit.matchmaking_fakes import Tables, Wallet, room

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


def _scripted(*issued: str) -> Iterator[str]:
    return iter(issued)


@pytest.mark.asyncio
async def test_a_code_is_unique_among_the_live_ones_and_free_again_once_its_table_stops_waiting() -> None:
    """Codes are keys created only if absent: a draw that hits a live code is drawn again, a code
    whose table no longer waits (its key deleted) may be issued again."""
    drawn = _scripted("AAAAAA", "AAAAAA", "BBBBBB", "AAAAAA")
    mm = await Matchmaker.in_memory(
        {"r": room()}, Wallet(dict.fromkeys("abc", 1000)), Tables(), TableServerDirectory()
    )
    mm.private = PrivateTables(
        mm._fleet, mm.queue, mm.pairings, RateLimiter(per_minute=0, burst=1), lambda: next(drawn)
    )
    first = await mm.open_private("a", "r", 100)
    second = await mm.open_private("b", "r", 100)
    assert (first.private_code, second.private_code) == ("AAAAAA", "BBBBBB")  # AAAAAA drawn twice
    await mm.cancel("a", first.ticket_id)  # its table no longer waits: the code dies with it
    third = await mm.open_private("c", "r", 100)
    assert third.private_code == "AAAAAA"
    await mm.close()
