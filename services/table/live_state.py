"""What one live table knows, declared in one place: :class:`LiveState`, which only the table's own
task reads and changes (:mod:`services.table.live` owns it; its collaborators are handed it).

What both seats are shown — engine events and the table's own (settlement, connections, the end) — is
numbered 1, 2, 3… and kept (:class:`EventLog`), so a seat that comes back is sent everything after
the last sequence it saw.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from duelmahjong.engine import actions as A
from duelmahjong.engine.events import Event
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.v1 import play_pb2, table_pb2
from duelmahjong.views import codec, items
from duelmahjong.views.seat_events import NO_NOTE, Narrator, Note
from duelmahjong.views.seat_views import TableFacts
from services.table.claim_window import Windows
from services.table.ports import OpenRequest
from services.table.seats import SeatState

DEFAULT_GRACE_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Shown:
    """One event both seats were shown: an engine event (each seat's copy is built from it, with its
    note) or one of the table's own (``made``: the same message for both seats)."""

    sequence: int
    event: Event | None = None
    made: play_pb2.SeatEvent | None = None
    note: Note = NO_NOTE
    at: int = 0  # when it was first shown, nanoseconds since the epoch


class Bell:
    """Wakes whoever waits for the table's next shown event (the spectators' feed,
    :mod:`services.table.spectators`): ringing resolves one future and never waits."""

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def ring(self) -> None:
        future, self._future = self._future, None
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self) -> None:
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._future)  # a waiter cancelled leaves the others waiting


@dataclass
class EventLog:
    sequence: int = 0  # the journal's: every record (action records too), numbered without gaps
    # What seats are sent, numbered 1, 2, 3… apart from the journal, so neither an action record nor a
    # seat-only event leaves a gap to see.
    events: list[Shown] = field(default_factory=list)


@dataclass(eq=False)
class LiveState:
    """One live table's state. Times are the host's monotonic clock, in seconds."""

    request: OpenRequest
    settings: RoomSettings
    engine: Table  # the table's engine: nothing outside the table's task touches it
    seats: list[SeatState]
    # T6: what each seat has left to use here, from the pairing's wallet counts; spent as used.
    item_counts: list[dict[str, int]]
    grace: float  # T10: how long a seat that went away is held
    status: table_pb2.TableStatus.ValueType = table_pb2.TABLE_STATUS_WAITING
    hand_id: str = ""
    hands_played: int = 0
    between: bool = False  # T7 / T10: between hands, each seat continues or leaves
    between_since: float = 0.0
    # TABLE_STATUS_SETTLING: since when the hand's settlement is awaited, and the seats that asked to
    # leave meanwhile (they leave once it is shown: T7, leaving between hands).
    settling_since: float = 0.0
    leaving: set[int] = field(default_factory=set)
    opened_at: float = 0.0
    close_reason: str = "the pairing ended"
    log: EventLog = field(default_factory=EventLog)
    narrator: Narrator = field(default_factory=Narrator)
    news: Bell = field(default_factory=Bell)  # rung when more is shown, and when the table stops here
    # RoomRules.claim_window_ms: what follows a discard is shown when its window ends (None: at once).
    windows: Windows[Shown] | None = None
    # Where the log's last engine step starts: (engine events, events shown) before it. Set by
    # services/table/rebuild.py: what a claim window open when the log stopped holds again.
    last_step: tuple[int, int] = (0, 0)

    @classmethod
    def opened(cls, request: OpenRequest) -> LiveState:
        settings = codec.room_settings(request.rules, request.negotiated)
        window = request.rules.claim_window_ms / 1000
        return cls(
            request=request,
            settings=settings,
            engine=Table(settings),
            seats=[SeatState(request.players[0]), SeatState(request.players[1])],
            item_counts=[items.seat_counts(player, request.rules) for player in request.players],
            grace=(request.rules.reconnect_grace_millis / 1000) or DEFAULT_GRACE_SECONDS,
            windows=Windows(window, Table(settings)) if window else None,
        )

    @property
    def table_id(self) -> str:
        return self.request.table_id

    def last_event_sequence(self) -> int:
        return self.log.events[-1].sequence if self.log.events else 0

    def holding(self) -> bool:
        """Events are held for a claim window (:mod:`services.table.claim_window`): nobody decides."""
        return self.windows is not None and self.windows.holding()

    def shown_sequence(self) -> int:
        """The last sequence the seats were sent (a claim window may hold later ones)."""
        if self.windows is not None:
            window = next((w for w in self.windows.open if w.held), None)
            if window is not None:
                return window.held[0][0].sequence - 1
        return self.last_event_sequence()

    def shown_engine(self) -> Table:
        """The engine as the seats were last shown it: what every view is built from."""
        return self.engine if self.windows is None else self.windows.shown_table(self.engine)

    def deciding(self, seat: int) -> bool:
        if self.holding():
            return False
        return any(a.kind != A.LEAVE for a in self.engine.legal_actions(seat))

    def deadline(self, seat: int) -> float | None:
        """When the server decides for ``seat`` (T11; between hands T7 / T10), None if it need not."""
        state = self.seats[seat]
        if self.between:
            if state.continuing:
                return None
            if not state.connected and state.left_at is not None:
                return max(self.between_since + self.settings.decision_seconds, state.left_at + self.grace)
            return self.between_since + self.settings.decision_seconds
        return state.deadline(self.settings.decision_seconds)

    def ending(self, reason: str) -> None:
        """The table closes once its task is done with the current step."""
        self.status, self.close_reason = table_pb2.TABLE_STATUS_CLOSED, reason

    def ended(self) -> bool:
        """Both seats were shown the table's end (its last event)."""
        last = self.log.events[-1].made if self.log.events else None
        return last is not None and last.HasField("table_ended")

    def facts(self) -> TableFacts:
        return TableFacts(
            table_id=self.table_id,
            hand_id=self.hand_id,
            players=self.request.players,
            connected=(self.seats[0].connected, self.seats[1].connected),
            fan_rate=self.request.rules.fan_rate,
            sequence=self.shown_sequence(),
            items=(self.item_counts[0], self.item_counts[1]),
            negotiated=self.engine.state.settings.negotiated_multiplier,
            rules=self.request.rules,
            offer_ids=(self.narrator.offer_ids[0], self.narrator.offer_ids[1]),
            auto_play=(self.seats[0].auto_play, self.seats[1].auto_play),
            settling=self.status == table_pb2.TABLE_STATUS_SETTLING,
        )
