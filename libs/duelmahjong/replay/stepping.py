"""One hand played through the engine, written down step by step as a replay's ``ReplayStep``\\ s.

Building a replay from a log and verifying a replay from its seed run the same code: a decision is
a step with the table as it stood, and every event the engine makes of it is a step with both seats'
copies (built exactly as the table builds what it sends, :mod:`duelmahjong.views.seat_events`) and the
table after that event. The engine folds a whole action at once, so a copy of its state is folded one
event at a time for the state after each.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence

from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Dealt, Event, HandEnded
from duelmahjong.engine.outcome import NO_SEAT, Outcome, Termination
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import OVER
from duelmahjong.engine.table import Table
from duelmahjong.replay.hand_log import ReplayError
from duelmahjong.replay.tables import replay_state, summary
from duelmahjong.v1 import archive_pb2, play_pb2, rules_pb2, server_state_pb2
from duelmahjong.views.seat_events import NO_NOTE, Narrator, seat_event
from duelmahjong.views.seat_views import TableFacts

ORIGINS: Mapping[int, archive_pb2.DecisionOrigin.ValueType] = {
    server_state_pb2.ACTION_ORIGIN_PLAYER: archive_pb2.DECISION_ORIGIN_PLAYER,
    server_state_pb2.ACTION_ORIGIN_TIMEOUT: archive_pb2.DECISION_ORIGIN_TIMEOUT,
    server_state_pb2.ACTION_ORIGIN_AUTOPLAY: archive_pb2.DECISION_ORIGIN_AUTOPLAY,
    server_state_pb2.ACTION_ORIGIN_LOCKED_HAND: archive_pb2.DECISION_ORIGIN_LOCKED_HAND,
}


def hand_facts(
    table_id: str,
    hand_id: str,
    players: Sequence[rules_pb2.SeatPlayer],
    rules: rules_pb2.RoomRules,
    negotiated: int,
) -> TableFacts:
    """What the seats' copies of the hand's events read beside the engine (ids, players, rates)."""
    first, second = players
    return TableFacts(
        table_id=table_id,
        hand_id=hand_id,
        players=(first, second),
        connected=(True, True),
        fan_rate=rules.fan_rate,
        sequence=0,
        negotiated=negotiated,
        rules=rules,
    )


def table_before_hand(settings: RoomSettings, hand_number: int, dealer: int, round_wind: int) -> Table:
    """A table at the point of its pairing where hand ``hand_number`` is dealt: the first hand's dealer
    comes from its seed (T1); a later hand's dealer and round wind (E17) from the hands before it,
    which only the ``HandStarted`` says."""
    table = Table(settings)
    if hand_number > 1:
        state = table.state
        state.hand_number = hand_number - 1
        # The previous hand as dealing reads it: a drawn hand keeps its dealer; the passes give the round
        # wind.
        state.results.append(
            Outcome(
                Termination.DRAWN,
                hand=hand_number - 1,
                dealer=dealer,
                dealer_passes=2 * round_wind,
                winner=NO_SEAT,
                escaper=NO_SEAT,
                negotiated=settings.negotiated_multiplier,
                progressive=1,
                hands=("", ""),
            )
        )
        state.phase = OVER
    return table


class HandPlayer:
    """Plays one hand through ``table`` (a table before the hand) and writes its steps."""

    def __init__(self, table: Table, facts: TableFacts) -> None:
        self.table = table
        self.facts = facts
        self.state = copy.deepcopy(table.state)  # folded event by event: the table after each step
        self.narrator = Narrator()
        self.steps: list[archive_pb2.ReplayStep] = []
        self.events: list[Event] = []  # every event of the hand the steps show
        self.initial: archive_pb2.ReplayState | None = None  # the table once both seats were dealt
        self.over = False

    def deal(
        self, seed: int, salt: bytes, items: Sequence[Mapping[str, int]], qiankun: Iterable[int]
    ) -> list[Event]:
        try:
            return self.table.start_hand(seed, salt=salt, items=items, qiankun=qiankun)
        except EngineError as err:
            raise ReplayError(f"the hand cannot be dealt from its seed: {err}") from None

    def decide(
        self,
        seat: rules_pb2.Seat.ValueType,
        message: play_pb2.Action,
        origin: archive_pb2.DecisionOrigin.ValueType,
    ) -> None:
        """A decision step: the table as it stood when the decision was taken."""
        step = self._step()
        step.decision.seat, step.decision.origin = seat, origin
        step.decision.action.CopyFrom(message)
        step.state.CopyFrom(replay_state(self.state))

    def apply(self, action: Action) -> list[Event]:
        try:
            return self.table.apply(action)
        except EngineError as err:
            raise ReplayError(f"step {len(self.steps)}: {action} is not legal there: {err}") from None

    def show(self, events: Sequence[Event], shown: Sequence[tuple[int, int]]) -> None:
        """The event steps of one action (or of the deal): ``shown`` is each event's (sequence, time
        both seats were shown it), (0, 0) for one shown to nobody."""
        # The table notes its events once the engine folded the whole action (services/table).
        notes = [
            self.narrator.note(event, sequence, self.table.state) if sequence else NO_NOTE
            for event, (sequence, _) in zip(events, shown, strict=True)
        ]
        dealt = False
        for event, (sequence, at), note in zip(events, shown, notes, strict=True):
            self.state.fold(event)
            if self.over:
                continue  # the pairing's own end, after the hand's
            self.events.append(event)
            dealt = dealt or isinstance(event, Dealt)
            step = self._step()
            shown_event = step.event
            shown_event.summary = summary(event)
            if sequence:
                shown_event.sequence = sequence
                shown_event.occurred_at.seconds, shown_event.occurred_at.nanos = divmod(at, 1_000_000_000)
                seat_event(event, 0, sequence, self.facts, note, at, into=shown_event.first_seat)
                seat_event(event, 1, sequence, self.facts, note, at, into=shown_event.second_seat)
            step.state.CopyFrom(replay_state(self.state))
            self.over = isinstance(event, HandEnded)
        if dealt:
            self.initial = replay_state(self.state)

    def _step(self) -> archive_pb2.ReplayStep:
        step = archive_pb2.ReplayStep(index=len(self.steps) + 1)
        self.steps.append(step)
        return step
