"""What ``duel bench chaos`` checks in the tables' write-ahead logs, against what the bots saw.

The logs are read back from JetStream (stream ``DUEL_TABLE_LOG``, one subject per table) in one pass.
A bot seat records (:class:`SeatRecord`) every event it was shown (its sequence and time) and every
in-hand action its policy chose, with the sequence of the decision it answered. Then:

- **shown events durable**: every event a seat was shown is in its table's log under the same
  sequence and with the same time (the log keeps the time each event was first shown); an event
  shown again on a resumed stream carries its first time;
- **acknowledged actions**: the table acknowledges an action by the events it caused. Seen from the
  client, an action answering the decision that followed sequence ``S`` is acknowledged when the seat
  is shown event ``S + 1`` and that event came from the step applying this seat's own action
  (``ActionApplied``, origin player). That step must hold one of the actions the seat chose for that
  decision. An event ``S + 1`` from another step (the opponent's action, the clock's default, a
  connection notice) acknowledges nothing of this seat's;
- **duplicate applications**: the log holds no record sequence twice, no shown sequence twice, and no
  seat's action applied twice for one decision (the same action of the same seat with no event shown
  between). The log does not keep client action ids: a request applied twice shows as exactly that;
- **hands voided**: a hand whose ``HandBegun`` is in a log but which the wallet never settled
  (no applied ``hand:<hand_id>`` or ``escape:<hand_id>`` transaction).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import nats

from duelmahjong.client.policy import Policy
from duelmahjong.platform import subjects
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2, play_pb2, server_state_pb2, table_pb2

READ_WAIT_SECONDS = 10.0  # the longest wait for one stored message while reading the logs back
Log = list[events_pb2.TableEventAppended]


@dataclass
class SeatRecord:
    """What one bot seat saw of its table, and what it chose."""

    table_id: str
    seat: int  # rules_pb2.Seat
    shown: dict[int, int] = field(default_factory=dict)  # event sequence -> first shown at (ns)
    resent_differently: list[str] = field(default_factory=list)  # a sequence shown with two times
    decisions: dict[int, list[bytes]] = field(default_factory=lambda: defaultdict(list))

    def watch(self, message: table_pb2.PlayResponse) -> None:
        """The Play stream's watcher: note each event shown."""
        batch = message.batch.responses if message.HasField("batch") else [message]
        for response in batch:
            if not response.HasField("event"):
                continue
            event = response.event
            at = event.occurred_at.ToNanoseconds()
            first = self.shown.setdefault(event.sequence, at)
            if first != at:
                self.resent_differently.append(
                    f"table {self.table_id}: event {event.sequence} shown at {first}, then at {at}"
                )

    def chose(self, legal: play_pb2.LegalActions, action: play_pb2.Action) -> None:
        self.decisions[legal.sequence].append(action.SerializeToString(deterministic=True))


class RecordingPolicy:
    """A policy that notes each action it chooses in the seat's record."""

    def __init__(self, policy: Policy, record: SeatRecord) -> None:
        self.policy, self.record = policy, record

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> play_pb2.Action:
        action = self.policy.decide(view, legal)
        self.record.chose(legal, action)
        return action


@dataclass
class Findings:
    """The verdicts' material: counts checked and each problem as a readable line."""

    hands_begun: dict[str, str] = field(default_factory=dict)  # hand id -> table id
    events_checked: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)

    def voided(self, settled: set[str]) -> list[str]:
        return sorted(
            f"{hand} (table {table})" for hand, table in self.hands_begun.items() if hand not in settled
        )


async def read_table_logs(state: StackState) -> dict[str, Log]:
    """Every table's log, in order, by table id: one ordered pass over the stream (as ``tools``)."""
    client = await nats.connect(
        state.nats_url.split(","), connect_timeout=5, max_reconnect_attempts=0, **state.nats_options()
    )
    logs: dict[str, Log] = defaultdict(list)
    try:
        js = client.jetstream()
        info = await js.stream_info(subjects.TABLE_LOG_STREAM.name)
        last = info.state.last_seq or 0
        if not info.state.messages:
            return {}
        sub = await js.subscribe(f"{subjects.TABLE_LOG_PREFIX}.>", ordered_consumer=True)
        try:
            while True:
                message = await sub.next_msg(timeout=READ_WAIT_SECONDS)
                appended = events_pb2.TableEventAppended.FromString(message.data)
                logs[appended.table_id].append(appended)
                if message.metadata.sequence.stream >= last:
                    return dict(logs)
        finally:
            await sub.unsubscribe()
    finally:
        await client.close()


@dataclass
class _Step:
    applied: server_state_pb2.ActionApplied | None


def _records(step: events_pb2.TableEventAppended) -> list[tuple[int, server_state_pb2.TableLogRecord]]:
    return [(step.sequence + i, r) for i, r in enumerate([step.record, *step.following])]


def examine_log(table_id: str, log: Log, findings: Findings) -> dict[int, tuple[int, _Step]]:
    """One table's own checks; its shown events by sequence: (time shown, the step that showed it)."""
    shown: dict[int, tuple[int, _Step]] = {}
    answered: Counter[tuple[int, int, bytes]] = Counter()
    last_record, last_shown = 0, 0
    for step in log:
        applied = next((r.action_applied for _, r in _records(step) if r.HasField("action_applied")), None)
        marker = _Step(applied)
        if applied is not None and applied.origin == server_state_pb2.ACTION_ORIGIN_PLAYER:
            key = (applied.seat, last_shown, applied.action.SerializeToString(deterministic=True))
            answered[key] += 1
            if answered[key] == 2:
                findings.duplicates.append(
                    f"table {table_id}: seat {applied.seat} applied {applied.engine_action!r} twice "
                    f"after event {last_shown} (step {step.envelope.event_id})"
                )
        for sequence, record in _records(step):
            if sequence <= last_record:
                findings.duplicates.append(f"table {table_id}: record sequence {sequence} twice")
            elif sequence != last_record + 1:
                findings.gaps.append(f"table {table_id}: records {last_record + 1}..{sequence - 1} missing")
            last_record = max(last_record, sequence)
            kind = record.WhichOneof("kind")
            if kind == "hand_begun":
                findings.hands_begun[step.hand_id] = table_id
            seen = _shown(record)
            if seen is None:
                continue
            number, at = seen
            if number in shown:
                findings.duplicates.append(f"table {table_id}: event sequence {number} shown twice")
            shown[number] = (at, marker)
            last_shown = max(last_shown, number)
    return shown


def _shown(record: server_state_pb2.TableLogRecord) -> tuple[int, int] | None:
    """The sequence and time (ns) a record was shown to the seats under; None: shown to nobody."""
    if record.HasField("engine_event") and record.engine_event.seat_sequence:
        return record.engine_event.seat_sequence, record.engine_event.shown_at_unix_nanos
    if record.HasField("shown"):
        return record.shown.sequence, record.shown.occurred_at.ToNanoseconds()
    return None


def examine(logs: dict[str, Log], seats: list[SeatRecord]) -> Findings:
    """Every table's log checked, then every seat's record against its table's log."""
    findings = Findings()
    shown = {table_id: examine_log(table_id, log, findings) for table_id, log in sorted(logs.items())}
    for seat in seats:
        logged = shown.get(seat.table_id)
        findings.lost += seat.resent_differently
        if logged is None:
            if seat.shown:
                findings.lost.append(f"table {seat.table_id}: seat {seat.seat} was shown events; no log")
            continue
        for number, at in sorted(seat.shown.items()):
            findings.events_checked += 1
            entry = logged.get(number)
            if entry is None or entry[0] != at:
                why = "not in the log" if entry is None else f"logged at {entry[0]}, shown at {at}"
                findings.lost.append(f"table {seat.table_id}: seat {seat.seat} saw event {number}, {why}")
        for decided, actions in sorted(seat.decisions.items()):
            entry = logged.get(decided + 1)
            if decided + 1 not in seat.shown or entry is None:
                continue
            applied = entry[1].applied
            if applied is None or applied.seat != seat.seat:
                continue
            if applied.origin != server_state_pb2.ACTION_ORIGIN_PLAYER:
                continue
            findings.acknowledged += 1
            if applied.action.SerializeToString(deterministic=True) not in actions:
                findings.lost.append(
                    f"table {seat.table_id}: seat {seat.seat} answered decision {decided}, the log "
                    f"applied {applied.engine_action!r} in its name instead"
                )
    return findings
