"""Bad input never hurts: every RPC of the four services (the archive scoring serves included), called
with bad input over real gRPC.

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

import asyncio
import json
import re
import sys
from collections import Counter
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
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import (
    archive_pb2,
    archive_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    play_pb2,
    rules_pb2,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    tiles_pb2,
    wallet_pb2,
    wallet_pb2_grpc,
)
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.table.config import TableConfig
from services.table.main import TableServer
from services.table.tickets import TicketBook
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


SERVER_STREAMS = frozenset({"Enqueue", "Watch", "OpenPrivateTable", "JoinPrivateTable"})


class Caller:
    """Calls RPCs of one service by name, with a chosen identity, and judges the outcome."""

    def __init__(
        self, channel: grpc.aio.Channel, stub: Any, service: str, tokens: dict[str, Bearer], address: str = ""
    ) -> None:
        self.channel, self.stub, self.service, self.tokens = channel, stub, service, tokens
        self.address = address  # host:port, for a client of its own (another thread, another loop)

    def metadata(self, who: str) -> Bearer | None:
        return None if who == "nobody" else self.tokens[who]

    async def outcome(self, one: Case) -> tuple[Code, str | None]:
        metadata = self.metadata(one.who)
        try:
            if isinstance(one.request, bytes) and one.rpc in SERVER_STREAMS:  # bytes opening a stream
                await self.channel.unary_stream(f"/{self.service}/{one.rpc}")(
                    one.request, metadata=metadata, timeout=WITHIN
                ).read()
            elif isinstance(one.request, bytes):  # raw bytes that are no protobuf message
                raw = self.channel.unary_unary(f"/{self.service}/{one.rpc}")
                await raw(one.request, metadata=metadata, timeout=WITHIN)
            elif one.rpc in SERVER_STREAMS:  # a server stream: the first message (or the refusal) decides
                call = getattr(self.stub, one.rpc)(one.request, metadata=metadata, timeout=WITHIN)
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
    start_service: Any,
    service_env: dict[str, str],
    wallet_database_url: str,
    unique_name: Callable[[str], str],
) -> Any:
    env = {
        **service_env,
        "DATABASE_URL": wallet_database_url,
        "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
    }
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
    # Consent to share hands: the player's own to set; who shares is for the servers to list.
    for who in ("nobody", "forged"):
        cases.append(case("on", "SetDataSharing", W.SetDataSharingRequest(share_hands=True), who, UNAUTH))
    for who in ("service", "admin"):
        cases.append(
            case("for a player", "SetDataSharing", W.SetDataSharingRequest(player_id=me), who, DENIED)
        )
    cases.append(case("other's", "SetDataSharing", W.SetDataSharingRequest(player_id=other), "me", DENIED))
    cases.append(case("other's", "GetDataSharing", W.GetDataSharingRequest(player_id=other), "me", DENIED))
    cases.append(case("empty", "ListDataSharing", W.ListDataSharingRequest(), "me", DENIED))
    cases.extend(
        case(
            f"id {p[:8]!r}", "GetDataSharing", W.GetDataSharingRequest(player_id=p), "admin", MISSING, INVALID
        )
        for p in GARBAGE[1:]
    )
    for label, request in [
        ("huge page", W.ListDataSharingRequest(page_size=UINT32_MAX)),
        ("too many ids", W.ListDataSharingRequest(player_ids=[me] * 1001)),
        ("ids and a page", W.ListDataSharingRequest(player_ids=[me], page_size=5)),
        *((f"id {p[:8]!r}", W.ListDataSharingRequest(player_ids=[me, p])) for p in GARBAGE),
        *((f"token {t[:8]!r}", W.ListDataSharingRequest(page_token=t)) for t in GARBAGE[1:]),
    ]:
        cases.append(case(label, "ListDataSharing", request, "admin", INVALID))
    return cases + raw_cases(wallet_pb2, "WalletService", "me")


async def test_wallet_refuses_bad_input_and_keeps_the_ledger(
    wallet: Any, issue: Any, database_url: str, client_tls: ClientTls
) -> None:
    async with client_tls.channel(wallet.server.address) as channel:
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


async def test_wallet_fuzzed_requests_get_domain_answers(
    wallet: Any, issue: Any, database_url: str, client_tls: ClientTls
) -> None:
    W = wallet_pb2
    async with client_tls.channel(wallet.server.address) as channel:
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
        (
            "max everything",
            {
                "rules": rules_pb2.RoomRules(profile=1, fan_rate=INT64_MAX),
                "multipliers": rules_pb2.Multipliers(
                    negotiated=10, progressive=UINT32_MAX, fan_rate=INT64_MAX
                ),
                "players": [
                    rules_pb2.SeatPlayer(seat=s, player_id=p, carry=INT64_MAX)
                    for s, p in ((1, "a"), (2, "b"))
                ],
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
async def scoring(
    start_service: Any,
    service_env: dict[str, str],
    scoring_database_url: str,
    issue: Any,
    client_tls: ClientTls,
) -> AsyncIterator[Caller]:
    env = {**service_env, "SCORING_DATABASE_URL": scoring_database_url}
    runtime = await start_service(SCORING, ScoringConfig.from_env(env))
    async with client_tls.channel(runtime.server.address) as channel:
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


def archive_cases() -> list[Case]:
    A = archive_pb2
    cases = [
        case(who, rpc, request, who, UNAUTH)
        for who in ("nobody", "forged")
        for rpc, request in (
            ("ListMatches", A.ListMatchesRequest()),
            ("GetMatch", A.GetMatchRequest(pairing_id="p-1")),
            ("GetReplay", A.GetReplayRequest(hand_id="t-1-h1")),
        )
    ]
    for n, text in enumerate(GARBAGE):
        cases += [
            case(f"player {n}", "ListMatches", A.ListMatchesRequest(player_id=text), "me", INVALID, OK),
            case(f"token {n}", "ListMatches", A.ListMatchesRequest(page_token=text), "me", INVALID, OK),
            case(f"pairing {n}", "GetMatch", A.GetMatchRequest(pairing_id=text), "me", INVALID, MISSING),
            case(f"hand {n}", "GetReplay", A.GetReplayRequest(hand_id=text), "me", INVALID, MISSING),
        ]
    for size in (101, UINT32_MAX):
        cases.append(case(f"size {size}", "ListMatches", A.ListMatchesRequest(page_size=size), "me", INVALID))
    return cases + raw_cases(archive_pb2, "ArchiveService", "me")


async def test_the_archive_refuses_bad_input_and_still_answers(scoring: Caller) -> None:
    archive = Caller(
        scoring.channel,
        archive_pb2_grpc.ArchiveServiceStub(scoring.channel),
        "duelmahjong.v1.ArchiveService",
        scoring.tokens,
    )
    problems = await archive.sweep(archive_cases())
    assert not problems, "\n".join(problems)
    reply = await archive.stub.ListMatches(
        archive_pb2.ListMatchesRequest(page_size=100), metadata=scoring.tokens["me"]
    )
    assert not reply.matches and not reply.next_page_token  # a player with no hands has an empty history


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


# ----------------------------------------------------------------------------------------- matchmaking

MATCHMAKING_NAME = "duelmahjong.v1.MatchmakingService"
SWEEP_ROOM = {
    "room_id": "duel-sweep",
    "profile": "duel",
    "fan_rate": 10,
    "fee": 5,
    "carry_min": 100,
    "carry_max": 5000,
}


@pytest_asyncio.fixture
async def matchmaking(
    start_service: Any, service_env: dict[str, str], wallet: Any, client_tls: ClientTls
) -> AsyncIterator[tuple[Caller, wallet_pb2_grpc.WalletServiceStub]]:
    mm_env = {
        **service_env,
        "WALLET_ADDRESS": wallet.server.address,
        "MATCHMAKING_ROOMS": json.dumps([SWEEP_ROOM]),
        "MATCHMAKING_TICK_SECONDS": "0.05",
        "MATCHMAKING_PRIVATE_JOINS_PER_MINUTE": "0",  # the sweep guesses codes by the dozen
    }
    runtime = await start_service(MATCHMAKING, MatchmakingConfig.from_env(mm_env))
    async with (
        client_tls.channel(wallet.server.address) as wallet_channel,
        client_tls.channel(runtime.server.address) as channel,
    ):
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        yield Caller(channel, stub, MATCHMAKING_NAME, {}), wallet_pb2_grpc.WalletServiceStub(wallet_channel)


def matchmaking_cases(others_ticket: str) -> list[Case]:
    M = matchmaking_pb2
    room = SWEEP_ROOM["room_id"]
    cases = [
        case("empty", "ListRooms", M.ListRoomsRequest(), "nobody", UNAUTH),
        case("empty", "ListRooms", M.ListRoomsRequest(), "forged", UNAUTH),
        case("unknown profile", "ListRooms", M.ListRoomsRequest(profile=UNKNOWN_ENUM), "me", OK, INVALID),
        case("a room", "Enqueue", M.EnqueueRequest(room_id=room, carry=300), "nobody", UNAUTH),
        case("a room", "Enqueue", M.EnqueueRequest(room_id=room, carry=300), "forged", UNAUTH),
        case("empty", "Enqueue", M.EnqueueRequest(), "me", INVALID, MISSING),
        *(
            case(f"room {r[:8]!r}", "Enqueue", M.EnqueueRequest(room_id=r, carry=300), "me", INVALID, MISSING)
            for r in GARBAGE[1:]
        ),
        *(
            case(f"carry {c}", "Enqueue", M.EnqueueRequest(room_id=room, carry=c), "me", INVALID)
            for c in (0, -1, 99, 5001, INT64_MAX, INT64_MIN)
        ),
        case(
            "carry above balance", "Enqueue", M.EnqueueRequest(room_id=room, carry=2000), "me", PRECONDITION
        ),
        case(
            "a player the wallet lacks",
            "Enqueue",
            M.EnqueueRequest(room_id=room, carry=300),
            "ghost",
            MISSING,
        ),
        case("a service queueing", "Enqueue", M.EnqueueRequest(room_id=room, carry=300), "service", DENIED),
        case(
            "other's ticket",
            "CancelQueue",
            M.CancelQueueRequest(queue_ticket_id=others_ticket),
            "me",
            DENIED,
            MISSING,
        ),
        case(
            "other's ticket",
            "CancelQueue",
            M.CancelQueueRequest(queue_ticket_id=others_ticket),
            "nobody",
            UNAUTH,
        ),
    ]
    for text in GARBAGE:
        cases.append(
            case(
                f"ticket {text[:8]!r}",
                "CancelQueue",
                M.CancelQueueRequest(queue_ticket_id=text),
                "me",
                INVALID,
                MISSING,
            )
        )
        for rpc, request in [
            ("ProposeMultiplier", M.ProposeMultiplierRequest(pairing_id=text, multiplier=2)),
            ("RespondMultiplier", M.RespondMultiplierRequest(pairing_id=text, accept=True)),
            ("ContinuePairing", M.ContinuePairingRequest(pairing_id=text)),
            ("LeavePairing", M.LeavePairingRequest(pairing_id=text)),
            ("LocateTable", M.LocateTableRequest(table_id=text)),
            ("ListLiveTables", M.ListLiveTablesRequest(room_id=text)),
            ("OpenPrivateTable", M.OpenPrivateTableRequest(room_id=text, carry=300)),
            ("JoinPrivateTable", M.JoinPrivateTableRequest(code=text, carry=300)),
        ]:
            cases.append(case(f"pairing {text[:8]!r}", rpc, request, "me", INVALID, MISSING))
            if not text:
                cases.append(case("empty", rpc, request, "nobody", UNAUTH))
    for multiplier in (0, 3, 11, UINT32_MAX):
        request = M.ProposeMultiplierRequest(pairing_id="pr-none", multiplier=multiplier)
        cases.append(case(f"multiplier {multiplier}", "ProposeMultiplier", request, "me", INVALID, MISSING))
    cases.append(case("bytes", "Enqueue", b"\xff\xff\xff\xff\x0f", "me", INVALID))  # the stream's request
    for rpc, request in [
        ("OpenPrivateTable", M.OpenPrivateTableRequest(room_id=room, carry=300)),
        ("JoinPrivateTable", M.JoinPrivateTableRequest(code="ABC234", carry=300)),
    ]:
        cases.append(case("a service sitting", rpc, request, "service", DENIED))
        cases.append(case("a room or code", rpc, request, "nobody", UNAUTH))
    cases.append(
        case("a wrong code", "JoinPrivateTable", M.JoinPrivateTableRequest(code="abc 234"), "me", MISSING)
    )
    return cases + raw_cases(matchmaking_pb2, "MatchmakingService", "me")


async def test_matchmaking_refuses_bad_input_and_the_other_player_queues_on(
    matchmaking: Any, issue: Any
) -> None:
    caller, wallet = matchmaking
    _, caller.tokens["me"] = await login(wallet, "小明")
    _, caller.tokens["other"] = await login(wallet, "小红")
    caller.tokens["ghost"] = issue("p-ghost")
    caller.tokens["forged"] = auth.bearer_metadata("not.a.token")
    caller.tokens["service"] = issue("matchmaking", Role.SERVICE)
    # the other player waits in the queue all along: nothing below may disturb their entry
    queue = caller.stub.Enqueue(
        matchmaking_pb2.EnqueueRequest(room_id=SWEEP_ROOM["room_id"], carry=300),
        metadata=caller.tokens["other"],
    )
    first = await asyncio.wait_for(queue.read(), WITHIN)
    ticket = first.update.queued.queue_ticket_id
    assert ticket
    problems = await caller.sweep(matchmaking_cases(ticket))
    assert not problems, "\n".join(problems)
    await caller.assert_serving()
    rooms = await caller.stub.ListRooms(matchmaking_pb2.ListRoomsRequest(), metadata=caller.tokens["me"])
    assert [(room.room_id, room.waiting) for room in rooms.rooms] == [(SWEEP_ROOM["room_id"], 1)]
    _, caller.tokens["third"] = await login(wallet, "小三")
    await sweep_a_pairing(caller, wallet, queue)


async def next_update(call: Any, kind: str) -> matchmaking_pb2.QueueUpdate:
    async with asyncio.timeout(WITHIN):
        while True:
            update = (await call.read()).update
            if update.WhichOneof("kind") == kind:
                return update


async def sweep_a_pairing(caller: Caller, wallet: wallet_pb2_grpc.WalletServiceStub, queue: Any) -> None:
    """ "me" joins and pairs with "other" (SEAT_FIRST, waiting longer); a third player, the wrong seat and
    bad multipliers are refused while negotiating (T7); leaving then releases both holds."""
    M = matchmaking_pb2
    mine = caller.stub.Enqueue(
        M.EnqueueRequest(room_id=SWEEP_ROOM["room_id"], carry=300), metadata=caller.tokens["me"]
    )
    try:
        pairing = (await next_update(mine, "matched")).matched.pairing_id
        assert (await next_update(queue, "negotiation")).negotiation.your_turn
        cases = [
            *(
                case(f"a third player's {rpc}", rpc, request, "third", DENIED)
                for rpc, request in [
                    ("ProposeMultiplier", M.ProposeMultiplierRequest(pairing_id=pairing, multiplier=2)),
                    ("RespondMultiplier", M.RespondMultiplierRequest(pairing_id=pairing, accept=True)),
                    ("ContinuePairing", M.ContinuePairingRequest(pairing_id=pairing)),
                    ("LeavePairing", M.LeavePairingRequest(pairing_id=pairing)),
                ]
            ),
            case(
                "the second seat proposing",
                "ProposeMultiplier",
                M.ProposeMultiplierRequest(pairing_id=pairing, multiplier=2),
                "me",
                PRECONDITION,
            ),
            case(
                "no proposal yet",
                "RespondMultiplier",
                M.RespondMultiplierRequest(pairing_id=pairing, accept=True),
                "me",
                PRECONDITION,
            ),
            case(
                "before a hand",
                "ContinuePairing",
                M.ContinuePairingRequest(pairing_id=pairing),
                "other",
                PRECONDITION,
            ),
            *(
                case(
                    f"multiplier {m}",
                    "ProposeMultiplier",
                    M.ProposeMultiplierRequest(pairing_id=pairing, multiplier=m),
                    "other",
                    INVALID,
                )
                for m in (0, 3, 20, UINT32_MAX)
            ),
            case(
                "queueing twice",
                "Enqueue",
                M.EnqueueRequest(room_id=SWEEP_ROOM["room_id"], carry=300),
                "me",
                PRECONDITION,
            ),
        ]
        problems = await caller.sweep(cases)
        assert not problems, "\n".join(problems)
        held = await wallet.GetBalance(
            wallet_pb2.GetBalanceRequest(), metadata=caller.tokens["me"], timeout=WITHIN
        )
        assert held.held == 305  # carry + fee, untouched by the refusals
        await caller.stub.LeavePairing(
            M.LeavePairingRequest(pairing_id=pairing), metadata=caller.tokens["other"]
        )
        assert (await next_update(mine, "expired")).expired.reason
        for _ in range(200):  # matchmaking releases the holds at the wallet after ending the stream
            balance = await wallet.GetBalance(wallet_pb2.GetBalanceRequest(), metadata=caller.tokens["me"])
            if not balance.held:
                break
            await asyncio.sleep(0.05)
        assert (balance.balance, balance.held) == (1000, 0)
    finally:
        mine.cancel()
        queue.cancel()


# ----------------------------------------------------------------------------------------------- table

TABLE_NAME = "duelmahjong.v1.TableService"
PLAY = f"/{TABLE_NAME}/Play"
# What no seat may ever see (the opponent's concealed tiles are checked on the views below).
SERVER_ONLY = ("seed", "unused_pool", "wall:")


@pytest_asyncio.fixture
async def table_server(
    start_service: Any, service_env: dict[str, str], client_tls: ClientTls
) -> AsyncIterator[Caller]:
    # DRAIN_SECONDS: the tables the sweep opened and never played need not hold the teardown.
    env = {
        **service_env,
        "SETTLEMENT_WAIT_SECONDS": "0.3",
        "ANNOUNCE_SECONDS": "0.2",
        "SERVER_ID": "t-sweep",
        "DRAIN_SECONDS": "1",
    }
    runtime = await start_service(TableServer().spec, TableConfig.from_env(env))
    async with client_tls.channel(runtime.server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        yield Caller(channel, stub, TABLE_NAME, {}, runtime.server.address)


ATTACHED = frozenset({OK, INVALID, PRECONDITION})


def open_request(table_id: str, /, **change: Any) -> table_pb2.OpenTableRequest:
    seats = [
        rules_pb2.SeatPlayer(seat=seat, player_id=f"{table_id}-{name}", display_name=name, carry=1000)
        for seat, name in ((FIRST, "a"), (SECOND, "b"))
    ]
    rules = rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10)
    fields: dict[str, Any] = {"table_id": table_id, "pairing_id": f"p-{table_id}", "room_id": "r"}
    fields.update(rules=rules, players=seats, negotiated=2)
    fields.update(change)
    return table_pb2.OpenTableRequest(**fields)


# Accepted on purpose: seats are sorted by seat, 0 is proto3's "unset" (1×), a large carry is a carry,
# and the fan rate is the room's (matchmaking's configuration) to bound.
OPEN_ACCEPTED = frozenset({"seats swapped", "max carry", "negotiated 0", "max fan rate"})


def table_cases(table_id: str) -> list[Case]:
    T, seat = table_pb2, rules_pb2.SeatPlayer
    good = open_request("t-never")
    cases = [
        case("a table", "OpenTable", good, "nobody", UNAUTH),
        case("a table", "OpenTable", good, "forged", UNAUTH),
        case("a player opening", "OpenTable", good, "a", DENIED),
        case("empty", "OpenTable", T.OpenTableRequest(), "service", INVALID),
        case("empty", "GetTableStatus", T.GetTableStatusRequest(), "a", INVALID, MISSING),
        case("unknown table", "GetTableStatus", T.GetTableStatusRequest(table_id="t-none"), "a", MISSING),
        case("a table", "GetTableStatus", T.GetTableStatusRequest(table_id=table_id), "nobody", UNAUTH),
        case("a table", "Watch", T.WatchRequest(table_id=table_id), "nobody", UNAUTH),
        case("a table", "Watch", T.WatchRequest(table_id=table_id), "forged", UNAUTH),
        case("a service watching", "Watch", T.WatchRequest(table_id=table_id), "service", DENIED),
        case(
            "not watchable",
            "Watch",
            T.WatchRequest(table_id=table_id, last_seen_sequence=UINT32_MAX),
            "a",
            DENIED,
        ),
        case("empty", "Watch", T.WatchRequest(), "a", INVALID),
        case("unknown table", "Watch", T.WatchRequest(table_id="t-none"), "a", MISSING),
        case("bytes", "Watch", b"\xff\xff\xff\xff\x0f", "a", INVALID),
        *(
            case(f"table {t[:8]!r}", "Watch", T.WatchRequest(table_id=t), "a", INVALID, MISSING)
            for t in GARBAGE[1:]
        ),
        *(
            case(
                f"table {t[:8]!r}",
                "GetTableStatus",
                T.GetTableStatusRequest(table_id=t),
                "a",
                INVALID,
                MISSING,
            )
            for t in GARBAGE[1:]
        ),
    ]
    two = [(FIRST, "x"), (SECOND, "y")]
    for label, change in [
        *((f"table id {t[:8]!r}", {"table_id": t}) for t in GARBAGE),
        ("table id with a dot", {"table_id": "t.x.>"}),
        ("huge pairing id", {"pairing_id": HUGE}),
        ("no players", {"players": []}),
        ("one player", {"players": [seat(seat=FIRST, player_id="x", carry=10)]}),
        (
            "three players",
            {"players": [seat(seat=s, player_id=p, carry=10) for s, p in (*two, (FIRST, "z"))]},
        ),
        (
            "seats swapped",
            {"players": [seat(seat=s, player_id=p, carry=10) for s, p in ((SECOND, "x"), (FIRST, "y"))]},
        ),
        ("unknown seat", {"players": [seat(seat=UNKNOWN_ENUM, player_id=p, carry=10) for p in "xy"]}),
        ("one player twice", {"players": [seat(seat=s, player_id="x", carry=10) for s, _ in two]}),
        ("no player ids", {"players": [seat(seat=s, carry=10) for s, _ in two]}),
        ("huge player id", {"players": [seat(seat=s, player_id=p * 50_000, carry=10) for s, p in two]}),
        ("negative carry", {"players": [seat(seat=s, player_id=p, carry=-1) for s, p in two]}),
        ("max carry", {"players": [seat(seat=s, player_id=p, carry=INT64_MAX) for s, p in two]}),
        *((f"negotiated {n}", {"negotiated": n}) for n in (0, 3, UINT32_MAX)),
        ("no rules", {"rules": rules_pb2.RoomRules()}),
        ("unknown profile", {"rules": rules_pb2.RoomRules(profile=UNKNOWN_ENUM, fan_rate=10)}),
        ("negative fan rate", {"rules": rules_pb2.RoomRules(profile=1, fan_rate=-1)}),
        ("max fan rate", {"rules": rules_pb2.RoomRules(profile=1, fan_rate=INT64_MAX)}),
        (
            "odd rule options",
            {
                "rules": rules_pb2.RoomRules(
                    profile=1,
                    fan_rate=10,
                    fee=-5,
                    minimum_fan=UINT32_MAX,
                    revealed_bonus_tiles=UINT32_MAX,
                    triplet_offer_probability=7.5,
                    pick_offer_probability=-1,
                    exchange_fee=INT64_MIN,
                    task_multiplier=UINT32_MAX,
                    decision_millis=UINT32_MAX,
                    time_bank_millis=UINT32_MAX,
                )
            },
        ),
        (
            "nan probability",
            {"rules": rules_pb2.RoomRules(profile=1, fan_rate=10, triplet_offer_probability=float("nan"))},
        ),
    ]:
        request = open_request(f"t-bad-{len(cases)}", **change)
        allowed = (INVALID, OK) if label in OPEN_ACCEPTED else (INVALID,)
        cases.append(case(label, "OpenTable", request, "service", *allowed))
    return cases + raw_cases(table_pb2, "TableService", "service")


def serialized(request: table_pb2.PlayRequest | bytes) -> bytes:
    return request if isinstance(request, bytes) else request.SerializeToString()


class SeatStream:
    """One seat's raw Play stream: requests (messages or raw bytes) go in a queue, every response is
    kept and checked."""

    def __init__(self, channel: grpc.aio.Channel, token: Bearer, first: table_pb2.PlayRequest) -> None:
        self._requests: asyncio.Queue[table_pb2.PlayRequest | bytes | None] = asyncio.Queue()
        self._requests.put_nowait(first)
        self.received: list[table_pb2.PlayResponse] = []
        self._responses: asyncio.Queue[table_pb2.PlayResponse | None] = asyncio.Queue()
        play = channel.stream_stream(
            PLAY, request_serializer=serialized, response_deserializer=table_pb2.PlayResponse.FromString
        )
        self.call = play(self._outgoing(), metadata=token)
        self._reader = asyncio.create_task(self._read())

    async def _outgoing(self) -> AsyncIterator[table_pb2.PlayRequest | bytes]:
        while (request := await self._requests.get()) is not None:
            yield request

    def send_raw(self, raw: bytes) -> None:
        """Bytes as one message of the stream, parsed or not."""
        self._requests.put_nowait(raw)

    async def _read(self) -> None:
        try:
            async for response in self.call:
                for text in SERVER_ONLY:
                    assert text not in str(response), f"a seat was sent {text!r}"
                self.received.append(response)
                self._responses.put_nowait(response)
        finally:
            self._responses.put_nowait(None)

    def send(self, **fields: Any) -> None:
        self._requests.put_nowait(table_pb2.PlayRequest(**fields))

    async def next(self, kind: str) -> table_pb2.PlayResponse:
        async with asyncio.timeout(WITHIN):
            while (response := await self._responses.get()) is not None:
                if response.WhichOneof("kind") == kind:
                    return response
        raise AssertionError(f"the stream ended waiting for {kind}")

    async def decision(self, phase: int) -> play_pb2.SeatView:
        """The next view that asks this seat to decide during ``phase``."""
        while True:
            view = (await self.next("view")).view
            if view.legal_actions.actions and view.table.phase == phase:
                return view

    async def close(self) -> None:
        self._requests.put_nowait(None)
        self.call.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


async def refused_play(
    caller: Caller, who: str, first: table_pb2.PlayRequest | bytes | None
) -> tuple[Code, str | None]:
    """A Play stream that sends ``first`` (nothing at all for None) and what the server answers it."""
    metadata = caller.metadata(who)
    if isinstance(first, bytes):
        call = caller.channel.stream_stream(PLAY)(iter([first]), metadata=metadata, timeout=WITHIN)
    else:
        call = caller.stub.Play(iter([first] if first else []), metadata=metadata, timeout=WITHIN)
    try:
        await call.read()  # a first response means the seat was attached: not a refusal
    except grpc.aio.AioRpcError as err:
        return err.code(), err.details()
    call.cancel()
    return OK, None


async def open_sweep_table(caller: Caller, table_id: str) -> dict[str, str]:
    opened = await caller.stub.OpenTable(
        open_request(table_id), metadata=caller.tokens["service"], timeout=WITHIN
    )
    return {"a": opened.tickets[0].table_ticket, "b": opened.tickets[1].table_ticket}


async def test_table_refuses_bad_calls_and_streams(
    table_server: Caller, issue: Any, token_secret: str
) -> None:
    caller, table_id = table_server, "t-sweep"
    caller.tokens.update(
        a=issue(f"{table_id}-a"),
        b=issue(f"{table_id}-b"),
        service=issue("matchmaking", Role.SERVICE),
        forged=auth.bearer_metadata("not.a.token"),
    )
    tickets = await open_sweep_table(caller, table_id)
    problems = await caller.sweep(table_cases(table_id))
    play = table_pb2.PlayRequest
    forged_elsewhere = TicketBook(token_secret).issue("t-nowhere", 0, f"{table_id}-a")
    streams: list[tuple[str, str, Any, frozenset[Code]]] = [
        ("a ticket", "nobody", play(table_ticket=tickets["a"]), frozenset({UNAUTH})),
        ("a ticket", "forged", play(table_ticket=tickets["a"]), frozenset({UNAUTH})),
        ("no message", "a", None, frozenset({INVALID})),
        ("no ticket", "a", play(), frozenset({DENIED, INVALID})),
        (
            "an action before the ticket",
            "a",
            play(action={"discard": {"tile": "1m"}}),
            frozenset({DENIED, INVALID}),
        ),
        ("bytes", "a", b"\xff\xff\xff\xff\x0f", frozenset({INVALID})),
        ("the other seat's ticket", "a", play(table_ticket=tickets["b"]), frozenset({DENIED})),
        ("a player's ticket", "service", play(table_ticket=tickets["a"]), frozenset({DENIED})),
        ("a tampered ticket", "a", play(table_ticket=tickets["a"][:-2] + "xx"), frozenset({DENIED})),
        ("a ticket for no table", "a", play(table_ticket=forged_elsewhere), frozenset({MISSING})),
        # resuming from a sequence never sent, or acting in the very first message before both seats
        # are here: attached (then dropped) or refused, never a crash
        ("resume from 2^64-1", "a", play(table_ticket=tickets["a"], last_seen_sequence=UINT64_MAX), ATTACHED),
        (
            "an action with the ticket",
            "a",
            play(table_ticket=tickets["a"], action={"discard": {"tile": "?"}}),
            ATTACHED,
        ),
        *(
            (f"ticket {t[:8]!r}", "a", play(table_ticket=t), frozenset({DENIED, INVALID}))
            for t in GARBAGE[1:]
        ),
    ]
    for label, who, first, allowed in streams:
        code, details = await refused_play(caller, who, first)
        problem = judge(f"Play[{label}, {who}]", code, details, allowed)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)
    await caller.assert_serving()
    await play_on_after_bad_actions(caller, tickets, table_id)


STALE, ILLEGAL = table_pb2.REJECTION_CODE_STALE, table_pb2.REJECTION_CODE_ILLEGAL
BAD_ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("no action kind", {}),
    *((f"discard {t[:8]!r}", {"discard": {"tile": t}}) for t in (*GARBAGE, "0m", "99z", "1m2m", "9f", "m")),
    ("chi of garbage", {"chi": {"tiles": "zz9"}}),
    ("kong of an unknown kind", {"kong": {"kind": UNKNOWN_ENUM, "tile": "1z"}}),
    ("an unknown item", {"use_item": {"item": UNKNOWN_ENUM, "tiles": HUGE, "target": "\x00"}}),
    ("an unknown offer", {"respond_offer": {"offer_id": HUGE, "accept": True, "give_back": "??"}}),
    ("an unknown guess", {"guess": {"guess": UNKNOWN_ENUM}}),
    ("exchange of garbage", {"exchange": {"tiles": "1m" * 5000}}),
    ("ready with garbage", {"declare_ready": {"discard": "\u202e"}}),
]


async def first_to_decide(seats: dict[str, SeatStream], phase: int) -> tuple[str, play_pb2.SeatView]:
    """The seat that gets a decision in ``phase`` first, and that decision."""
    waits = {who: asyncio.create_task(stream.decision(phase)) for who, stream in seats.items()}
    done, pending = await asyncio.wait(waits.values(), timeout=WITHIN, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    who = next(who for who, task in waits.items() if task in done)
    return who, waits[who].result()


async def play_on_after_bad_actions(caller: Caller, tickets: dict[str, str], table_id: str) -> None:
    """Both seats attach and, during 换牌 (both decide), send every malformed action at several sequences
    with the other seat's ticket beside it: each is refused on the stream (ILLEGAL or STALE) with a
    readable reason. Then, in play, the seat not to act is STALE, and the seat to act plays on."""
    stub = caller.stub
    seats = {
        who: SeatStream(caller.channel, caller.tokens[who], table_pb2.PlayRequest(table_ticket=tickets[who]))
        for who in "ab"
    }
    try:
        exchange = {who: await seats[who].decision(play_pb2.HAND_PHASE_EXCHANGE) for who in "ab"}
        problems = []
        for who, other in (("a", "b"), ("b", "a")):
            for sequence in (exchange[who].legal_actions.sequence, 0, UINT64_MAX):
                for number, (label, action) in enumerate(BAD_ACTIONS, start=1):
                    seats[who].send(
                        action=action,
                        last_seen_sequence=sequence,
                        client_action_id=number,
                        table_ticket=tickets[other],  # ignored: the stream's seat is the first ticket's
                    )
                    refused = (await seats[who].next("rejected")).rejected
                    where = f"Play action[{label}, seat {who}, sequence {sequence}]"
                    if refused.code not in (ILLEGAL, STALE) or refused.client_action_id != number:
                        code = table_pb2.RejectionCode.Name(refused.code)
                        problems.append(f"{where}: {code} #{refused.client_action_id}")
                    problem = message_problem(refused.reason)
                    if problem:
                        problems.append(f"{where}: {problem}")
        assert not problems, "\n".join(problems)
        for who in "ab":  # keep every tile: the hand moves on to play
            legal = exchange[who].legal_actions
            seats[who].send(action=legal.default_action, last_seen_sequence=legal.sequence)
        actor, view = await first_to_decide(seats, play_pb2.HAND_PHASE_PLAY)
        idle = "b" if actor == "a" else "a"
        decided_at = view.legal_actions.sequence
        # the idle seat sending the actor's action is STALE: the proto Action has no seat (docs/protocol.md)
        seats[idle].send(
            action=view.legal_actions.default_action, last_seen_sequence=decided_at, client_action_id=7
        )
        refused = (await seats[idle].next("rejected")).rejected
        assert (refused.code, refused.client_action_id) == (STALE, 7), refused
        assert message_problem(refused.reason) is None, refused.reason
        status = await stub.GetTableStatus(
            table_pb2.GetTableStatusRequest(table_id=table_id), metadata=caller.tokens["a"], timeout=WITHIN
        )
        assert status.status == table_pb2.TABLE_STATUS_PLAYING
        for seat in status.state.seats:  # the public status shows no one's concealed tiles
            assert seat.revealed_concealed == "", seat
        assert not any(text in str(status) for text in SERVER_ONLY), status
        # the table carries on: the actor's default action is applied and both seats see what follows
        before = len(seats[actor].received)
        seats[actor].send(action=view.legal_actions.default_action, last_seen_sequence=decided_at)
        for who in "ab":
            assert (await seats[who].next("event")).event.sequence > decided_at
        assert not any(r.HasField("rejected") for r in seats[actor].received[before:])
        for who in "ab":  # the opponent's concealed tiles never show while the hand is played
            for response in seats[who].received:
                view_seats = response.view.table.seats
                if response.HasField("view") and len(view_seats) == 2:
                    opponent = view_seats[0] if response.view.seat == SECOND else view_seats[1]
                    assert opponent.revealed_concealed == ""
        await caller.assert_serving()
    finally:
        for stream in seats.values():
            await stream.close()


async def seats_at(caller: Caller, issue: Any, table_id: str) -> dict[str, SeatStream]:
    """Both seats of a newly opened table on their Play streams."""
    caller.tokens.update(
        a=issue(f"{table_id}-a"), b=issue(f"{table_id}-b"), service=issue("mm", Role.SERVICE)
    )
    tickets = await open_sweep_table(caller, table_id)
    return {
        who: SeatStream(caller.channel, caller.tokens[who], table_pb2.PlayRequest(table_ticket=tickets[who]))
        for who in "ab"
    }


async def test_play_reads_on_past_a_message_it_cannot_take(table_server: Caller, issue: Any) -> None:
    """Bytes that are no PlayRequest, or an action whose text holds a NUL, in the middle of a stream:
    each is answered ActionRejected (ILLEGAL, a readable reason, the seat's view) and the stream reads
    on, so the seat's next legal action is applied at once (it used to stop reading, leaving the seat
    "connected" with nobody listening until the timeout played its turn)."""
    seats = await seats_at(table_server, issue, "t-reads-on")
    try:
        exchange = {who: await seats[who].decision(play_pb2.HAND_PHASE_EXCHANGE) for who in "ab"}
        seats["a"].send_raw(b"\xff\xff\xff\xff\x0f")
        refused = (await seats["a"].next("rejected")).rejected
        assert refused.code == ILLEGAL and "not a valid protobuf message" in refused.reason, refused
        assert message_problem(refused.reason) is None, refused.reason
        assert refused.view.legal_actions.actions  # the seat is shown what it may still do
        seats["a"].send(action={"discard": {"tile": "5m\x00"}}, client_action_id=41)
        refused = (await seats["a"].next("rejected")).rejected
        assert (refused.code, refused.client_action_id) == (ILLEGAL, 41), refused
        assert "action.discard.tile" in refused.reason and "U+0000" in refused.reason, refused.reason
        for who in "ab":
            legal = exchange[who].legal_actions
            seats[who].send(action=legal.default_action, last_seen_sequence=legal.sequence)
        async with asyncio.timeout(WITHIN):  # well before any decision timer: the actions were read
            await first_to_decide(seats, play_pb2.HAND_PHASE_PLAY)
        assert not [r for r in seats["a"].received if r.HasField("rejected")][2:]
    finally:
        for stream in seats.values():
            await stream.close()


REPLY_LIMIT = 16


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WITHIN):
        while True:
            if condition():
                return
            await asyncio.sleep(0.02)


@pytest_asyncio.fixture
async def strict_table_server(
    start_service: Any, service_env: dict[str, str], client_tls: ClientTls
) -> AsyncIterator[Any]:
    """A table server that lets a seat leave at most REPLY_LIMIT replies unread."""
    env = {**service_env, "SEAT_REPLY_LIMIT": str(REPLY_LIMIT), "SERVER_ID": "t-strict"}
    server = TableServer()
    await start_service(server.spec, TableConfig.from_env(env))
    async with client_tls.channel(server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        yield Caller(channel, stub, TABLE_NAME, {}, server.address), server


async def test_a_seat_that_sends_and_never_reads_is_cut_off(
    strict_table_server: Any, issue: Any, client_tls: ClientTls
) -> None:
    """A client sends 3,000 refused actions on its Play stream and reads nothing: the server holds at
    most SEAT_REPLY_LIMIT replies for it, then closes the stream RESOURCE_EXHAUSTED and lets the seat
    go (T10 holds it for a reconnect, which resumes)."""
    caller, server = strict_table_server
    table_id = "t-never-reads"
    caller.tokens.update(a=issue(f"{table_id}-a"), service=issue("mm", Role.SERVICE))
    tickets = await open_sweep_table(caller, table_id)
    table = server.host.find(table_id)
    first = table_pb2.PlayRequest(table_ticket=tickets["a"])
    bad = [
        table_pb2.PlayRequest(action={"discard": {"tile": "?"}}, client_action_id=n) for n in range(1, 3001)
    ]
    # The blocking client: it sends from its own thread and, unlike grpc.aio's, reports the status the
    # server sent even when its writes were cut off (grpc/grpc#36066).
    # Without BDP probing the connection's window stays at 64 KiB: what the server can push to a client
    # that reads nothing is that, whatever the machine.
    with client_tls.blocking_channel(caller.address, options=[("grpc.http2.bdp_probe", 0)]) as channel:
        responses = table_pb2_grpc.TableServiceStub(channel).Play(
            iter([first, *bad]), metadata=caller.tokens["a"], timeout=3 * WITHIN
        )
        seat = table.state.seats[0]
        await until(lambda: seat.ever_attached and seat.session is None)  # let go, though never read

        def read_all() -> tuple[int, grpc.RpcError | None]:
            count = 0
            try:
                for _ in responses:
                    count += 1
            except grpc.RpcError as err:
                return count, err
            return count, None

        count, error = await asyncio.to_thread(read_all)
    assert error is not None, f"the stream ended OK after {count} responses"
    assert error.code() == EXHAUSTED, (error.code(), error.details())
    assert "not read" in error.details() and message_problem(error.details()) is None, error.details()
    # what was written before the cut: the view, what fit in the connection's window and the last
    # REPLY_LIMIT replies, not one response per request
    assert count < 1000, count
    # the seat comes back and resumes: the stream is not a lost seat
    resumed = SeatStream(caller.channel, caller.tokens["a"], table_pb2.PlayRequest(table_ticket=tickets["a"]))
    try:
        assert (await resumed.next("event")).event.sequence == 1
    finally:
        await resumed.close()
    await caller.assert_serving()


async def test_table_fuzzed_open_requests_get_domain_answers(table_server: Caller, issue: Any) -> None:
    caller = table_server
    caller.tokens.update(service=issue("matchmaking", Role.SERVICE), a=issue("p-a"))
    ids = st.one_of(TEXT, st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True))
    players = fields(
        rules_pb2.SeatPlayer, seat=st.integers(-1, 3), player_id=ids, carry=st.integers(INT64_MIN, INT64_MAX)
    )
    rules = fields(
        rules_pb2.RoomRules,
        profile=st.integers(-1, 3),
        fan_rate=st.integers(INT64_MIN, INT64_MAX),
        minimum_fan=st.integers(0, UINT32_MAX),
        revealed_bonus_tiles=st.integers(0, UINT32_MAX),
        triplet_offer_probability=st.floats(allow_nan=True),
        decision_millis=st.integers(0, UINT32_MAX),
    )
    requests = fields(
        table_pb2.OpenTableRequest,
        table_id=ids,
        pairing_id=ids,
        room_id=ids,
        rules=rules,
        players=st.lists(players, max_size=3),
        negotiated=st.integers(0, UINT32_MAX),
    )
    cases = [case("fuzz", "OpenTable", r, "service", OK, INVALID) for r in collected(requests, 40)]
    cases += [
        case("fuzz", "GetTableStatus", table_pb2.GetTableStatusRequest(table_id=t), "a", INVALID, MISSING, OK)
        for t in collected(ids, 20)
    ]
    problems = await caller.sweep(cases)
    assert not problems, "\n".join(problems)
    await caller.assert_serving()
    opened = await caller.stub.OpenTable(
        open_request("t-after-fuzz"), metadata=caller.tokens["service"], timeout=WITHIN
    )
    assert len(opened.tickets) == 2


# A client process of its own (its event loop, its core): 300 Play streams, 30 at a time, with no token or
# a forged one, each sending PlayRequest{table_ticket: "x"} and then half-closing or keeping its stream
# open; it prints what each call ended with.
UNAUTHENTICATED_PLAYS = """
import asyncio, json, sys
import grpc, grpc.aio
from pathlib import Path
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import table_pb2, table_pb2_grpc

async def main():
    async with ClientTls(ca_file=Path(sys.argv[2])).channel(sys.argv[1]) as channel:
        stub, gate = table_pb2_grpc.TableServiceStub(channel), asyncio.Semaphore(30)
        first = table_pb2.PlayRequest(table_ticket="x")

        async def open_stream():
            yield first
            await asyncio.sleep(30)

        async def one(n):
            async with gate:
                metadata = (("authorization", "Bearer not.a.token"),) if n % 2 else None
                requests = iter([first]) if n % 4 < 2 else open_stream()
                call = stub.Play(requests, metadata=metadata, timeout=10)
                try:
                    await call.read()
                except grpc.aio.AioRpcError as err:
                    return [err.code().name, err.details()]
                call.cancel()
                return ["OK", ""]

        print(json.dumps(await asyncio.gather(*(one(n) for n in range(300)))))

asyncio.run(main())
"""


async def test_play_without_a_valid_token_is_unauthenticated_under_concurrency(
    table_server: Caller, client_tls: ClientTls
) -> None:
    """Every one of 300 concurrent Play streams without a valid token is UNAUTHENTICATED with the
    service's message, as the server logs it (not INTERNAL "Internal error from Core": a refusal sent
    before the client's first message arrived broke the client's write)."""
    for _ in range(2):  # the race was lost by 0 to 130 calls of a client's 300: two clients
        client = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            UNAUTHENTICATED_PLAYS,
            table_server.address,
            str(client_tls.ca_file),
            stdout=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(60):
            out, _ = await client.communicate()
        assert client.returncode == 0
        outcomes = [tuple(outcome) for outcome in json.loads(out)]
        wrong = Counter(outcome for outcome in outcomes if outcome[0] != "UNAUTHENTICATED")
        assert not wrong, f"{sum(wrong.values())} of 300 not UNAUTHENTICATED: {wrong.most_common(3)}"
        assert all("session token" in details for _, details in outcomes), Counter(outcomes)
    await table_server.assert_serving()


async def test_text_with_control_characters_or_too_long_is_refused_at_every_services_edge(
    matchmaking: Any, scoring: Caller, table_server: Caller, issue: Any, database_url: str
) -> None:
    """A NUL (Postgres refuses it: AdminGrant answered INTERNAL), another control character or a huge
    string in any field of any request is INVALID_ARGUMENT naming the field, before any handler runs."""
    caller, wallet = matchmaking
    player, me = await login(wallet, "小明")
    admin, service = issue("ops", Role.ADMIN), issue("mm", Role.SERVICE)
    W, M, T, S = wallet_pb2, matchmaking_pb2, table_pb2, scoring_pb2
    grant = {"player_id": player, "amount": 10, "reason": "bonus", "request_id": "g-1"}
    players = [rules_pb2.SeatPlayer(seat=s, player_id=p, carry=10) for s, p in ((FIRST, "x"), (SECOND, "y"))]
    players[1].display_name = "b\x1b[31m"
    calls = [
        (wallet.AdminGrant, W.AdminGrantRequest(**{**grant, "reason": "bonus\x00"}), admin, "reason"),
        (wallet.AdminGrant, W.AdminGrantRequest(**{**grant, "request_id": "g\x00"}), admin, "request_id"),
        (wallet.GuestLogin, W.GuestLoginRequest(display_name="a\nb"), None, "display_name"),
        (wallet.ListHistory, W.ListHistoryRequest(page_token="9" * 2000), me, "page_token"),
        (caller.stub.CancelQueue, M.CancelQueueRequest(queue_ticket_id="q\x7f"), me, "queue_ticket_id"),
        (caller.stub.LeavePairing, M.LeavePairingRequest(pairing_id="p" * 1025), me, "pairing_id"),
        (
            scoring.stub.EvaluateHand,
            S.EvaluateHandRequest(hand=duel_hand(concealed="234567m234p678s\x005s")),
            scoring.tokens["me"],
            "hand.concealed",
        ),
        (
            table_server.stub.OpenTable,
            open_request("t-text", players=players),
            service,
            "players[1].display_name",
        ),
        (table_server.stub.GetTableStatus, T.GetTableStatusRequest(table_id="t\x00"), me, "table_id"),
    ]
    problems = []
    for rpc, request, metadata, field in calls:
        try:
            await rpc(request, metadata=metadata, timeout=WITHIN)
            problems.append(f"{field}: accepted")
        except grpc.aio.AioRpcError as err:
            details = err.details() or ""
            if err.code() is not INVALID or f"the field {field} " not in details or message_problem(details):
                problems.append(f"{field}: {err.code().name} {details!r}")
    table_server.tokens["a"] = me
    code, details = await refused_play(table_server, "a", T.PlayRequest(table_ticket="v1.t\x00.0.p.x"))
    if code is not INVALID or "the field table_ticket " not in (details or ""):
        problems.append(f"Play table_ticket: {code.name} {details!r}")
    assert not problems, "\n".join(problems)
    # ordinary text still goes through, and nothing was granted by the refused calls
    granted = await wallet.AdminGrant(W.AdminGrantRequest(**grant), metadata=admin, timeout=WITHIN)
    assert granted.balance == 1010
