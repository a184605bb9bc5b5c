"""The outcome of a hand: what ended it, who won or escaped, the win's §7 description and its score, the
multipliers, erren's doubling terms and duel's 猜大小 (T7, T8, T10, T12). Scoring, settlement and the
views read it; the ``hand_ended`` event carries it.

Its JSON (:meth:`Outcome.to_json`) is the ``result`` of the ``hand_ended`` event in a table's log, and
:meth:`Outcome.from_json` reads it back: a stored log serialises to the same bytes.

>>> outcome = Outcome(Termination.DRAWN, hand=2, dealer=1, dealer_passes=1, winner=-1, escaper=-1,
...                   negotiated=1, progressive=2, hands=("123m", "456p"))
>>> outcome.loser, Outcome.from_json(outcome.to_json()) == outcome
(-1, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from duelmahjong.engine.errors import ReplayError

NO_SEAT = -1


class Termination(StrEnum):
    """What ended a hand (the JSON's ``outcome``)."""

    WIN = "win"
    DRAWN = "drawn"  # exhaustion, duel's extra draws (T9) included
    ESCAPE = "escape"  # a seat left during the hand (T10)


@dataclass(frozen=True, slots=True)
class Win:
    """The winning hand: its docs/decisions.md §7 description and the rules library's evaluation of it,
    both in their JSON form (``HandDescription.to_json``, ``Evaluation.to_json``)."""

    self_drawn: bool  # D13: a robbed kong counts as self-drawn in duel
    description: dict[str, Any]
    evaluation: dict[str, Any]

    @property
    def total_fan(self) -> int:
        return int(self.evaluation["total_fan"])

    @property
    def pattern_ids(self) -> list[str]:
        return [str(pattern["id"]) for pattern in self.evaluation["patterns"]]


@dataclass(frozen=True, slots=True)
class Guess:
    """T12 猜大小: ``choice`` big, small or collect; a guess rolls three ``dice`` and, when ``right``,
    multiplies the winnings by ``factor`` (2–5, 0 when wrong). Collecting rolls nothing."""

    choice: str
    dice: tuple[int, int, int] | None = None
    right: bool | None = None
    factor: int | None = None

    @property
    def rolled(self) -> bool:
        return self.dice is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"choice": self.choice}
        if self.dice is not None:
            out["dice"] = list(self.dice)
        if self.right is not None:
            out["right"] = self.right
        if self.factor is not None:
            out["factor"] = self.factor
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Guess:
        dice = data.get("dice")
        return cls(
            choice=str(data["choice"]),
            dice=None if dice is None else (int(dice[0]), int(dice[1]), int(dice[2])),
            right=data.get("right"),
            factor=data.get("factor"),
        )


@dataclass(frozen=True, slots=True)
class ErrenTerms:
    """What an erren hand adds to its outcome (T4, T8): both seats' 开始加倍, the winner's 胡加倍, the
    hand's task and whether the winner completed it, each seat's paid exchanges."""

    doubling: tuple[bool, bool]
    win_doublings: int
    task: dict[str, Any] | None
    task_completed: bool
    exchange_fees: tuple[int, int]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One hand's outcome. Seats are 0 and 1, ``-1`` for none: ``winner`` is set exactly when the hand
    was won, ``escaper`` exactly when it was escaped."""

    termination: Termination
    hand: int  # the hand's number in the pairing, from 1
    dealer: int
    dealer_passes: int  # times the deal had passed before this hand (E17)
    winner: int
    escaper: int
    negotiated: int  # T7, agreed before the table opened
    progressive: int  # T7, 2^(hand-1) in duel
    hands: tuple[str, str]  # both seats' concealed tiles at the end, in notation
    win: Win | None = None
    erren: ErrenTerms | None = None
    guess: Guess | None = None

    @property
    def loser(self) -> int:
        return 1 - self.winner if self.winner >= 0 else NO_SEAT

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hand": self.hand,
            "outcome": self.termination.value,
            "dealer": self.dealer,
            "dealer_passes": self.dealer_passes,
            "winner": self.winner,
            "loser": self.loser,
            "escaper": self.escaper,
            "negotiated": self.negotiated,
            "progressive": self.progressive,
            "hands": list(self.hands),
        }
        win = self.win
        if win is not None:
            out["self_drawn"] = win.self_drawn
            out["description"] = win.description
            out["evaluation"] = win.evaluation
        erren = self.erren
        if erren is not None:
            out["doubling"] = list(erren.doubling)
            out["win_doublings"] = erren.win_doublings
            out["task"] = erren.task
            out["task_completed"] = erren.task_completed
            out["exchange_fees"] = list(erren.exchange_fees)
        if self.guess is not None:
            out["guess"] = self.guess.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        try:
            winner = int(data["winner"])
            hands = data["hands"]
            outcome = cls(
                termination=Termination(data["outcome"]),
                hand=int(data["hand"]),
                dealer=int(data["dealer"]),
                dealer_passes=int(data["dealer_passes"]),
                winner=winner,
                escaper=int(data["escaper"]),
                negotiated=int(data["negotiated"]),
                progressive=int(data["progressive"]),
                hands=(str(hands[0]), str(hands[1])),
                win=(
                    Win(bool(data["self_drawn"]), dict(data["description"]), dict(data["evaluation"]))
                    if "description" in data
                    else None
                ),
                erren=(
                    ErrenTerms(
                        doubling=(bool(data["doubling"][0]), bool(data["doubling"][1])),
                        win_doublings=int(data["win_doublings"]),
                        task=None if data["task"] is None else dict(data["task"]),
                        task_completed=bool(data["task_completed"]),
                        exchange_fees=(int(data["exchange_fees"][0]), int(data["exchange_fees"][1])),
                    )
                    if "doubling" in data
                    else None
                ),
                guess=Guess.from_json(data["guess"]) if "guess" in data else None,
            )
            loser = int(data["loser"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ReplayError(f"malformed hand result {dict(data)!r}: {exc}") from exc
        if loser != outcome.loser or (outcome.termination is Termination.WIN) != (outcome.win is not None):
            raise ReplayError(f"inconsistent hand result {dict(data)!r}")
        return outcome
