"""Fixtures of the table service tests: a running table server, tables opened on it, and ``kit`` —
the raw Play-stream client and the checks the tests share (every message a client receives is checked
for hidden information: the opponent's private event parts, the wall, the pool, the seed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2, table_pb2_grpc, tiles_pb2
from duelmahjong.v1 import matchmaking_pb2 as mm
from services.scoring import codec as scoring_codec
from services.scoring.replay import ReplayedHand, replay_hand
from services.table import main as table_main
from services.table.config import TableConfig
from services.table.live import LiveTable


def _rules(**overrides: Any) -> rules_pb2.RoomRules:
    options: dict[str, Any] = {"profile": rules_pb2.PROFILE_DUEL, "fan_rate": 10, "fee": 0}
    options.update(overrides)
    return rules_pb2.RoomRules(**options)


class StreamEnded(Exception):
    """The server ended the Play stream."""


class SeatClient:
    """A raw Play stream: sends actions, records every response, checks each for hidden information."""

    def __init__(
        self, channel: grpc.aio.Channel, token: tuple[tuple[str, str]], ticket: str, seat: int
    ) -> None:
        self.stub = table_pb2_grpc.TableServiceStub(channel)
        self.token, self.ticket, self.seat = token, ticket, seat
        self.received: list[table_pb2.PlayResponse] = []
        self.last_seen = 0
        self.views: asyncio.Queue[table_pb2.PlayResponse | None] = asyncio.Queue()
        self._requests: asyncio.Queue[table_pb2.PlayRequest | None] = asyncio.Queue()
        self._call: Any = None
        self._reader: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()
        self.batches = 0  # PlayBatch messages received (only when connected with batches=True)

    async def connect(self, last_seen: int = 0, batches: bool = False, grand_shift: bool = False) -> None:
        await self._requests.put(
            table_pb2.PlayRequest(
                table_ticket=self.ticket,
                last_seen_sequence=last_seen,
                accept_batches=batches,
                use_grand_shift=grand_shift,
            )
        )
        self._call = self.stub.Play(self._outgoing(), metadata=self.token)
        self._reader = asyncio.create_task(self._read())

    async def _outgoing(self) -> AsyncIterator[table_pb2.PlayRequest]:
        while True:
            request = await self._requests.get()
            if request is None:
                return
            yield request

    async def _read(self) -> None:
        try:
            async for message in self._call:
                if message.HasField("batch"):
                    self.batches += 1
                    assert message.batch.responses, "an empty batch"
                    assert not any(r.HasField("batch") for r in message.batch.responses), "a nested batch"
                for response in message.batch.responses if message.HasField("batch") else (message,):
                    self.received.append(response)
                    if response.HasField("event"):
                        self.last_seen = max(self.last_seen, response.event.sequence)
                    else:
                        await self.views.put(response)
        finally:
            self.ended.set()
            await self.views.put(None)  # wakes whoever waits for a view

    async def send(
        self, action: play_pb2.Action, *, last_seen: int | None = None, action_id: int = 0
    ) -> None:
        sequence = self.last_seen if last_seen is None else last_seen
        await self._requests.put(
            table_pb2.PlayRequest(action=action, last_seen_sequence=sequence, client_action_id=action_id)
        )

    async def next_view(self, within: float = 10.0) -> table_pb2.PlayResponse:
        response = await asyncio.wait_for(self.views.get(), within)
        if response is None:
            raise StreamEnded("the table ended this seat's stream")
        return response

    async def decision(self, within: float = 10.0, phase: int = 0) -> play_pb2.SeatView:
        """The next view that asks this seat to decide (skipping views while the opponent decides)."""
        while True:
            response = await self.next_view(within)
            view = response.view
            if response.HasField("view") and view.legal_actions.actions and phase in (0, view.table.phase):
                return view

    def disconnect(self) -> None:
        if self._call is not None:
            self._call.cancel()

    async def reconnect(self, last_seen: int | None = None) -> None:
        """A new Play stream with the same ticket after this one ended, resuming after ``last_seen``
        (the last sequence seen by default); what the old stream received is kept."""
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self.ended.clear()
        self._requests = asyncio.Queue()
        self.views = asyncio.Queue()  # drop what the first stream left behind
        await self.connect(self.last_seen if last_seen is None else last_seen)

    async def close(self) -> None:
        await self._requests.put(None)
        self.disconnect()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)


def simple_choice(view: play_pb2.SeatView) -> play_pb2.Action:
    """A plain policy over the contract: win, keep the hand, pass, discard the drawn tile, leave after."""
    kinds = {a.kind: a for a in view.legal_actions.actions}
    if play_pb2.ACTION_KIND_WIN in kinds:
        return play_pb2.Action(win=play_pb2.WinAction())
    if play_pb2.ACTION_KIND_EXCHANGE in kinds:
        return play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles=""))
    if play_pb2.ACTION_KIND_CHOOSE_DOUBLING in kinds:
        return play_pb2.Action(choose_doubling=play_pb2.ChooseDoublingAction(start_doubled=False))
    if play_pb2.ACTION_KIND_GUESS in kinds:
        return play_pb2.Action(guess=play_pb2.GuessAction(skip=True))
    if play_pb2.ACTION_KIND_CONTINUE in kinds:
        return play_pb2.Action(leave=play_pb2.LeaveAction())
    if play_pb2.ACTION_KIND_DISCARD in kinds:
        tile = view.drawn_tile or kinds[play_pb2.ACTION_KIND_DISCARD].choices[0]
        return play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile))
    return play_pb2.Action(**{"pass": play_pb2.PassAction()})


def check_saw_a_hand(client: SeatClient, table: LiveTable, *, negotiated: int = 2) -> None:
    """``client`` saw one whole hand: it started with the table's multipliers (``open_table`` agrees
    T7's 2x), was revealed, settled and the table ended; and nothing hidden reached it."""
    kinds = [r.event.WhichOneof("kind") for r in client.received if r.HasField("event")]
    assert "hand_revealed" in kinds and "hand_settled" in kinds and "table_ended" in kinds
    assert check_hidden(client, table) > 10
    started = [r.event.hand_started for r in client.received if r.event.HasField("hand_started")]
    assert [(s.multipliers.negotiated, s.multipliers.progressive) for s in started] == [(negotiated, 1)]


# The typed fields of a SeatEvent that only the seat the event is about may see filled.
OWN_ONLY = {
    "tiles_dealt": ("tiles",),
    "tile_drawn": ("tile",),
    "tiles_exchanged": ("given", "received"),
    "item_applied": ("given", "received"),
    "offer_resolved": ("offer_id", "given", "received"),
    "doubling_chosen": ("start_doubled",),
}


def check_hidden(client: SeatClient, table: LiveTable) -> int:
    """No message to ``client`` holds server-only state or the opponent's private event parts (its
    dealt, drawn and exchanged tiles, offers, item trades, 开始加倍 choice, concealed kongs); returns
    how many messages were checked."""
    own = rules_pb2.SEAT_FIRST if client.seat == 0 else rules_pb2.SEAT_SECOND
    for response in client.received:
        text = str(response)
        for field in ("seed", "salt", "unused_pool", "wall:", "tenpai"):
            assert field not in text
        if response.HasField("event"):
            event = response.event
            kind = event.WhichOneof("kind")
            assert kind is not None, f"an untyped event: {event}"
            assert event.detail_json == "", "detail_json is no longer set"
            typed = getattr(event, kind)
            about = getattr(typed, "seat", own)
            if about != own:
                for name in OWN_ONLY.get(kind, ()):
                    assert not getattr(typed, name), (
                        f"the opponent's {kind}.{name} reached seat {client.seat}"
                    )
                if kind == "offer_made":
                    assert not typed.HasField("offer"), typed
                if kind == "meld_made" and typed.meld.kind == tiles_pb2.MELD_KIND_CONCEALED_KONG:
                    assert typed.meld.hidden and not typed.meld.tiles, typed
        view = response.view if response.HasField("view") else response.rejected.view
        if view.table.phase in (play_pb2.HAND_PHASE_PLAY, play_pb2.HAND_PHASE_EXCHANGE):
            opponent = view.table.seats[1 - client.seat] if len(view.table.seats) == 2 else None
            assert opponent is None or opponent.revealed_concealed == ""
    return len(client.received)


@pytest_asyncio.fixture
async def table_server(
    start_service: Any, service_env: dict[str, str]
) -> AsyncIterator[table_main.TableServer]:
    env = {
        **service_env,
        "SETTLEMENT_WAIT_SECONDS": "0.3",
        "ANNOUNCE_SECONDS": "0.2",
        "SERVER_ID": "t-test",
        "DRAIN_SECONDS": "1",
    }
    server = table_main.TableServer()
    await start_service(server.spec, TableConfig.from_env(env))
    yield server


@pytest_asyncio.fixture
async def open_table(
    table_server: Any,
    issue: Callable[..., tuple[tuple[str, str]]],
    unique_name: Callable[[str], str],
    client_tls: ClientTls,
) -> AsyncIterator[Callable[..., Any]]:
    channel = client_tls.channel(table_server.address)
    clients: list[SeatClient] = []

    async def open_(
        rules: rules_pb2.RoomRules | None = None, items: list[rules_pb2.ItemCount] | None = None
    ) -> tuple[str, SeatClient, SeatClient]:
        """A table of ``rules`` (default: ``_rules()``); each seat holds ``items`` (T6) if given."""
        table_id = unique_name("tbl").lower().replace(".", "-")
        players = [
            rules_pb2.SeatPlayer(
                seat=seat, player_id=f"{table_id}-{name}", display_name=name.upper(), carry=1000, items=items
            )
            for seat, name in ((rules_pb2.SEAT_FIRST, "a"), (rules_pb2.SEAT_SECOND, "b"))
        ]
        stub = table_pb2_grpc.TableServiceStub(channel)
        opened = await stub.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=table_id,
                pairing_id=f"p-{table_id}",
                room_id="r",
                rules=rules or _rules(),
                players=players,
                negotiated=2,
            ),
            metadata=issue("matchmaking", auth.Role.SERVICE),
        )
        seats = []
        for seat, ticket in enumerate(opened.tickets):
            client = SeatClient(channel, issue(ticket.player_id), ticket.table_ticket, seat)
            clients.append(client)
            seats.append(client)
        return table_id, seats[0], seats[1]

    yield open_
    for client in clients:
        await client.close()
    await channel.close()


class FakeClock:
    """The table host's injectable clock: time moves only when a test says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def eventually(check: Callable[[], bool], within: float = 5.0) -> None:
    """Wait until ``check()`` holds (polling), or fail."""
    for _ in range(int(within / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    assert check(), "the condition never held"


def live(table_server: table_main.TableServer, table_id: str) -> LiveTable:
    host = table_server.host
    table = host.live_tables[table_id]
    assert isinstance(table, LiveTable)
    return table


async def play_until_over(clients: tuple[SeatClient, SeatClient], within: float = 15.0) -> None:
    """Both seats follow ``simple_choice`` until the table ends their streams."""

    async def seat_loop(client: SeatClient) -> None:
        while not client.ended.is_set():
            try:
                view = await client.decision(within)
            except StreamEnded:
                return
            await client.send(simple_choice(view))

    await asyncio.wait_for(asyncio.gather(*(seat_loop(c) for c in clients)), within)


async def _log_messages(bus: Bus, table_id: str) -> list[events_pb2.TableEventAppended]:
    """The table's write-ahead log as stored: one message per step (a record and its ``following``)."""
    subject = subjects.table_log_subject(table_id)
    sub = await bus.js.subscribe(subject, ordered_consumer=True)
    out: list[events_pb2.TableEventAppended] = []
    try:
        while True:
            try:
                message = await sub.next_msg(timeout=0.5)
            except TimeoutError:
                break
            out.append(events_pb2.TableEventAppended.FromString(message.data))
    finally:
        await sub.unsubscribe()
    return out


async def _read_log(bus: Bus, table_id: str) -> list[events_pb2.TableEventAppended]:
    """The log's records one by one, each at its own sequence."""
    return [
        events_pb2.TableEventAppended(
            table_id=appended.table_id,
            hand_id=appended.hand_id,
            sequence=appended.sequence + offset,
            record=record,
        )
        for appended in await _log_messages(bus, table_id)
        for offset, record in enumerate([appended.record, *appended.following])
    ]


async def _replayed(bus: Bus, ended: events_pb2.HandEnded) -> ReplayedHand:
    """The hand a ``HandEnded`` points at, as scoring turns the table's log into its result."""
    messages = await _log_messages(bus, ended.table_id)
    records = [record for message in messages for record in scoring_codec.log_records(message)]
    return replay_hand(records, scoring_codec.hand_pointer(ended))


async def _first_turn(
    table: LiveTable, first: SeatClient, second: SeatClient
) -> tuple[SeatClient, SeatClient, play_pb2.SeatView]:
    """Both seats join and keep their hands (T4): (the seat to discard first, the other, its first
    decision of play)."""
    await first.connect()
    await second.connect()
    for client in (first, second):
        await client.decision()
        await client.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))
    await eventually(lambda: table.state.engine.to_move >= 0)
    mover, other = (first, second) if table.state.engine.to_move == 0 else (second, first)
    return mover, other, await mover.decision(phase=play_pb2.HAND_PHASE_PLAY)


def table_ready(address: str, table_id: str, client: SeatClient) -> mm.TableReady:
    """What matchmaking would hand ``client``'s player: the table, its address, the seat's ticket and
    seat (for the client library's ``play_table``)."""
    return mm.TableReady(
        table_id=table_id,
        address=address,
        table_ticket=client.ticket,
        seat=rules_pb2.SEAT_FIRST if client.seat == 0 else rules_pb2.SEAT_SECOND,
    )


async def _next_rejection(client: SeatClient) -> table_pb2.ActionRejected:
    while True:
        response = await client.next_view()
        if response.HasField("rejected"):
            return response.rejected


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers the table tests share (test modules cannot import each other here)."""
    return SimpleNamespace(
        SeatClient=SeatClient,
        StreamEnded=StreamEnded,
        rules=_rules,
        simple_choice=simple_choice,
        check_hidden=check_hidden,
        check_saw_a_hand=check_saw_a_hand,
        live=live,
        play_until_over=play_until_over,
        read_log=_read_log,
        replayed=_replayed,
        log_messages=_log_messages,
        next_rejection=_next_rejection,
        first_turn=_first_turn,
        table_ready=table_ready,
        FakeClock=FakeClock,
        eventually=eventually,
    )
