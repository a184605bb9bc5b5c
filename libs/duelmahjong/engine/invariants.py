"""Invariants of a table, checked after every event by ``duel simulate --check`` and the property tests.

* Tile conservation: every tile of the profile's set is in exactly one place — the live wall, the unused
  pool, the revealed bonus tiles, a hand, a meld, a river, the flowers set aside, or thrown away (T9).
* Hand sizes: the seat on turn holds 3k+2 tiles (kongs counting 3), every other hand 3k+1; the suit
  keys and tile counts kept beside each hand agree with it.
* Views: a seat's view holds neither the opponent's concealed tiles nor the wall, pool or seed.
"""

from __future__ import annotations

import json

from duelmahjong.engine.result import meld_tiles
from duelmahjong.engine.state import DOUBLING, IDLE, TURN, TableState
from duelmahjong.rules.keys import suit_keys
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tiles import format_tiles, tiles_of


class InvariantViolation(AssertionError):
    """A table broke one of its invariants: an engine bug, never a player's fault."""


def tile_places(state: TableState) -> list[int]:
    """How many copies of each kind (42, flowers included) the state holds, over all places."""
    counts = [0] * 42
    places = [state.wall[state.head : state.tail], state.pool, state.bonus, state.thrown]
    for seat in (0, 1):
        places += [state.rivers[seat], state.flowers[seat], tiles_of(state.hands[seat])]
        for kind, tile in state.melds[seat]:
            places.append(meld_tiles(kind, tile))
    for place in places:
        for tile in place:
            counts[tile] += 1
    return counts


def check_state(state: TableState, *, at_rest: bool = True) -> None:
    """Raise :class:`InvariantViolation` if the state breaks an invariant. Hand sizes hold only ``at_rest``
    (between actions): inside one action a kong leaves the hand short until its replacement draw."""
    if state.phase in (IDLE, DOUBLING) and state.hand_number == 0:
        return
    profile = get_profile(state.settings.profile)
    expected = [0] * 42
    for kind in profile.tile_kinds:
        expected[kind] = 1 if kind >= 34 else 4
    found = tile_places(state)
    if found != expected:
        wrong = [f"{format_tiles([k])}: {found[k]} not {n}" for k, n in enumerate(expected) if found[k] != n]
        raise InvariantViolation(f"tile conservation broken: {', '.join(wrong)}")
    if any(c < 0 or c > 4 for hand in state.hands for c in hand):
        raise InvariantViolation(f"a count outside 0–4 in a hand: {state.hands}")
    for seat in (0, 1):  # the suit keys and sizes the legal actions start from follow the counts
        if (
            list(suit_keys(state.hands[seat])) != state.keys[seat]
            or sum(state.hands[seat]) != state.sizes[seat]
        ):
            raise InvariantViolation(f"seat {seat}'s suit keys or size drifted from its tiles")
    if at_rest and state.phase == TURN:
        for seat in (0, 1):
            size = sum(state.hands[seat]) + 3 * len(state.melds[seat])
            want = 14 if seat == state.current else 13
            if size != want:
                raise InvariantViolation(f"seat {seat} holds {size} tiles (melds as 3), expected {want}")


def check_view(state: TableState, view: dict[str, object]) -> None:
    """Hidden information stays hidden: no opponent hand, no wall, no pool tiles, no seed."""
    viewer, seats = view["seat"], view["seats"]
    if not isinstance(viewer, int) or not isinstance(seats, list):
        raise InvariantViolation(f"a view names its seat and lists both seats, got {sorted(view)}")
    opponent = seats[1 - viewer]
    if "hand" in opponent:
        raise InvariantViolation("the view shows the opponent's concealed hand")
    text = json.dumps(view, ensure_ascii=False)
    for secret in ("wall", "pool", "seed"):
        if f'"{secret}"' in text:
            raise InvariantViolation(f"the view holds the hidden key {secret!r}")
    if state.phase != "over" and sum(state.hands[1 - viewer]) >= 4:  # short hands look like discards
        hidden = format_tiles(tiles_of(state.hands[1 - viewer]))
        if f'"{hidden}"' in text:
            raise InvariantViolation("the view holds the opponent's concealed tiles")
