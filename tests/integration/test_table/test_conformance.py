"""The Play stream keeps the contract: whole matches of both profiles through the real services (wallet,
matchmaking, scoring and a table server; gRPC, NATS, Postgres), every message a seat receives checked
against what ``play.proto`` says of its fields.

Each match is three hands: a win and a drawn hand dealt from seeds chosen beforehand (the engine is
deterministic given the seed and the actions, so the test plays the same policy offline to find seeds
whose hands hold a chi, a pong, an exposed kong and a 报听 between them), then a hand in which one seat
drops its stream, resumes it and escapes. The table's clock stands still (no decision times out).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio

from duelmahjong.client.session import DuelClient
from duelmahjong.engine.events import Claimed, Discarded, Konged
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import EXTRA_DRAW, TURN
from duelmahjong.engine.table import Table
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.tiles import parse_tiles, tile_name
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, tiles_pb2
from duelmahjong.views import codec
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.wallet.sources import Namespace

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

K = play_pb2
ROOMS = [
    {
        "room_id": "conf-duel",
        "profile": "duel",
        "fan_rate": 2,
        "fee": 3,
        "carry_min": 100,
        "guess_enabled": True,
    },
    {"room_id": "conf-erren", "profile": "erren", "fan_rate": 1, "fee": 3, "carry_min": 100},
]
NAMES = ("Alice Conformance", "Bob Conformance")
# What the wallet consumes (published by the table and scoring on the platform's subjects) and answers.
TO_WALLET = (
    subjects.HAND_SCORED,
    subjects.ESCAPE_PENALTY,
    subjects.FEE_CHARGED,
    subjects.GUESS_RESOLVED,
    subjects.EXCHANGE_CHARGED,
    subjects.ITEM_USED,
    subjects.TABLE_CLOSED,
)
WANTED = {"chi", "pong", "exposed_kong", "ready"}  # between the two dealt hands


# --- the policy, played live and offline ------------------------------------------------------------
def policy(legal: play_pb2.LegalActions, drawn: str) -> play_pb2.Action:
    """Take everything: win, kong, pong, chi, 报听; keep the hand, no 开始加倍, guess big, discard the
    drawn tile. A function of the contract's decision only, so the engine can replay it."""
    kinds = {a.kind: a for a in legal.actions}
    if K.ACTION_KIND_WIN in kinds:
        return K.Action(win=K.WinAction())
    if K.ACTION_KIND_KONG in kinds:
        return K.Action(kong=K.KongAction(tile=kinds[K.ACTION_KIND_KONG].choices[0]))
    if K.ACTION_KIND_PONG in kinds:
        return K.Action(pong=K.PongAction())
    if K.ACTION_KIND_CHI in kinds:
        return K.Action(chi=K.ChiAction(tiles=kinds[K.ACTION_KIND_CHI].choices[0]))
    if K.ACTION_KIND_DECLARE_READY in kinds:
        tile = kinds[K.ACTION_KIND_DECLARE_READY].choices[0]
        return K.Action(declare_ready=K.DeclareReadyAction(discard=tile))
    if K.ACTION_KIND_EXCHANGE in kinds:
        return K.Action(exchange=K.ExchangeAction(tiles=""))
    if K.ACTION_KIND_CHOOSE_DOUBLING in kinds:
        return K.Action(choose_doubling=K.ChooseDoublingAction(start_doubled=False))
    if K.ACTION_KIND_GUESS in kinds:
        return K.Action(guess=K.GuessAction(guess=rules_pb2.GUESS_BIG))
    if K.ACTION_KIND_DISCARD in kinds:
        choices = kinds[K.ACTION_KIND_DISCARD].choices
        return K.Action(discard=K.DiscardAction(tile=drawn if drawn in choices else choices[-1]))
    return K.Action(**{"pass": K.PassAction()})


def _offline_step(table: Table, seat: int) -> None:
    """One decision as the live table would put it to the seat and the policy answer it."""
    legal, state = table.legal_actions(seat), table.state
    listed = codec.encode_legal(legal, table.settings.effective_exchange_limit, state.hand_size(seat))
    holding = state.current == seat and state.last_draw >= 0 and state.phase in (TURN, EXTRA_DRAW)
    chosen = policy(K.LegalActions(actions=listed), tile_name(state.last_draw) if holding else "")
    table.apply(codec.decode_action(chosen, seat, legal))


def _offline_hand(table: Table, seed: int) -> set[str]:
    """Play one hand from ``seed``; what it held (claims, 报听, its outcome)."""
    start = len(table.events)
    table.start_hand(seed)
    while table.phase not in ("over", "closed"):
        for seat in (0, 1):  # a seat decides when it may do more than leave (both at doubling, exchange)
            if len(table.legal_actions(seat)) > 1:
                _offline_step(table, seat)
    assert table.outcome is not None
    held = {table.outcome.termination.value}
    for event in table.events[start:]:
        if isinstance(event, Claimed | Konged):
            held.add(event.meld)
        if isinstance(event, Discarded) and event.ready:
            held.add("ready")
    return held


def choose_seeds(settings: RoomSettings, tries: int = 1500) -> list[int]:
    """Seeds for a won hand and a drawn one whose hands hold WANTED between them, then a drawn (long)
    hand for the drop and the escape."""
    table = Table(settings)
    seeds: list[int] = []
    covered: set[str] = set()
    for outcome in ("win", "drawn", "drawn"):
        best: tuple[int, int] | None = None  # (claim kinds still missing, seed)
        for seed in range(tries):
            held = _offline_hand(Table.replay(table.events), seed)
            if outcome not in held:
                continue
            missing = len(WANTED - covered - held)
            if best is None or missing < best[0]:
                best = (missing, seed)
            if missing == 0:
                break
        assert best is not None, f"no seed in {tries} gives a {outcome} hand"
        seeds.append(best[1])
        covered |= _offline_hand(table, best[1])
    assert WANTED <= covered, f"the chosen hands lack {WANTED - covered}"
    return seeds


# --- the stack ----------------------------------------------------------------------------------------
@pytest_asyncio.fixture
async def stack(
    start_matchmaking: Callable[..., Any],
    start_service: Callable[..., Any],
    service_env: dict[str, str],
    database_url: str,
    table_server: Any,
    bus: Bus,
    kit: SimpleNamespace,
    client_tls: ClientTls,
) -> AsyncIterator[SimpleNamespace]:
    """Wallet, matchmaking, scoring and the table server; the wallet reads a private copy of the event
    subjects (tests share one NATS), so what it consumes is relayed to it and its answers back."""
    wallet, matchmaking = await start_matchmaking(ROOMS)
    await start_service(
        SCORING, ScoringConfig.from_env({**service_env, "SCORING_DATABASE_URL": database_url})
    )
    namespace = Namespace(wallet.config.event_namespace)
    tables: set[str] = set()

    def relay(subject: str, to: str, message_type: Any, *, stored: bool = True) -> Callable[[Any], Any]:
        async def forward(message: Any) -> None:
            event = message_type.FromString(message.data)
            table_id = getattr(event, "table_id", "") or getattr(event, "hand_id", "").rsplit("-h", 1)[0]
            if table_id not in tables:
                return
            if stored:  # into the wallet's private streams, which its durable consumers read
                await bus.publish(to, message.data, msg_id=event.envelope.event_id)
            else:  # the table hears the wallet's answers on a plain subscription; no stream here
                await bus.client.publish(to, message.data)

        return forward

    types = {
        subjects.HAND_SCORED: events_pb2.HandScored,
        subjects.ESCAPE_PENALTY: events_pb2.EscapePenalty,
        subjects.FEE_CHARGED: events_pb2.FeeCharged,
        subjects.GUESS_RESOLVED: events_pb2.GuessResolved,
        subjects.EXCHANGE_CHARGED: events_pb2.ExchangeCharged,
        subjects.ITEM_USED: events_pb2.ItemUsed,
        subjects.TABLE_CLOSED: events_pb2.TableClosed,
    }
    subscriptions = [
        await bus.client.subscribe(s, cb=relay(s, namespace.subject(s), types[s])) for s in TO_WALLET
    ]
    answers = namespace.subject(subjects.SETTLEMENT_APPLIED)
    subscriptions.append(
        await bus.client.subscribe(
            answers,
            cb=relay(answers, subjects.SETTLEMENT_APPLIED, events_pb2.SettlementApplied, stored=False),
        )
    )
    host = table_server.host
    host.settlement_wait = 20.0  # scoring replays each hand's log first
    host.clock = kit.FakeClock(asyncio.get_running_loop().time())
    players = [
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in NAMES
    ]
    for client, name in zip(players, NAMES, strict=True):
        await client.login(name)
    yield SimpleNamespace(players=players, host=host, tables=tables, table_server=table_server)
    for subscription in subscriptions:
        await subscription.unsubscribe()
    for client in players:
        await client.close()


# --- playing a match ----------------------------------------------------------------------------------
async def _play_seat(client: Any, *, hands: int, drop_and_escape: bool) -> None:
    """The policy until the stream ends; continue while hands remain; in the last hand a dropping seat
    drops its stream at its second decision of play, resumes it, and escapes at its fourth."""
    decisions = 0
    while True:
        try:
            view = await client.decision(30)
        except Exception:
            return
        kinds = {a.kind for a in view.legal_actions.actions}
        if K.ACTION_KIND_CONTINUE in kinds:
            leave = view.table.hand_number >= hands
            await client.send(
                K.Action(leave=K.LeaveAction()) if leave else K.Action(continue_playing=K.ContinueAction())
            )
            continue
        if drop_and_escape and view.table.hand_number == hands and view.table.phase == K.HAND_PHASE_PLAY:
            decisions += 1
            if decisions == 2:
                client.disconnect()
                await asyncio.wait_for(client.ended.wait(), 5)
                await client.reconnect()
                continue  # the resumed stream asks this decision again
            if decisions == 4:
                await client.send(K.Action(leave=K.LeaveAction()))
                continue
        await client.send(policy(view.legal_actions, view.drawn_tile))


@pytest.mark.parametrize("room", ["conf-duel", "conf-erren"])
async def test_a_whole_match_keeps_every_documented_field(
    room: str, stack: SimpleNamespace, kit: SimpleNamespace, client_tls: ClientTls
) -> None:
    alice, bob = stack.players
    readies = await asyncio.wait_for(
        asyncio.gather(alice.find_table(room, 200), bob.find_table(room, 200)), 30
    )
    table_id = readies[0].table_id
    stack.tables.add(table_id)
    table = kit.live(stack.table_server, table_id)
    seeds = choose_seeds(table.state.settings)
    stack.host.seeds = lambda _table, number: seeds[number - 1]
    clients, channels = [], []
    for player, ready in zip(stack.players, readies, strict=True):
        channel = client_tls.channel(ready.address)
        channels.append(channel)
        seat = 0 if ready.seat == rules_pb2.SEAT_FIRST else 1
        clients.append(kit.SeatClient(channel, player.metadata, ready.table_ticket, seat))
    clients.sort(key=lambda c: c.seat)
    names = [NAMES[0] if readies[0].seat == rules_pb2.SEAT_FIRST else NAMES[1]]
    names.append(NAMES[1] if names[0] == NAMES[0] else NAMES[0])
    try:
        for client in clients:
            await client.connect()
        await asyncio.wait_for(
            asyncio.gather(
                _play_seat(clients[0], hands=3, drop_and_escape=True),
                _play_seat(clients[1], hands=3, drop_and_escape=False),
            ),
            90,
        )
        await asyncio.wait_for(asyncio.gather(*(c.ended.wait() for c in clients)), 30)
        outcomes = [
            r.event.hand_revealed.outcome for r in clients[1].received if r.event.HasField("hand_revealed")
        ]
        assert outcomes == [
            rules_pb2.HAND_OUTCOME_WIN,
            rules_pb2.HAND_OUTCOME_DRAWN,
            rules_pb2.HAND_OUTCOME_ESCAPE,
        ]
        for client in clients:
            kit.check_hidden(client, table)
            check_stream(client, table_id, names, room)
        # Both seats saw the drop and the return, as typed events.
        assert [(c.connected, c.auto_play) for c in _connections(clients[1])] == [
            (False, False),
            (True, False),
        ]
        kinds = _kinds(clients[0])
        assert {"meld_made", "won", "exhausted", "escaped", "hand_settled", "table_ended"} <= set(kinds)
        made = {r.event.meld_made.meld.kind for r in clients[0].received if r.event.HasField("meld_made")}
        assert {tiles_pb2.MELD_KIND_CHI, tiles_pb2.MELD_KIND_PONG, tiles_pb2.MELD_KIND_EXPOSED_KONG} <= made
        assert any(r.event.tile_discarded.declared_ready for r in clients[0].received if r.HasField("event"))
    finally:
        for client in clients:
            await client.close()
        for channel in channels:
            await channel.close()


def _kinds(client: Any) -> list[str]:
    return [r.event.WhichOneof("kind") for r in client.received if r.HasField("event")]


def _connections(client: Any) -> list[play_pb2.SeatConnection]:
    return [r.event.seat_connection for r in client.received if r.event.HasField("seat_connection")]


# --- the checks ---------------------------------------------------------------------------------------
def check_stream(client: Any, table_id: str, names: list[str], room: str) -> None:
    """Every message ``client`` received against play.proto's comments."""
    own = codec.seat_enum(client.seat)
    events = [r.event for r in client.received if r.HasField("event")]
    assert [e.sequence for e in events] == list(range(1, len(events) + 1)), "numbered 1, 2, 3… once each"
    assert all(e.WhichOneof("kind") and not e.detail_json and e.occurred_at.seconds for e in events)
    assert events[0].HasField("table_opened") and events[-1].HasField("table_ended")
    opened = events[0].table_opened
    assert opened.table_id == table_id and opened.rules.fan_rate > 0 and opened.rules.profile
    assert [(p.seat, p.display_name) for p in opened.players] == [
        (rules_pb2.SEAT_FIRST, names[0]),
        (rules_pb2.SEAT_SECOND, names[1]),
    ]
    assert all(p.player_id for p in opened.players)
    assert events[-1].table_ended.reason
    duel = opened.rules.profile == rules_pb2.PROFILE_DUEL
    hand = 0
    last_discard = ""
    revealed: play_pb2.HandRevealed | None = None
    for event in events:
        kind = event.WhichOneof("kind")
        typed = getattr(event, kind)
        mine = getattr(typed, "seat", own) == own
        if kind == "hand_started":
            hand += 1
            assert typed.hand_number == hand and typed.hand_id == f"{table_id}-h{hand}"
            assert typed.dealer and typed.round_wind and typed.multipliers.fan_rate == opened.rules.fan_rate
            assert typed.multipliers.progressive == (2 ** (hand - 1) if duel else 1)
            assert bool(typed.revealed_bonus_tiles) == duel and typed.HasField("task") != duel
            revealed = None
        elif kind == "tiles_dealt":
            assert typed.count in (13, 14)
            flowers = len(parse_tiles(typed.flowers)) if typed.flowers else 0
            assert (len(parse_tiles(typed.tiles)) + flowers == typed.count) if mine else not typed.tiles
        elif kind == "tile_drawn":
            assert typed.source and (bool(typed.tile) == mine) and not typed.tile.endswith("f")
        elif kind == "flower_replaced":
            assert typed.flower.endswith("f") and not duel
        elif kind == "tiles_exchanged":
            assert typed.count == 0 and not typed.given and not typed.received
        elif kind == "doubling_chosen":
            assert not duel and not typed.start_doubled
        elif kind == "doubling_revealed":
            assert not duel and list(typed.start_doubled) == []
        elif kind == "play_started":
            assert typed.dealer
        elif kind == "tile_discarded":
            assert typed.seat and typed.tile
            last_discard = typed.tile
        elif kind == "meld_made":
            meld = typed.meld
            if meld.kind == tiles_pb2.MELD_KIND_CONCEALED_KONG:
                assert meld.claimed_tile == "" and (bool(meld.tiles) == mine) and meld.hidden != mine
            else:
                assert meld.tiles and meld.claimed_tile and not meld.hidden
                assert meld.claimed_tile in {tile_name(t) for t in parse_tiles(meld.tiles)}
                if meld.kind != tiles_pb2.MELD_KIND_ADDED_KONG:
                    assert meld.claimed_tile == last_discard
        elif kind == "won":
            assert typed.seat and typed.win_tile == typed.description.win_tile and typed.tiles
            assert (
                typed.evaluation.patterns
                and typed.evaluation.total_fan > 0
                and typed.evaluation.meets_minimum
            )
            assert all(p.id and p.name_zh and p.fan for p in typed.evaluation.patterns)
        elif kind == "guess_made":
            assert duel and typed.guess == rules_pb2.GUESS_BIG and len(typed.dice) == 3 and not typed.skipped
            assert (typed.payout_multiplier in range(2, 6)) == typed.won
        elif kind == "exhausted":
            assert typed.extra_draws == 0 or typed.extra_draw_seat
        elif kind == "hand_revealed":
            revealed = typed
            assert [h.seat for h in typed.hands] == [rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND]
            assert all(h.concealed for h in typed.hands)
            win = typed.outcome == rules_pb2.HAND_OUTCOME_WIN
            assert bool(typed.winner) == win and typed.HasField("description") == win
            assert typed.HasField("evaluation") == win and (not win or typed.evaluation.total_fan > 0)
            assert bool(typed.escaper) == (typed.outcome == rules_pb2.HAND_OUTCOME_ESCAPE)
            assert typed.HasField("doubling") == (not duel)
            assert typed.HasField("task") != duel
        elif kind == "hand_settled":
            assert revealed is not None, "a settlement follows the hand's reveal"
            # Every outcome: the wallet's settlement of this hand (its postings balance) and both
            # balances after it; a win and an escape move prestige between the players.
            assert typed.settlement.hand_id == f"{table_id}-h{hand}"
            assert typed.settlement.postings and sum(p.amount for p in typed.settlement.postings) == 0
            assert {b.seat for b in typed.balances} == {rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND}
            if revealed.outcome != rules_pb2.HAND_OUTCOME_DRAWN:
                assert typed.settlement.transfer.amount > 0
        elif kind == "seat_connection":
            assert typed.seat
        elif kind == "escaped":
            assert typed.seat
    assert hand == 3
    check_views(client, events, names)


def check_views(client: Any, events: list[play_pb2.SeatEvent], names: list[str]) -> None:
    """Views name the players, hold the seat's tiles, offer a timed decision; each hand's last view shows
    the rivers exactly as that hand's discard events and claims did."""
    views = [
        r.view if r.HasField("view") else r.rejected.view for r in client.received if not r.HasField("event")
    ]
    assert not [r for r in client.received if r.HasField("rejected")], "the policy is never refused"
    last_of_hand: dict[int, play_pb2.SeatView] = {}
    for view in views:
        table = view.table
        if not table.seats:
            continue
        assert [s.display_name for s in table.seats] == names and all(s.player_id for s in table.seats)
        if table.phase in (K.HAND_PHASE_PLAY, K.HAND_PHASE_EXCHANGE):
            mine = table.seats[client.seat]
            held = len(parse_tiles(view.concealed)) + (1 if view.drawn_tile else 0) + 3 * len(mine.melds)
            assert held in (13, 14)
        if view.HasField("legal_actions"):
            legal = view.legal_actions
            assert legal.actions and legal.HasField("default_action") and legal.deadline.seconds
        if table.hand_number:
            last_of_hand[table.hand_number] = view
    hands = _events_by_hand(events)
    for number, view in last_of_hand.items():
        for seat, shown in enumerate(view.table.seats):
            expected = _river(hands[number], codec.seat_enum(seat))
            assert [(d.tile, d.claimed, d.declared_ready, d.drawn_tile) for d in shown.discards] == expected


def _events_by_hand(events: list[play_pb2.SeatEvent]) -> dict[int, list[play_pb2.SeatEvent]]:
    out: dict[int, list[play_pb2.SeatEvent]] = {}
    number = 0
    for event in events:
        if event.HasField("hand_started"):
            number = event.hand_started.hand_number
        out.setdefault(number, []).append(event)
    return out


def _river(events: list[play_pb2.SeatEvent], seat: int) -> list[tuple[str, bool, bool, bool]]:
    """A seat's river from the hand's events: its discards, claimed when the next event takes it."""
    river: list[tuple[str, bool, bool, bool]] = []
    for event, following in zip(events, [*events[1:], None], strict=True):
        if not event.HasField("tile_discarded") or event.tile_discarded.seat != seat:
            continue
        discarded = event.tile_discarded
        taken = following is not None and (
            (
                following.HasField("meld_made")
                and following.meld_made.meld.claimed_tile == discarded.tile
                and following.meld_made.meld.kind != tiles_pb2.MELD_KIND_ADDED_KONG
            )
            or (following.HasField("won") and not following.won.self_drawn)
        )
        river.append((discarded.tile, taken, discarded.declared_ready, discarded.drawn_tile))
    return river
