"""What one seat receives on its Play stream: ``SeatView`` and ``SeatEvent`` built from the engine.

The engine already decides visibility (``Table.view(seat)`` and ``Event.for_seat(seat)`` never carry
the opponent's concealed tiles, the wall, the pool or the seed); this module only re-shapes those
values into the contract's messages and adds the table's own facts (ids, players, connections).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.engine.events import Event, canonical_json
from duelmahjong.engine.state import EXTRA_DRAW, OVER, TURN
from duelmahjong.engine.table import Table
from duelmahjong.engine.view import seat_view as engine_seat_view
from duelmahjong.rules.analysis import waits
from duelmahjong.rules.tiles import Tile, format_tiles, parse_tiles, tiles_of
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2, tiles_pb2
from services.table import codec, items

TASK_KINDS = {
    "pong": rules_pb2.TASK_KIND_PONG,
    "pattern": rules_pb2.TASK_KIND_PATTERN,
    "kong": rules_pb2.TASK_KIND_KONG,
    "double": rules_pb2.TASK_KIND_DOUBLING,
}
DRAW_SOURCES = {
    "wall": play_pb2.DRAW_SOURCE_WALL,
    "kong": play_pb2.DRAW_SOURCE_REPLACEMENT,
    "flower": play_pb2.DRAW_SOURCE_REPLACEMENT,
    "extra": play_pb2.DRAW_SOURCE_UNUSED_POOL,
}
OUTCOMES = {
    "win": rules_pb2.HAND_OUTCOME_WIN,
    "drawn": rules_pb2.HAND_OUTCOME_DRAWN,
    "escape": rules_pb2.HAND_OUTCOME_ESCAPE,
}


@dataclass(frozen=True)
class TableFacts:
    """What the table service knows beside the engine: ids, players, who is connected, the fan rate."""

    table_id: str
    hand_id: str
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer]
    connected: tuple[bool, bool]
    fan_rate: int
    sequence: int
    items: tuple[dict[str, int], dict[str, int]] = ({}, {})  # T6 counts left per seat
    negotiated: int = 1  # T7's agreed multiplier (duel; always 1 in erren)


def timestamp(when: datetime | None = None) -> Timestamp:
    if when is None:  # the hot path (every event to every seat): no datetime arithmetic
        nanos = time.time_ns()
        return Timestamp(seconds=nanos // 1_000_000_000, nanos=nanos % 1_000_000_000)
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


@lru_cache(maxsize=4096)
def notation(tiles: tuple[str, ...]) -> str:
    """Canonical notation of a few tiles given one by one (bonus tiles, flowers): memoised, as the
    same short lists recur in every view of a hand."""
    return format_tiles(parse_tiles("".join(tiles))) if tiles else ""


def timestamp_in(seconds: float) -> Timestamp:
    """A deadline ``seconds`` from now, as clients read it (wall clock)."""
    # datetime arithmetic's result (whole microseconds, rounded half to even) from the integer clock.
    micros = time.time_ns() // 1000 + round(seconds * 1_000_000)
    return Timestamp(seconds=micros // 1_000_000, nanos=micros % 1_000_000 * 1000)


def pattern_id(name: str) -> int:
    try:
        return int(rules_pb2.PatternId.Value(f"PATTERN_ID_{name.upper()}"))
    except ValueError:
        return rules_pb2.PATTERN_ID_UNSPECIFIED


def hand_task(task: dict[str, Any] | None, completed: bool = False) -> rules_pb2.HandTask | None:
    if not task:
        return None
    return rules_pb2.HandTask(
        kind=TASK_KINDS.get(str(task["kind"]), rules_pb2.TASK_KIND_UNSPECIFIED),
        pattern=pattern_id(str(task.get("pattern", ""))) if task.get("pattern") else 0,
        multiplier=int(task.get("multiplier", 0)),
        completed_by_winner=completed,
    )


def meld(kind: str, tiles: str) -> tiles_pb2.Meld:
    return tiles_pb2.Meld(kind=codec.MELD_KINDS[kind], tiles=tiles, hidden=not tiles)


def _holding_drawn(table: Table, seat: int) -> bool:
    state = table.state
    return state.current == seat and state.last_draw >= 0 and state.phase in (TURN, EXTRA_DRAW)


def seat_view(
    table: Table,
    seat: int,
    facts: TableFacts,
    legal: play_pb2.LegalActions | None,
) -> play_pb2.SeatView:
    """The seat's ``SeatView`` from the engine's view of that seat."""
    state = table.state
    # The engine's per-seat view (its visibility rules), without the text form of the legal actions:
    # the contract lists those separately.
    view = engine_seat_view(state, seat, [])
    result = view.get("result")
    # Built in place, field by field, and only the fields not at their default (proto3 sends no
    # default anyway): a view is built for every decision, and nested constructors copy their parts.
    message = play_pb2.SeatView(seat=codec.seat_enum(seat))
    public = message.table
    public.table_id = facts.table_id
    public.hand_id = facts.hand_id
    public.hand_number = view["hand_number"]
    public.profile = codec.PROFILES[view["profile"]]
    public.phase = codec.PHASES[view["phase"]]
    public.round_wind = codec.WINDS[view["round_wind"]]
    public.dealer = codec.seat_enum(view["dealer"])
    public.turn = codec.seat_enum(view["to_move"])
    public.wall_remaining = view["wall_remaining"]
    if view["bonus_tiles"]:
        public.revealed_bonus_tiles = notation(tuple(view["bonus_tiles"]))
    multipliers = public.multipliers
    multipliers.negotiated = state.settings.negotiated_multiplier
    multipliers.progressive = view["progressive"]
    multipliers.fan_rate = facts.fan_rate
    public.sequence = facts.sequence
    task = hand_task(view.get("task"))
    if task is not None:
        public.task.CopyFrom(task)
    revealing = bool(result) and view["phase"] == OVER
    for entry in view["seats"]:
        number = entry["seat"]
        holding = _holding_drawn(table, number)
        player = facts.players[number]
        shown = public.seats.add()
        shown.seat = codec.seat_enum(number)
        shown.player_id = player.player_id
        shown.display_name = player.display_name
        shown.dealer = entry["dealer"]
        shown.seat_wind = codec.WINDS.get(entry["wind"] or "", rules_pb2.WIND_UNSPECIFIED)
        shown.concealed_count = entry["hand_size"] - (1 if holding else 0)
        shown.holding_drawn_tile = holding
        if entry["melds"]:
            shown.melds.extend([meld(m["kind"], m["tiles"]) for m in entry["melds"]])
        if entry["discards"]:
            shown.discards.extend([_discard(tile) for tile in entry["discards"]])
        if entry["flowers"]:
            shown.flowers = notation(tuple(entry["flowers"]))
        shown.declared_ready = entry["declared_ready"]
        shown.connected = facts.connected[number]
        shown.win_declines = entry["win_doublings"]
        if revealing:
            shown.revealed_concealed = result["hands"][number]
    # The engine's "hand" is exactly these kinds written out (format_tiles(tiles_of(...))): read them
    # from the counts rather than parse that text back.
    own = tiles_of(state.hands[seat]) if "hand" in view["seats"][seat] else []
    drawn = view.get("drawn", "") if _holding_drawn(table, seat) else ""
    if drawn:
        own.remove(Tile.parse(drawn).kind)
        message.drawn_tile = drawn
    elif own:
        message.waits = _waits(table, seat, own)
    if own:
        message.concealed = format_tiles(own)
    message.start_doubled = bool(view["seats"][seat].get("doubling"))
    if seat >= 0 and facts.items[seat]:
        message.items.extend(items.count_messages(facts.items[seat]))
    offer = view.get("offer")
    if offer:
        kind = play_pb2.Offer.KIND_TRIPLET if offer["kind"] == "triplet" else play_pb2.Offer.KIND_PICK
        tiles = offer.get("tile", "")
        message.offers.append(
            play_pb2.Offer(offer_id=f"{facts.sequence}", kind=kind, tiles=tiles * 3 if tiles else "")
        )
    if legal is not None:
        message.legal_actions.CopyFrom(legal)
    return message


def _discard(tile: str) -> play_pb2.Discard:
    """One river tile's message, built once per tile name (adding it to a view copies it)."""
    made = _DISCARDS.get(tile)
    if made is None:
        made = _DISCARDS[tile] = play_pb2.Discard(tile=tile)
    return made


_DISCARDS: dict[str, play_pb2.Discard] = {}


def _waits(table: Table, seat: int, own: list[int]) -> str:
    state = table.state
    if len(own) % 3 != 1 or state.phase == OVER:
        return ""
    counts = list(state.hands[seat])
    return format_tiles(waits(counts, profile=state.settings.profile, melded_tiles=state.melded_tiles(seat)))


def seat_event_response(event: Event, seat: int, sequence: int, facts: TableFacts) -> table_pb2.PlayResponse:
    """:func:`seat_event` as the ``PlayResponse`` a stream writes, built in place (no copy)."""
    response = table_pb2.PlayResponse()
    seat_event(event, seat, sequence, facts, into=response.event)
    return response


def seat_event(
    event: Event, seat: int, sequence: int, facts: TableFacts, into: play_pb2.SeatEvent | None = None
) -> play_pb2.SeatEvent:
    """One engine event as ``seat`` may see it: a typed message where the contract has one, and always
    the engine's per-seat JSON in ``detail_json``. Filled into ``into`` when given."""
    seen = event.for_seat(seat)
    message = play_pb2.SeatEvent() if into is None else into
    message.sequence = sequence
    stamp = message.occurred_at  # timestamp()'s value, set in place
    stamp.seconds, stamp.nanos = divmod(time.time_ns(), 1_000_000_000)
    message.detail_json = canonical_json(seen)
    kind, about = event.kind, codec.seat_enum(event.seat)
    if kind == "hand_started":
        message.hand_started.CopyFrom(
            play_pb2.HandStarted(
                hand_id=facts.hand_id,
                hand_number=seen["hand_number"],
                dealer=codec.seat_enum(seen["dealer"]),
                round_wind=[
                    rules_pb2.WIND_EAST,
                    rules_pb2.WIND_SOUTH,
                    rules_pb2.WIND_WEST,
                    rules_pb2.WIND_NORTH,
                ][seen["round_wind"]],
                multipliers=rules_pb2.Multipliers(
                    negotiated=facts.negotiated, progressive=seen["progressive"], fan_rate=facts.fan_rate
                ),
                revealed_bonus_tiles=notation(tuple(seen.get("bonus", ()))),
            )
        )
        task = hand_task(seen.get("task"))
        if task is not None:
            message.hand_started.task.CopyFrom(task)
    elif kind == "dealt":
        tiles = seen.get("tiles", [])
        message.tiles_dealt.CopyFrom(
            play_pb2.TilesDealt(
                seat=about,
                tiles=format_tiles(parse_tiles("".join(tiles))),
                count=int(seen.get("count", len(tiles))),
            )
        )
    elif kind == "drew":
        message.tile_drawn.CopyFrom(
            play_pb2.TileDrawn(
                seat=about, tile=seen.get("tile") or "", source=DRAW_SOURCES.get(seen["source"], 0)
            )
        )
    elif kind == "discarded":
        message.tile_discarded.CopyFrom(
            play_pb2.TileDiscarded(seat=about, tile=seen["tile"], declared_ready=bool(seen.get("ready")))
        )
    elif kind in ("claimed", "konged"):
        tile = seen.get("tile")
        tiles = ""
        if tile:
            kind_of_tile = Tile.parse(tile).kind
            count = {"chi": 0, "pong": 3}.get(seen["meld"], 4)
            run = [kind_of_tile + step for step in range(3)] if not count else [kind_of_tile] * count
            tiles = format_tiles(run)
        message.meld_made.CopyFrom(play_pb2.MeldMade(seat=about, meld=meld(seen["meld"], tiles)))
    elif kind == "swapped" and seen.get("reason") in items.KINDS:
        # T6 偷天换日 / 移花接木: the opponent learns the item was used; only the user what it traded.
        message.item_applied.CopyFrom(
            play_pb2.ItemApplied(
                seat=about,
                item=items.KINDS[seen["reason"]],
                given=format_tiles(parse_tiles("".join(seen.get("given", [])))),
                received=format_tiles(parse_tiles("".join(seen.get("received", [])))),
            )
        )
    elif kind == "hand_ended":
        result = seen["result"]
        message.hand_revealed.CopyFrom(
            play_pb2.HandRevealed(
                outcome=OUTCOMES[result["outcome"]],
                winner=codec.seat_enum(result["winner"]),
                escaper=codec.seat_enum(result["escaper"]),
            )
        )
    elif kind == "pairing_ended":
        message.table_ended.CopyFrom(play_pb2.TableEnded(reason="a player left the table"))
    return message


def engine_decision(table: Table, seat: int) -> tuple[list[play_pb2.LegalAction], play_pb2.Action]:
    """The seat's legal actions in contract form and its T11 default."""
    legal = table.legal_actions(seat)
    actions = codec.encode_legal(legal, table.settings.effective_exchange_limit, table.state.hand_size(seat))
    chosen = table.default_action(seat)
    return actions, codec.encode_action(chosen) if chosen is not None else play_pb2.Action()


def legal_actions(
    actions: list[play_pb2.LegalAction],
    default: play_pb2.Action,
    *,
    sequence: int,
    remaining: float | None,
    decision_seconds: float,
    bank: float,
) -> play_pb2.LegalActions:
    """A decision as the contract states it (T11): choices, default, deadline and the clocks left."""
    message = play_pb2.LegalActions(
        sequence=sequence,
        actions=actions,
        default_action=default,
        time_bank_millis_remaining=int(bank * 1000),
    )
    if remaining is not None:
        message.deadline.CopyFrom(timestamp_in(remaining))
        message.decision_millis_remaining = int(min(remaining, decision_seconds) * 1000)
    return message


def hand_settled(
    scored: events_pb2.HandScored | None,
    applied: events_pb2.SettlementApplied | None,
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer],
    sequence: int,
) -> play_pb2.SeatEvent:
    """The settlement both seats are shown: exactly what the wallet applied for the hand — its
    settlement as applied (scoring's breakdown, the transfer it capped and moved, every posting, fees
    included) and both players' balances after it. ``scored`` is never shown: its transfer is the
    uncapped figure. Empty if the wallet's answer did not come in time (nothing is guessed). Not an
    engine event: it carries the sequence of the last event the seats were sent."""
    settled = play_pb2.HandSettled()
    if applied is not None and applied.HasField("settlement"):
        settled.settlement.CopyFrom(applied.settlement)
    seat_of = {f"player:{player.player_id}": seat for seat, player in enumerate(players)}
    for balance in applied.balances if applied is not None else ():
        if balance.account in seat_of:
            settled.balances.append(
                play_pb2.SeatBalance(seat=codec.seat_enum(seat_of[balance.account]), balance=balance.balance)
            )
    return play_pb2.SeatEvent(sequence=sequence, occurred_at=timestamp(), hand_settled=settled)
