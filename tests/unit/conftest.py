"""Fixtures of the unit tests: ``harness``, matchmakers on one in-memory store, and ``mirrors``, bare
mirrors of one (tests/unit/matchmaking_fakes.py)."""

from tests.unit.matchmaking_fakes import harness, mirrors

__all__ = ["harness", "mirrors"]
