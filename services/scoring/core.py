"""Scoring's domain: evaluate hands and settle hand results (no gRPC, no NATS).

The fan evaluation is the rules library's (``rules.evaluate``), the money math is ``rules.settlement``
(H1 duel transfer, H2 erren doubling, H3 escape) applied to a hand by ``rules.hand_settlement``: this
module only feeds them a hand result and gathers their answers. Stateless: every answer is a function
of its input.

Scoring never caps by the carries: a settlement here is **as scored** — the uncapped amount (fan ×
multipliers × N, or the escape penalty) and its breakdown. The wallet alone caps (H1, H3), with the
carries it holds at the moment it applies the hand, and publishes what it moved; a carry stated in
a hand result was frozen when the pairing opened and says nothing about the holds by then.

>>> core = ScoringCore()
>>> claim = HandClaim(table_id="t1", hand_id="h1", hand_number=1, room_id="r", profile="duel",
...     outcome="win", dealer=0, winner=0, escaper=-1, negotiated=5, progressive=1, fan_rate=10,
...     players=(SeatClaim("alice", 1000), SeatClaim("bob", 1000)), last_sequence=9,
...     description={"profile": "duel", "concealed": "234567m234p678s5s", "win_tile": "5s",
...                  "self_drawn": True})
>>> scored = core.score(claim)
>>> scored.evaluation.total_fan, scored.settlement.fan_amount, scored.settlement.payer  # H1: 3 x 5 x 1 x 10
(3, 150, 'bob')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duelmahjong.engine.outcome import Guess
from duelmahjong.engine.result import meets_minimum
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.evaluate import Evaluation, evaluate
from duelmahjong.rules.hand_settlement import escape_amount, win_amount
from duelmahjong.rules.patterns import Catalogue
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.settlement import Doubling
from services.scoring.replay import ReplayedHand

# The rule profiles of the product: id → ruleset.
PROFILES: dict[str, str] = {"duel": "决斗麻将 Duel Mahjong", "erren": "二人麻将"}

# The contract's bounds (rules.proto): inputs outside them are refused where they enter (codec);
# an amount computed from them is shown at most MAX_AMOUNT, which exceeds any carry, so the capped
# amount the wallet moves is the same as for the exact product.
MAX_FAN_RATE = 1_000_000
MAX_PRESTIGE = 10**12  # a carry, a fee
MAX_AMOUNT = 10**15


class InvalidHand(InvalidArgument):
    """A hand description or hand result the rules refuse (not a win, bad notation, bad amounts)."""


@dataclass(frozen=True, slots=True)
class SeatClaim:
    player_id: str
    carry: int  # 携带威望 at the pairing's start: replay checks it; the wallet's hold caps (H1, H3)


@dataclass(frozen=True, slots=True)
class TaskClaim:
    """The erren task of a hand (T8); ``kind`` in the engine's words (pong, pattern, kong, double)."""

    kind: str
    pattern: str
    multiplier: int
    completed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class HandClaim:
    """What a ``HandResult`` says happened in a hand; seats are 0 (first) and 1 (second), -1 = none."""

    table_id: str
    hand_id: str
    hand_number: int
    room_id: str
    profile: str
    outcome: str  # win, drawn, escape
    dealer: int
    winner: int
    escaper: int
    negotiated: int
    progressive: int
    fan_rate: int
    players: tuple[SeatClaim, SeatClaim]
    last_sequence: int
    description: dict[str, Any] | None = None  # docs/decisions.md §7 JSON, on a win
    start_doubled: tuple[int, ...] = ()  # erren 开始加倍 seats (H2's S)
    win_declines: int = 0  # erren 胡加倍 k (H2's H)
    task: TaskClaim | None = None
    minimum_fan: int = 0  # the room's 起和; 0 = the profile's default
    fee: int = 0  # the room fee each player owes for a finished hand (H1)


@dataclass(frozen=True, slots=True)
class SettlementFigures:
    """One hand's settlement as scored (docs/decisions.md §6) before it becomes a ``Settlement`` message.

    ``fan_amount`` is uncapped: total fan × negotiated × progressive × N (H1, erren's F × N) or the
    escape penalty (H3), at most :data:`MAX_AMOUNT`; the wallet caps it by the carries it holds.
    ``payer`` is empty on a drawn hand (only the fees move); ``fee`` is 0 for an escape.
    """

    hand_id: str
    total_fan: int
    negotiated: int
    progressive: int
    fan_rate: int
    fan_amount: int = 0
    payer: str = ""
    payee: str = ""
    reason: str = ""  # hand, escape
    doubling: Doubling | None = None
    fee: int = 0


def _shown(amount: int) -> int:
    """An amount as the contract carries it: at most MAX_AMOUNT (more than any carry can cap to)."""
    return min(amount, MAX_AMOUNT)


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The rules library's evaluation, and whether it reaches the minimum asked for (E16)."""

    evaluation: Evaluation
    meets_minimum: bool

    @property
    def total_fan(self) -> int:
        return self.evaluation.total_fan


@dataclass(frozen=True, slots=True)
class ScoredHand:
    claim: HandClaim
    settlement: SettlementFigures
    evaluation: Breakdown | None = None  # on a win
    guess: Guess | None = None  # T12 猜大小 the winner rolled (the wallet stakes it on the transfer)

    @property
    def escape(self) -> bool:
        return self.claim.outcome == "escape"


class ScoringCore:
    """Stateless: every answer is a function of the request (and the rule profile it names)."""

    def __init__(self, profiles: dict[str, str] | None = None) -> None:
        self.profiles = dict(PROFILES if profiles is None else profiles)

    def catalogue(self, profile: str) -> Catalogue:
        if profile not in self.profiles:
            raise InvalidArgument(f"unknown profile {profile!r}; known: {', '.join(self.profiles)}")
        return get_profile(profile).catalogue

    def evaluate_hand(self, description: dict[str, Any], minimum_fan: int = 0) -> Breakdown:
        """The breakdown of a described win; ``minimum_fan`` 0 = the profile's default 起和 (E16)."""
        try:
            hand = HandDescription.from_json(description)
            evaluation = evaluate(hand)
        except RulesError as err:
            raise InvalidHand(str(err)) from None
        reached = evaluation.meets_minimum
        if minimum_fan:
            reached = meets_minimum(evaluation, hand.profile, minimum_fan)
        return Breakdown(evaluation, reached)

    def score(self, claim: HandClaim, *, minimum_fan: int | None = None) -> ScoredHand:
        """Evaluate the winning hand (if any) and compute the hand's settlement (H1/H2/H3).

        ``minimum_fan`` is the room's 起和 as the replayed table applied it (else the claim's).
        """
        try:
            if claim.outcome == "win":
                if claim.description is None:
                    raise InvalidHand(f"hand {claim.hand_id} is a win without a description")
                minimum = claim.minimum_fan if minimum_fan is None else minimum_fan
                return self._win(claim, self.evaluate_hand(claim.description, minimum))
            if claim.outcome == "escape":
                return ScoredHand(claim, self._escape(claim))
            figures = SettlementFigures(
                claim.hand_id, 0, claim.negotiated, claim.progressive, claim.fan_rate, fee=claim.fee
            )
            return ScoredHand(claim, figures)
        except RulesError as err:
            raise InvalidHand(f"hand {claim.hand_id}: {err}") from None

    def score_replayed(self, replayed: ReplayedHand) -> ScoredHand:
        """The settlement of a hand as its log replays it: the win's evaluation is the one the engine
        made when the hand was won (replayed, not scored again), and 猜大小 rides along when rolled."""
        claim = claim_of(replayed)
        outcome = replayed.outcome
        try:
            if outcome.win is None:
                return self.score(claim)
            evaluation = Evaluation.from_json(outcome.win.evaluation)
        except (KeyError, TypeError, ValueError) as err:
            raise InvalidHand(f"hand {claim.hand_id}: the logged evaluation is unreadable: {err}") from None
        minimum = replayed.settings.effective_minimum_fan
        breakdown = Breakdown(evaluation, meets_minimum(evaluation, claim.profile, minimum))
        scored = self._win(claim, breakdown)
        guess = outcome.guess
        return ScoredHand(
            claim, scored.settlement, scored.evaluation, guess if guess and guess.rolled else None
        )

    def _win(self, claim: HandClaim, evaluation: Breakdown) -> ScoredHand:
        winner, loser = claim.players[claim.winner], claim.players[1 - claim.winner]
        task = claim.task
        completed = task is not None and task.completed and task.multiplier > 0
        amount = win_amount(
            claim.profile,
            evaluation.total_fan,
            fan_rate=claim.fan_rate,
            negotiated=claim.negotiated,
            progressive=claim.progressive,
            start_doublers=len(claim.start_doubled),
            win_doublings=claim.win_declines,
            task_multiplier=task.multiplier if completed and task is not None else None,
        )
        figures = SettlementFigures(
            claim.hand_id,
            amount.total_fan,
            amount.negotiated,
            amount.progressive,
            claim.fan_rate,
            fan_amount=_shown(amount.fan_amount),
            payer=loser.player_id,
            payee=winner.player_id,
            reason="hand",
            doubling=amount.doubling,
            fee=claim.fee,
        )
        return ScoredHand(claim, figures, evaluation)

    def _escape(self, claim: HandClaim) -> SettlementFigures:
        """H3 (``rules.hand_settlement.escape_amount``), uncapped: the wallet caps it by the escaper's
        carry."""
        escaper, opponent = claim.players[claim.escaper], claim.players[1 - claim.escaper]
        amount = escape_amount(
            claim.profile,
            fan_rate=claim.fan_rate,
            negotiated=claim.negotiated,
            progressive=claim.progressive,
            start_doublers=len(claim.start_doubled),
        )
        return SettlementFigures(
            claim.hand_id,
            amount.total_fan,
            amount.negotiated,
            amount.progressive,
            claim.fan_rate,
            fan_amount=_shown(amount.fan_amount),
            payer=escaper.player_id,
            payee=opponent.player_id,
            reason="escape",
            doubling=amount.doubling,
        )


def claim_of(replayed: ReplayedHand) -> HandClaim:
    """What the hand was, from its log: the engine's outcome and the hand's ``HandBegun`` record
    (its players and carries, the room's fan rate and fee), within the contract's bounds."""
    outcome, begun, pointer = replayed.outcome, replayed.begun, replayed.pointer
    if not 1 <= begun.fan_rate <= MAX_FAN_RATE:
        raise InvalidHand(f"hand {pointer.hand_id}: fan rate {begun.fan_rate} outside 1..{MAX_FAN_RATE}")
    if not 0 <= begun.fee <= MAX_PRESTIGE:
        raise InvalidHand(f"hand {pointer.hand_id}: fee {begun.fee} outside 0..{MAX_PRESTIGE}")
    erren = outcome.erren
    task = None
    if erren is not None and erren.task:
        task = TaskClaim(
            kind=str(erren.task["kind"]),
            pattern=str(erren.task.get("pattern", "")),
            multiplier=int(erren.task.get("multiplier", 0)),
            completed=erren.task_completed,
        )
    first, second = (SeatClaim(player_id, carry) for player_id, carry in begun.players)
    return HandClaim(
        table_id=pointer.table_id,
        hand_id=pointer.hand_id,
        hand_number=outcome.hand,
        room_id="",
        profile=replayed.settings.profile,
        outcome=outcome.termination.value,
        dealer=outcome.dealer,
        winner=outcome.winner,
        escaper=outcome.escaper,
        negotiated=outcome.negotiated,
        progressive=outcome.progressive,
        fan_rate=begun.fan_rate,
        players=(first, second),
        last_sequence=pointer.last_sequence,
        description=None if outcome.win is None else outcome.win.description,
        start_doubled=() if erren is None else tuple(s for s, chose in enumerate(erren.doubling) if chose),
        win_declines=0 if erren is None else erren.win_doublings,
        task=task,
        minimum_fan=replayed.settings.effective_minimum_fan,
        fee=begun.fee,
    )
