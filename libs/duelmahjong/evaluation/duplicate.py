"""Duplicate play: each wall (a seeded hand) is played twice, agent A in seat 0 then in seat 1.

A seed fixes the whole hand's chance — the tiles, the dealer seat, the bonus tiles and task, every
later random draw — so in the second game A holds exactly the seat, tiles and luck B held in the first.
What remains between the two games' results is the agents' play; the pair's sum is one sample
(docs/evaluation.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from duelmahjong.engine import actions as A
from duelmahjong.engine.invariants import InvariantViolation
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.evaluation.agents import Agent
from duelmahjong.evaluation.settle import seat_nets
from duelmahjong.evaluation.visibility import seat_state

MAX_STEPS = 2000  # far above any hand's decisions: a loop that never ends is a bug, not a game


@dataclass(frozen=True, slots=True)
class Game:
    """One played game: the outcome, each seat's settlement and each seat's decision times (s)."""

    outcome: Outcome
    nets: tuple[int, int]
    times: tuple[list[float], list[float]]


def play_game(settings: RoomSettings, seed: int, agents: tuple[Agent, Agent]) -> Game:
    """Play the hand of ``seed`` with ``agents[seat]`` in each seat, each seeing only its seat."""
    table = Table(settings)
    for agent in agents:
        bind = getattr(agent, "bind", None)
        if bind is not None:  # an agent that plays through the contract builds its view from the table
            bind(table)
    table.start_hand(seed)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(MAX_STEPS):
        acted = False
        for seat in (0, 1):
            legal = table.legal_actions(seat)
            if len(legal) > 1 or (legal and legal[0].kind != A.LEAVE):
                view = seat_state(table.state, seat)
                started = time.perf_counter()
                action = agents[seat].decide(view, seat, legal)
                times[seat].append(time.perf_counter() - started)
                table.apply(action)
                acted = True
                break
        outcome = table.outcome
        if outcome is not None:
            return Game(outcome, seat_nets(outcome, settings), times)
        if not acted:
            raise InvariantViolation(f"seed {seed}: nobody may act in phase {table.phase!r}")
    raise InvariantViolation(f"seed {seed}: no end after {MAX_STEPS} decisions")


@dataclass(frozen=True, slots=True)
class PairResult:
    """A wall played twice: ``games[0]`` with A in seat 0, ``games[1]`` with A in seat 1."""

    seed: int
    games: tuple[Game, Game]

    @property
    def a_total(self) -> int:
        """A's settlement summed over both games: the duplicate sample."""
        return self.games[0].nets[0] + self.games[1].nets[1]


def play_pair(settings: RoomSettings, seed: int, a: Agent, b: Agent) -> PairResult:
    return PairResult(seed, (play_game(settings, seed, (a, b)), play_game(settings, seed, (b, a))))


def is_deal_in(outcome: Outcome, seat: int) -> bool:
    """``seat`` lost the hand on its own discard (a robbed duel kong counts as self-drawn, D13)."""
    win = outcome.win
    return win is not None and outcome.loser == seat and not win.self_drawn
