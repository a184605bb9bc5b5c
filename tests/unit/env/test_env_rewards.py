"""Rewards: a hand's reward is scoring's settlement of that hand (fan rate 1), zero-sum but for
猜大小; carries cap as the wallet caps."""

from __future__ import annotations

from collections import Counter

import pytest

from duelmahjong.engine.outcome import Outcome, Termination
from duelmahjong.engine.rewards import hand_rewards
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.env.game import EnvOptions, Game
from services.scoring.core import ScoringCore
from services.scoring.replay import HandBegunFacts, HandPointer, ReplayedHand
from tests.unit.env.play import ROOMS, MixedPolicy, play_episode

PLAYERS = ("seat0", "seat1")


def scored_rewards(outcome: Outcome, settings: RoomSettings) -> tuple[float, float]:
    """What scoring settles the hand at, as each seat's gain: the transfer, and 猜大小 staked on it."""
    replayed = ReplayedHand(
        pointer=HandPointer("table", "hand", 1),
        settings=settings,
        outcome=outcome,
        begun=HandBegunFacts(outcome.hand, settings.profile, 1, tuple((p, 10**9) for p in PLAYERS)),
        events=0,
    )
    scored = ScoringCore().score_replayed(replayed)
    figures = scored.settlement
    gains = dict.fromkeys(PLAYERS, 0.0)
    if figures.payer:
        gains[figures.payer] -= figures.fan_amount
        gains[figures.payee] += figures.fan_amount
        guess = scored.guess
        if guess is not None:
            stake = figures.fan_amount
            gains[figures.payee] += stake * (guess.factor or 0) if guess.right else -stake
    return gains[PLAYERS[0]], gains[PLAYERS[1]]


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_reward_of_every_hand_is_scorings_settlement(profile: str) -> None:
    settings, options = ROOMS[profile]
    game = Game(settings, options)
    policy = MixedPolicy(7, random_share=0.1, leave=0.003)
    endings: Counter[str] = Counter()
    for episode in range(80):
        play_episode(game, policy, episode)
        (outcome,) = game.outcomes
        endings[outcome.termination.value] += 1
        assert tuple(game.rewards) == scored_rewards(outcome, settings)
        if outcome.guess is None or not outcome.guess.rolled:
            assert sum(game.rewards) == 0
    assert endings["win"] >= 10 and endings["escape"] >= 1, endings


def test_a_pairing_episode_sums_its_hands_and_doubles_the_progressive_multiplier() -> None:
    game = Game(RoomSettings(profile="duel"), EnvOptions(hands=4, allow_leave=False))
    play_episode(game, MixedPolicy(3, random_share=0.0), 11)
    assert [outcome.progressive for outcome in game.outcomes] == [1, 2, 4, 8]


def test_carries_cap_the_transfer_as_the_wallet_does() -> None:
    game = Game(RoomSettings(profile="duel"), EnvOptions(allow_leave=False))
    policy = MixedPolicy(5, random_share=0.0)
    for episode in range(40):
        play_episode(game, policy, episode)
        (outcome,) = game.outcomes
        if outcome.termination is Termination.WIN and outcome.win and outcome.win.total_fan > 2:
            break
    else:
        pytest.fail("no win of more than 2 fan in 40 hands")
    capped = hand_rewards(outcome, "duel", carries=(2, 2))
    assert sorted(capped) == [-2.0, 2.0]
    assert hand_rewards(outcome, "duel", carries=(10**6, 10**6)) == tuple(game.rewards)
