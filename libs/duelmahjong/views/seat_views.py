"""What one seat is shown of the table: its ``SeatView`` and the decision in it (``LegalActions``),
built from the engine; and the small conversions every message of a seat shares (tile notation, tasks,
melds, outcomes).

The engine already decides visibility (``Table.view(seat)`` and ``Event.for_seat(seat)`` never carry
the opponent's concealed tiles, the wall, the pool or the seed); this module only re-shapes those
values into the contract's messages and adds the table's own facts (ids, players, connections). The
events a seat is sent are built in :mod:`duelmahjong.views.seat_events`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong import contract
from duelmahjong.engine import actions as A
from duelmahjong.engine.legal import unseen_kinds
from duelmahjong.engine.outcome import Termination
from duelmahjong.engine.state import (
    CLAIM,
    DISCARD_CLAIMED,
    DISCARD_DRAWN,
    DISCARD_READY,
    EXTRA_DRAW,
    OVER,
    ROB_KONG,
    TURN,
    TableState,
)
from duelmahjong.engine.table import Table
from duelmahjong.engine.view import seat_view as engine_seat_view
from duelmahjong.rules.analysis import waits
from duelmahjong.rules.tiles import Tile, format_tiles, parse_tiles, tile_name, tiles_of
from duelmahjong.v1 import play_pb2, rules_pb2, tiles_pb2
from duelmahjong.views import codec, items

TASK_KINDS = {
    "pong": rules_pb2.TASK_KIND_PONG,
    "pattern": rules_pb2.TASK_KIND_PATTERN,
    "kong": rules_pb2.TASK_KIND_KONG,
    "double": rules_pb2.TASK_KIND_DOUBLING,
}
# The phase as the engine shows it to a seat → the step of HAND_PHASE_PLAY (the other phases have none).
PLAY_STEPS = {
    TURN: play_pb2.PLAY_STEP_TURN,
    CLAIM: play_pb2.PLAY_STEP_CLAIM,
    ROB_KONG: play_pb2.PLAY_STEP_ROB_KONG,
}
START_DOUBLING = {True: play_pb2.START_DOUBLING_DOUBLED, False: play_pb2.START_DOUBLING_DECLINED}
OUTCOMES = {
    Termination.WIN: rules_pb2.HAND_OUTCOME_WIN,
    Termination.DRAWN: rules_pb2.HAND_OUTCOME_DRAWN,
    Termination.ESCAPE: rules_pb2.HAND_OUTCOME_ESCAPE,
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
    rules: rules_pb2.RoomRules | None = None
    offer_ids: tuple[str, str] = ("", "")  # T5: each seat's pending offer's id (its OfferMade's sequence)
    auto_play: tuple[bool, bool] = (False, False)  # T10 托管
    settling: bool = False  # the hand ended and its settlement is on its way (HAND_PHASE_SETTLING)


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


def pattern_id(name: str) -> rules_pb2.PatternId.ValueType:
    try:
        return rules_pb2.PatternId.Value(f"PATTERN_ID_{name.upper()}")
    except ValueError:
        return rules_pb2.PATTERN_ID_UNSPECIFIED


def hand_task(task: dict[str, Any] | None, completed: bool = False) -> rules_pb2.HandTask | None:
    if not task:
        return None
    return rules_pb2.HandTask(
        kind=TASK_KINDS.get(str(task["kind"]), rules_pb2.TASK_KIND_UNSPECIFIED),
        pattern=pattern_id(str(task.get("pattern", "")))
        if task.get("pattern")
        else rules_pb2.PATTERN_ID_UNSPECIFIED,
        multiplier=int(task.get("multiplier", 0)),
        completed_by_winner=completed,
    )


def meld(kind: str, tiles: str, claimed_tile: str = "") -> tiles_pb2.Meld:
    return contract.meld_message(kind, tiles, claimed_tile)


def holding_drawn(state: TableState, seat: int) -> bool:
    """Whether ``seat`` holds the tile it just drew (its turn, before it discards)."""
    return state.current == seat and state.last_draw >= 0 and state.phase in (TURN, EXTRA_DRAW)


def seat_melds(state: TableState, seat: int, shown: list[dict[str, str]]) -> list[tiles_pb2.Meld]:
    """A seat's melds as the engine shows them (``kind``, ``tiles``), each with the discard it took."""
    claims = state.meld_claims[seat]
    return [
        meld(m["kind"], m["tiles"], tile_name(claims[i]) if claims[i] >= 0 else "")
        for i, m in enumerate(shown)
    ]


def river(state: TableState, seat: int) -> list[play_pb2.Discard]:
    """Every tile a seat's river ever held, with what became of it."""
    return [_discard(tile, flags) for tile, flags in state.river_marks[seat]]


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
    outcome = table.outcome
    # Built in place, field by field, and only the fields not at their default (proto3 sends no
    # default anyway): a view is built for every decision, and nested constructors copy their parts.
    message = play_pb2.SeatView(seat=codec.seat_enum(seat))
    public = message.table
    public.table_id = facts.table_id
    public.hand_id = facts.hand_id
    public.hand_number = view["hand_number"]
    public.profile = contract.PROFILES[view["profile"]]
    public.phase = play_pb2.HAND_PHASE_SETTLING if facts.settling else codec.PHASES[view["phase"]]
    public.round_wind = contract.WINDS[view["round_wind"]]
    public.dealer = codec.seat_enum(view["dealer"])
    public.turn = codec.seat_enum(view["to_move"])
    public.wall_remaining = view["wall_remaining"]
    public.pool_remaining = view["pool_remaining"]
    if view["last_discard"]:
        public.last_discard = view["last_discard"]
    step = PLAY_STEPS.get(view["phase"])
    if step is not None:
        public.play_step = step
        if view["phase"] == ROB_KONG:
            public.kong_tile = tile_name(state.kong_tile)
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
    revealing = outcome is not None and view["phase"] == OVER
    for entry in view["seats"]:
        number = entry["seat"]
        holding = holding_drawn(state, number)
        player = facts.players[number]
        shown = public.seats.add()
        shown.seat = codec.seat_enum(number)
        shown.player_id = player.player_id
        shown.display_name = player.display_name
        shown.dealer = entry["dealer"]
        shown.seat_wind = contract.WINDS.get(entry["wind"] or "", rules_pb2.WIND_UNSPECIFIED)
        shown.concealed_count = entry["hand_size"] - (1 if holding else 0)
        shown.holding_drawn_tile = holding
        if entry["melds"]:
            shown.melds.extend(seat_melds(state, number, entry["melds"]))
        if state.river_marks[number]:
            shown.discards.extend(river(state, number))
        if entry["flowers"]:
            shown.flowers = notation(tuple(entry["flowers"]))
        shown.declared_ready = entry["declared_ready"]
        shown.connected = facts.connected[number]
        shown.auto_play = facts.auto_play[number]
        shown.win_declines = entry["win_doublings"]
        doubling = entry.get("doubling")  # the viewer's own once chosen, the opponent's once revealed
        if doubling is not None:
            shown.start_doubling = START_DOUBLING[doubling]
        if revealing and outcome is not None:
            shown.revealed_concealed = outcome.hands[number]
    # The engine's "hand" is exactly these kinds written out (format_tiles(tiles_of(...))): read them
    # from the counts rather than parse that text back.
    own = tiles_of(state.hands[seat]) if "hand" in view["seats"][seat] else []
    drawn = view.get("drawn", "") if holding_drawn(state, seat) else ""
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
            play_pb2.Offer(offer_id=facts.offer_ids[seat], kind=kind, tiles=tiles * 3 if tiles else "")
        )
    if legal is not None:
        message.legal_actions.CopyFrom(legal)
    return message


def _discard(tile: int, flags: int) -> play_pb2.Discard:
    """One river tile's message, built once per tile and flags (adding it to a view copies it)."""
    made = _DISCARDS.get((tile, flags))
    if made is None:
        made = _DISCARDS[tile, flags] = play_pb2.Discard(
            tile=tile_name(tile),
            claimed=bool(flags & DISCARD_CLAIMED),
            declared_ready=bool(flags & DISCARD_READY),
            drawn_tile=bool(flags & DISCARD_DRAWN),
        )
    return made


_DISCARDS: dict[tuple[int, int], play_pb2.Discard] = {}


def _waits(table: Table, seat: int, own: list[int]) -> str:
    state = table.state
    if len(own) % 3 != 1 or state.phase == OVER:
        return ""
    counts = list(state.hands[seat])
    return format_tiles(waits(counts, profile=state.settings.profile, melded_tiles=state.melded_tiles(seat)))


def engine_decision(table: Table, seat: int) -> tuple[list[play_pb2.LegalAction], play_pb2.Action]:
    """The seat's legal actions in contract form and its T11 default."""
    legal = table.legal_actions(seat)
    actions = codec.encode_legal(legal, table.settings.effective_exchange_limit, table.state.hand_size(seat))
    if any(action.kind == A.SWAP_ITEM for action in legal):
        # 偷天换日 may turn any held tile into any unseen kind: the list names one tile's swaps, this the
        # kinds (what a client needs to offer the others).
        targets = format_tiles(unseen_kinds(table.state))
        for entry in actions:
            if entry.kind == play_pb2.ACTION_KIND_USE_ITEM:
                entry.swap_targets = targets
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
