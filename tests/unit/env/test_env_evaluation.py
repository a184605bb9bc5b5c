"""An env policy is an agent of duplicate evaluation (``duel evaluate mypkg.mybot:policy house``): the
object that plays in the env plays here, from the env's observation and mask of its seat."""

from __future__ import annotations

import random
import sys
import types
from typing import Any

import numpy as np
import pytest

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.layout import CONFIRM, DISCARD, LEAVE, PASS, SELF_DRAW_WIN, WIN
from duelmahjong.evaluation.agents import AgentError, resolve_agent
from duelmahjong.evaluation.duplicate import play_pair
from duelmahjong.evaluation.env_agent import EnvAgent
from duelmahjong.evaluation.runner import evaluate


class Tsumogiri:
    """Wins when it may, keeps its hand, passes on claims, else discards the rightmost legal tile;
    records every mask it was shown."""

    def __init__(self) -> None:
        self.masks: list[np.ndarray] = []

    def __call__(self, observation: dict[str, Any]) -> int:
        mask = observation["action_mask"]
        assert observation["observation"].shape == (66, 34)
        self.masks.append(mask)
        legal = np.flatnonzero(mask)
        for preferred in (SELF_DRAW_WIN, WIN, CONFIRM, PASS):
            if mask[preferred]:
                return preferred
        discards = [int(i) for i in legal if DISCARD <= i < DISCARD + 34]
        return discards[-1] if discards else int(legal[0])


def random_policy(observation: dict[str, Any]) -> int:
    return int(
        random.Random(int(observation["observation"].sum() * 1000)).choice(
            np.flatnonzero(observation["action_mask"]).tolist()
        )
    )


@pytest.fixture
def policies(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("evaluated_policies")
    module.Tsumogiri = Tsumogiri  # type: ignore[attr-defined]
    module.random_policy = random_policy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "evaluated_policies", module)
    return module


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_an_env_policy_plays_whole_walls_from_its_masks(profile: str, policies: types.ModuleType) -> None:
    agent = resolve_agent("evaluated_policies:Tsumogiri")
    assert isinstance(agent, EnvAgent) and isinstance(agent.policy, Tsumogiri)
    settings = RoomSettings(profile=profile)
    for seed in range(6):
        pair = play_pair(settings, seed, agent, resolve_agent("house"))
        assert all(game.outcome is not None for game in pair.games)
    # Leaving (escape) is never offered, and every mask offered something.
    assert agent.policy.masks and all(mask.sum() > 0 and not mask[LEAVE] for mask in agent.policy.masks)


def test_an_env_policy_against_itself_cancels_out_exactly(policies: types.ModuleType) -> None:
    tally = evaluate(
        RoomSettings(profile="duel"),
        "evaluated_policies:random_policy",
        "evaluated_policies:random_policy",
        hands=40,
        seed=3,
    )
    assert tally.pair_totals and all(total == 0 for total in tally.pair_totals)


def test_an_env_policy_that_cannot_be_loaded_is_named(policies: types.ModuleType) -> None:
    for name, why in (("evaluated_policies:missing", "has no 'missing'"), ("no_such_mod:p", "cannot import")):
        with pytest.raises(AgentError, match=why):
            resolve_agent(name)
