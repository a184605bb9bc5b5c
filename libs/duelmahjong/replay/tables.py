"""What a replay shows of the table at a step, nothing hidden: the ``ReplayState`` of an engine state,
the ``RevealedDeal`` of a deal's events, and a line of text naming every tile of an event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duelmahjong.engine.events import Event
from duelmahjong.engine.result import meld_tiles
from duelmahjong.engine.state import TableState
from duelmahjong.rules.tiles import format_tiles, tile_name, tile_names, tiles_of
from duelmahjong.v1 import archive_pb2
from duelmahjong.views import codec, items
from duelmahjong.views.seat_views import holding_drawn, notation, river, seat_melds


def replay_state(state: TableState) -> archive_pb2.ReplayState:
    """The table after a step: both hands face up, melds, rivers, flowers, wall and pool left, whose
    turn it really is (a claim window included) and the phase."""
    message = archive_pb2.ReplayState(
        wall_remaining=state.wall_remaining,
        pool_remaining=len(state.pool),
        turn=codec.seat_enum(state.current),
        phase=codec.PHASES[state.phase],
    )
    for seat in (0, 1):
        shown = message.seats.add(seat=codec.seat_enum(seat), declared_ready=state.ready[seat])
        concealed = tiles_of(state.hands[seat])
        if holding_drawn(state, seat):
            concealed.remove(state.last_draw)
            shown.drawn_tile = tile_name(state.last_draw)
        shown.concealed = format_tiles(concealed)
        melds = [
            {"kind": kind, "tiles": format_tiles(meld_tiles(kind, tile))} for kind, tile in state.melds[seat]
        ]
        shown.melds.extend(seat_melds(state, seat, melds))
        shown.discards.extend(river(state, seat))
        shown.flowers = format_tiles(state.flowers[seat])
    return message


def revealed_deal(deal: Sequence[Event]) -> archive_pb2.RevealedDeal:
    """The deal as the seed made it, from the deal's events (``hand_started`` first, then ``dealt``)."""
    started = deal[0]
    public, server = started.public or {}, started.server or {}
    wall = list(server.get("wall", ()))
    message = archive_pb2.RevealedDeal(
        unused_pool=tile_names(server.get("pool", ())),
        revealed_bonus_tiles=format_tiles(public.get("bonus", ())),
    )
    taken = 0
    dealt: dict[int, list[int]] = {}
    for event in deal:
        if event.kind == "dealt":
            shown = event.public or {}
            tiles = [*(event.private or {}).get("tiles", ()), *shown.get("flowers", ())]
            dealt[event.seat] = tiles
            taken += int(shown.get("count", len(tiles)))
    message.wall.extend(tile_names(wall[taken:]))
    for seat in sorted(dealt):
        message.dealt.add(seat=codec.seat_enum(seat), concealed=format_tiles(sorted(dealt[seat])))
    counts = counts_at_deal(server)
    if any(counts):
        for seat, seat_counts in enumerate(counts):
            message.items.add(seat=codec.seat_enum(seat), items=items.count_messages(seat_counts))
    message.grand_shift.extend(codec.seat_enum(int(seat)) for seat in server.get("qiankun", ()))
    return message


def counts_at_deal(server: dict[str, Any]) -> list[dict[str, int]]:
    """Each seat's item counts as the deal was given them: hand_started records them after 乾坤大挪移
    was spent."""
    counts = [dict(seat_counts) for seat_counts in server.get("items", ({}, {}))]
    for seat in server.get("qiankun", ()):
        counts[seat]["qiankun"] = counts[seat].get("qiankun", 0) + 1
    return counts


def deal_items(deal: archive_pb2.RevealedDeal) -> tuple[list[dict[str, int]], tuple[int, ...]]:
    """What dealing the hand again needs of ``deal``: each seat's item counts (engine names) and the
    seats using 乾坤大挪移."""
    counts: list[dict[str, int]] = [{}, {}]
    for seat_items in deal.items:
        for stack in seat_items.items:
            name = items.ENGINE_NAMES.get(stack.item)
            if name is not None:
                counts[codec.seat_index(seat_items.seat)][name] = stack.count
    return counts, tuple(sorted(codec.seat_index(seat) for seat in deal.grand_shift))


SEAT_NAMES = ("first seat", "second seat")
_SOURCES = {"wall": "the wall", "kong": "the end of the wall (kong)", "flower": "the end of the wall (补花)"}
_SOURCES["extra"] = "the unused pool"


def summary(event: Event) -> str:
    """The event in words with every tile in it, both seats' parts together (never the server part)."""
    seen = event.to_json()
    public, private = seen.get("public") or {}, seen.get("private") or {}

    def tiles(value: Any) -> str:
        return notation(tuple(value or ()))

    who = SEAT_NAMES[event.seat] if event.seat in (0, 1) else ""
    kind = event.kind
    if kind == "hand_started":
        text = f"hand {public['hand_number']} starts: {SEAT_NAMES[public['dealer']]} deals"
        if public.get("bonus"):
            text += f", bonus tiles {tiles(public['bonus'])}"
        return text
    if kind == "dealt":
        flowers = tiles(public.get("flowers"))
        return f"{who} is dealt {tiles(private.get('tiles'))}" + (f" and {flowers}" if flowers else "")
    if kind == "drew":
        tile = public.get("tile") or private.get("tile", "")
        return f"{who} draws {tile} from {_SOURCES.get(public.get('source', ''), public.get('source'))}"
    if kind == "discarded":
        return f"{who} discards {public['tile']}" + (" and declares ready" if public.get("ready") else "")
    if kind in ("claimed", "konged"):
        tile = public.get("tile") or private.get("tile", "")
        return f"{who} makes a {public['meld'].replace('_', ' ')} of {tile}"
    given, received = tiles(private.get("given")), tiles(private.get("received"))
    if kind == "exchanged":
        if not given:
            return f"{who} keeps its hand (no exchange)"
        paid = f", paying {public['paid']}" if public.get("paid") else ""
        return f"{who} exchanges {given} for {received}{paid}"
    if kind == "play_started":
        return f"play starts: {who} to move"
    if kind == "swapped":
        return f"{who} swaps {given} for {received} ({public.get('reason', '')})"
    if kind == "offered":
        tile = private.get("tile", "")
        offer = public.get("offer")
        return f"{who} is offered a {offer} of {tile}" if offer else f"{who} is offered nothing"
    if kind == "won":
        how = "self-drawn" if public.get("self_drawn") else "on a discard"
        return f"{who} wins on {public['tile']} ({how}) with {tiles(public.get('tiles'))}"
    if kind == "hand_ended":
        outcome = event.outcome
        return f"the hand ends: {outcome.termination}; hands {' / '.join(outcome.hands)}"
    parts = {**public, **private}
    detail = ", ".join(f"{key} {_words(value)}" for key, value in sorted(parts.items()))
    return " ".join(part for part in (who, kind.replace("_", " "), detail) if part)


def _words(value: Any) -> str:
    if isinstance(value, list | tuple):
        return notation(tuple(value)) if all(isinstance(v, str) for v in value) else str(list(value))
    return str(value)
