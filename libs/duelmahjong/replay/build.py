"""A finished hand's ``Replay`` (archive.proto) from its table's write-ahead log: :func:`build_replay`.

The hand is played again through the engine: the table before the hand is the fold of the log's
earlier events, the deal comes again from the logged seed, salt, items and 乾坤大挪移 seats, and every
logged action is applied again. Each event the engine makes must be the logged one byte for byte
(:class:`ReplayError` otherwise), so the replay shows what the table did, with both seats' copies of
every event built exactly as the table built what it sent, and the table after every step.
"""

from __future__ import annotations

from collections.abc import Sequence

from duelmahjong import contract
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Event, HandEnded
from duelmahjong.engine.table import Table
from duelmahjong.replay.hand_log import HandLog, LoggedEvent, ReplayError, log_records, read_hand
from duelmahjong.replay.stepping import ORIGINS, HandPlayer, hand_facts
from duelmahjong.replay.tables import counts_at_deal, revealed_deal
from duelmahjong.rules.tiles import WIND_NAMES
from duelmahjong.v1 import archive_pb2, play_pb2, server_state_pb2
from duelmahjong.views import codec
from duelmahjong.views.seat_events import hand_revealed

__all__ = ["ReplayError", "build_replay", "log_records"]

OUTCOMES = {
    "win": archive_pb2.ARCHIVED_OUTCOME_WIN,
    "drawn": archive_pb2.ARCHIVED_OUTCOME_DRAWN,
    "escape": archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
}


def build_replay(
    records: Sequence[server_state_pb2.TableLogRecord],
    hand_id: str,
    *,
    result: archive_pb2.ArchivedHand | None = None,
) -> archive_pb2.Replay:
    """The replay of hand ``hand_id`` from its table's whole log ``records`` (in order: each log
    message's ``record`` then its ``following``, :func:`log_records` of what services/table/wal.py
    ``read_table_log`` returns). ``result``: the archive's record of the hand; without it the replay
    carries the result the log shows (the outcome, the score and the settlement the table showed)."""
    log = read_hand(records, hand_id)
    opening, begun = log.opening, log.begun
    try:
        table = Table.replay(log.prior)
    except EngineError as err:
        raise ReplayError(f"the table before hand {hand_id!r} does not replay: {err}") from None
    facts = hand_facts(opening.table_id, hand_id, begun.players, begun.rules, opening.negotiated_multiplier)
    player = HandPlayer(table, facts)
    started = log.started
    try:
        salt = bytes.fromhex(started.salt or "")
    except ValueError:
        raise ReplayError(f"hand {hand_id!r}: its hand_started carries a salt that is not hex") from None
    counts = counts_at_deal(started)
    _played(
        player,
        player.deal(started.seed, salt, counts, started.qiankun),
        log.deal,
        "the deal",
    )
    for logged in log.actions:
        applied = logged.applied
        try:
            action = Action.parse(applied.engine_action)
        except (EngineError, ValueError) as err:
            raise ReplayError(
                f"step {len(player.steps) + 1}: unreadable action {applied.engine_action!r}: {err}"
            ) from None
        player.decide(
            applied.seat, applied.action, ORIGINS.get(applied.origin, archive_pb2.DECISION_ORIGIN_UNSPECIFIED)
        )
        _played(player, player.apply(action), logged.events, f"step {len(player.steps)} ({action})")
    replay = archive_pb2.Replay(
        hand_id=hand_id,
        table_id=opening.table_id,
        pairing_id=opening.pairing_id,
        room_id=opening.room_id,
        hand_number=begun.hand_number,
        rules=begun.rules,
        players=[
            play_pb2.TablePlayer(seat=p.seat, player_id=p.player_id, display_name=p.display_name)
            for p in begun.players
        ],
        dealer=begun.dealer,
        round_wind=contract.WINDS[WIND_NAMES[started.round_wind]],
        multipliers=begun.multipliers,
        fairness=archive_pb2.FairnessProof(
            commitment=bytes.fromhex(started.commitment or ""),
            seed=begun.hidden.seed,
            salt=begun.hidden.salt,
        ),
        deal=revealed_deal(player.events),
        steps=player.steps,
        result=result if result is not None else logged_result(log),
    )
    if player.initial is not None:
        replay.initial.CopyFrom(player.initial)
    return replay


def _played(player: HandPlayer, events: list[Event], logged: Sequence[LoggedEvent], where: str) -> None:
    """The engine's events of a step must be the logged ones, byte for byte; then they are shown."""
    for position, (made, was) in enumerate(zip(events, logged, strict=False)):
        if made.canonical() != was.canonical:
            differs = (
                "with other contents"
                if type(made) is type(was.event)
                else f"where the log has {was.event.kind!r}"
            )
            raise ReplayError(
                f"{where}: event {position + 1} of the engine, {made.kind!r}, differs {differs}"
            )
    if len(events) != len(logged):
        raise ReplayError(f"{where}: the engine makes {len(events)} events where the log has {len(logged)}")
    player.show(events, [(e.sequence, e.at) for e in logged])


def logged_result(log: HandLog) -> archive_pb2.ArchivedHand:
    """The hand's result as its log shows it: VOID when the log stops before the hand's end."""
    opening, begun = log.opening, log.begun
    hand = archive_pb2.ArchivedHand(
        hand_id=begun.hidden.hand_id,
        pairing_id=opening.pairing_id,
        table_id=opening.table_id,
        hand_number=begun.hand_number,
        outcome=archive_pb2.ARCHIVED_OUTCOME_VOID,
    )
    if log.deal[0].at:
        hand.started_at.FromNanoseconds(log.deal[0].at)
    events = [e for action in log.actions for e in action.events]
    ended = next((e for e in events if isinstance(e.event, HandEnded)), None)
    if ended is None or not isinstance(ended.event, HandEnded):
        last = max((e.at for e in (*log.deal, *events)), default=0)
        if last:
            hand.ended_at.FromNanoseconds(last)
        return hand
    outcome = ended.event.outcome
    hand.outcome = OUTCOMES[outcome.termination]
    hand.winner = codec.seat_enum(outcome.winner)
    hand.escaper = codec.seat_enum(outcome.escaper)
    revealed = hand_revealed(outcome)
    if revealed.HasField("evaluation"):
        hand.evaluation.CopyFrom(revealed.evaluation)
    if ended.at:
        hand.ended_at.FromNanoseconds(ended.at)
    if log.settled is not None and log.settled.hand_settled.HasField("settlement"):
        hand.settlement.CopyFrom(log.settled.hand_settled.settlement)
        hand.settled = True
    return hand
