"""Special items at a live table (T6, duel): each seat's counts, what the seat's view shows, and the
``ItemUsed`` events that make the wallet spend them.

The counts come with the pairing (``SeatPlayer.items``, read from the wallet by matchmaking) and only
in duel rooms whose rules enable items; the table spends from them as items are used, so a seat is
never offered an item it has already used at this table.

>>> from duelmahjong.v1 import rules_pb2
>>> rules = rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, items_enabled=True)
>>> swap = rules_pb2.ItemCount(item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, count=2)
>>> player = rules_pb2.SeatPlayer(items=[swap])
>>> seat_counts(player, rules)
{'swap_item': 2}
>>> seat_counts(player, rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL))   # a room without items
{}
>>> [(m.item, m.count) for m in count_messages({'swap_item': 2, 'qiankun': 0})]
[(2, 2)]
"""

from __future__ import annotations

from duelmahjong.engine.events import Dealt, Event, Swapped
from duelmahjong.v1 import events_pb2, rules_pb2

# The engine's names of the items (its action reasons and count keys) ↔ the contract's kinds.
ENGINE_NAMES = {
    rules_pb2.ITEM_KIND_GRAND_SHIFT: "qiankun",
    rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY: "swap_item",
    rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS: "shuffle_item",
}
KINDS = {name: kind for kind, name in ENGINE_NAMES.items()}
GRAND_SHIFT = ENGINE_NAMES[rules_pb2.ITEM_KIND_GRAND_SHIFT]


def items_allowed(rules: rules_pb2.RoomRules) -> bool:
    return rules.profile == rules_pb2.PROFILE_DUEL and rules.items_enabled


def seat_counts(player: rules_pb2.SeatPlayer, rules: rules_pb2.RoomRules) -> dict[str, int]:
    """A seat's item counts in the engine's names; none in a room whose rules leave items out (T6)."""
    if not items_allowed(rules):
        return {}
    counts: dict[str, int] = {}
    for stack in player.items:
        name = ENGINE_NAMES.get(stack.item)
        if name is not None and stack.count > 0:
            counts[name] = counts.get(name, 0) + stack.count
    return counts


def count_messages(counts: dict[str, int]) -> list[rules_pb2.ItemCount]:
    """What a seat's view shows: the items it still has, in the contract's kinds."""
    return [
        rules_pb2.ItemCount(item=KINDS[name], count=count)
        for name, count in sorted(counts.items(), key=lambda pair: KINDS.get(pair[0], 0))
        if count > 0 and name in KINDS
    ]


def used_items(
    sent: list[tuple[int, Event]], grand_shift_seats: frozenset[int]
) -> list[tuple[int, int, str]]:
    """(sequence, seat, engine name) of each item the events show used: 偷天换日 and 移花接木 by their
    ``swapped`` event; 乾坤大挪移 by the seat's ``dealt`` event (one per seat, so two seats using it in
    the same hand get two sequences and two idempotency keys)."""
    used = []
    for sequence, event in sent:
        if isinstance(event, Swapped) and event.reason in ("swap_item", "shuffle_item"):
            used.append((sequence, event.seat, event.reason))
        elif isinstance(event, Dealt) and event.seat in grand_shift_seats:
            used.append((sequence, event.seat, GRAND_SHIFT))
    return used


def item_used(
    *, table_id: str, hand_id: str, sequence: int, player_id: str, name: str
) -> events_pb2.ItemUsed:
    """table → wallet: spend one item (T6); the wallet keys it on (table_id, sequence)."""
    return events_pb2.ItemUsed(
        table_id=table_id, hand_id=hand_id, sequence=sequence, player_id=player_id, item=KINDS[name]
    )
