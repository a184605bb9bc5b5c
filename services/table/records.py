"""The table's write-ahead log records (``server_state.proto``), built from engine values.

A hand's records: ``HandBegun`` (rules, players, multipliers and the hidden state: seed, salt, wall,
pool),
then for every accepted action an ``ActionApplied`` (the contract's action, where it came from and the
engine's text form, which replay applies) followed by one ``EngineEventRecord`` per event it caused
(the engine's canonical JSON, server part included, and the seat sequence it was shown under). Scoring
replays exactly these. The table's own events (``HandSettled``, ``SeatConnection``, ``TableEnded``)
are ``shown`` records holding the ``SeatEvent`` both seats got, so the log holds all a seat was sent.

What the table decides beside the engine is logged too, so the log alone rebuilds a live table
(:mod:`services.table.rebuild`): ``TableOpening`` first (what the table was opened with), a
``TimeBankLeft`` with each step that changes a seat's time bank, a ``SeatContinued`` when a seat plays
on between hands.
"""

from __future__ import annotations

from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Event, HandStarted
from duelmahjong.engine.table import Table
from duelmahjong.rules.tiles import tile_name
from duelmahjong.v1 import play_pb2, rules_pb2, server_state_pb2
from duelmahjong.views import codec
from services.table.ports import OpenRequest

Record = server_state_pb2.TableLogRecord
ORIGINS = {
    "player": server_state_pb2.ACTION_ORIGIN_PLAYER,
    "timeout": server_state_pb2.ACTION_ORIGIN_TIMEOUT,
    "autoplay": server_state_pb2.ACTION_ORIGIN_AUTOPLAY,
}


# The two records of every step are filled in place: a nested constructor copies its parts again.
def action_applied(action: Action, origin: str) -> Record:
    record = Record()
    applied = record.action_applied
    applied.seat = codec.seat_enum(action.seat)
    applied.action.CopyFrom(codec.encode_action(action))
    applied.origin = ORIGINS[origin]
    applied.engine_action = str(action)
    return record


def engine_event(event: Event, seat_sequence: int = 0, shown_at: int = 0) -> Record:
    """An engine event, with the sequence both seats were shown it under (0: shown to nobody) and when
    (nanoseconds since the epoch)."""
    record = Record()
    logged = record.engine_event
    logged.kind = event.kind
    logged.seat = codec.seat_enum(event.seat)
    logged.canonical_json = event.canonical()
    logged.seat_sequence = seat_sequence
    if seat_sequence:
        logged.shown_at_unix_nanos = shown_at
    return record


def table_opening(request: OpenRequest) -> Record:
    """The table's first record: the checked OpenTable request."""
    return Record(
        table_opening=server_state_pb2.TableOpening(
            table_id=request.table_id,
            pairing_id=request.pairing_id,
            room_id=request.room_id,
            rules=request.rules,
            players=list(request.players),
            negotiated_multiplier=request.negotiated,
            private_table=request.private_table,
        )
    )


def opening_request(opening: server_state_pb2.TableOpening) -> OpenRequest:
    """The request a ``TableOpening`` record holds."""
    first, second = opening.players
    return OpenRequest(
        opening.table_id,
        opening.pairing_id,
        opening.room_id,
        opening.rules,
        (first, second),
        opening.negotiated_multiplier,
        private_table=opening.private_table,
    )


def time_bank(seat: int, seconds: float) -> Record:
    """What is left of ``seat``'s time bank after a change (T11)."""
    return Record(time_bank=server_state_pb2.TimeBankLeft(seat=codec.seat_enum(seat), seconds=seconds))


def seat_continued(seat: int, grand_shift: bool) -> Record:
    """Between hands ``seat`` plays on (T7), with 乾坤大挪移 in the next deal or not (T6)."""
    return Record(
        seat_continued=server_state_pb2.SeatContinued(seat=codec.seat_enum(seat), grand_shift=grand_shift)
    )


def shown(event: play_pb2.SeatEvent) -> Record:
    """An event of the table's own (settlement, connection, end) exactly as both seats are shown it."""
    record = Record()
    record.shown.CopyFrom(event)
    return record


def hand_begun(
    engine: Table,
    started: Event,
    *,
    table_id: str,
    hand_id: str,
    seed: int,
    rules: rules_pb2.RoomRules,
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer],
) -> Record:
    """The first record of a hand, right after the engine dealt it from ``seed`` (``started``: its
    hand_started event)."""
    if not isinstance(started, HandStarted):
        raise TypeError(f"a hand begins with hand_started, not {started.kind}")
    state = engine.state
    hidden = server_state_pb2.HiddenTableState(
        table_id=table_id,
        hand_id=hand_id,
        seed=seed.to_bytes(8, "big"),
        salt=bytes.fromhex(started.salt or ""),
        wall=[tile_name(t) for t in started.wall],
        unused_pool=[tile_name(t) for t in started.pool],
    )
    return Record(
        hand_begun=server_state_pb2.HandBegun(
            hand_number=state.hand_number,
            rules=rules,
            players=list(players),
            dealer=codec.seat_enum(state.dealer),
            multipliers=rules_pb2.Multipliers(
                negotiated=engine.settings.negotiated_multiplier,
                progressive=state.progressive,
                fan_rate=rules.fan_rate,
            ),
            hidden=hidden,
        )
    )
