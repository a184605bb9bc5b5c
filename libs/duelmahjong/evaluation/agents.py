"""Agents: who plays a seat in an evaluation, resolved from a name.

An :class:`Agent` decides one action for its seat from the state **as that seat sees it**
(:func:`duelmahjong.evaluation.visibility.seat_state`), the engine's legal actions and the seat. The
names ``duel evaluate`` accepts:

- ``house``: today's house bot (:func:`duelmahjong.engine.bot.choose`);
- ``strong``: the stronger bot (:func:`duelmahjong.engine.bots.strong.choose`);
- ``random``: uniform among the legal actions other than leaving (a sanity floor);
- ``strong@contract``, ``baseline@contract``: the client policies room bots run, playing through the
  seat's contract view (:mod:`duelmahjong.evaluation.contract`);
- ``module:callable``: an env policy (``duelmahjong.env.policy``: the env's observation → an index of
  its action mask), loaded as ``duel bot --policy`` loads it (a class is instantiated, ``name()`` calls
  a factory): the same object plays in the env, here and on the live server
  (:mod:`duelmahjong.evaluation.env_agent`; needs the ``env`` extra);
- ``engine:module:callable``: an importable callable with the engine bot's signature
  ``(state, seat, legal) -> Action``, called with the seat's state.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bots import strong
from duelmahjong.engine.state import TableState

Decide = Callable[[TableState, int, list[Action]], Action]
BUILT_IN = ("house", "strong", "random", "strong@contract", "baseline@contract")


class Agent(Protocol):
    name: str

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        """One of ``legal`` for ``seat``; ``state`` holds only what the seat may know."""
        ...


@dataclass
class CallableAgent:
    """An agent that is one function of the engine bot's signature."""

    name: str
    function: Decide

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        return self.function(state, seat, legal)


class RandomAgent:
    """Uniform among the legal actions, never leaving (leaving is an escape, H3)."""

    def __init__(self, seed: int) -> None:
        self.name = "random"
        self._rng = random.Random(seed)

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        return self._rng.choice([a for a in legal if a.kind != A.LEAVE] or legal)


class AgentError(ValueError):
    """An agent name that names nothing playable."""


def resolve_agent(name: str, *, seed: int = 0) -> Agent:
    """The agent a name stands for; ``seed`` feeds agents that draw at random."""
    if name == "house":
        return CallableAgent(name, bot.choose)
    if name == "strong":
        return CallableAgent(name, strong.choose)
    if name == "random":
        return RandomAgent(seed)
    if name.endswith("@contract"):
        from duelmahjong.evaluation.contract import contract_agent  # protobuf only when asked for

        agent = contract_agent(name)
        if agent is None:
            raise AgentError(f"unknown contract policy {name!r}: use strong@contract or baseline@contract")
        return agent
    if name.startswith("engine:"):
        return _engine_callable(name)
    if ":" not in name:
        raise AgentError(
            f"unknown agent {name!r}: use {', '.join(BUILT_IN)}, module:callable (an env policy) or "
            "engine:module:callable"
        )
    try:
        from duelmahjong.env.policy import PolicyError, load_policy
        from duelmahjong.evaluation.env_agent import EnvAgent  # numpy only when asked for
    except ImportError as missing:
        raise AgentError(
            f"agent {name!r} is an env policy, which needs the training env: {missing}"
        ) from None
    try:
        return EnvAgent(name, load_policy(name))
    except PolicyError as error:
        raise AgentError(f"cannot load agent {error}") from None


def _engine_callable(name: str) -> Agent:
    module_name, colon, attribute = name.removeprefix("engine:").partition(":")
    if not colon or not module_name or not attribute:
        raise AgentError(f"unknown agent {name!r}: expected engine:module:callable")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise AgentError(f"cannot load agent {name!r}: {error}") from None
    if not callable(target):
        raise AgentError(f"agent {name!r} is not callable")
    return CallableAgent(name, target)
