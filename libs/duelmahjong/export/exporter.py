"""``duel export``'s run: the archived hands of players who share, as JSON lines of decisions.

For every hand that a player who shares played (found from the players, :mod:`.archive`), oldest
first: the hand is played again through the engine (:mod:`.decisions`) and each decision of a seat
whose player shares is one record (:mod:`.records`) with the seat's reward (:mod:`.rewards`). A seat
whose player does not share contributes nothing: no record of its decisions, and its hidden tiles
appear nowhere, since a record holds only what the deciding seat saw.

Left out, and counted in the summary by why: hands of another profile or ended before ``since``
(not counted), hands not settled yet (their reward is not known: a later run exports them) and void
hands (nothing was scored), hands the engine cannot play again or the archive does not serve now
(each named in ``problems``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, TextIO

from duelmahjong.export.archive import ArchivedHandOf, HandUnavailable
from duelmahjong.export.decisions import HandNotReplayable, decisions
from duelmahjong.export.encoding import DecisionEncoder, view_encoder
from duelmahjong.export.records import json_line, record
from duelmahjong.export.rewards import seat_rewards
from duelmahjong.v1 import archive_pb2, rules_pb2
from duelmahjong.views import codec

NOT_SETTLED = "not settled yet"
VOID = "void"
NOT_REPLAYABLE = "not replayable"
NOT_SERVED = "not served by the archive"


class Source(Protocol):
    """What the exporter reads (:class:`~duelmahjong.export.archive.ExportSource`, or a test's)."""

    async def sharing(self) -> set[str]: ...

    async def hands_of(self, player_id: str) -> list[ArchivedHandOf]: ...

    async def replay(self, hand_id: str) -> archive_pb2.Replay: ...


@dataclass(frozen=True, slots=True)
class ExportOptions:
    since: datetime | None = None  # hands that ended at or after this (aware) time
    profile: str | None = None  # "duel" or "erren"; None = both
    limit: int | None = None  # at most this many hands written


@dataclass(slots=True)
class ExportSummary:
    players_sharing: int = 0
    hands: int = 0  # hands with at least one seat exported
    records: int = 0
    left_out: Counter[str] = field(default_factory=Counter)  # hands, by why
    problems: list[str] = field(default_factory=list)  # each hand not replayable, and why

    def text(self) -> str:
        left = ", ".join(f"{count} {why}" for why, count in sorted(self.left_out.items()))
        return (
            f"{self.records} decisions of {self.hands} hands exported; {self.players_sharing} players share"
            + (f"; hands left out: {left}" if left else "")
        )


def profile_name(profile: rules_pb2.Profile.ValueType) -> str:
    return rules_pb2.Profile.Name(profile).removeprefix("PROFILE_").lower()


def _wanted(found: ArchivedHandOf, options: ExportOptions) -> bool:
    if found.match.private_table:
        return False
    if options.profile is not None and profile_name(found.match.profile) != options.profile:
        return False
    return options.since is None or found.hand.ended_at.ToDatetime(tzinfo=UTC) >= options.since


async def export(
    source: Source,
    sink: TextIO,
    options: ExportOptions | None = None,
    encoder: DecisionEncoder = view_encoder,
) -> ExportSummary:
    """Write the records of every hand ``options`` select to ``sink``; what was written and left out."""
    options = options or ExportOptions()
    summary = ExportSummary()
    sharing = await source.sharing()
    summary.players_sharing = len(sharing)
    candidates: dict[str, ArchivedHandOf] = {}
    for player_id in sorted(sharing):
        for found in await source.hands_of(player_id):
            if _wanted(found, options):
                candidates.setdefault(found.hand.hand_id, found)
    ordered = sorted(candidates.values(), key=lambda f: (f.hand.ended_at.ToNanoseconds(), f.hand.hand_id))
    for found in ordered:
        if options.limit is not None and summary.hands >= options.limit:
            break
        hand = found.hand
        if hand.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID:
            summary.left_out[VOID] += 1
            continue
        if not hand.settled:
            summary.left_out[NOT_SETTLED] += 1
            continue
        try:
            replay = await source.replay(hand.hand_id)
        except HandUnavailable as err:
            summary.left_out[NOT_SERVED] += 1
            summary.problems.append(str(err))
            continue
        rewards = seat_rewards(replay)
        if rewards is None:
            summary.left_out[NOT_SETTLED] += 1
            continue
        seats = {codec.seat_index(p.seat) for p in replay.players if p.player_id in sharing}
        if not seats:  # found through a player who shares: not expected, but never write the others
            continue
        profile = profile_name(found.match.profile)
        try:
            # The whole hand first: a hand that fails halfway writes nothing.
            lines = [
                json_line(record(replay, profile, decision, rewards[decision.seat]))
                for decision in decisions(replay, seats, encoder)
            ]
        except HandNotReplayable as err:
            summary.left_out[NOT_REPLAYABLE] += 1
            summary.problems.append(str(err))
            continue
        sink.writelines(lines)
        summary.hands += 1
        summary.records += len(lines)
    return summary
