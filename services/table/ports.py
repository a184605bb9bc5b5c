"""What a live table is given: its checked request, and the narrow ports it reaches the outside by.

Both the host (:mod:`services.table.core`) and the live table (:mod:`services.table.live`) import
these; neither imports the other's types. The bus implementations are in :mod:`services.table.wal`,
:mod:`services.table.publishers` and :mod:`services.table.settlements`; tests may give their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from google.protobuf.message import Message

from duelmahjong.v1 import events_pb2, rules_pb2, server_state_pb2
from services.table.metrics import TableMetrics

Clock = Callable[[], float]  # monotonic seconds; the event loop's clock unless a test injects one
# (table id, hand number) → the hand's seed; the OS's secure source unless a test injects one.
Seeds = Callable[[str, int], int]
# (table id, hand number) → the salt drawn with the hand's seed for its commitment (HandStarted.
# wall_commitment); the OS's secure source unless a test injects one.
Salts = Callable[[str, int], bytes]


@dataclass(frozen=True)
class OpenRequest:
    """An OpenTable call, checked: two players in seat order, a valid negotiated multiplier."""

    table_id: str
    pairing_id: str
    room_id: str
    rules: rules_pb2.RoomRules
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer]
    negotiated: int
    # OpenTableRequest.private_table: never watchable (spectators.py), never listed, archived for its
    # two players only; kept in the TableOpening record so an adopter keeps it too.
    private_table: bool = False


class Fenced(Exception):
    """The table's log has moved on without this server (another server adopted the table): it must
    stop serving the table at once and send its seats nothing more."""


class WriteAheadLog(Protocol):
    """A table's log: what a seat is shown is stored (acked) first."""

    async def append(
        self, table_id: str, hand_id: str, records: list[tuple[int, server_state_pb2.TableLogRecord]]
    ) -> None:
        """Store one step's records, numbered consecutively, before anyone sees their effect; raises
        :class:`Fenced` if another server has written the table's log since this one last did."""

    def continues(self, table_id: str, log_end: int) -> None:
        """This server takes over a table whose stored log ends at ``log_end`` (its position in the
        store: for JetStream the stream sequence of the last message on the table's subject)."""

    def forget(self, table_id: str) -> None:
        """The table is no longer served here."""


class TableEvents(Protocol):
    """The events a table publishes for the other services (``events.proto``), envelopes filled."""

    async def publish(self, subject: str, event: Message, event_id: str) -> None:
        """A hand's event for the wallet (ExchangeCharged, ItemUsed), de-duplicated on id."""

    async def hand_ended(self, table_id: str, hand_id: str, log_position: int) -> None:
        """The hand ended at ``log_position`` of the table's log: scoring turns the log into its result."""

    async def table_opened(self, request: OpenRequest) -> None: ...

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None: ...

    async def table_adopted(
        self,
        request: OpenRequest,
        how: events_pb2.AdoptionKind.ValueType,
        *,
        server_id: str,
        address: str,
        incarnation: str,
    ) -> None:
        """This server process (``incarnation`` of ``server_id``, reached at ``address``) serves the
        table from now on, rebuilt from its log; ``how``: its server died, or a draining one gave it."""


class Settlements(Protocol):
    """The wallet's answers about the hands this server finished: what it applied for a hand, the only
    settlement seats are shown."""

    def expect(self, hand_id: str, deliver: Callable[[events_pb2.SettlementApplied], None]) -> None:
        """The hand's answer goes to ``deliver`` once, when it arrives; expected before the hand's
        result is published."""

    def forget(self, hand_id: str) -> None:
        """The hand's table waits no more; a later answer is dropped (and counted)."""


@dataclass(frozen=True)
class BusPorts:
    """Everything a live table needs from the bus."""

    wal: WriteAheadLog
    events: TableEvents
    settlements: Settlements


class TableOwner(Protocol):
    """What a live table reads of the server that hosts it, each time it needs it: a test changes
    the host's clock, seeds or limits while its tables run."""

    @property
    def metrics(self) -> TableMetrics | None: ...

    @property
    def queue_size(self) -> int: ...

    @property
    def settlement_wait(self) -> float: ...

    @property
    def join_seconds(self) -> float: ...

    @property
    def draining(self) -> bool: ...

    def now(self) -> float:
        """The tables' monotonic clock, in seconds."""

    def seed(self, table_id: str, hand_number: int) -> int:
        """A hand's only randomness; it never leaves the servers before the hand ended."""

    def salt(self, table_id: str, hand_number: int) -> bytes:
        """The salt of a hand's commitment (``fairness.SALT_BYTES``), drawn with its seed."""

    def closed(self, table_id: str) -> None:
        """The table has closed: its capacity is free again."""

    def let_go(self, table_id: str) -> None:
        """The table is served by another server now: its capacity here is free again."""
