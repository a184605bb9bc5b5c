"""The scoring service over real gRPC: EvaluateHand, GetCatalogue and ScoreHand (issue 6).

Hands are written in notation; expected figures come from the seeds (002: 1番=10威望, 5×, 3 fan → 150;
000: B=10, both start-doubled, one 胡加倍, a ×2 task → 84) and docs/decisions.md §6.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.catalogue_erren import ERREN
from duelmahjong.v1 import rules_pb2, scoring_pb2, scoring_pb2_grpc, tiles_pb2
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

FIRST, SECOND = rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND


@pytest_asyncio.fixture
async def scoring(
    start_service: Any,
    service_env: dict[str, str],
    scoring_database_url: str,
    issue: Callable[..., Any],
    client_tls: ClientTls,
) -> AsyncIterator[tuple[scoring_pb2_grpc.ScoringServiceStub, Any]]:
    env = {**service_env, "SCORING_DATABASE_URL": scoring_database_url}
    runtime = await start_service(SCORING, ScoringConfig.from_env(env))
    async with client_tls.channel(runtime.server.address) as channel:
        yield scoring_pb2_grpc.ScoringServiceStub(channel), issue("p-hints")


def duel_hand(concealed: str, win_tile: str, **fields: Any) -> rules_pb2.HandDescription:
    return rules_pb2.HandDescription(
        profile=rules_pb2.PROFILE_DUEL, concealed=concealed, win_tile=win_tile, **fields
    )


def names(evaluation: rules_pb2.Evaluation) -> list[tuple[str, int]]:
    return [(rules_pb2.PatternId.Name(p.id), p.fan) for p in evaluation.patterns]


async def test_evaluate_hand_gives_the_breakdown(scoring: Any) -> None:
    stub, token = scoring
    hand = duel_hand("234567m234p678s5s", "5s", self_drawn=True)
    reply = await stub.EvaluateHand(scoring_pb2.EvaluateHandRequest(hand=hand), metadata=token, timeout=10)
    assert names(reply.evaluation) == [
        ("PATTERN_ID_CONCEALED_HAND", 1),
        ("PATTERN_ID_ALL_SIMPLES", 1),
        ("PATTERN_ID_CONCEALED_SELF_DRAW", 1),
    ]
    assert reply.evaluation.patterns[0].name_zh == "门清"
    assert (reply.evaluation.total_fan, reply.evaluation.meets_minimum) == (3, True)


async def test_evaluate_hand_reads_melds_and_context(scoring: Any) -> None:
    stub, token = scoring
    # Nine gates (D12: the pure nine-sided wait) is a limit hand: listed alone with its tier (D9).
    nine_gates = duel_hand("1112345678999m", "5m")
    reply = await stub.EvaluateHand(scoring_pb2.EvaluateHandRequest(hand=nine_gates), metadata=token)
    assert (names(reply.evaluation), reply.evaluation.limit) == ([("PATTERN_ID_NINE_GATES", 64)], True)
    melded = duel_hand(
        "1234567899m",
        "9m",
        melds=[tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_PONG, tiles="111z")],
        context=rules_pb2.HandContext(revealed_bonus_tiles="9m1z"),
    )
    reply = await stub.EvaluateHand(scoring_pb2.EvaluateHandRequest(hand=melded), metadata=token)
    # D1: three 9m and the three East of the pong match a revealed tile, 1 fan each.
    assert names(reply.evaluation) == [
        ("PATTERN_ID_BONUS_TILES", 6),
        ("PATTERN_ID_HALF_FLUSH", 3),
        ("PATTERN_ID_PURE_STRAIGHT", 2),
    ]


async def test_evaluate_hand_applies_the_minimum_asked_for_e16(scoring: Any) -> None:
    stub, token = scoring
    # 15 fan, of which 无花牌 (4) does not count toward 起和 (E16): 11 count.
    hand = rules_pb2.HandDescription(
        profile=rules_pb2.PROFILE_ERREN, concealed="123m345m678m999m1z", win_tile="1z"
    )
    for minimum, reached in ((0, True), (11, True), (12, False)):
        request = scoring_pb2.EvaluateHandRequest(hand=hand, minimum_fan=minimum)
        reply = await stub.EvaluateHand(request, metadata=token)
        assert (reply.evaluation.total_fan, reply.evaluation.meets_minimum) == (15, reached)


@pytest.mark.parametrize(
    ("hand", "says"),
    [
        (duel_hand("123m456p789s1z23m", "1m"), "13 tiles"),
        (duel_hand("123m456p789s1234z", "9m"), "not a winning hand"),
        (duel_hand("123m456p789s11z2x", "2z"), "unexpected character 'x'"),
        (rules_pb2.HandDescription(concealed="123m456p789s1122z", win_tile="1z"), "profile"),
        (
            rules_pb2.HandDescription(
                profile=rules_pb2.PROFILE_ERREN, concealed="123p456p789p1122z", win_tile="1z"
            ),
            "erren",
        ),
    ],
)
async def test_an_invalid_hand_is_invalid_argument_with_the_reason(
    scoring: Any, hand: Any, says: str
) -> None:
    stub, token = scoring
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.EvaluateHand(scoring_pb2.EvaluateHandRequest(hand=hand), metadata=token, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in (refused.value.details() or "")


@pytest.mark.parametrize(
    ("profile", "catalogue"), [(rules_pb2.PROFILE_DUEL, DUEL), (rules_pb2.PROFILE_ERREN, ERREN)]
)
async def test_get_catalogue_lists_every_pattern_of_the_profile(
    scoring: Any, profile: int, catalogue: Any
) -> None:
    stub, token = scoring
    reply = await stub.GetCatalogue(scoring_pb2.GetCatalogueRequest(profile=profile), metadata=token)
    assert reply.profile == profile
    rows = {rules_pb2.PatternId.Name(e.id).removeprefix("PATTERN_ID_").lower(): e for e in reply.entries}
    assert list(rows) == list(catalogue.ids)
    assert rows["full_flush"].name_zh == "清一色"
    if profile == rules_pb2.PROFILE_ERREN:  # E6: seven pairs excludes 门前清, 不求人, 单钓
        excluded = set(rows["seven_pairs"].excludes)
        assert {rules_pb2.PATTERN_ID_CONCEALED_HAND, rules_pb2.PATTERN_ID_SINGLE_WAIT} <= excluded
    else:  # D3: 清一色 replaces 混一色; D9: limit hands listed with their tier
        assert rules_pb2.PATTERN_ID_HALF_FLUSH in rows["full_flush"].excludes
        assert (rows["thirteen_orphans"].limit, rows["thirteen_orphans"].fan) in (
            (True, 13),
            (True, 32),
            (True, 64),
        )
        assert not rows["basic_win"].limit
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.GetCatalogue(scoring_pb2.GetCatalogueRequest(), metadata=token)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def result(**fields: Any) -> rules_pb2.HandResult:
    base: dict[str, Any] = {
        "table_id": "t-api",
        "hand_id": "t-api-h1",
        "hand_number": 1,
        "rules": rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10),
        "players": [
            rules_pb2.SeatPlayer(seat=FIRST, player_id="alice", carry=1000),
            rules_pb2.SeatPlayer(seat=SECOND, player_id="bob", carry=1000),
        ],
        "dealer": FIRST,
        "outcome": rules_pb2.HAND_OUTCOME_WIN,
        "winner": FIRST,
        "description": duel_hand("234567m234p678s5s", "5s", self_drawn=True),
        "multipliers": rules_pb2.Multipliers(negotiated=5, progressive=1, fan_rate=10),
        "last_sequence": 1,
    }
    base.update(fields)
    return rules_pb2.HandResult(**base)


async def test_score_hand_follows_h1_with_the_seed_example(scoring: Any) -> None:
    stub, token = scoring
    reply = await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=result()), metadata=token)
    settlement = reply.settlement
    assert reply.evaluation.total_fan == 3
    # 002: 1番 = 10 威望, negotiated 5×, progressive 1×, 3 fan → 150.
    assert (settlement.fan_amount, settlement.transfer.amount, settlement.capped_by_carry) == (
        150,
        150,
        False,
    )
    assert (settlement.transfer.from_player_id, settlement.transfer.to_player_id) == ("bob", "alice")
    assert not settlement.postings  # as scored: what the ledger moves is the wallet's to say


async def test_score_hand_leaves_the_carry_caps_to_the_wallet_h1(scoring: Any) -> None:
    stub, token = scoring
    poor = [
        rules_pb2.SeatPlayer(seat=FIRST, player_id="alice", carry=1000),
        rules_pb2.SeatPlayer(seat=SECOND, player_id="bob", carry=120),
    ]
    multipliers = rules_pb2.Multipliers(negotiated=10, progressive=4, fan_rate=10)
    rules = rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10, fee=7)
    reply = await stub.ScoreHand(
        scoring_pb2.ScoreHandRequest(result=result(players=poor, multipliers=multipliers, rules=rules)),
        metadata=token,
    )
    # As scored: uncapped (3 fan × 10 × 4 × 10); the wallet caps by the carries it holds when it applies.
    assert (reply.settlement.fan_amount, reply.settlement.transfer.amount) == (1200, 1200)
    assert not reply.settlement.capped_by_carry
    assert reply.settlement.fee == 7


async def test_score_hand_doubles_erren_hands_h2(scoring: Any) -> None:
    stub, token = scoring
    hand = rules_pb2.HandDescription(
        profile=rules_pb2.PROFILE_ERREN, concealed="123m345m678m999m1z", win_tile="1z"
    )
    erren = result(
        rules=rules_pb2.RoomRules(profile=rules_pb2.PROFILE_ERREN, fan_rate=1),
        description=hand,
        multipliers=rules_pb2.Multipliers(negotiated=1, progressive=1, fan_rate=1),
        doubling=rules_pb2.DoublingChoices(start_doubled=[FIRST, SECOND], win_declines=1),
        task=rules_pb2.HandTask(kind=rules_pb2.TASK_KIND_KONG, multiplier=2, completed_by_winner=True),
    )
    reply = await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=erren), metadata=token)
    b = 15
    doubling = reply.settlement.doubling
    # H2: F = B·S + H + T with S = 2², H = (B + 2·1)·2¹, T = B·2.
    assert (doubling.base_fan, doubling.s, doubling.h, doubling.t) == (b, 4, (b + 2) * 2, b * 2)
    assert reply.settlement.total_fan == doubling.doubled_fan == b * 4 + (b + 2) * 2 + b * 2
    assert reply.settlement.transfer.amount == doubling.doubled_fan


async def test_score_hand_settles_escapes_h3_and_drawn_hands(scoring: Any) -> None:
    stub, token = scoring
    escape = result(
        outcome=rules_pb2.HAND_OUTCOME_ESCAPE,
        winner=rules_pb2.SEAT_UNSPECIFIED,
        escaper=SECOND,
        description=None,
        multipliers=rules_pb2.Multipliers(negotiated=2, progressive=2, fan_rate=10),
    )
    reply = await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=escape), metadata=token)
    # H3: duel's highest fan 64 × 2 × 2 × 10 = 2560, uncapped (bob's carry of 1000 is the wallet's cap).
    assert (reply.settlement.fan_amount, reply.settlement.transfer.amount) == (2560, 2560)
    assert reply.settlement.transfer.from_player_id == "bob"
    assert reply.settlement.fee == 0  # no fee for an escaped hand
    assert not reply.HasField("evaluation")
    drawn = result(outcome=rules_pb2.HAND_OUTCOME_DRAWN, winner=rules_pb2.SEAT_UNSPECIFIED, description=None)
    reply = await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=drawn), metadata=token)
    assert not reply.settlement.HasField("transfer") and not reply.settlement.postings


async def test_score_hand_refuses_a_result_that_breaks_the_contract(scoring: Any) -> None:
    stub, token = scoring
    for broken, says in (
        (result(winner=rules_pb2.SEAT_UNSPECIFIED), "winner"),
        (result(description=None), "description"),
        (result(players=result().players[:1]), "two players"),
        (result(multipliers=rules_pb2.Multipliers(negotiated=3, progressive=1, fan_rate=10)), "negotiated"),
        (result(doubling=rules_pb2.DoublingChoices(start_doubled=[FIRST, FIRST])), "twice"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=broken), metadata=token)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert says in (refused.value.details() or "")


def erren_escape(doubled: list[int], **fields: Any) -> rules_pb2.HandResult:
    return result(
        rules=rules_pb2.RoomRules(profile=rules_pb2.PROFILE_ERREN, fan_rate=10),
        outcome=rules_pb2.HAND_OUTCOME_ESCAPE,
        winner=rules_pb2.SEAT_UNSPECIFIED,
        escaper=FIRST,
        description=None,
        multipliers=rules_pb2.Multipliers(negotiated=1, progressive=1, fan_rate=10),
        doubling=rules_pb2.DoublingChoices(start_doubled=doubled),
        **fields,
    )


async def test_H3_an_erren_escape_costs_88_times_the_start_doubling_factor(scoring: Any) -> None:
    """H3, erren: the penalty is 88 × S × N with S = 2^(players who chose 开始加倍) (seed 000:
    该倍数为当局倍数), before the escaper's carry caps it (the wallet's)."""
    stub, token = scoring
    for doubled, s in (([], 1), ([SECOND], 2), ([FIRST, SECOND], 4)):
        reply = await stub.ScoreHand(
            scoring_pb2.ScoreHandRequest(result=erren_escape(doubled)), metadata=token
        )
        settlement = reply.settlement
        assert settlement.fan_amount == settlement.transfer.amount == 88 * s * 10, doubled
        assert (settlement.total_fan, settlement.doubling.base_fan, settlement.doubling.s) == (88 * s, 88, s)
        assert (settlement.transfer.from_player_id, settlement.transfer.to_player_id) == ("alice", "bob")


async def test_out_of_range_amounts_are_invalid_argument_never_internal(scoring: Any) -> None:
    """A fan rate whose product does not fit int64 (3 fan × 3074457345618258603) used to fail inside
    the encoder (INTERNAL); every amount the contract carries is bounded where it enters."""
    stub, token = scoring
    huge = rules_pb2.Multipliers(negotiated=1, progressive=1, fan_rate=3074457345618258603)
    for broken, says in (
        (result(multipliers=huge), "fan_rate"),
        (result(multipliers=rules_pb2.Multipliers(negotiated=1, progressive=1, fan_rate=-5)), "fan_rate"),
        (result(rules=rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10, fee=10**13)), "fee"),
        (result(rules=rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10, fee=-1)), "fee"),
        (
            result(
                players=[
                    rules_pb2.SeatPlayer(seat=FIRST, player_id="alice", carry=10**13),
                    rules_pb2.SeatPlayer(seat=SECOND, player_id="bob", carry=1000),
                ]
            ),
            "carry",
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=broken), metadata=token)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
        assert says in (refused.value.details() or "")
    # At the bounds every figure fits: the largest product is shown as 10^15, more than any carry.
    longest = rules_pb2.Multipliers(negotiated=10, progressive=2**31, fan_rate=1_000_000)
    reply = await stub.ScoreHand(
        scoring_pb2.ScoreHandRequest(result=result(multipliers=longest)), metadata=token
    )
    assert reply.settlement.fan_amount == reply.settlement.transfer.amount == 10**15
    escape = result(
        outcome=rules_pb2.HAND_OUTCOME_ESCAPE,
        winner=rules_pb2.SEAT_UNSPECIFIED,
        escaper=SECOND,
        description=None,
        multipliers=longest,
    )
    reply = await stub.ScoreHand(scoring_pb2.ScoreHandRequest(result=escape), metadata=token)
    assert reply.settlement.fan_amount == 10**15
