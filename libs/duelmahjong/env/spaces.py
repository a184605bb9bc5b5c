"""The observation and action spaces every form of the env shares (gymnasium spaces), and the part of
the AEC and parallel forms that is the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptions, Game
from duelmahjong.env.layout import ACTION_COUNT
from duelmahjong.env.planes import SHAPE

AGENTS = ("seat_0", "seat_1")


def observation_space() -> spaces.Dict:
    """A seat's observation: its planes, and its action mask (PettingZoo's masked-action form)."""
    return spaces.Dict(
        {
            "observation": spaces.Box(0.0, 1.0, SHAPE, np.float32),
            "action_mask": spaces.Box(0, 1, (ACTION_COUNT,), np.int8),
        }
    )


def action_space() -> spaces.Discrete:
    return spaces.Discrete(ACTION_COUNT)


def seat_observation(game: Game, seat: int) -> dict[str, npt.NDArray[Any]]:
    """The observation of :func:`observation_space` for ``seat`` (the mask copied: the game reuses its)."""
    return {"observation": game.planes(seat), "action_mask": game.mask(seat).copy()}


class SeatAgents:
    """What both PettingZoo forms share: the game, the agents ``seat_0`` and ``seat_1``, their spaces."""

    def __init__(self, profile: str, settings: RoomSettings | None, options: EnvOptions | None) -> None:
        self.game = Game(room(profile, settings), options)
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._spaces = (observation_space(), action_space())

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[0]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[1]


def room(profile: str, settings: RoomSettings | None) -> RoomSettings:
    """The room's settings: given ones (their profile must be ``profile``), else the profile's defaults."""
    if settings is None:
        return RoomSettings(profile=profile)
    if settings.profile != profile:
        raise ValueError(f"settings are for profile {settings.profile!r}, the env for {profile!r}")
    return settings
