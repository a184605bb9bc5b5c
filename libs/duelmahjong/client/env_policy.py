"""Bring your own bot: a policy written for the training env plays on the live server.

An env policy is ``policy(observation) -> int``: ``observation`` is what the env's ``observe(agent)``
gives (``{"observation": planes, "action_mask": mask}``, docs/env.md), the answer one index of the
fixed action space with ``action_mask[index] == 1``. A choice of several tiles (换牌, a taken triplet,
移花接木, 偷天换日) is a short sequence of indices, so the policy is called again for each of its steps,
with the planes and mask of the choice so far — exactly as the env's AEC form keeps the seat selected
until it confirms. :class:`EnvPolicy` is a client :class:`~duelmahjong.client.policy.Policy` around
such a callable: at each decision it builds the seat's observation from its view
(:func:`~duelmahjong.client.env_observation.seat_observation_from_view`), asks the policy through the
sub-decisions, and sends the engine action they name in the contract's form. :func:`load_policy` reads
``duel bot --policy module:callable``.

Needs the ``env`` extra (numpy, gymnasium, pettingzoo): nothing else in the client library imports this.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from duelmahjong.client.env_observation import legal_mask, pending_kind, seat_observation_from_view
from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.env import layout as L
from duelmahjong.env.observation import NO_TILE, SeatObservation
from duelmahjong.env.planes import planes
from duelmahjong.env.selection import Choice, Mask, resolve
from duelmahjong.v1 import play_pb2
from duelmahjong.views.codec import encode_action

EnvObservation = dict[str, npt.NDArray[Any]]
# What the env's policies are: the observation of one seat → one index of its action mask.
EnvPolicyFn = Callable[[EnvObservation], int]
# A choice of several tiles takes at most 14 selections and a confirm; a policy that goes on longer
# is not choosing (it cannot: the mask offers CONFIRM once a triplet is chosen, and tiles run out).
MAX_STEPS = 32


class PolicyError(ValueError):
    """An env policy answered an index its mask did not offer, or could not be loaded."""


# One step of a decision: the planes and mask the policy was shown, and the index it chose.
Step = tuple[npt.NDArray[np.float32], Mask, int]


@dataclass(frozen=True)
class Decided:
    """One decision as an env policy made it: the observation, each step's planes, mask and index,
    and the engine action they complete."""

    observation: SeatObservation
    steps: tuple[Step, ...]
    action: Action


class EnvPolicy:
    """A client policy that asks an env policy. ``allow_leave``: whether LEAVE (escape, T10) is in the
    mask (the env's ``EnvOptions.allow_leave``; off by default: a live bot escaping pays for it).
    ``watch`` hears of every decision made (tests compare them with the env's)."""

    def __init__(
        self,
        policy: EnvPolicyFn,
        *,
        allow_leave: bool = False,
        watch: Callable[[play_pb2.SeatView, Decided], None] | None = None,
    ) -> None:
        self.policy = policy
        self.allow_leave = allow_leave
        self.watch = watch
        self.last: Decided | None = None  # the last decision made
        # The tile the seat drew and won on (the env shows it as drawn through 猜大小), by hand.
        self._won_with: tuple[int, int] = (0, NO_TILE)

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> play_pb2.Action:
        hand = view.table.hand_number
        won_with = self._won_with[1] if self._won_with[0] == hand else NO_TILE
        decided = self.choose(seat_observation_from_view(view, legal, won_with=won_with), legal)
        action = decided.action
        self.last = decided
        if action.kind == A.SELF_DRAW_WIN:
            self._won_with = (hand, decided.observation.drawn)
        if self.watch is not None:
            self.watch(view, decided)
        return encode_action(action)

    def choose(self, obs: SeatObservation, legal: play_pb2.LegalActions) -> Decided:
        """Ask the policy, step by step, for the engine action of this decision."""
        steps: list[Step] = []
        choice = Choice()
        for _ in range(MAX_STEPS):
            mask = legal_mask(obs, choice, legal, allow_leave=self.allow_leave)
            shown = planes(obs, choice)
            index = int(self.policy({"observation": shown, "action_mask": mask.copy()}))
            steps.append((shown, mask, index))
            if not 0 <= index < L.ACTION_COUNT or not mask[index]:
                raise PolicyError(
                    f"the policy chose index {index} ({L.describe(index)}), which its mask does not offer"
                )
            action = resolve(obs.legal, obs.seat, choice, pending_kind(obs, choice), index)
            if action is not None:
                return Decided(obs, tuple(steps), action)
        raise PolicyError(f"the policy did not complete a choice in {MAX_STEPS} steps")


def load_policy(spec: str) -> EnvPolicyFn:
    """The env policy ``spec`` names: ``module:name`` is the policy itself (a class is instantiated
    with no arguments: its instances are called), ``module:name()`` a factory called with no arguments
    that returns it. ``name`` may be dotted (``module:Class.method``)."""
    module_name, _, name = spec.partition(":")
    factory = name.endswith("()")
    name = name.removesuffix("()")
    if not module_name or not name:
        raise PolicyError(f"--policy {spec!r}: expected module:callable, e.g. mypkg.mybot:policy")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise PolicyError(f"--policy {spec!r}: cannot import {module_name!r}: {err}") from err
    for part in name.split("."):
        if not hasattr(found, part):
            raise PolicyError(f"--policy {spec!r}: {module_name!r} has no {name!r}")
        found = getattr(found, part)
    if factory or isinstance(found, type):
        if not callable(found):
            raise PolicyError(f"--policy {spec!r}: {name!r} is not callable")
        try:
            found = found()
        except TypeError as err:  # it wants arguments: a factory or class here takes none
            raise PolicyError(
                f"--policy {spec!r}: {name}() cannot be called without arguments: {err}"
            ) from err
    if not callable(found):
        raise PolicyError(f"--policy {spec!r}: {name!r} is not callable (a policy is observation -> index)")
    policy: EnvPolicyFn = found
    return policy
