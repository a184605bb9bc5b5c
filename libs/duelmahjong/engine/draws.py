"""Drawing tiles: wall draws, kong and flower replacements (T2, 补花) and the T5 offers after a draw.

A draw from an empty wall ends in exhaustion (``ending.exhaust``).
"""

from __future__ import annotations

from duelmahjong.engine.ending import exhaust
from duelmahjong.engine.events import Drew, Offered
from duelmahjong.engine.legal import unseen_kinds
from duelmahjong.engine.sink import Sink
from duelmahjong.engine.state import FROM_FLOWER, FROM_POOL, FROM_WALL, TableState
from duelmahjong.engine.swaps import unseen_triplet_kinds
from duelmahjong.engine.wall import derived_random


# --- drawing -------------------------------------------------------------------------------------------
def draw_event(state: TableState, seat: int, source: str) -> Drew:
    if source == FROM_WALL:
        tile = state.wall[state.head]
    elif source == FROM_POOL:
        tile = state.pool[0]
    else:
        tile = state.wall[state.tail - 1]
    return Drew(seat=seat, source=source, tile=tile)  # a flower is shown at once (补花)


def draw_replacement(table: Sink, seat: int, source: str) -> bool:
    """Draw from the end of the wall (kong or flower replacement, T2); False if the wall is empty."""
    state = table.state
    while True:
        if state.wall_remaining == 0:
            return False
        event = draw_event(state, seat, source)
        table.emit(event)
        if event.flower:  # replace it too
            source = FROM_FLOWER
            continue
        return True


def draw_for(table: Sink, seat: int) -> None:
    """The seat's next draw from the wall (flowers replaced), or exhaustion if the wall is empty (T9)."""
    state = table.state
    if state.wall_remaining == 0:
        exhaust(table)
        return
    event = draw_event(state, seat, FROM_WALL)
    table.emit(event)
    if event.flower and not draw_replacement(table, seat, FROM_FLOWER):
        exhaust(table)
        return
    _maybe_offer(table, seat)


def _maybe_offer(table: Sink, seat: int) -> None:
    """T5: after a draw, with the room's probabilities, a triplet offer or 搓牌 (duel, not when ready)."""
    state = table.state
    if not state.offers or state.ready[seat]:
        return
    settings = state.settings
    p_triplet, p_rub = settings.triplet_offer_probability, settings.rub_offer_probability
    rng = derived_random(state.seed, state.rng_counter)
    roll = rng.random()
    if roll < p_triplet:
        triplets = unseen_triplet_kinds(state)
        if triplets:
            table.emit(Offered(seat=seat, offer="triplet", tile=rng.choice(triplets)))
            return
    elif roll < p_triplet + p_rub and unseen_kinds(state):
        table.emit(Offered(seat=seat, offer="rub"))
        return
    # Nothing offered: still advance the counter so the next roll differs.
    table.emit(Offered(seat=seat, offer=""))
