"""Log lines for the events the demo's narrator leaves out but a person at the table wants to read:
their own 换牌, offers and items (with the tiles only they see), 开始加倍, 补花, 胡加倍, 猜大小, an escape.

>>> from duelmahjong.v1 import rules_pb2
>>> event = play_pb2.SeatEvent(tiles_exchanged=play_pb2.TilesExchanged(
...     seat=rules_pb2.SEAT_FIRST, count=2, given="19m", received="5p7z"))
>>> event_line(event, {0: "you", 1: "Bot 1"})
'you exchange 2 tiles: 19m → 5p7z'
"""

from __future__ import annotations

from collections.abc import Mapping

from duelmahjong.v1 import play_pb2, rules_pb2

_ITEMS = {
    rules_pb2.ITEM_KIND_GRAND_SHIFT: "乾坤大挪移",
    rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY: "偷天换日",
    rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS: "移花接木",
}


def _subject(who: str, verb: str) -> str:
    """``you keep`` / ``Bot 1 keeps``."""
    return f"{who} {verb}" if who == "you" else f"{who} {verb}s"


def item_name(item: rules_pb2.ItemKind.ValueType) -> str:
    return _ITEMS.get(item, "an item")


def event_line(event: play_pb2.SeatEvent, names: Mapping[int, str]) -> str | None:
    """One line for ``event``, or None for the events the narrator tells (or nobody needs)."""
    which = event.WhichOneof("kind")

    def name(seat: rules_pb2.Seat.ValueType) -> str:
        return names.get(0 if seat == rules_pb2.SEAT_FIRST else 1, "?")

    if which == "tiles_exchanged":
        exchanged = event.tiles_exchanged
        if not exchanged.count:
            return f"{_subject(name(exchanged.seat), 'keep')} the hand (换牌)"
        shown = f": {exchanged.given} → {exchanged.received}" if exchanged.given else ""
        paid = f", {exchanged.paid} paid" if exchanged.paid else ""
        return f"{_subject(name(exchanged.seat), 'exchange')} {exchanged.count} tiles{shown}{paid}"
    if which == "offer_made":
        made = event.offer_made
        if not made.offer.offer_id:
            return f"{name(made.seat)} is made an offer"
        kind = "a triplet" if made.offer.kind == play_pb2.Offer.KIND_TRIPLET else "搓牌: pick one of"
        return f"offer to you: {kind} {made.offer.tiles}".rstrip()
    if which == "offer_resolved" and event.offer_resolved.accepted:
        resolved = event.offer_resolved
        got = f": {resolved.given} → {resolved.received}" if resolved.received else ""
        return f"{name(resolved.seat)} took the offer{got}"
    if which == "item_applied":
        applied = event.item_applied
        got = f": {applied.given} → {applied.received}" if applied.received else ""
        return f"{name(applied.seat)} used {item_name(applied.item)}{got}"
    if which == "doubling_revealed":
        doubled = [name(seat) for seat in event.doubling_revealed.start_doubled]
        return "开始加倍: " + (", ".join(doubled) + " doubled" if doubled else "nobody doubled")
    if which == "flower_replaced":
        flower = event.flower_replaced
        return f"{_subject(name(flower.seat), 'set')} aside the flower {flower.flower} (补花)"
    if which == "win_declined":
        declined = event.win_declined
        return f"{name(declined.seat)} declined a win to double (胡加倍 ×{declined.win_declines})"
    if which == "guess_made":
        guess = event.guess_made
        if guess.skipped:
            return f"{name(guess.seat)} kept the winnings (no 猜大小)"
        said = rules_pb2.Guess.Name(guess.guess).removeprefix("GUESS_").lower()
        result = f"won ×{guess.payout_multiplier}" if guess.won else "lost"
        return f"猜大小 {said}: dice {'-'.join(str(d) for d in guess.dice)}, {result}"
    if which == "escaped":
        return f"{name(event.escaped.seat)} escaped (逃跑)"
    return None
