"""Whole matches between two gRPC clients on the whole stack (``make run``'s four service processes,
embedded NATS and Postgres): login, queue, T7 negotiation, allocation, hands on the table server,
scoring's replay check, the wallet's settlement — in both profiles.

Checked on every match: balances move exactly by the settlements and fees the clients were shown,
the ledger's grand total over players and house accounts is unchanged, and no message a client
received ever carries the opponent's concealed tiles, draws or the hand's seed (read back from the
table's write-ahead log on NATS)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.cli.demo import ledger_balances
from duelmahjong.client.play import MatchPlan, PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform import subjects
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2

# tests/e2e/conftest.py's fixture (conftest modules are not imported by name here).
StoredMessages = Callable[[str, str], Awaitable[list[bytes]]]

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

FEE = 3
ROOMS = [
    {"room_id": "e2e-duel", "profile": "duel", "fan_rate": 2, "fee": FEE, "carry_min": 100, "carry_max": 600},
    {
        "room_id": "e2e-erren",
        "profile": "erren",
        "fan_rate": 1,
        "fee": FEE,
        "carry_min": 100,
        "carry_max": 600,
    },
]
ROOM_OF = {"duel": "e2e-duel", "erren": "e2e-erren"}
BOT_ROOM = {
    "room_id": "e2e-bots",
    "profile": "duel",
    "fan_rate": 1,
    "carry_min": 100,
    "bot_fill_seconds": 0.2,
    "bot_policy": "strong",  # the novice rooms' fill bot, through the whole stack
}
MAX_FAN = {"duel": 64, "erren": 88}  # H3
PROFILE_ENUM = {"duel": rules_pb2.PROFILE_DUEL, "erren": rules_pb2.PROFILE_ERREN}


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    """The stack `make run` runs (four service processes, embedded NATS and Postgres), for this module."""
    settings = {"MATCHMAKING_ROOMS": json.dumps([*ROOMS, BOT_ROOM]), "MATCHMAKING_BOT_POOL": "1"}
    with stack_with("match", settings) as state:
        yield state


class Player:
    """A client and every message its table sent it."""

    def __init__(self, stack: StackState, name: str) -> None:
        self.client = DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        )
        self.name = name
        self.received: list[table_pb2.PlayResponse] = []
        self.seat = -1
        self.start_balance = 0


async def _seat_two(stack: StackState, profile: str, multiplier: int = 2) -> tuple[list[Player], Any]:
    players = [Player(stack, "alice"), Player(stack, "bob")]
    for player in players:
        await player.client.login(player.name)
        player.start_balance = (await player.client.balance()).balance
    room = ROOM_OF[profile]
    readies = await asyncio.gather(*(p.client.find_table(room, 500, multiplier=multiplier) for p in players))
    for player, ready in zip(players, readies, strict=True):
        player.seat = 0 if ready.seat == rules_pb2.SEAT_FIRST else 1
    return players, readies


async def _play(players: list[Player], readies: Any, plans: list[MatchPlan]) -> list[PlayOutcome]:
    async def one(player: Player, ready: Any, plan: MatchPlan) -> PlayOutcome:
        return await player.client.play(ready, BaselineBot(), plan, watch=player.received.append)

    return await asyncio.gather(
        *(one(p, r, plan) for p, r, plan in zip(players, readies, plans, strict=True))
    )


async def _check_ratings(players: list[Player], outcomes: list[PlayOutcome], profile: str) -> None:
    """Every HandSettled showed both seats' ratings, each hand starting where the last one left them,
    and the wallet's GetRating says what the last hand showed."""
    wanted = PROFILE_ENUM[profile]
    for player, outcome in zip(players, outcomes, strict=True):
        assert outcome.settlements
        me = player.client.player_id
        changes = [next(r for r in s.ratings if r.player_id == me) for s in outcome.settlements]
        assert all(len(s.ratings) == 2 for s in outcome.settlements)
        assert changes[0].before.hands_rated == 0 and changes[0].before.rating == 1500
        for earlier, later in itertools.pairwise(changes):
            assert later.before == earlier.after
        assert [c.after.hands_rated for c in changes] == list(range(1, len(changes) + 1))
        assert all(c.after.profile == wanted for c in changes)
        now = {r.profile: r for r in (await player.client.ratings()).ratings}
        assert now[wanted] == changes[-1].after


async def _released(players: list[Player]) -> None:
    """Wait until the wallet has applied everything of the table (TableClosed releases the holds)."""
    for _ in range(300):
        if not any([(await p.client.balance()).held for p in players]):
            return
        await asyncio.sleep(0.1)
    pytest.fail("the holds were not released after the table closed")


async def _balance_becomes(player: Player, expected: int) -> int:
    """The player's balance once it is ``expected`` (or the last one seen): the wallet applies a
    table's fees, settlements and close from separate consumers, in no fixed order."""
    balance = (await player.client.balance()).balance
    for _ in range(100):
        if balance == expected:
            break
        await asyncio.sleep(0.1)
        balance = (await player.client.balance()).balance
    return balance


def _check_nothing_hidden(player: Player, secrets: list[bytes]) -> None:
    """No message to ``player`` holds the opponent's concealed tiles or draws, nor any hand's seed or
    salt; every hand it was shown started with the commitment to them (32 bytes, before the deal)."""
    me = player.seat
    for message in player.received:
        raw = message.SerializeToString()
        for seed in secrets:
            assert seed not in raw, "a client message carries a hand's seed or salt"
        kind = message.WhichOneof("kind")
        if kind == "event" and message.event.HasField("hand_started"):
            assert len(message.event.hand_started.wall_commitment) == 32
        views = []
        if kind == "view":
            views.append(message.view)
        elif kind == "rejected":
            views.append(message.rejected.view)
        elif kind == "event":
            event = message.event
            which = event.WhichOneof("kind")
            body = getattr(event, which) if which else None
            seat = getattr(body, "seat", None)
            theirs = (
                seat is not None
                and seat != rules_pb2.SEAT_UNSPECIFIED
                and (seat == rules_pb2.SEAT_FIRST) != (me == 0)
            )
            if theirs and which == "tile_drawn":
                # A drawn flower is set aside face up at once (erren 补花): public, not a secret.
                assert body.tile in ("",) or body.tile.endswith("f"), (
                    f"the opponent's draw was shown: {event}"
                )
            if theirs and which == "tiles_dealt":
                assert body.tiles == "", f"the opponent's deal was shown: {event}"
            if theirs and which in ("tiles_exchanged", "item_applied"):
                assert body.given == "" and body.received == "", f"the opponent's exchange was shown: {event}"
            if theirs and which == "offer_made":
                assert body.offer.tiles == "", f"the opponent's offer was shown: {event}"
        for view in views:
            assert view.seat in (
                rules_pb2.SEAT_UNSPECIFIED,
                (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)[me],
            )
            opponent = view.table.seats[1 - me] if len(view.table.seats) == 2 else None
            if opponent is None:
                continue
            if view.table.phase in (
                play_pb2.HAND_PHASE_PLAY,
                play_pb2.HAND_PHASE_EXCHANGE,
                play_pb2.HAND_PHASE_EXTRA_DRAW,
            ):
                assert opponent.revealed_concealed == "", "the opponent's concealed tiles were shown mid-hand"
                for meld in opponent.melds:
                    if meld.hidden:
                        assert meld.tiles == ""


async def _seeds(stack: StackState, table_id: str, stored_messages: StoredMessages) -> list[bytes]:
    seeds = []
    for payload in await stored_messages(stack, subjects.table_log_subject(table_id)):
        record = events_pb2.TableEventAppended.FromString(payload)
        if record.record.WhichOneof("kind") == "hand_begun":
            hidden = record.record.hand_begun.hidden
            seeds.extend((hidden.seed, hidden.salt))  # what the commitment hides
    return [seed for seed in seeds if len(seed) >= 8]


def _own_postings(outcome: PlayOutcome, player_id: str) -> int:
    return sum(
        posting.amount
        for settled in outcome.settlements
        for posting in settled.settlement.postings
        if posting.account == f"player:{player_id}"
    )


@pytest.mark.parametrize("profile", ["duel", "erren"])
async def test_a_full_match_then_one_leaves_between_hands(
    stack: StackState, profile: str, stored_messages: StoredMessages
) -> None:
    total_before = sum((await ledger_balances(stack.database_url) or {}).values())
    players, readies = await _seat_two(stack, profile)
    hands = 3
    stayer = 1  # seat index in `players`
    plans = [MatchPlan(hands=hands), MatchPlan(hands=hands)]
    plans[stayer] = MatchPlan(hands=hands + 10)  # plays on; the other leaves between hands (T10)
    outcomes = await _play(players, readies, plans)
    await _released(players)

    for outcome in outcomes:
        assert outcome.hands_settled == hands, outcome.ended_reason
        assert not outcome.escaped
    assert [r.outcome for r in outcomes[0].reveals] == [r.outcome for r in outcomes[1].reveals]
    # T7: the progressive multiplier doubles each hand of the pairing.
    progressive = [s.settlement.multipliers.progressive for s in outcomes[0].settlements]
    if profile == "duel":
        assert progressive == [1, 2, 4]
        assert all(s.settlement.multipliers.negotiated == 2 for s in outcomes[0].settlements)

    # Balances move exactly by the settlements shown: their postings hold each finished hand's fee (H1).
    for player, outcome in zip(players, outcomes, strict=True):
        fees = [
            p.amount
            for settled in outcome.settlements
            for p in settled.settlement.postings
            if p.reason == rules_pb2.POSTING_REASON_FEE and p.account == f"player:{player.client.player_id}"
        ]
        assert fees == [-FEE] * hands
        expected = player.start_balance + _own_postings(outcome, player.client.player_id)
        assert await _balance_becomes(player, expected) == expected
    ledger = await ledger_balances(stack.database_url)
    assert ledger is not None and sum(ledger.values()) == total_before
    assert ledger.get("house:fees", 0) >= 2 * FEE * hands
    await _check_ratings(players, outcomes, profile)

    secrets = await _seeds(stack, readies[0].table_id, stored_messages)
    assert len(secrets) == 2 * hands  # each hand's seed and salt
    for player in players:
        _check_nothing_hidden(player, secrets)
        await player.client.close()


async def test_escape_mid_hand_pays_the_penalty_to_the_opponent(
    stack: StackState, stored_messages: StoredMessages
) -> None:
    players, readies = await _seat_two(stack, "duel", multiplier=1)
    escaper = 0
    plans = [MatchPlan(hands=5), MatchPlan(hands=5)]
    plans[escaper] = MatchPlan(escape_in_hand=1, escape_after_actions=2)
    outcomes = await _play(players, readies, plans)
    await _released(players)

    assert outcomes[escaper].escaped
    reveal = outcomes[1 - escaper].reveals[-1]
    assert reveal.outcome == rules_pb2.HAND_OUTCOME_ESCAPE
    penalty = min(MAX_FAN["duel"] * 1 * 1 * 2, 500)  # H3: max fan × multipliers × N, capped by the carry
    opponent = players[1 - escaper]
    assert (
        await _balance_becomes(opponent, opponent.start_balance + penalty) == opponent.start_balance + penalty
    )
    lost = players[escaper].start_balance - (await players[escaper].client.balance()).balance
    assert lost == penalty  # no fee for the escaped hand: only the penalty moved
    # An escape is a loss for the escaper's rating and a win for the opponent's.
    escaped = outcomes[1 - escaper].settlements[-1].ratings
    by_player = {r.player_id: r for r in escaped}
    fled, stayed = by_player[players[escaper].client.player_id], by_player[opponent.client.player_id]
    assert fled.after.rating - fled.before.rating < 0 < stayed.after.rating - stayed.before.rating
    await _check_ratings([opponent], [outcomes[1 - escaper]], "duel")
    fled_now = {r.profile: r for r in (await players[escaper].client.ratings()).ratings}
    assert fled_now[rules_pb2.PROFILE_DUEL] == fled.after
    secrets = await _seeds(stack, readies[0].table_id, stored_messages)
    for player in players:
        _check_nothing_hidden(player, secrets)
        await player.client.close()


async def test_a_client_that_drops_its_stream_resumes_where_it_left_off(
    stack: StackState, stored_messages: StoredMessages
) -> None:
    players, readies = await _seat_two(stack, "duel", multiplier=1)
    plans = [MatchPlan(hands=2, drop_after_actions=4), MatchPlan(hands=2)]
    outcomes = await _play(players, readies, plans)
    assert outcomes[0].reconnects == 1
    assert [o.hands_settled for o in outcomes] == [2, 2]
    # The resumed stream carries on from the last event seen: no log event twice, none skipped back.
    sequences = [
        m.event.sequence
        for m in players[0].received
        if m.WhichOneof("kind") == "event" and m.event.WhichOneof("kind") != "hand_settled"
    ]
    assert sequences == sorted(sequences) and len(sequences) == len(set(sequences))
    secrets = await _seeds(stack, readies[0].table_id, stored_messages)
    for player in players:
        _check_nothing_hidden(player, secrets)
        await player.client.close()


async def test_lonely_players_play_the_house_fill_bot_in_turn_through_the_same_table_api(
    stack: StackState, stored_messages: StoredMessages
) -> None:
    # The stack runs one house bot (MATCHMAKING_BOT_POOL=1): the second fill gets it back once the
    # first table has ended — the same player, not a new guest.
    for name in ("carol", "dave"):
        player = Player(stack, name)
        await player.client.login(player.name)
        updates: list[Any] = []
        ready = await player.client.find_table("e2e-bots", 200, multiplier=2, on_update=updates.append)
        matched = next(u.matched for u in updates if u.WhichOneof("kind") == "matched")
        assert matched.opponent_is_bot and matched.opponent_player_id == "bot-1"
        outcome = await player.client.play(
            ready, BaselineBot(), MatchPlan(hands=1), watch=player.received.append
        )
        assert outcome.hands_settled == 1  # the bot played the hand out, then the player left
        player.seat = 0 if ready.seat == rules_pb2.SEAT_FIRST else 1
        _check_nothing_hidden(player, await _seeds(stack, ready.table_id, stored_messages))
        await player.client.close()


async def test_duel_demo_json_reports_every_hand_and_a_ledger_that_sums_the_same(stack: StackState) -> None:
    state_file = Path(stack.logs_dir).parent / "stack.json"  # written by the running stack
    duel = Path(sys.executable).parent / "duel"
    command = [str(duel), "demo", "--hands", "2", "--json", "--state-file", str(state_file)]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}  # the state file decides
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=240, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # stdout holds the JSON object only
    assert len(summary["hands"]) == 2
    for hand in summary["hands"]:
        assert {"winner", "total_fan", "patterns", "transfer"} <= set(hand)
        assert hand["hand_id"].endswith(f"-h{hand['hand_number']}")
        if hand["outcome"] == "win":
            assert hand["total_fan"] >= 1 and hand["patterns"] and hand["transfer"] > 0
    accounts = summary["accounts"]
    assert {"house:grants", "house:fees", "house:guess"} <= set(accounts)
    assert all(f"player:{player}" in accounts for player in summary["players"])
    assert summary["ledger_total_before"] == summary["ledger_total_after"] == sum(accounts.values())
    # After the demo's hands both players' GetRating is where the last HandSettled said, each hand
    # starting where the one before left it (new guests: from 1500).
    for player in summary["players"]:
        moves = [hand["ratings"][player] for hand in summary["hands"]]
        assert moves[0]["before"] == 1500.0
        assert all(later["before"] == earlier["after"] for earlier, later in itertools.pairwise(moves))
        rating = summary["ratings"][player]
        assert round(rating["rating"], 1) == moves[-1]["after"] and rating["hands_rated"] == len(moves)
        assert rating["conservative"] == pytest.approx(rating["rating"] - 2 * rating["deviation"])
