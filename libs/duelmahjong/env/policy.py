"""Env policies: ``policy(observation) -> index``, asked through a decision's steps, and loaded by name.

An env policy is the env's own kind of agent: ``observation`` is what the env's ``observe(agent)`` gives
(``{"observation": planes, "action_mask": mask}``, docs/env.md), the answer one index of the fixed
action space with ``action_mask[index] == 1``. A choice of several tiles (换牌, a taken triplet, 移花接木,
偷天换日) is a short sequence of indices, so the policy is asked again for each of its steps, with the
planes and mask of the choice so far — as the env's AEC form keeps the seat selected until it
confirms. :func:`ask` plays one decision so from a seat's :class:`SeatObservation` and a mask source;
the same policy object plays in the env, in duplicate evaluation (``duel evaluate mypkg.bot:policy
house``) and on the live server (``duel bot --policy``, ``duelmahjong.client.env_policy``).
:func:`load_policy` reads the ``module:callable`` those commands take.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.env import layout as L
from duelmahjong.env.observation import SeatObservation
from duelmahjong.env.planes import planes
from duelmahjong.env.selection import Choice, Mask, resolve

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


def pending_kind(obs: SeatObservation, choice: Choice) -> str:
    """The kind being chosen: the choice's, or 换牌 while the seat may still exchange (what
    ``selection.pending_kind`` reads from a table, read from the observation)."""
    return choice.kind or (A.EXCHANGE if any(a.kind == A.EXCHANGE for a in obs.legal) else "")


def ask(policy: EnvPolicyFn, obs: SeatObservation, mask_of: Callable[[Choice], Mask]) -> Decided:
    """Ask ``policy``, step by step, for the engine action of the seat's decision; ``mask_of`` gives
    the seat's mask with a choice in progress (the env's ``fill_mask`` on a table, or the client
    library's ``legal_mask`` from a stream)."""
    steps: list[Step] = []
    choice = Choice()
    for _ in range(MAX_STEPS):
        mask = mask_of(choice)
        shown = planes(obs, choice)
        index = int(policy({"observation": shown, "action_mask": mask.copy()}))
        steps.append((shown, mask.copy(), index))
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
        raise PolicyError(f"{spec!r}: expected module:callable, e.g. mypkg.mybot:policy")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise PolicyError(f"{spec!r}: cannot import {module_name!r}: {err}") from err
    for part in name.split("."):
        if not hasattr(found, part):
            raise PolicyError(f"{spec!r}: {module_name!r} has no {name!r}")
        found = getattr(found, part)
    if factory or isinstance(found, type):
        if not callable(found):
            raise PolicyError(f"{spec!r}: {name!r} is not callable")
        try:
            found = found()
        except TypeError as err:  # it wants arguments: a factory or class here takes none
            raise PolicyError(f"{spec!r}: {name}() cannot be called without arguments: {err}") from err
    if not callable(found):
        raise PolicyError(f"{spec!r}: {name!r} is not callable (a policy is observation -> index)")
    policy: EnvPolicyFn = found
    return policy
