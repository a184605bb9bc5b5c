"""A decision's record (what ``duel export`` writes in the env's terms) gives back, step for step,
exactly the planes, mask and index the env showed the policy that made it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from duelmahjong.engine.actions import Action
from duelmahjong.engine.table import Table
from duelmahjong.env.game import Game
from duelmahjong.env.layout import ACTION_COUNT, index_of
from duelmahjong.env.records import env_fields, observation_json, observation_of, samples
from duelmahjong.env.selection import decode
from tests.unit.env.play import ROOMS, MixedPolicy


def _hand_seed(episode_seed: int) -> int:
    return random.Random(episode_seed).getrandbits(64)  # the first hand's seed, as Game deals it


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_records_replay_what_the_env_showed_at_every_step(profile: str) -> None:
    settings, options = ROOMS[profile]
    checked = multi_step = 0
    for episode in range(12):
        game, policy = Game(settings, options), MixedPolicy(episode)
        game.reset(seed=episode)
        # The same hand on a table of its own, advanced one whole decision at a time, as the exporter
        # replays an archived hand.
        shadow = Table(settings)
        shadow.start_hand(_hand_seed(episode), items=options.items)
        shown: dict[int, list[tuple[np.ndarray, np.ndarray, int]]] = {0: [], 1: []}
        while not game.done:
            seat = game.to_act()
            mask = game.mask(seat).copy()
            planes = game.planes(seat)
            index = policy.index(game, seat)
            shown[seat].append((planes, mask, index))
            game.step(seat, index)
            if game.choices[seat].kind:
                continue  # a choice of several tiles goes on
            indices = [step[2] for step in shown[seat]]
            action = decode(shadow, seat, indices)
            # The record goes through JSON, as an exported line does.
            record = json.loads(json.dumps(env_fields(shadow, seat, action)))
            replayed = list(samples(record))
            assert [sample.index for sample in replayed] == index_of(action)
            assert all(sample.mask[sample.index] for sample in replayed)
            # A record selects a choice's tiles in one order (the action's, sorted); where the policy
            # chose in that order every step is the one it was shown, else the first step is.
            same_order = indices == index_of(action)
            compared = shown[seat] if same_order else shown[seat][:1]
            for sample, (planes_shown, mask_shown, _) in zip(replayed, compared, strict=False):
                assert np.array_equal(sample.planes, planes_shown)
                assert np.array_equal(sample.mask, mask_shown)
                assert sample.mask.shape == (ACTION_COUNT,)
            checked += 1
            multi_step += same_order and len(indices) > 1
            shadow.apply(action)
            shown[seat] = []
    assert checked > 200 and multi_step > 0


def test_an_observation_survives_json() -> None:
    settings, options = ROOMS["duel"]
    table = Table(settings)
    table.start_hand(5, items=options.items)
    game = Game(settings, options)
    game.table = table
    for seat in (0, 1):
        obs = game.observation(seat)
        assert observation_of(json.loads(json.dumps(observation_json(obs)))) == obs


def test_a_record_refuses_an_action_the_env_would_not_offer() -> None:
    settings, _ = ROOMS["erren"]
    table = Table(settings)
    table.start_hand(3)
    seat = table.state.dealer
    with pytest.raises(Exception, match="not legal"):
        env_fields(table, seat, Action(seat, "pong"))
