"""Seeds: the same seed replays the same hand (events and observations); a batch of N tables equals
N single tables reset with the batch's seeds."""

from __future__ import annotations

import random

import numpy as np
import pytest

from duelmahjong.env import BatchTables, aec_env
from duelmahjong.env.batch import episode_seeds
from duelmahjong.env.game import Game
from tests.unit.env.play import ROOMS


def _run(profile: str, seed: int) -> tuple[list[dict[str, object]], list[np.ndarray]]:
    settings, options = ROOMS[profile]
    env = aec_env(profile, settings, items=options.items)
    env.reset(seed=seed)
    rng = random.Random(99)
    seen = []
    for _agent in env.agent_iter(max_iter=3000):
        observation, _, terminated, truncated, _ = env.last()
        seen.append(observation["observation"].copy())
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]).tolist())))
    return [event.to_json() for event in env.game.table.events], seen


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_same_seed_gives_the_same_events_and_observations(profile: str) -> None:
    events, observations = _run(profile, 21)
    again_events, again_observations = _run(profile, 21)
    assert events == again_events
    assert len(observations) == len(again_observations)
    assert all(np.array_equal(a, b) for a, b in zip(observations, again_observations, strict=True))
    assert _run(profile, 22)[0][1] != events[1]  # another seed, another deal


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_a_batch_equals_single_tables_with_the_same_seeds(profile: str) -> None:
    settings, options = ROOMS[profile]
    batch = BatchTables(3, profile, settings, options, seed=5)
    singles = [Game(settings, options) for _ in range(3)]
    seeds = [episode_seeds(5, i) for i in range(3)]
    for game, stream in zip(singles, seeds, strict=True):
        game.reset(next(stream))
    step = batch.reset()
    rng = random.Random(1)
    episodes = 0
    for _ in range(600):
        actions = []
        for i, game in enumerate(singles):
            seat = game.to_act()
            assert step.seat[i] == seat
            assert np.array_equal(step.observation[i], game.planes(seat))
            assert np.array_equal(step.action_mask[i], game.mask(seat))
            actions.append(int(rng.choice(np.flatnonzero(game.mask(seat)).tolist())))
        for game, action in zip(singles, actions, strict=True):
            game.step(game.to_act(), action)
        step = batch.step(np.array(actions))
        for i, game in enumerate(singles):
            assert step.rewards[i].tolist() == game.rewards
            assert bool(step.done[i]) == game.done
            if game.done:
                episodes += 1
                game.reset(next(seeds[i]))
    assert episodes >= 3
