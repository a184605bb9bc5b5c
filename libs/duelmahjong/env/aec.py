"""The PettingZoo AEC form: the seats act one at a time, the one whose decision the table waits for.

During 开始加倍 and 换牌 both seats decide; here seat 0 decides first, then seat 1 (neither sees the
other's choice: 开始加倍 stays hidden until both are revealed). A choice of several tiles keeps its
seat selected until it is confirmed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Unpack

import numpy as np
from pettingzoo import AECEnv

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptionArgs, EnvOptions
from duelmahjong.env.spaces import AGENTS, SeatAgents, seat_observation


class DuelMahjongAEC(SeatAgents, AECEnv[str, dict[str, np.ndarray], int]):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "duelmahjong_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": True,
    }

    def __init__(
        self,
        profile: str = "duel",
        settings: RoomSettings | None = None,
        options: EnvOptions | None = None,
        *,
        render_mode: str | None = None,
    ) -> None:
        SeatAgents.__init__(self, profile, settings, options)
        self.render_mode = render_mode

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.game.reset(seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.agent_selection = AGENTS[self.game.to_act()]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = AGENTS.index(agent)
        return seat_observation(self.game, seat)

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} has a decision: None is only for a finished episode")
        game = self.game
        self._cumulative_rewards[agent] = 0.0
        game.step(AGENTS.index(agent), int(action))
        for seat, name in enumerate(AGENTS):
            self.rewards[name] = game.rewards[seat]
        if game.done:
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = AGENTS[game.to_act()]
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        state = self.game.table.state
        return f"hand {state.hand_number} phase {state.phase} to move {self.game.to_act()}"

    def close(self) -> None:
        """Nothing to release: the table lives in this process's memory."""


def aec_env(
    profile: str = "duel",
    settings: RoomSettings | None = None,
    *,
    render_mode: str | None = None,
    **options: Unpack[EnvOptionArgs],
) -> DuelMahjongAEC:
    """A PettingZoo AEC env of one table of ``profile`` under ``settings`` (default: the profile's
    default room). ``options`` are :class:`~duelmahjong.env.game.EnvOptions`' fields: ``hands`` per
    episode, ``carries`` to cap rewards as the wallet does, ``allow_leave`` False to mask leaving
    (escape) out, the ``items`` each seat holds at every deal."""
    return DuelMahjongAEC(profile, settings, EnvOptions(**options), render_mode=render_mode)
