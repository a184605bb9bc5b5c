"""Replays for the page's tests: real ones built from real table logs, and a short one by hand."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from duelmahjong.engine import fairness
from duelmahjong.replay.build import build_replay
from duelmahjong.v1 import archive_pb2, play_pb2, rules_pb2, server_state_pb2, tiles_pb2
from services.scoring import codec as scoring_codec
from tests.unit.table_logs import RecordedMatch, played


@dataclass(frozen=True)
class RealHand:
    replay: archive_pb2.Replay
    records: list[server_state_pb2.TableLogRecord]


@functools.cache
def won_hand_with_melds(profile: str, seed: int, hands: int = 3) -> RealHand:
    """The first hand won with a meld of a match a real ``LiveTable`` played (tests/unit/table_logs.py),
    as build_replay makes it from the table's log. The test table's wallet never answers, so the
    settlement is scoring's for the hand (as scored: the transfer before the carry caps)."""
    match = _match(profile, seed, hands, 0.0)
    scored = next(
        s for s in match.scored() if s.claim.description is not None and s.claim.description.get("melds")
    )
    records = match.records()
    replay = build_replay(records, scored.claim.hand_id)
    replay.result.settlement.CopyFrom(scoring_codec.settlement_message(scored.settlement))
    return RealHand(replay, records)


_D = play_pb2.Discard
_DISCARD_1P = play_pb2.DiscardAction(tile="1p")
_TRANSFER = rules_pb2.POSTING_REASON_HAND_TRANSFER
_SELF_DRAW = rules_pb2.PATTERN_ID_CONCEALED_SELF_DRAW
_PONG = tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_PONG, tiles="111p", claimed_tile="1p")


def _state(
    first: tuple[str, str, list[tiles_pb2.Meld], list[play_pb2.Discard]],
    second: tuple[str, str, list[tiles_pb2.Meld], list[play_pb2.Discard]],
    turn: int,
    wall: int,
    phase: int = play_pb2.HAND_PHASE_PLAY,
) -> archive_pb2.ReplayState:
    seats = [
        archive_pb2.ReplaySeat(seat=seat, concealed=c, drawn_tile=d, melds=m, discards=r)
        for seat, (c, d, m, r) in ((rules_pb2.SEAT_FIRST, first), (rules_pb2.SEAT_SECOND, second))
    ]
    return archive_pb2.ReplayState(
        seats=seats, wall_remaining=wall, pool_remaining=65, turn=turn, phase=phase
    )


@functools.cache
def _match(profile: str, seed: int, hands: int, offers: float) -> RecordedMatch:
    return played(profile, seed, hands, offers=offers)


def every_hand(profile: str, seed: int, hands: int = 3, *, offers: float = 0.0) -> list[archive_pb2.Replay]:
    """Every hand a real ``LiveTable`` finished in a match, as build_replay makes it."""
    match = _match(profile, seed, hands, offers)
    return [build_replay(match.records(), ended.hand_id) for ended in match.quiet.ended]


def hand_made_replay() -> archive_pb2.Replay:
    """A short duel hand written out by hand: a discard, a pong, a 报听 discard, a draw and a self-drawn
    win, with its evaluation and settlement."""
    seed, salt = 123456789, bytes(range(16))
    replay = archive_pb2.Replay(
        hand_id="t1-h1",
        table_id="t1",
        room_id="duel-bronze",
        hand_number=1,
        rules=rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=100, fee=10),
        players=[
            play_pb2.TablePlayer(seat=rules_pb2.SEAT_FIRST, player_id="p1", display_name="Ana"),
            play_pb2.TablePlayer(seat=rules_pb2.SEAT_SECOND, player_id="p2", display_name="Bo 小明"),
        ],
        dealer=rules_pb2.SEAT_FIRST,
        round_wind=rules_pb2.WIND_EAST,
        multipliers=rules_pb2.Multipliers(negotiated=2, progressive=1, fan_rate=100),
        fairness=archive_pb2.FairnessProof(
            commitment=fairness.commitment(seed, salt), seed=fairness.seed_bytes(seed), salt=salt
        ),
        deal=archive_pb2.RevealedDeal(wall=["1m"] * 43, revealed_bonus_tiles="5z7z"),
    )
    first, second = rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND
    replay.initial.CopyFrom(
        _state(("123456789m1p2s55z", "7z", [], []), ("1199p234s567s11z6z", "", [], []), 1, 43)
    )
    claimed = [_D(tile="1p", claimed=True)]
    ready = [_D(tile="6z", declared_ready=True)]
    won = play_pb2.HandWon(
        seat=first,
        win_tile="5z",
        self_drawn=True,
        description=rules_pb2.HandDescription(concealed="123456789m2s55z7z"),
        evaluation=rules_pb2.Evaluation(
            patterns=[
                rules_pb2.PatternScore(id=rules_pb2.PATTERN_ID_BASIC_WIN, name_zh="推倒胡", fan=1),
                rules_pb2.PatternScore(id=_SELF_DRAW, name_zh="门清自摸", fan=2),
            ],
            total_fan=3,
        ),
    )
    steps = [
        (
            archive_pb2.ReplayDecision(
                seat=first, action=play_pb2.Action(discard=play_pb2.DiscardAction(tile="1p"))
            ),
            _state(("123456789m2s55z7z", "", [], [_D(tile="1p")]), ("1199p234s567s11z6z", "", [], []), 2, 43),
        ),
        (
            archive_pb2.ReplayDecision(seat=second, action=play_pb2.Action(pong=play_pb2.PongAction())),
            _state(("123456789m2s55z7z", "", [], claimed), ("99p234s567s11z6z", "", [_PONG], []), 2, 43),
        ),
        (
            archive_pb2.ReplayEvent(
                sequence=9,
                first_seat=play_pb2.SeatEvent(
                    tile_discarded=play_pb2.TileDiscarded(seat=second, tile="6z", declared_ready=True)
                ),
            ),
            _state(("123456789m2s55z7z", "", [], claimed), ("99p234s567s11z", "", [_PONG], ready), 1, 43),
        ),
        (
            archive_pb2.ReplayEvent(
                sequence=10,
                first_seat=play_pb2.SeatEvent(tile_drawn=play_pb2.TileDrawn(seat=first, tile="5z", source=1)),
                second_seat=play_pb2.SeatEvent(tile_drawn=play_pb2.TileDrawn(seat=first, source=1)),
            ),
            _state(("123456789m2s55z7z", "5z", [], claimed), ("99p234s567s11z", "", [_PONG], ready), 1, 42),
        ),
        (
            archive_pb2.ReplayEvent(
                sequence=11, first_seat=play_pb2.SeatEvent(won=won), second_seat=play_pb2.SeatEvent(won=won)
            ),
            _state(
                ("123456789m2s55z7z", "5z", [], claimed),
                ("99p234s567s11z", "", [_PONG], ready),
                1,
                42,
                play_pb2.HAND_PHASE_ENDED,
            ),
        ),
    ]
    for index, (kind, state) in enumerate(steps, start=1):
        step = replay.steps.add(index=index, state=state)
        (step.decision if isinstance(kind, archive_pb2.ReplayDecision) else step.event).CopyFrom(kind)
    fee = rules_pb2.POSTING_REASON_FEE
    replay.result.CopyFrom(
        archive_pb2.ArchivedHand(
            hand_id="t1-h1",
            outcome=archive_pb2.ARCHIVED_OUTCOME_WIN,
            winner=first,
            evaluation=won.evaluation,
            settlement=rules_pb2.Settlement(
                total_fan=3,
                multipliers=replay.multipliers,
                fan_amount=600,
                transfer=rules_pb2.Transfer(from_player_id="p2", to_player_id="p1", amount=600),
                fee=10,
                postings=[
                    rules_pb2.Posting(account="player:p1", amount=-10, reason=fee),
                    rules_pb2.Posting(account="player:p2", amount=-10, reason=fee),
                    rules_pb2.Posting(account="house:fees", amount=20, reason=fee),
                    rules_pb2.Posting(account="player:p1", amount=600, reason=_TRANSFER),
                    rules_pb2.Posting(account="player:p2", amount=-600, reason=_TRANSFER),
                ],
            ),
            settled=True,
            moved=[
                archive_pb2.SeatMovement(seat=first, player_id="p1", amount=590),
                archive_pb2.SeatMovement(seat=second, player_id="p2", amount=-610),
            ],
        )
    )
    return replay
