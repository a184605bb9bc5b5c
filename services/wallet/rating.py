"""Skill ratings: one per player and profile, moved by every finished hand (docs/wallet.md "Skill rating").

The model is Weng and Lin's Bayesian approximation with the Bradley-Terry likelihood (openskill's
``BradleyTerryFull``), put on the Glicko scale: a new player is 1500 ± 350, and for two settled players
a 400-point gap means 10:1 odds, as in Glicko and Elo. Weng-Lin rather than Glicko-2 because a rating
here moves after every hand, and Glicko-2's per-player volatility is only learnt over rating periods
of many games: updated one game at a time it stays at its start value (so it would be a constant that
pretends to be learnt) and can be farmed by losing on purpose. Weng-Lin is made for one update per
game. Its drift per hand (tau) plays the part of Glicko-2's volatility; ``volatility`` reports it in
Glicko-2 units, the same for every player.

Pure: no I/O. The ledger store loads the two players' ratings with their accounts, a hand's command
rates them on the draft (``Draft.rate``), and the ratings are written in the hand's own ledger
transaction, so the idempotency key that applies a hand once moves its ratings once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from openskill.models import BradleyTerryFull

# The Glicko scale: Glicko-2's internal unit is 173.7178 rating points (400 / ln 10).
GLICKO_SCALE = 400 / math.log(10)
START_RATING = 1500.0
START_DEVIATION = 350.0
# The Bradley-Terry likelihood the update uses gives settled players a win probability of
# 1 / (1 + exp(-(r1 - r2) / (√2·β))): with √2·β = 400 / ln 10 a 400-point gap gives 10:1, the
# Glicko/Elo reading of the numbers.
BETA = GLICKO_SCALE / math.sqrt(2)
# The deviation added before each hand, so a rating never freezes: Glicko-2's usual volatility 0.06
# in rating points (≈ 10.4).
TAU = 0.06 * GLICKO_SCALE
VOLATILITY = TAU / GLICKO_SCALE
PROFILES = ("duel", "erren")

# A hand's result for the first of the two players rated.
WIN, DRAW, LOSS = 1.0, 0.5, 0.0

_MODEL = BradleyTerryFull(mu=START_RATING, sigma=START_DEVIATION, beta=BETA, tau=TAU)


@dataclass(frozen=True, slots=True)
class Skill:
    """A player's rating in one profile, on the Glicko scale."""

    rating: float = START_RATING
    deviation: float = START_DEVIATION
    hands_rated: int = 0

    @property
    def volatility(self) -> float:
        return VOLATILITY

    @property
    def conservative(self) -> float:
        """A strength the player very probably has (rating − 2 deviations): what boards rank by."""
        return self.rating - 2 * self.deviation

    def as_json(self) -> dict[str, float]:
        return {"rating": self.rating, "deviation": self.deviation, "hands_rated": self.hands_rated}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Skill:
        return cls(float(value["rating"]), float(value["deviation"]), int(value["hands_rated"]))


START = Skill()


@dataclass(frozen=True, slots=True)
class RatingMove:
    """One seat's rating before and after one hand."""

    player_id: str
    profile: str
    seat: int  # 1 = SEAT_FIRST, 2 = SEAT_SECOND
    before: Skill
    after: Skill

    def as_json(self) -> dict[str, object]:
        return {
            "player_id": self.player_id,
            "profile": self.profile,
            "seat": self.seat,
            "before": self.before.as_json(),
            "after": self.after.as_json(),
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RatingMove:
        """A move as the transaction row keeps it (``as_json``, in ``transactions.ratings``)."""
        return cls(
            str(value["player_id"]),
            str(value["profile"]),
            int(value["seat"]),
            Skill.from_json(value["before"]),
            Skill.from_json(value["after"]),
        )


def rate(first: Skill, second: Skill, result: float) -> tuple[Skill, Skill]:
    """Both players' ratings after one hand; ``result`` is the first player's: WIN, DRAW or LOSS.

    >>> winner, loser = rate(START, START, WIN)
    >>> round(winner.rating), round(loser.rating), round(winner.deviation), winner.hands_rated
    (1617, 1383, 337, 1)
    >>> a, b = rate(START, START, DRAW)
    >>> a.rating == b.rating == 1500.0, a.deviation < START.deviation
    (True, True)
    """
    if result not in (WIN, DRAW, LOSS):
        raise ValueError(f"a hand's result is 1, 0.5 or 0, got {result}")
    one = _MODEL.create_rating([first.rating, first.deviation])
    two = _MODEL.create_rating([second.rating, second.deviation])
    ranks = [0.0, 0.0] if result == DRAW else ([0.0, 1.0] if result == WIN else [1.0, 0.0])
    [[one_after], [two_after]] = _MODEL.rate([[one], [two]], ranks=ranks)
    return (
        Skill(one_after.mu, one_after.sigma, first.hands_rated + 1),
        Skill(two_after.mu, two_after.sigma, second.hands_rated + 1),
    )
