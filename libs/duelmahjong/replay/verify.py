"""Checking a ``Replay`` against its own seed: :func:`verify_replay` (docs/protocol.md "Provably fair
walls").

Nothing of the server is trusted but the rules engine, which anyone can run: the commitment is
recomputed from the revealed seed and salt; a fresh engine deals the hand again from the seed (the
wall, the unused pool, both dealt hands, the bonus tiles) and every decision of the replay is played
through it, so every draw from the wall or the pool, every 换牌 and 搓牌, every triplet offer and item
is derived again and both seats' copies of every event, and the table after every step, must be the
replay's. The first difference is the problem, named by its step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from google.protobuf import text_format
from google.protobuf.message import Message

from duelmahjong.engine import fairness
from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Drew, Event, HandEnded
from duelmahjong.engine.outcome import Termination
from duelmahjong.platform.errors import DomainError
from duelmahjong.replay.hand_log import ReplayError
from duelmahjong.replay.stepping import HandPlayer, hand_facts, table_before_hand
from duelmahjong.replay.tables import deal_items, revealed_deal
from duelmahjong.v1 import archive_pb2, rules_pb2
from duelmahjong.views import codec
from duelmahjong.views.seat_events import is_shown

_OUTCOMES = {
    Termination.WIN: archive_pb2.ARCHIVED_OUTCOME_WIN,
    Termination.DRAWN: archive_pb2.ARCHIVED_OUTCOME_DRAWN,
    Termination.ESCAPE: archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
}
_WIND_NUMBERS = {
    rules_pb2.WIND_EAST: 0,
    rules_pb2.WIND_SOUTH: 1,
    rules_pb2.WIND_WEST: 2,
    rules_pb2.WIND_NORTH: 3,
}


@dataclass(frozen=True, slots=True)
class Check:
    """One kind of check: what was checked, how many items, whether all of them held."""

    name: str
    count: int
    ok: bool


@dataclass(frozen=True, slots=True)
class Verification:
    """``ok`` when every check held; else ``problem`` says the first difference, at ``step`` (the
    replay's step index, 0 when it is no step's: the commitment or the deal)."""

    ok: bool
    checks: tuple[Check, ...]
    problem: str = ""
    step: int = 0


class _Failed(Exception):
    def __init__(self, problem: str, step: int = 0) -> None:
        super().__init__(problem)
        self.problem, self.step = (f"step {step}: {problem}" if step else problem), step


class _Verifier:
    def __init__(self, replay: archive_pb2.Replay) -> None:
        self.replay = replay
        self.checks: list[Check] = []
        self.first: _Failed | None = None

    def run(self, name: str, check: Callable[[], int]) -> None:
        try:
            count = check()
        except _Failed as failed:
            self.first = self.first or failed
            self.checks.append(Check(name, 0, False))
        else:
            self.checks.append(Check(name, count, True))

    def result(self) -> Verification:
        if self.first is None:
            return Verification(True, tuple(self.checks))
        return Verification(False, tuple(self.checks), self.first.problem, self.first.step)


def verify_replay(replay: archive_pb2.Replay) -> Verification:
    """Every check of the module doc, in order; the first problem found is the verification's."""
    verifier = _Verifier(replay)
    verifier.run("commitment", lambda: _commitment(replay))
    played: list[HandPlayer] = []
    verifier.run("steps", lambda: _steps(replay, played))
    # What the engine made up to a difference in the steps still checks the deal; the result only a
    # hand played to its end.
    steps_ok = verifier.checks[-1].ok
    if played and played[0].initial is not None:
        player = played[0]
        verifier.run("deal", lambda: _deal(replay, player))
        verifier.run("initial", lambda: _initial(replay, player))
        if steps_ok:
            verifier.run("result", lambda: _result(replay, player))
    return verifier.result()


def _seed(replay: archive_pb2.Replay) -> int:
    proof = replay.fairness
    if len(proof.seed) != fairness.SEED_BYTES:
        raise _Failed(f"the seed is {len(proof.seed)} bytes, not {fairness.SEED_BYTES}")
    return int.from_bytes(proof.seed, "big")


def _commitment(replay: archive_pb2.Replay) -> int:
    proof = replay.fairness
    seed = _seed(replay)
    if not proof.commitment:
        raise _Failed("the hand carries no commitment: it was dealt without a salt, nothing proves its wall")
    if len(proof.salt) != fairness.SALT_BYTES:
        raise _Failed(f"the salt is {len(proof.salt)} bytes, not {fairness.SALT_BYTES}")
    if fairness.commitment(seed, proof.salt) != proof.commitment:
        raise _Failed(
            "the commitment both seats received is not SHA-256 of the label, the revealed seed and salt", 1
        )
    received = 0
    for step in replay.steps:
        for copy in (step.event.first_seat, step.event.second_seat):
            if copy.HasField("hand_started"):
                if copy.hand_started.wall_commitment != proof.commitment:
                    raise _Failed(
                        "the commitment a seat received before the deal is not the replay's", step.index
                    )
                received += 1
    if received != 2:
        raise _Failed(f"{received} seat copies of hand_started carry the commitment, not 2", 1)
    return 1 + received


def _steps(replay: archive_pb2.Replay, played: list[HandPlayer]) -> int:
    """Deal from the seed, play every decision, and compare every step made with the replay's."""
    try:
        settings = codec.room_settings(replay.rules, replay.multipliers.negotiated)
    except DomainError as err:
        raise _Failed(f"the replay's rules are not a room's: {err}") from None
    if len(replay.players) != 2:
        raise _Failed(f"the replay names {len(replay.players)} players, not 2")
    players = [
        rules_pb2.SeatPlayer(seat=p.seat, player_id=p.player_id, display_name=p.display_name)
        for p in replay.players
    ]
    table = table_before_hand(
        settings, replay.hand_number, codec.seat_index(replay.dealer), _WIND_NUMBERS.get(replay.round_wind, 0)
    )
    player = HandPlayer(
        table,
        hand_facts(replay.table_id, replay.hand_id, players, replay.rules, replay.multipliers.negotiated),
    )
    played.append(player)
    counts, grand_shift = deal_items(replay.deal)
    steps = list(replay.steps)
    position = 0
    try:
        position = _play(
            player, player.deal(_seed(replay), replay.fairness.salt, counts, grand_shift), steps, position
        )
        while position < len(steps):
            step = steps[position]
            if not step.HasField("decision"):
                raise _Failed("the replay shows an event no decision made", step.index)
            decision = step.decision
            seat = codec.seat_index(decision.seat)
            try:
                action = codec.decode_action(decision.action, seat, player.table.legal_actions(seat))
            except (DomainError, EngineError, ValueError) as err:
                raise _Failed(
                    f"the decision is not one the seat could take there: {err}", step.index
                ) from None
            player.decide(decision.seat, decision.action, decision.origin)
            _same(steps[position], player.steps[position], "the decision")
            position = _play(player, player.apply(action), steps, position + 1)
    except ReplayError as err:  # the engine refused the decision (its text names the step already)
        said = str(err)
        said = said.split(": ", 1)[1] if said.startswith("step ") else said
        raise _Failed(said, len(player.steps)) from None
    if len(player.steps) != len(steps):
        raise _Failed(
            f"the engine makes {len(player.steps)} steps where the replay has {len(steps)}", len(steps)
        )
    return len(steps)


def _play(
    player: HandPlayer, events: Sequence[Event], steps: list[archive_pb2.ReplayStep], position: int
) -> int:
    """Show the engine's events of one decision (or the deal) with the sequences and times of the
    replay's event steps at ``position``; compare the steps made; the position after them."""
    shown = []
    over = player.over
    for offset, event in enumerate(events):
        at = position + offset
        replayed = steps[at].event if at < len(steps) and steps[at].HasField("event") else None
        if over:  # the pairing's own end, after the hand's: no step
            shown.append((0, 0))
            continue
        over = isinstance(event, HandEnded)
        if replayed is None:
            raise _Failed(
                f"the seed and the decisions make a {event.kind!r} event the replay does not show", at + 1
            )
        sequence = replayed.sequence
        if bool(sequence) != is_shown(event):
            raise _Failed(
                f"the {event.kind!r} event is {'not ' if sequence else ''}one both seats are shown", at + 1
            )
        shown.append((sequence, replayed.occurred_at.ToNanoseconds()))
    made = len(player.steps)
    player.show(events, shown)
    for index in range(made, len(player.steps)):
        if index >= len(steps):
            raise _Failed("the engine makes a step the replay does not have", index + 1)
        _same(steps[index], player.steps[index], "the event")
    return len(player.steps)


_PARTS = (
    ("decision", "the decision"),
    ("event.first_seat", "the first seat's copy of the event"),
    ("event.second_seat", "the second seat's copy of the event"),
    ("event.summary", "the event's summary"),
    ("event.sequence", "the event's sequence"),
    ("state", "the table after it"),
)


def _same(replayed: archive_pb2.ReplayStep, made: archive_pb2.ReplayStep, what: str) -> None:
    if replayed == made:
        return
    if replayed.WhichOneof("kind") != made.WhichOneof("kind"):
        raise _Failed(
            f"the replay shows a {replayed.WhichOneof('kind')} where the engine makes {what}", replayed.index
        )
    for path, name in _PARTS:
        ours, theirs = _part(replayed, path), _part(made, path)
        if ours != theirs:
            raise _Failed(
                f"{name} differs: the replay has {_text(ours)} where the seed gives {_text(theirs)}",
                replayed.index,
            )
    raise _Failed(f"{what} differs from the one the seed gives", replayed.index)


def _part(step: archive_pb2.ReplayStep, path: str) -> object:
    value: object = step
    for name in path.split("."):
        value = getattr(value, name)
    return value


def _text(value: object) -> str:
    text = text_format.MessageToString(value, as_one_line=True) if isinstance(value, Message) else repr(value)
    return f"{{{text[:400]}}}" if isinstance(value, Message) else text


def _deal(replay: archive_pb2.Replay, player: HandPlayer) -> int:
    made = revealed_deal(player.events)
    deal = replay.deal
    for name, ours, theirs in (
        ("wall", list(deal.wall), list(made.wall)),
        ("unused pool", list(deal.unused_pool), list(made.unused_pool)),
    ):
        for index, (tile, derived) in enumerate(zip(ours, theirs, strict=False)):
            if tile != derived:
                where = _drawn_at(player, index) if name == "wall" else 0
                said = " (the tile this step draws)" if where else ""
                raise _Failed(
                    f"{name} tile {index + 1}{said} is {tile} in the replay; the seed gives {derived}", where
                )
        if len(ours) != len(theirs):
            raise _Failed(f"the {name} holds {len(ours)} tiles; the seed gives {len(theirs)}")
    parts = (
        ("dealt", "dealt hands"),
        ("revealed_bonus_tiles", "bonus tiles"),
        ("items", "item counts"),
        ("grand_shift", "乾坤大挪移 seats"),
    )
    for field, name in parts:
        ours, theirs = getattr(deal, field), getattr(made, field)
        if ours != theirs:
            raise _Failed(
                f"the deal's {name} are {_text(ours)} in the replay; the seed gives {_text(theirs)}"
            )
    return len(deal.wall) + len(deal.unused_pool) + len(deal.dealt)


def _drawn_at(player: HandPlayer, index: int) -> int:
    """The step that drew wall tile ``index`` (of the wall after the deal), 0 if none did."""
    head, tail = 0, len(revealed_deal(player.events).wall) - 1
    for step, event in zip((s for s in player.steps if s.HasField("event")), player.events, strict=False):
        if isinstance(event, Drew):
            source = event.source
            if source == "wall":
                if head == index:
                    return step.index
                head += 1
            elif source in ("kong", "flower"):
                if tail == index:
                    return step.index
                tail -= 1
    return 0


def _initial(replay: archive_pb2.Replay, player: HandPlayer) -> int:
    if player.initial is not None and replay.initial != player.initial:
        raise _Failed(
            f"the table as dealt differs: the replay has {_text(replay.initial)} "
            f"where the seed gives {_text(player.initial)}"
        )
    return 1


def _result(replay: archive_pb2.Replay, player: HandPlayer) -> int:
    ended = next((e for e in player.events if isinstance(e, HandEnded)), None)
    outcome = archive_pb2.ARCHIVED_OUTCOME_VOID
    winner = rules_pb2.SEAT_UNSPECIFIED
    if ended is not None:
        result = ended.outcome
        outcome, winner = _OUTCOMES[result.termination], codec.seat_enum(result.winner)
    if replay.HasField("result") and (replay.result.outcome, replay.result.winner) != (outcome, winner):
        said = f"{_outcome(replay.result.outcome)}, {rules_pb2.Seat.Name(replay.result.winner)}"
        given = f"{_outcome(outcome)}, {rules_pb2.Seat.Name(winner)}"
        raise _Failed(f"the result says {said}; the hand gives {given}", len(replay.steps))
    return 1


def _outcome(outcome: archive_pb2.ArchivedOutcome.ValueType) -> str:
    return archive_pb2.ArchivedOutcome.Name(outcome)
