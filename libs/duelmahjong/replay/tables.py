"""What a replay shows of the table at a step, nothing hidden: the ``ReplayState`` of an engine state,
the ``RevealedDeal`` of a deal's events, and a line of text naming every tile of an event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duelmahjong.engine.events import (
    PUBLIC,
    SEAT,
    Claimed,
    Dealt,
    Discarded,
    Drew,
    Event,
    Exchanged,
    HandEnded,
    HandStarted,
    Konged,
    Offered,
    PlayStarted,
    Swapped,
    Won,
)
from duelmahjong.engine.result import meld_tiles
from duelmahjong.engine.state import TableState
from duelmahjong.replay.hand_log import ReplayError
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
    if not isinstance(started, HandStarted):
        raise ReplayError(f"a deal starts with hand_started, not {started.kind}")
    message = archive_pb2.RevealedDeal(
        unused_pool=tile_names(started.pool), revealed_bonus_tiles=format_tiles(started.bonus)
    )
    taken = 0
    dealt: dict[int, list[int]] = {}
    for event in deal:
        if isinstance(event, Dealt):
            dealt[event.seat] = [*event.tiles, *event.flowers]
            taken += event.count
    message.wall.extend(tile_names(started.wall[taken:]))
    for seat in sorted(dealt):
        message.dealt.add(seat=codec.seat_enum(seat), concealed=format_tiles(sorted(dealt[seat])))
    counts = counts_at_deal(started)
    if any(counts):
        for seat, seat_counts in enumerate(counts):
            message.items.add(seat=codec.seat_enum(seat), items=items.count_messages(seat_counts))
    message.grand_shift.extend(codec.seat_enum(seat) for seat in started.qiankun)
    return message


def counts_at_deal(started: HandStarted) -> list[dict[str, int]]:
    """Each seat's item counts as the deal was given them: hand_started records them after 乾坤大挪移
    was spent."""
    counts = [dict(seat_counts) for seat_counts in started.items or ({}, {})]
    for seat in started.qiankun:
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
    who = SEAT_NAMES[event.seat] if event.seat in (0, 1) else ""
    match event:
        case HandStarted():
            text = f"hand {event.hand_number} starts: {SEAT_NAMES[event.dealer]} deals"
            if event.bonus:
                text += f", bonus tiles {format_tiles(event.bonus)}"
            return text
        case Dealt():
            flowers = format_tiles(event.flowers)
            return f"{who} is dealt {format_tiles(event.tiles)}" + (f" and {flowers}" if flowers else "")
        case Drew():
            return f"{who} draws {tile_name(event.tile)} from {_SOURCES.get(event.source, event.source)}"
        case Discarded():
            return f"{who} discards {tile_name(event.tile)}" + (" and declares ready" if event.ready else "")
        case Claimed() | Konged():
            return f"{who} makes a {event.meld.replace('_', ' ')} of {tile_name(event.tile)}"
        case Exchanged():
            if not event.given:
                return f"{who} keeps its hand (no exchange)"
            paid = f", paying {event.paid}" if event.paid else ""
            return f"{who} exchanges {format_tiles(event.given)} for {format_tiles(event.received)}{paid}"
        case PlayStarted():
            return f"play starts: {who} to move"
        case Swapped():
            given, received = format_tiles(event.given), format_tiles(event.received)
            return f"{who} swaps {given} for {received} ({event.reason})"
        case Offered():
            tile = "" if event.tile is None else tile_name(event.tile)
            return (
                f"{who} is offered a {event.offer} of {tile}" if event.offer else f"{who} is offered nothing"
            )
        case Won():
            how = "self-drawn" if event.self_drawn else "on a discard"
            return f"{who} wins on {tile_name(event.tile)} ({how}) with {format_tiles(event.tiles)}"
        case HandEnded():
            outcome = event.outcome
            return f"the hand ends: {outcome.termination}; hands {' / '.join(outcome.hands)}"
    parts = {**event.row.encode(event, PUBLIC), **event.row.encode(event, SEAT)}
    detail = ", ".join(f"{key} {_words(value)}" for key, value in sorted(parts.items()))
    return " ".join(part for part in (who, event.kind.replace("_", " "), detail) if part)


def _words(value: Any) -> str:
    if isinstance(value, list | tuple):
        return notation(tuple(value)) if all(isinstance(v, str) for v in value) else str(list(value))
    return str(value)
