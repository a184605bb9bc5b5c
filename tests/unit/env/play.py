"""Driving env tables in tests: rooms that enable every action kind, a seeded policy that mostly
plays the engine's bot through the action space (so hands are won, doubled, guessed) and otherwise
a random legal index, and the check that a client's env policy saw and did what the env would."""

from __future__ import annotations

import random

import numpy as np

from duelmahjong.client.env_policy import Decided
from duelmahjong.engine import actions as A
from duelmahjong.engine.bot import choose as bot_choose
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L
from duelmahjong.env.game import EnvOptions, Game
from duelmahjong.env.layout import LEAVE, index_of
from duelmahjong.env.observe import observe
from duelmahjong.env.planes import planes
from duelmahjong.env.selection import Choice, choose, fill_mask

# Every optional kind on: items (T6), 猜大小 (T12), both T5 offers.
DUEL_EVERYTHING = RoomSettings(
    profile="duel",
    items_enabled=True,
    guess_enabled=True,
    triplet_offer_probability=0.3,
    rub_offer_probability=0.3,
)
ERREN = RoomSettings(profile="erren")
ITEMS = ({"swap_item": 2, "shuffle_item": 2}, {"swap_item": 2, "shuffle_item": 2})
ROOMS = {"duel": (DUEL_EVERYTHING, EnvOptions(items=ITEMS)), "erren": (ERREN, EnvOptions())}


class MixedPolicy:
    """The bot's action as indices with probability ``1 - random_share``, else a random legal index;
    leaving only with probability ``leave``."""

    def __init__(self, seed: int, *, random_share: float = 0.3, leave: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.random_share = random_share
        self.leave = leave
        self.planned: dict[int, list[int]] = {0: [], 1: []}

    def index(self, game: Game, seat: int) -> int:
        mask = game.mask(seat)
        planned = self.planned[seat]
        if planned:
            return planned.pop(0)
        legal = np.flatnonzero(mask).tolist()
        if LEAVE in legal and self.rng.random() < self.leave:
            return LEAVE
        choosing = game.choices[seat].kind or (game.table.phase == "exchange")
        if choosing or self.rng.random() < self.random_share:
            options = [index for index in legal if index != LEAVE] or legal
            return int(self.rng.choice(options))
        table = game.table
        action = bot_choose(table.state, seat, table.legal_actions(seat))
        if action.kind == A.LEAVE:  # the bot never leaves; a seat whose only choice is leaving does
            return LEAVE
        indices = index_of(action)
        self.planned[seat] = indices[1:]
        return indices[0]


def play_episode(game: Game, policy: MixedPolicy, seed: int, *, limit: int = 2000) -> int:
    """Reset ``game`` from ``seed`` and play it out; returns the steps taken."""
    game.reset(seed)
    policy.planned = {0: [], 1: []}
    steps = 0
    while not game.done:
        seat = game.to_act()
        game.step(seat, policy.index(game, seat))
        steps += 1
        if steps > limit:
            raise AssertionError(f"episode {seed} did not end in {limit} steps")
    return steps


def check_against_env(table: Table, seat: int, decided: Decided) -> None:
    """The decision as the env would have seen and resolved it on ``table``."""
    expected = observe(table, seat)
    assert decided.observation == expected
    choice = Choice()
    action = None
    for shown, mask, index in decided.steps:
        env_mask = fill_mask(table, seat, choice, np.zeros(L.ACTION_COUNT, np.int8), allow_leave=False)
        assert np.array_equal(mask, env_mask), (L.describe(index), np.flatnonzero(mask != env_mask))
        assert np.array_equal(shown, planes(expected, choice))
        action = choose(table, seat, choice, index, env_mask)
    assert action == decided.action
