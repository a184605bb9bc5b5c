"""Scoring's domain: stateless evaluation of hands and settlement of hand results.

The fan evaluation itself lives in ``duelmahjong.rules`` (pure); this service's logic — answering
EvaluateHand/ScoreHand and turning ``HandEnded`` into ``HandScored`` — arrives with issue 6. What is
here is the catalogue of rule profiles the service serves.
"""

from __future__ import annotations

# The rule profiles of the product card (ARCHITECTURE.md): id → ruleset.
PROFILES: dict[str, str] = {"duel": "决斗麻将 Duel Mahjong", "erren": "二人麻将"}


class ScoringCore:
    """Stateless: every answer is a function of the request (and the rule profile it names)."""

    def __init__(self, profiles: dict[str, str] | None = None) -> None:
        self.profiles = dict(PROFILES if profiles is None else profiles)
