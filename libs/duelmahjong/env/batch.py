"""Batched stepping: N independent tables in one call, numpy arrays in and out (RiichiEnv's step_batch).

Each table is stepped in the AEC way: one seat acts per table per step (the seat the table waits on;
both seats decide in turn during 开始加倍 and 换牌). A table whose episode ends is reset at once with
its next seed; the step that ended it reports its rewards and ``done`` and already shows the new
episode's first observation. Table ``i``'s episode seeds are :func:`episode_seeds` ``(seed, i)``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptions, Game
from duelmahjong.env.layout import ACTION_COUNT
from duelmahjong.env.planes import SHAPE
from duelmahjong.env.spaces import room


def episode_seeds(seed: int, table: int) -> Iterator[int]:
    """The seeds of table ``table``'s episodes in a batch seeded with ``seed``."""
    stream = random.Random(f"duelmahjong.env.batch:{seed}:{table}")
    while True:
        yield stream.getrandbits(63)


@dataclass(frozen=True, slots=True)
class BatchStep:
    """One step of every table. ``observation`` [n, C, 34] float32 and ``action_mask`` [n, A] int8 are
    the acting seat's (``seat`` [n]); ``rewards`` [n, 2] float32 by seat; ``done`` [n] bool. The arrays
    are the batch's own buffers, overwritten by the next step: copy what you keep."""

    observation: npt.NDArray[np.float32]
    action_mask: npt.NDArray[np.int8]
    seat: npt.NDArray[np.int8]
    rewards: npt.NDArray[np.float32]
    done: npt.NDArray[np.bool_]


class BatchTables:
    """``n`` tables of one room, stepped together."""

    def __init__(
        self,
        n: int,
        profile: str = "duel",
        settings: RoomSettings | None = None,
        options: EnvOptions | None = None,
        *,
        seed: int = 0,
    ) -> None:
        if n < 1:
            raise ValueError(f"a batch has at least one table, got {n}")
        rules = room(profile, settings)
        self.games = [Game(rules, options) for _ in range(n)]
        self._seed = seed
        self._seeds = [episode_seeds(seed, i) for i in range(n)]
        self._observation = np.zeros((n, *SHAPE), np.float32)
        self._mask = np.zeros((n, ACTION_COUNT), np.int8)
        self._seat = np.zeros(n, np.int8)
        self._rewards = np.zeros((n, 2), np.float32)
        self._done = np.zeros(n, np.bool_)

    def __len__(self) -> int:
        return len(self.games)

    def reset(self, seed: int | None = None) -> BatchStep:
        """Every table's first episode (the seed streams restart, from ``seed`` if given)."""
        if seed is not None:
            self._seed = seed
        self._seeds = [episode_seeds(self._seed, i) for i in range(len(self.games))]
        for i, game in enumerate(self.games):
            game.reset(next(self._seeds[i]))
            self._show(i, game)
        self._rewards.fill(0)
        self._done.fill(False)
        return self._result()

    def step(self, actions: npt.ArrayLike) -> BatchStep:
        """Play ``actions[i]`` for table i's acting seat."""
        indices = np.asarray(actions, dtype=np.int64).tolist()
        if len(indices) != len(self.games):
            raise ValueError(f"one action per table: {len(self.games)} tables, {len(indices)} actions")
        rewards, done = self._rewards, self._done
        for i, game in enumerate(self.games):
            game.step(int(self._seat[i]), indices[i])
            rewards[i] = game.rewards
            done[i] = game.done
            if game.done:
                game.reset(next(self._seeds[i]))
            self._show(i, game)
        return self._result()

    def _show(self, i: int, game: Game) -> None:
        seat = game.to_act()
        self._seat[i] = seat
        self._observation[i] = game.planes(seat)
        self._mask[i] = game.mask(seat)

    def _result(self) -> BatchStep:
        return BatchStep(self._observation, self._mask, self._seat, self._rewards, self._done)
