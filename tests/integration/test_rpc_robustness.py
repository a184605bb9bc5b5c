"""Bad input never hurts: every RPC of the four services, called with bad input over real gRPC.

Each service runs as its process runs it (real NATS, Postgres, gRPC). A sweep is a table of calls —
no token, a forged token, the wrong role, another player's token, empty requests, each field at a
boundary or garbage value, raw bytes that are no message at all — and for every call:

- the status is one of the domain codes the case allows (never UNKNOWN, never INTERNAL for bad input);
- the details are a short, printable sentence with no traceback, file path or repr of an internal;
- afterwards the service is still SERVING, a normal call still works, and (wallet) the ledger is as it was.

A sweep collects every violation before failing, so one run prints the whole list. The streams get
their own sweeps: Enqueue (bad first requests, another player's ticket) and Play (bad first messages,
forged tickets, actions out of turn or malformed, out-of-range sequences), after which the table and
the other seat carry on. A few RPCs are also fuzzed with random request messages (hypothesis).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import asyncpg
import grpc
import grpc.aio
import pytest
import pytest_asyncio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from duelmahjong.platform import auth
from duelmahjong.platform.auth import Role
from duelmahjong.v1 import (
    rules_pb2,
    scoring_pb2,
    scoring_pb2_grpc,
    tiles_pb2,
    wallet_pb2,
    wallet_pb2_grpc,
)
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC as WALLET

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

Code = grpc.StatusCode
OK = Code.OK
INVALID, PRECONDITION, DENIED = Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION, Code.PERMISSION_DENIED
MISSING, UNAUTH, EXHAUSTED = Code.NOT_FOUND, Code.UNAUTHENTICATED, Code.RESOURCE_EXHAUSTED
WITHIN = 10.0

HUGE = "漢" * 40_000  # ~120 kB of text: far past any sane id or name, well under gRPC's 4 MB
GARBAGE = ("", HUGE, "\x00", "'; DROP TABLE wallet.accounts; --", "../../etc/passwd", "\u202e💥\ufffd")
INT64_MAX, INT64_MIN, UINT32_MAX, UINT64_MAX = 2**63 - 1, -(2**63), 2**32 - 1, 2**64 - 1
UNKNOWN_ENUM = 99  # proto3 enums are open: an unknown number arrives as that number

# What a client must never see in a status message: tracebacks, source paths, reprs of objects.
LEAK = re.compile(r"Traceback|File \"|\.py\b|/work/|site-packages|object at 0x|<[\w.]+ object|\w+Error\(")
MAX_MESSAGE = 400  # a sentence, not an echo of a 100 kB input

Bearer = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Case:
    """One call: ``rpc`` of the stub with ``request`` under ``who``'s metadata; ``allowed`` codes."""

    label: str
    rpc: str
    request: Message | bytes
    who: str
    allowed: frozenset[Code]


def case(label: str, rpc: str, request: Message | bytes, who: str, *allowed: Code) -> Case:
    return Case(label, rpc, request, who, frozenset(allowed))


def message_problem(details: str | None) -> str | None:
    """Why a status message is not fit for a person, or None."""
    if not details:
        return "empty details"
    if len(details) > MAX_MESSAGE:
        return f"details of {len(details)} characters"
    if not details.isprintable():
        return f"unprintable details {details[:80]!r}"
    if LEAK.search(details):
        return f"internals in details {details!r}"
    return None


def judge(label: str, code: Code, details: str | None, allowed: frozenset[Code]) -> str | None:
    if code not in allowed:
        expected = sorted(c.name for c in allowed)
        return f"{label}: {code.name} ({(details or '')[:160]!r}), expected one of {expected}"
    if code is not OK:
        problem = message_problem(details)
        if problem:
            return f"{label}: {code.name} with {problem}"
    return None


class Caller:
    """Calls RPCs of one service by name, with a chosen identity, and judges the outcome."""

    def __init__(self, channel: grpc.aio.Channel, stub: Any, service: str, tokens: dict[str, Bearer]) -> None:
        self.channel, self.stub, self.service, self.tokens = channel, stub, service, tokens

    def metadata(self, who: str) -> Bearer | None:
        return None if who == "nobody" else self.tokens[who]

    async def outcome(self, one: Case) -> tuple[Code, str | None]:
        metadata = self.metadata(one.who)
        try:
            if isinstance(one.request, bytes):  # raw bytes that are no protobuf message
                raw = self.channel.unary_unary(f"/{self.service}/{one.rpc}")
                await raw(one.request, metadata=metadata, timeout=WITHIN)
            elif one.rpc == "Enqueue":  # a server stream: the first update (or the refusal) decides
                call = self.stub.Enqueue(one.request, metadata=metadata, timeout=WITHIN)
                await call.read()
                call.cancel()
            else:
                await getattr(self.stub, one.rpc)(one.request, metadata=metadata, timeout=WITHIN)
        except grpc.aio.AioRpcError as err:
            return err.code(), err.details()
        return OK, None

    async def sweep(self, cases: Iterable[Case]) -> list[str]:
        problems = []
        for one in cases:
            code, details = await self.outcome(one)
            problem = judge(f"{one.rpc}[{one.label}, {one.who}]", code, details, one.allowed)
            if problem:
                problems.append(problem)
        return problems

    async def assert_serving(self) -> None:
        health = health_pb2_grpc.HealthStub(self.channel)
        for name in ("", self.service):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=WITHIN)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name


def raw_cases(service_pb2: Any, service: str, who: str) -> list[Case]:
    """Every unary RPC of ``service`` fed bytes that do not parse as its request."""
    methods = service_pb2.DESCRIPTOR.services_by_name[service].methods
    return [
        case("bytes", method.name, b"\xff\xff\xff\xff\x0f", who, INVALID)
        for method in methods
        if not method.client_streaming and not method.server_streaming
    ]


def collected(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples drawn by hypothesis (a fixed seed, so a failure reproduces)."""
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(example: Any) -> None:
        drawn.append(example)

    draw()
    return drawn


TEXT = st.one_of(
    st.text(max_size=40), st.sampled_from(GARBAGE), st.text(alphabet="0123456789mpszf", max_size=20)
)


def fields(message: type[Message], **strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[Message]:
    return st.fixed_dictionaries({}, optional=strategies).map(lambda values: message(**values))


# ---------------------------------------------------------------------------------------------- wallet


@pytest_asyncio.fixture
async def wallet(
    start_service: Any, service_env: dict[str, str], database_url: str, unique_name: Callable[[str], str]
) -> Any:
    env = {**service_env, "DATABASE_URL": database_url, "WALLET_EVENT_NAMESPACE": unique_name("w").lower()}
    return await start_service(WALLET, WalletConfig.from_env(env))


async def login(stub: wallet_pb2_grpc.WalletServiceStub, name: str) -> tuple[str, Bearer]:
    reply = await stub.GuestLogin(wallet_pb2.GuestLoginRequest(display_name=name), timeout=WITHIN)
    return reply.player_id, auth.bearer_metadata(reply.session.token)


async def ledger(database_url: str) -> tuple[int, list[tuple[Any, ...]]]:
    """The sum of all balances (always 0: double entry) and every account's (id, balance, held)."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT id, balance, held FROM wallet.accounts ORDER BY id")
    finally:
        await conn.close()
    return sum(row["balance"] for row in rows), [tuple(row) for row in rows]


def wallet_cases(me: str, other: str) -> list[Case]:
    W = wallet_pb2
    cases = [
        *(
            case(f"name {n[:8]!r}", "GuestLogin", W.GuestLoginRequest(display_name=n), "nobody", INVALID)
            for n in ("", HUGE, "\x00", " " * 40)
        ),
        *(
            case(
                f"refresh {t[:8]!r}",
                "RefreshToken",
                W.RefreshTokenRequest(refresh_token=t),
                "nobody",
                UNAUTH,
                INVALID,
            )
            for t in GARBAGE
        ),
        case("empty", "GetBalance", W.GetBalanceRequest(), "nobody", UNAUTH),
        case("empty", "GetBalance", W.GetBalanceRequest(), "forged", UNAUTH),
        case("other's", "GetBalance", W.GetBalanceRequest(player_id=other), "me", DENIED),
        *(
            case(f"id {p[:8]!r}", "GetBalance", W.GetBalanceRequest(player_id=p), "service", MISSING, INVALID)
            for p in GARBAGE[1:]
        ),
        case("empty", "ListHistory", W.ListHistoryRequest(), "nobody", UNAUTH),
        case("other's", "ListHistory", W.ListHistoryRequest(player_id=other), "me", DENIED),
        case("huge page", "ListHistory", W.ListHistoryRequest(page_size=UINT32_MAX), "me", OK, INVALID),
        *(
            case(f"token {t[:8]!r}", "ListHistory", W.ListHistoryRequest(page_token=t), "me", INVALID)
            for t in GARBAGE[1:]
        ),
        case("empty", "GetLeaderboard", W.GetLeaderboardRequest(), "nobody", UNAUTH),
        case(
            "unknown scope", "GetLeaderboard", W.GetLeaderboardRequest(scope=UNKNOWN_ENUM), "me", OK, INVALID
        ),
        case("huge limit", "GetLeaderboard", W.GetLeaderboardRequest(limit=UINT32_MAX), "me", OK, INVALID),
        case(
            "around a service",
            "GetLeaderboard",
            W.GetLeaderboardRequest(scope=2),
            "service",
            OK,
            INVALID,
            DENIED,
            MISSING,
        ),
        case("empty", "GetInventory", W.GetInventoryRequest(), "nobody", UNAUTH),
        case("other's", "GetInventory", W.GetInventoryRequest(player_id=other), "me", DENIED),
        *(
            case(
                f"id {p[:8]!r}",
                "GetInventory",
                W.GetInventoryRequest(player_id=p),
                "service",
                MISSING,
                INVALID,
                OK,
            )
            for p in GARBAGE[1:]
        ),
    ]
    grant = {"player_id": me, "amount": 10, "reason": "sweep", "request_id": "g-1"}
    for who in ("nobody", "me", "service"):
        cases.append(case("a grant", "AdminGrant", W.AdminGrantRequest(**grant), who, UNAUTH, DENIED))
    for label, change in [
        ("empty", {"player_id": "", "amount": 0, "reason": "", "request_id": ""}),
        ("unknown player", {"player_id": "nobody-here"}),
        ("huge id", {"player_id": HUGE}),
        ("NUL id", {"player_id": "\x00"}),
        ("no request id", {"request_id": ""}),
        ("huge request id", {"request_id": HUGE}),
        ("max amount", {"amount": INT64_MAX}),
        ("min amount", {"amount": INT64_MIN}),
        ("unknown item", {"items": [W.ItemStack(item=UNKNOWN_ENUM, count=1)]}),
        ("huge item count", {"items": [W.ItemStack(item=1, count=UINT32_MAX)]}),
    ]:
        request = W.AdminGrantRequest(**{**grant, **change})
        cases.append(case(label, "AdminGrant", request, "admin", INVALID, MISSING, PRECONDITION))
    hold = {"player_id": me, "pairing_id": "pr-1", "amount": 100, "fee": 5}
    for who in ("nobody", "me", "other"):
        cases.append(case("a hold", "PlaceHold", W.PlaceHoldRequest(**hold), who, UNAUTH, DENIED))
        cases.append(
            case(
                "a release",
                "ReleaseHold",
                W.ReleaseHoldRequest(player_id=me, pairing_id="pr-1"),
                who,
                UNAUTH,
                DENIED,
            )
        )
    for label, change in [
        ("empty", {"player_id": "", "pairing_id": "", "amount": 0, "fee": 0}),
        ("unknown player", {"player_id": "nobody-here"}),
        ("huge player", {"player_id": HUGE}),
        ("no pairing", {"pairing_id": ""}),
        ("huge pairing", {"pairing_id": HUGE}),
        ("NUL pairing", {"pairing_id": "\x00"}),
        ("negative amount", {"amount": -100}),
        ("min amount", {"amount": INT64_MIN}),
        ("max amount", {"amount": INT64_MAX}),
        ("fee above amount", {"fee": 500}),
        ("negative fee", {"fee": -5}),
        ("max fee", {"amount": INT64_MAX, "fee": INT64_MAX}),
    ]:
        request = W.PlaceHoldRequest(**{**hold, **change})
        cases.append(case(label, "PlaceHold", request, "service", INVALID, MISSING, PRECONDITION))
    for label, player, pairing in [
        ("empty", "", ""),
        ("unknown player", "nobody-here", "pr-1"),
        ("no pairing", me, ""),
        ("huge pairing", me, HUGE),
        ("NUL pairing", me, "\x00"),
    ]:
        request = W.ReleaseHoldRequest(player_id=player, pairing_id=pairing)
        cases.append(case(label, "ReleaseHold", request, "service", INVALID, MISSING, PRECONDITION))
    cases.append(
        case(
            "unknown pairing",
            "ReleaseHold",
            W.ReleaseHoldRequest(player_id=me, pairing_id="pr-x"),
            "service",
            OK,
            MISSING,
            PRECONDITION,
        )
    )
    return cases + raw_cases(wallet_pb2, "WalletService", "me")


async def test_wallet_refuses_bad_input_and_keeps_the_ledger(
    wallet: Any, issue: Any, database_url: str
) -> None:
    async with grpc.aio.insecure_channel(wallet.server.address) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        me, my_token = await login(stub, "小明")
        other, other_token = await login(stub, "小红")
        tokens = {
            "me": my_token,
            "other": other_token,
            "forged": auth.bearer_metadata("not.a.token"),
            "service": issue("matchmaking", Role.SERVICE),
            "admin": issue("ops", Role.ADMIN),
        }
        caller = Caller(channel, stub, "duelmahjong.v1.WalletService", tokens)
        before = await ledger(database_url)
        problems = await caller.sweep(wallet_cases(me, other))
        assert not problems, "\n".join(problems)
        await caller.assert_serving()
        assert await ledger(database_url) == before
        assert before[0] == 0
        balance = await stub.GetBalance(wallet_pb2.GetBalanceRequest(), metadata=my_token, timeout=WITHIN)
        assert (balance.player_id, balance.balance, balance.held) == (me, 1000, 0)


async def test_wallet_fuzzed_requests_get_domain_answers(wallet: Any, issue: Any, database_url: str) -> None:
    W = wallet_pb2
    async with grpc.aio.insecure_channel(wallet.server.address) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        me, my_token = await login(stub, "阿强")
        caller = Caller(
            channel,
            stub,
            "duelmahjong.v1.WalletService",
            {"me": my_token, "service": issue("mm", Role.SERVICE)},
        )
        before = await ledger(database_url)
        holds = fields(
            W.PlaceHoldRequest,
            player_id=st.one_of(TEXT, st.just(me)),
            pairing_id=TEXT,
            amount=st.integers(INT64_MIN, INT64_MAX),
            fee=st.integers(INT64_MIN, INT64_MAX),
        )
        history = fields(
            W.ListHistoryRequest, player_id=TEXT, page_size=st.integers(0, UINT32_MAX), page_token=TEXT
        )
        cases = [case("fuzz", "ListHistory", r, "me", OK, INVALID, DENIED) for r in collected(history, 25)]
        # a fuzzed hold may be a legal one: it is then released again, so the ledger must come back whole
        fuzzed_holds = collected(holds, 25)
        cases += [
            case("fuzz", "PlaceHold", r, "service", OK, INVALID, MISSING, PRECONDITION) for r in fuzzed_holds
        ]
        problems = await caller.sweep(cases)
        for hold in fuzzed_holds:
            if hold.player_id == me and hold.pairing_id:
                release = W.ReleaseHoldRequest(player_id=me, pairing_id=hold.pairing_id)
                problems += await caller.sweep(
                    [case("undo", "ReleaseHold", release, "service", OK, MISSING, INVALID, PRECONDITION)]
                )
        assert not problems, "\n".join(problems)
        await caller.assert_serving()
        assert await ledger(database_url) == before


# --------------------------------------------------------------------------------------------- scoring

FIRST, SECOND = rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND
SCORING_NAME = "duelmahjong.v1.ScoringService"


def duel_hand(
    concealed: str = "234567m234p678s5s", win_tile: str = "5s", **more: Any
) -> rules_pb2.HandDescription:
    fields = {"profile": rules_pb2.PROFILE_DUEL, "concealed": concealed, "win_tile": win_tile, **more}
    return rules_pb2.HandDescription(**fields)


def hand_result(**change: Any) -> rules_pb2.HandResult:
    """The seed's example (002: 3 fan, 1番 = 10, 5× → 150) with ``change`` applied."""
    seats = [
        rules_pb2.SeatPlayer(seat=s, player_id=p, carry=1000) for s, p in ((FIRST, "alice"), (SECOND, "bob"))
    ]
    rules, outcome = (
        rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10),
        rules_pb2.HAND_OUTCOME_WIN,
    )
    multipliers = rules_pb2.Multipliers(negotiated=5, progressive=1, fan_rate=10)
    fields = dict(table_id="t-sweep", hand_id="t-sweep-h1", hand_number=1, last_sequence=1, dealer=FIRST)
    fields.update(rules=rules, players=seats, outcome=outcome, winner=FIRST, multipliers=multipliers)
    fields.update(description=duel_hand(self_drawn=True))
    fields.update(change)
    return rules_pb2.HandResult(**fields)


def scoring_cases() -> list[Case]:
    S = scoring_pb2
    evaluate = [
        ("empty", S.EvaluateHandRequest()),
        ("unknown profile", S.EvaluateHandRequest(hand=duel_hand(profile=UNKNOWN_ENUM))),
        ("huge fan floor", S.EvaluateHandRequest(hand=duel_hand(self_drawn=True), minimum_fan=UINT32_MAX)),
        *((f"concealed {t[:8]!r}", S.EvaluateHandRequest(hand=duel_hand(concealed=t))) for t in GARBAGE),
        *(
            (f"concealed {t}", S.EvaluateHandRequest(hand=duel_hand(concealed=t)))
            for t in (
                "0m",
                "10m",
                "99z",
                "9f",
                "1111m",
                "123x",
                "m123",
                "1234567890m" * 3,
                "123m456p789s11z" * 500,
            )
        ),
        *(
            (f"win tile {t[:8]!r}", S.EvaluateHandRequest(hand=duel_hand(win_tile=t)))
            for t in (*GARBAGE, "0s", "5s5s", "8z")
        ),
        ("meld without kind", S.EvaluateHandRequest(hand=duel_hand(melds=[{"tiles": "123m"}]))),
        (
            "meld unknown kind",
            S.EvaluateHandRequest(hand=duel_hand(melds=[{"kind": UNKNOWN_ENUM, "tiles": "123m"}])),
        ),
        (
            "meld garbage",
            S.EvaluateHandRequest(hand=duel_hand(melds=[{"kind": 2, "tiles": "xyz", "claimed_tile": "?"}])),
        ),
        ("meld not a set", S.EvaluateHandRequest(hand=duel_hand(melds=[{"kind": 1, "tiles": "135m"}]))),
        ("many melds", S.EvaluateHandRequest(hand=duel_hand(melds=[{"kind": 2, "tiles": "111z"}] * 50))),
        (
            "unknown winds",
            S.EvaluateHandRequest(hand=duel_hand(context={"seat_wind": UNKNOWN_ENUM, "round_wind": -1})),
        ),
    ]
    cases = [case(label, "EvaluateHand", request, "me", INVALID, OK) for label, request in evaluate]
    cases[0] = case("empty", "EvaluateHand", S.EvaluateHandRequest(), "me", INVALID)
    cases += [
        case("a hand", "EvaluateHand", S.EvaluateHandRequest(hand=duel_hand()), "nobody", UNAUTH),
        case("a hand", "EvaluateHand", S.EvaluateHandRequest(hand=duel_hand()), "forged", UNAUTH),
        case("empty", "GetCatalogue", S.GetCatalogueRequest(), "me", INVALID),
        case("unknown profile", "GetCatalogue", S.GetCatalogueRequest(profile=UNKNOWN_ENUM), "me", INVALID),
        case("negative profile", "GetCatalogue", S.GetCatalogueRequest(profile=-1), "me", INVALID),
        case("duel", "GetCatalogue", S.GetCatalogueRequest(profile=rules_pb2.PROFILE_DUEL), "nobody", UNAUTH),
        case("empty", "ScoreHand", S.ScoreHandRequest(), "me", INVALID),
    ]
    players = rules_pb2.SeatPlayer
    for label, change in [
        ("no players", {"players": []}),
        ("one player", {"players": [players(seat=FIRST, player_id="alice", carry=1000)]}),
        ("three players", {"players": [players(seat=FIRST, player_id=f"p{i}", carry=10) for i in range(3)]}),
        ("same seat twice", {"players": [players(seat=FIRST, player_id=p, carry=10) for p in ("a", "b")]}),
        (
            "unknown seat",
            {"players": [players(seat=UNKNOWN_ENUM, player_id=p, carry=10) for p in ("a", "b")]},
        ),
        (
            "negative carry",
            {"players": [players(seat=s, player_id=p, carry=-5) for s, p in ((1, "a"), (2, "b"))]},
        ),
        (
            "max carry",
            {"players": [players(seat=s, player_id=p, carry=INT64_MAX) for s, p in ((1, "a"), (2, "b"))]},
        ),
        ("unknown outcome", {"outcome": UNKNOWN_ENUM}),
        ("no outcome", {"outcome": 0}),
        ("unknown winner", {"winner": UNKNOWN_ENUM}),
        ("unknown dealer", {"dealer": UNKNOWN_ENUM}),
        ("escape without escaper", {"outcome": rules_pb2.HAND_OUTCOME_ESCAPE}),
        ("escape unknown escaper", {"outcome": rules_pb2.HAND_OUTCOME_ESCAPE, "escaper": UNKNOWN_ENUM}),
        ("win without hand", {"description": rules_pb2.HandDescription()}),
        ("win with garbage hand", {"description": duel_hand(concealed="zzz")}),
        ("no rules", {"rules": rules_pb2.RoomRules()}),
        ("unknown profile", {"rules": rules_pb2.RoomRules(profile=UNKNOWN_ENUM, fan_rate=10)}),
        ("negative fan rate", {"rules": rules_pb2.RoomRules(profile=1, fan_rate=-10)}),
        (
            "max fan rate",
            {
                "rules": rules_pb2.RoomRules(profile=1, fan_rate=INT64_MAX),
                "multipliers": rules_pb2.Multipliers(
                    negotiated=10, progressive=UINT32_MAX, fan_rate=INT64_MAX
                ),
            },
        ),
        ("odd multiplier", {"multipliers": rules_pb2.Multipliers(negotiated=3, progressive=1, fan_rate=10)}),
        ("zero multipliers", {"multipliers": rules_pb2.Multipliers()}),
        (
            "huge progressive",
            {"multipliers": rules_pb2.Multipliers(negotiated=10, progressive=UINT32_MAX, fan_rate=10)},
        ),
        (
            "unknown task",
            {"task": rules_pb2.HandTask(kind=UNKNOWN_ENUM, pattern=UNKNOWN_ENUM, multiplier=UINT32_MAX)},
        ),
        (
            "unknown doubling seat",
            {"doubling": rules_pb2.DoublingChoices(start_doubled=[UNKNOWN_ENUM], win_declines=UINT32_MAX)},
        ),
        ("huge ids", {"table_id": HUGE, "hand_id": HUGE, "room_id": HUGE}),
    ]:
        request = S.ScoreHandRequest(result=hand_result(**change))
        cases.append(case(label, "ScoreHand", request, "me", INVALID, OK))
    return cases + raw_cases(scoring_pb2, "ScoringService", "me")


@pytest_asyncio.fixture
async def scoring(start_service: Any, service_env: dict[str, str], issue: Any) -> AsyncIterator[Caller]:
    runtime = await start_service(SCORING, ScoringConfig.from_env(service_env))
    async with grpc.aio.insecure_channel(runtime.server.address) as channel:
        tokens = {"me": issue("p-sweep"), "forged": auth.bearer_metadata("not.a.token")}
        yield Caller(channel, scoring_pb2_grpc.ScoringServiceStub(channel), SCORING_NAME, tokens)


async def assert_scoring_works(caller: Caller) -> None:
    await caller.assert_serving()
    token = caller.tokens["me"]
    reply = await caller.stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=hand_result()), metadata=token)
    assert (reply.evaluation.total_fan, reply.settlement.transfer.amount) == (3, 150)


async def test_scoring_refuses_bad_input_and_still_scores(scoring: Caller) -> None:
    problems = await scoring.sweep(scoring_cases())
    assert not problems, "\n".join(problems)
    await assert_scoring_works(scoring)


async def test_scoring_fuzzed_hands_get_domain_answers(scoring: Caller) -> None:
    tiles = st.text(alphabet="0123456789mpszf", max_size=20)
    hands = fields(
        rules_pb2.HandDescription,
        profile=st.integers(-1, 3),
        concealed=st.one_of(tiles, TEXT),
        win_tile=st.one_of(tiles, TEXT),
        self_drawn=st.booleans(),
        melds=st.lists(
            fields(tiles_pb2.Meld, kind=st.integers(0, 6), tiles=tiles, claimed_tile=tiles), max_size=4
        ),
    )
    evaluate = [
        scoring_pb2.EvaluateHandRequest(hand=h, minimum_fan=m)
        for h, m in collected(st.tuples(hands, st.integers(0, UINT32_MAX)), 40)
    ]
    results = fields(
        rules_pb2.HandResult,
        outcome=st.integers(-1, 4),
        winner=st.integers(-1, 3),
        escaper=st.integers(-1, 3),
        dealer=st.integers(-1, 3),
        description=hands,
        players=st.lists(
            fields(
                rules_pb2.SeatPlayer,
                seat=st.integers(-1, 3),
                player_id=TEXT,
                carry=st.integers(INT64_MIN, INT64_MAX),
            ),
            max_size=3,
        ),
        rules=fields(
            rules_pb2.RoomRules, profile=st.integers(-1, 3), fan_rate=st.integers(INT64_MIN, INT64_MAX)
        ),
        multipliers=fields(
            rules_pb2.Multipliers,
            negotiated=st.integers(0, UINT32_MAX),
            progressive=st.integers(0, UINT32_MAX),
            fan_rate=st.integers(INT64_MIN, INT64_MAX),
        ),
    )
    score = [scoring_pb2.ScoreHandRequest(result=r) for r in collected(results, 40)]
    cases = [case("fuzz", "EvaluateHand", r, "me", OK, INVALID) for r in evaluate]
    cases += [case("fuzz", "ScoreHand", r, "me", OK, INVALID) for r in score]
    problems = await scoring.sweep(cases)
    assert not problems, "\n".join(problems)
    await assert_scoring_works(scoring)
