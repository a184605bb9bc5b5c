"""Starting a hand: the shuffled (or stacked) tiles, dealer and winds (T1, E17), progressive multiplier
(T7), bonus tiles (D1), the erren task (T8), 乾坤大挪移 (T6), and the deal with 补花.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from duelmahjong.engine.draws import draw_replacement
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.events import Dealt, HandStarted
from duelmahjong.engine.fairness import commitment
from duelmahjong.engine.qiankun import arrange as qiankun_arrange
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.sink import Sink
from duelmahjong.engine.state import FROM_FLOWER
from duelmahjong.engine.wall import HandTiles, derived_random, shuffle_hand
from duelmahjong.rules.profiles import get_profile


# --- starting a hand ---------------------------------------------------------------------------------------
def start_hand(
    table: Sink, seed: int, salt: bytes, items: Any, qiankun: frozenset[int], stacked: HandTiles | None
) -> None:
    state = table.state
    settings = state.settings
    tiles = stacked or shuffle_hand(
        settings.profile,
        seed,
        bonus_count=settings.bonus_tile_count,
        task_multiplier=settings.task_multiplier,
    )
    items = [dict(items[0]), dict(items[1])]
    previous = state.results[-1] if state.results else None
    if previous is None:
        dealer, passes = tiles.first_dealer, 0  # T1: first hand random
    else:
        winner = previous.winner
        dealer = winner if winner >= 0 else previous.dealer  # T1: winner deals, a draw keeps the dealer
        passes = previous.dealer_passes + (dealer != previous.dealer)
    if qiankun:
        tiles = _use_qiankun(tiles, settings.profile, seed, dealer, items, qiankun)
    table.emit(
        HandStarted(
            hand_number=state.hand_number + 1,
            dealer=dealer,
            dealer_passes=passes,
            round_wind=(passes // 2) % 4,  # E17: a full pass of the deal through both players
            progressive=2**state.hand_number if settings.is_duel else 1,  # T7
            # A hand dealt without a salt (a simulation, an older log) shows no commitment.
            commitment=commitment(seed, salt).hex() if salt else None,
            bonus=tiles.bonus,
            task=tiles.task,
            salt=salt.hex() if salt else None,
            qiankun=tuple(sorted(qiankun)),
            # Item counts are each player's own business: server-only, each seat sees its own in its view.
            items=tuple(items),
            seed=seed,
            wall=tiles.wall,
            pool=tiles.pool,
        )
    )
    if settings.is_duel:
        deal(table)


def check_qiankun(
    settings: RoomSettings, items: Sequence[Mapping[str, int]], qiankun: frozenset[int]
) -> None:
    """T6: 乾坤大挪移 is a duel item, used before the deal by a seat that owns one."""
    for seat in sorted(qiankun):
        if seat not in (0, 1):
            raise IllegalActionError(f"there is no seat {seat}")
        if not (settings.is_duel and settings.items_enabled):
            raise IllegalActionError("items are not played in this room (T6)")
        if items[seat].get("qiankun", 0) < 1:
            raise IllegalActionError(f"seat {seat} has no 乾坤大挪移 item left")


def _use_qiankun(
    tiles: HandTiles,
    profile_id: str,
    seed: int,
    dealer: int,
    items: list[dict[str, int]],
    qiankun: frozenset[int],
) -> HandTiles:
    """Steer each user's dealt tiles toward a limit hand (T6); the dealer's slot leads the wall and the
    non-dealer's follows it, each as long as the profile deals."""
    profile = get_profile(profile_id)
    dealer_slot = range(profile.dealer_tiles)
    nondealer_slot = range(profile.dealer_tiles, profile.dealer_tiles + profile.nondealer_tiles)
    for seat in sorted(qiankun):
        items[seat]["qiankun"] -= 1  # spent once (T6)
        slot, other = (dealer_slot, nondealer_slot) if seat == dealer else (nondealer_slot, dealer_slot)
        tiles = qiankun_arrange(tiles, seat_slot=slot, other_slot=other, rng=derived_random(seed, 500 + seat))
    return tiles


def deal(table: Sink) -> None:
    """The profile's dealer and non-dealer tiles (14, 13) from the head of the wall, then 补花 (erren)
    dealer first."""
    state = table.state
    dealer = state.dealer
    profile = get_profile(state.settings.profile)
    for seat, size in ((dealer, profile.dealer_tiles), (1 - dealer, profile.nondealer_tiles)):
        dealt = state.wall[state.head : state.head + size]
        hand = tuple(sorted(t for t in dealt if t < 34))
        flowers = tuple(t for t in dealt if t >= 34)
        table.emit(Dealt(seat=seat, count=size, flowers=flowers, tiles=hand))
    for seat in (dealer, 1 - dealer):
        for _ in range(len(state.flowers[seat])):
            draw_replacement(table, seat, FROM_FLOWER)
