"""The table service over real gRPC and NATS: raw clients play, misbehave, leave and come back.

Every message a client receives is checked for hidden information (the opponent's private event parts,
the wall, the pool, the seed) against the table's own full log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.rules.tiles import format_tiles, parse_tiles
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, server_state_pb2, table_pb2, table_pb2_grpc
from services.table import main as table_main
from services.table.config import TableConfig
from services.table.live import LiveTable

pytestmark = pytest.mark.asyncio
SERVER_ONLY_KEYS = ("wall", "pool", "seed", "tenpai")


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

    async def connect(self, last_seen: int = 0) -> None:
        await self._requests.put(
            table_pb2.PlayRequest(table_ticket=self.ticket, last_seen_sequence=last_seen)
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
            async for response in self._call:
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


def check_hidden(client: SeatClient, table: LiveTable) -> int:
    """No message to ``client`` holds a server-only part or the opponent's private event parts; returns
    how many messages were checked."""
    private_by_sequence = {
        sequence: event.private
        for sequence, event in table._log.events
        if event.private and event.seat != client.seat
    }
    for response in client.received:
        text = str(response)
        for field in ("seed", "unused_pool", "wall:"):
            assert field not in text
        if response.HasField("event") and response.event.detail_json:
            detail = json.loads(response.event.detail_json)
            assert not set(detail) & set(SERVER_ONLY_KEYS), detail
            hidden = private_by_sequence.get(response.event.sequence)
            if hidden:
                leaked = set(hidden) & (set(detail) - {"kind", "seat"})
                flower = detail["kind"] == "drew" and detail.get("source") == "flower"  # flowers are public
                assert not leaked or flower, detail
        view = response.view if response.HasField("view") else response.rejected.view
        if view.table.phase in (play_pb2.HAND_PHASE_PLAY, play_pb2.HAND_PHASE_EXCHANGE):
            opponent = view.table.seats[1 - client.seat] if len(view.table.seats) == 2 else None
            assert opponent is None or opponent.revealed_concealed == ""
    return len(client.received)


@pytest_asyncio.fixture
async def table_server(start_service: Any, service_env: dict[str, str]) -> AsyncIterator[Any]:
    env = {
        **service_env,
        "SETTLEMENT_WAIT_SECONDS": "0.3",
        "ANNOUNCE_SECONDS": "0.2",
        "SERVER_ID": "t-test",
        "DRAIN_SECONDS": "1",
    }
    runtime = await start_service(table_main.SPEC, TableConfig.from_env(env))
    yield runtime


@pytest_asyncio.fixture
async def open_table(
    table_server: Any, issue: Callable[..., tuple[tuple[str, str]]], unique_name: Callable[[str], str]
) -> AsyncIterator[Callable[..., Any]]:
    channel = grpc.aio.insecure_channel(table_server.server.address)
    clients: list[SeatClient] = []

    async def open_(rules: rules_pb2.RoomRules | None = None) -> tuple[str, SeatClient, SeatClient]:
        table_id = unique_name("tbl").lower().replace(".", "-")
        players = [
            rules_pb2.SeatPlayer(
                seat=rules_pb2.SEAT_FIRST, player_id=f"{table_id}-a", display_name="A", carry=1000
            ),
            rules_pb2.SeatPlayer(
                seat=rules_pb2.SEAT_SECOND, player_id=f"{table_id}-b", display_name="B", carry=1000
            ),
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


def live(table_server: Any, table_id: str) -> LiveTable:
    host = table_main.HOSTS[id(table_server)]
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


async def test_two_clients_play_a_hand_written_ahead_and_hidden(
    table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    table = live(table_server, table_id)
    await first.connect()
    await second.connect()
    await play_until_over((first, second))
    assert first.ended.is_set() and second.ended.is_set()
    assert table.hands_played == 1
    # Both seats saw the hand revealed; nothing hidden reached either of them.
    for client in (first, second):
        kinds = [r.event.WhichOneof("kind") for r in client.received if r.HasField("event")]
        assert "hand_revealed" in kinds and "hand_settled" in kinds and "table_ended" in kinds
        assert check_hidden(client, table) > 10
    # Write-ahead: the log subject holds every record, numbered 1, 2, 3… without gaps, and its engine
    # events are exactly the events the clients were sent.
    records = await _read_log(bus, table_id)
    assert [r.sequence for r in records] == list(range(1, len(records) + 1))
    engine = {
        r.sequence: r.record.engine_event.canonical_json for r in records if r.record.HasField("engine_event")
    }
    assert engine == {sequence: event.canonical() for sequence, event in table._log.events}
    assert any(r.record.HasField("hand_begun") and r.record.hand_begun.hidden.seed for r in records)


async def _read_log(bus: Bus, table_id: str) -> list[events_pb2.TableEventAppended]:
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


async def test_stale_and_out_of_turn_actions_are_refused_and_the_table_carries_on(
    table_server: Any, open_table: Callable[..., Any]
) -> None:
    table_id, first, second = await open_table()
    await first.connect()
    await second.connect()
    # Both exchange (T4) to reach play; then find who is to discard.
    for client in (first, second):
        await client.decision()
        await client.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))
    table = live(table_server, table_id)
    for _ in range(500):
        if table.engine.to_move >= 0:
            break
        await asyncio.sleep(0.01)
    mover, waiter = (first, second) if table.engine.to_move == 0 else (second, first)
    view = await mover.decision(phase=play_pb2.HAND_PHASE_PLAY)
    # The waiting seat acts out of turn (an action for the other seat's decision): STALE, table unharmed.
    await waiter.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile="1m")), action_id=7)
    rejected = await _next_rejection(waiter)
    assert rejected.code == table_pb2.REJECTION_CODE_STALE and rejected.client_action_id == 7
    # The mover sends an action decided on an older state: STALE with the current view.
    tile = view.drawn_tile or view.legal_actions.actions[0].choices[0]
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile)), last_seen=1, action_id=8)
    rejected = await _next_rejection(mover)
    assert rejected.code == table_pb2.REJECTION_CODE_STALE and rejected.view.legal_actions.actions
    # An illegal action (a tile not in hand): INVALID_ARGUMENT-like ILLEGAL, with a reason.
    held = set(parse_tiles(view.concealed + view.drawn_tile))
    missing = next(
        t for t in ("1z", "2z", "3z", "4z", "5z", "6z", "7z", "1m", "9p") if parse_tiles(t)[0] not in held
    )
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=missing)), action_id=9)
    rejected = await _next_rejection(mover)
    assert rejected.code == table_pb2.REJECTION_CODE_ILLEGAL and rejected.reason
    # The table carries on: the right action from the right seat is applied.
    before = table._log.sequence
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile)))
    for _ in range(500):
        if table._log.sequence > before:
            break
        await asyncio.sleep(0.01)
    assert table._log.sequence > before
    assert table.status == table_pb2.TABLE_STATUS_PLAYING


async def _next_rejection(client: SeatClient) -> table_pb2.ActionRejected:
    while True:
        response = await client.next_view()
        if response.HasField("rejected"):
            return response.rejected


async def test_a_ticket_of_another_player_is_refused(
    table_server: Any, open_table: Callable[..., Any], issue: Callable[..., tuple[tuple[str, str]]]
) -> None:
    _table_id, first, _second = await open_table()
    channel = grpc.aio.insecure_channel(table_server.server.address)
    try:
        stub = table_pb2_grpc.TableServiceStub(channel)
        call = stub.Play(
            iter([table_pb2.PlayRequest(table_ticket=first.ticket)]), metadata=issue("someone-else")
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in call:
                pass
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        await channel.close()


async def test_escape_mid_hand_ends_the_hand_and_the_table(
    table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    ended: list[events_pb2.HandEnded] = []

    async def on_hand_ended(message: Any) -> None:
        ended.append(events_pb2.HandEnded.FromString(message.data))

    sub = await bus.client.subscribe(subjects.HAND_ENDED, cb=on_hand_ended)
    await first.connect()
    await second.connect()
    await first.decision()
    await first.send(play_pb2.Action(leave=play_pb2.LeaveAction()))  # T10: leaving mid-hand is escape
    await asyncio.wait_for(second.ended.wait(), 10)
    await sub.unsubscribe()
    mine = [e for e in ended if e.table_id == table_id]
    assert len(mine) == 1
    assert mine[0].result.outcome == rules_pb2.HAND_OUTCOME_ESCAPE
    assert mine[0].result.escaper == rules_pb2.SEAT_FIRST
    kinds = [r.event.WhichOneof("kind") for r in second.received if r.HasField("event")]
    assert "hand_revealed" in kinds and "table_ended" in kinds


async def test_disconnect_autoplays_then_reconnect_resumes_with_the_same_view(
    table_server: Any, open_table: Callable[..., Any]
) -> None:
    table_id, first, second = await open_table()
    await first.connect()
    await second.connect()
    table = live(table_server, table_id)
    await first.decision()
    seen_before = first.last_seen
    first.disconnect()  # the bot plays seat 0 while it is away (T10)
    await asyncio.wait_for(first.ended.wait(), 5)
    await second.decision()
    await second.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))

    def auto_played() -> bool:
        return any(e.seat == 0 and e.kind == "exchanged" for _, e in table._log.events)

    for _ in range(500):
        if auto_played() and table.seats[0].session is None:
            break
        await asyncio.sleep(0.01)
    assert auto_played(), "the bot played the disconnected seat"
    # Reconnect with the ticket and the last sequence seen: the missed events are replayed, then the view.
    back = first
    back.received.clear()
    back.ended.clear()
    back._requests = asyncio.Queue()
    back.views = asyncio.Queue()  # drop what the first stream left behind
    await back.connect(last_seen=seen_before)
    response = await back.next_view()
    replayed = [r.event.sequence for r in back.received if r.HasField("event")]
    assert replayed and min(replayed) > seen_before  # action records between events are not events
    assert replayed == sorted(replayed)
    expected = [s for s, _ in table._log.events if s > seen_before]
    assert replayed[: len(expected)] == expected
    own = table.engine.view(0)["seats"][0]["hand"]
    shown = response.view.concealed + response.view.drawn_tile
    assert format_tiles(parse_tiles(shown)) == own
    assert table.seats[0].session is not None
    check_hidden(back, table)


async def test_idle_seats_are_played_by_their_defaults_at_the_deadline_t11(
    table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    rules = _rules(decision_millis=20, time_bank_millis=0)
    table_id, first, second = await open_table(rules)
    await first.connect()
    await second.connect()
    # Nobody acts: every decision is the server's default at the deadline (keep the hand, discard the
    # drawn tile, pass), the hand runs to its end, and between hands the default is to leave.
    await asyncio.wait_for(asyncio.gather(first.ended.wait(), second.ended.wait()), 30)
    origins = {
        r.record.action_applied.origin
        for r in await _read_log(bus, table_id)
        if r.record.HasField("action_applied")
    }
    assert origins == {server_state_pb2.ACTION_ORIGIN_TIMEOUT}
    host = table_main.HOSTS[id(table_server)]
    assert host.metrics is not None and host.metrics.timeouts._value.get() > 10
    assert table_id not in host.live_tables  # the capacity is back


async def test_a_full_table_queue_answers_busy_and_loses_nothing_else(
    table_server: Any, open_table: Callable[..., Any]
) -> None:
    table_id, first, second = await open_table()
    await first.connect()
    await second.connect()
    await first.decision()
    table = live(table_server, table_id)
    host = table_main.HOSTS[id(table_server)]
    host.queue_size = 1
    try:
        session = table.seats[0].session
        assert session is not None
        keep = table_pb2.PlayRequest(action=play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))
        table.submit(session, keep)
        table.submit(session, keep)  # the queue holds one: this one is refused at once
        rejected = await _next_rejection(first)
        assert rejected.code == table_pb2.REJECTION_CODE_BUSY
        assert rejected.view.legal_actions.actions  # the seat's last view, to decide again from
        assert host.metrics is not None and host.metrics.queue_full._value.get() >= 1
    finally:
        host.queue_size = 64


async def test_open_table_is_idempotent_and_status_shows_only_public_state(
    table_server: Any, issue: Callable[..., tuple[tuple[str, str]]]
) -> None:
    players = [
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="idem-a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="idem-b"),
    ]
    request = table_pb2.OpenTableRequest(table_id="idem-1", rules=_rules(), players=players, negotiated=1)
    async with grpc.aio.insecure_channel(table_server.server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        service = issue("matchmaking", auth.Role.SERVICE)
        once = await stub.OpenTable(request, metadata=service)
        twice = await stub.OpenTable(request, metadata=service)
        assert once.table_id == twice.table_id == "idem-1" and once.address == table_server.server.address
        assert len(table_main.HOSTS[id(table_server)].live_tables) == 1
        with pytest.raises(grpc.aio.AioRpcError) as player_call:
            await stub.OpenTable(request, metadata=issue("idem-a"))
        assert player_call.value.code() == grpc.StatusCode.PERMISSION_DENIED
        status = await stub.GetTableStatus(
            table_pb2.GetTableStatusRequest(table_id="idem-1"), metadata=issue()
        )
        assert status.status == table_pb2.TABLE_STATUS_WAITING
        assert status.state.table_id == "idem-1"
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetTableStatus(table_pb2.GetTableStatusRequest(table_id="nope"), metadata=issue())
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_the_server_announces_its_address_and_load(table_server: Any, bus: Bus) -> None:
    heard: asyncio.Queue[events_pb2.TableServerAnnounced] = asyncio.Queue()

    async def on_announce(message: Any) -> None:
        heard.put_nowait(events_pb2.TableServerAnnounced.FromString(message.data))

    sub = await bus.client.subscribe(subjects.TABLE_SERVER_ANNOUNCED, cb=on_announce)
    try:
        while True:
            announced = await asyncio.wait_for(heard.get(), 5)
            if announced.server_id == "t-test":
                break
    finally:
        await sub.unsubscribe()
    assert announced.address == table_server.server.address
    assert announced.capacity == 200 and announced.load <= announced.capacity and not announced.draining


async def test_a_paid_erren_exchange_is_charged_to_the_wallet_once_t4(
    table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    charged: list[events_pb2.ExchangeCharged] = []

    async def on_charge(message: Any) -> None:
        charged.append(events_pb2.ExchangeCharged.FromString(message.data))

    sub = await bus.client.subscribe(subjects.EXCHANGE_CHARGED, cb=on_charge)
    try:
        table_id, first, second = await open_table(_rules(profile=rules_pb2.PROFILE_ERREN, exchange_fee=5))
        await first.connect()
        await second.connect()
        for client in (first, second):  # erren: 开始加倍 first (T8), declined
            await client.decision()
            await client.send(
                play_pb2.Action(choose_doubling=play_pb2.ChooseDoublingAction(start_doubled=False))
            )
        view = await first.decision(phase=play_pb2.HAND_PHASE_EXCHANGE)
        give = format_tiles(parse_tiles(view.concealed + view.drawn_tile)[:3])
        await first.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles=give)))
        for _ in range(300):
            if any(c.table_id == table_id for c in charged):
                break
            await asyncio.sleep(0.01)
    finally:
        await sub.unsubscribe()
    mine = [c for c in charged if c.table_id == table_id]
    assert len(mine) == 1
    assert mine[0].amount == 10 and mine[0].exchange_number == 3  # three tiles, the first one free
    assert mine[0].player_id.endswith("-a") and mine[0].sequence > 0


async def test_a_seat_gone_past_the_grace_period_has_left_mid_hand_t10(
    table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    ended: list[events_pb2.HandEnded] = []

    async def on_hand_ended(message: Any) -> None:
        ended.append(events_pb2.HandEnded.FromString(message.data))

    sub = await bus.client.subscribe(subjects.HAND_ENDED, cb=on_hand_ended)
    try:
        table_id, first, second = await open_table(_rules(reconnect_grace_millis=300))
        await first.connect()
        await second.connect()
        await first.decision()
        first.disconnect()  # never comes back: held and auto-played, then counted as leaving
        await asyncio.wait_for(second.ended.wait(), 10)
    finally:
        await sub.unsubscribe()
    mine = [e.result for e in ended if e.table_id == table_id]
    assert [(r.outcome, r.escaper) for r in mine] == [(rules_pb2.HAND_OUTCOME_ESCAPE, rules_pb2.SEAT_FIRST)]
    host = table_main.HOSTS[id(table_server)]
    assert host.metrics is not None and host.metrics.escapes._value.get() >= 1


async def test_draining_refuses_new_tables_and_closes_those_with_no_hand_in_play(
    table_server: Any, issue: Callable[..., tuple[tuple[str, str]]], bus: Bus
) -> None:
    closed: list[events_pb2.TableClosed] = []
    draining: list[events_pb2.TableServerAnnounced] = []

    async def on_closed(message: Any) -> None:
        closed.append(events_pb2.TableClosed.FromString(message.data))

    async def on_announce(message: Any) -> None:
        announced = events_pb2.TableServerAnnounced.FromString(message.data)
        if announced.server_id == "t-test" and announced.draining:
            draining.append(announced)

    sub = await bus.client.subscribe(subjects.TABLE_CLOSED, cb=on_closed)
    heartbeat = await bus.client.subscribe(subjects.TABLE_SERVER_ANNOUNCED, cb=on_announce)
    players = [
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="drain-a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="drain-b"),
    ]
    service = issue("matchmaking", auth.Role.SERVICE)
    host = table_main.HOSTS[id(table_server)]
    try:
        async with grpc.aio.insecure_channel(table_server.server.address) as channel:
            stub = table_pb2_grpc.TableServiceStub(channel)
            request = table_pb2.OpenTableRequest(table_id="drain-1", rules=_rules(), players=players)
            await stub.OpenTable(request, metadata=service)
            # SIGTERM's hook (the service's drain): announced at once, the waiting table closes at once.
            await asyncio.wait_for(table_main.drain(table_server), 5)
            assert not host.live_tables
            request.table_id = "drain-2"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.OpenTable(request, metadata=service)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        for _ in range(100):
            if draining and any(c.table_id == "drain-1" for c in closed):
                break
            await asyncio.sleep(0.02)
    finally:
        await sub.unsubscribe()
        await heartbeat.unsubscribe()
    assert [c.reason for c in closed if c.table_id == "drain-1"] == ["the table server is draining"]
    assert draining and draining[0].capacity == 200
