"""The PettingZoo parallel form: every seat with a decision acts in the same step.

Both seats decide at once during 开始加倍 and 换牌; otherwise one seat decides and the other sends
NOOP (its mask holds NOOP alone). Indices are checked against the masks both seats were shown, then
played in seat order.
"""

from __future__ import annotations

from typing import Any, ClassVar, Unpack

import numpy as np
from pettingzoo import ParallelEnv

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptionArgs, EnvOptions
from duelmahjong.env.spaces import AGENTS, SeatAgents, seat_observation

Observation = dict[str, np.ndarray]


class DuelMahjongParallel(SeatAgents, ParallelEnv[str, Observation, int]):
    metadata: ClassVar[dict[str, Any]] = {"name": "duelmahjong_parallel_v0", "render_modes": []}

    def __init__(
        self,
        profile: str = "duel",
        settings: RoomSettings | None = None,
        options: EnvOptions | None = None,
    ) -> None:
        SeatAgents.__init__(self, profile, settings, options)

    def _observations(self) -> dict[str, Observation]:
        return {agent: seat_observation(self.game, seat) for seat, agent in enumerate(AGENTS)}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Observation], dict[str, dict[str, Any]]]:
        self.game.reset(seed)
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(
        self, actions: dict[str, int]
    ) -> tuple[
        dict[str, Observation],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        game = self.game
        game.step_all((int(actions[AGENTS[0]]), int(actions[AGENTS[1]])))
        observations = self._observations()
        rewards = {agent: game.rewards[seat] for seat, agent in enumerate(AGENTS)}
        done = game.done
        terminations = dict.fromkeys(AGENTS, done)
        truncations = dict.fromkeys(AGENTS, False)
        infos: dict[str, dict[str, Any]] = {agent: {} for agent in AGENTS}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos


def parallel_env(
    profile: str = "duel", settings: RoomSettings | None = None, **options: Unpack[EnvOptionArgs]
) -> DuelMahjongParallel:
    """A PettingZoo parallel env of one table (the options of :func:`~duelmahjong.env.aec.aec_env`)."""
    return DuelMahjongParallel(profile, settings, EnvOptions(**options))
