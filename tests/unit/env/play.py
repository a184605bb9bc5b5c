"""Driving env tables in tests: rooms that enable every action kind, and a seeded policy that mostly
plays the engine's bot through the action space (so hands are won, doubled, guessed) and otherwise
a random legal index."""

from __future__ import annotations

import random

import numpy as np

from duelmahjong.engine import actions as A
from duelmahjong.engine.bot import choose
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptions, Game
from duelmahjong.env.layout import LEAVE, index_of

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
        action = choose(table.state, seat, table.legal_actions(seat))
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
