"""The action space: every legal action of simulated hands (both profiles, every optional kind) has an
index sequence that the mask offers step by step and that decodes back to the same action."""

from __future__ import annotations

import random

import numpy as np
import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.legal import combinatorial_reason, unseen_kinds
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L
from duelmahjong.env.game import Game
from duelmahjong.env.selection import Choice, choose, decode, fill_mask
from tests.unit.env.play import ROOMS, MixedPolicy


def _offered_step_by_step(table: Table, seat: int, indices: list[int]) -> Action | None:
    """Play ``indices`` into a fresh choice, checking each is in the mask at its step."""
    choice, mask, action = Choice(), np.zeros(L.ACTION_COUNT, np.int8), None
    for index in indices:
        fill_mask(table, seat, choice, mask)
        assert mask[index], f"{L.describe(index)} of {indices} is not offered"
        action = choose(table, seat, choice, index, mask)
    return action


def _samples(table: Table, seat: int, legal: list[Action], rng: random.Random) -> list[Action]:
    """Combinatorial actions beyond the listed representatives: random legal tile choices."""
    state, out = table.state, []
    held = [kind for kind in range(34) for _ in range(state.hands[seat][kind])]
    kinds = {action.kind for action in legal}
    if A.EXCHANGE in kinds:
        for size in range(len(held) + 1):
            action = Action(seat, A.EXCHANGE, tiles=tuple(sorted(rng.sample(held, size))))
            if combinatorial_reason(state, action) is None:
                out.append(action)
    for kind in (A.TAKE_TRIPLET, A.SHUFFLE_ITEM):
        if kind in kinds:
            out.append(Action(seat, kind, tiles=tuple(sorted(rng.sample(held, 3)))))
    if A.SWAP_ITEM in kinds:
        source = rng.choice(held)
        targets = [kind for kind in unseen_kinds(state) if kind != source]
        if targets:
            out.append(Action(seat, A.SWAP_ITEM, source, target=rng.choice(targets)))
    return out


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_every_legal_action_round_trips_through_its_indices(profile: str) -> None:
    settings, options = ROOMS[profile]
    game, policy, rng = Game(settings, options), MixedPolicy(1), random.Random(2)
    seen_kinds: set[str] = set()
    for episode in range(25):
        game.reset(episode)
        while not game.done:
            table = game.table
            for seat in game.deciding():
                if game.choices[seat].kind:
                    continue
                legal = table.legal_actions(seat)
                for action in [*legal, *_samples(table, seat, legal, rng)]:
                    indices = L.index_of(action)
                    assert decode(table, seat, indices) == action
                    assert _offered_step_by_step(table, seat, indices) == action
                    seen_kinds.add(action.kind)
            seat = game.to_act()
            game.step(seat, policy.index(game, seat))
    expected = {A.DISCARD, A.EXCHANGE, A.PASS, A.LEAVE, A.SELF_DRAW_WIN, A.WIN, A.PONG, A.CHI}
    if profile == "duel":
        expected |= {A.TAKE_TRIPLET, A.RUB, A.SWAP_ITEM, A.SHUFFLE_ITEM, A.GUESS_BIG, A.COLLECT}
    else:
        expected |= {A.CHOOSE_DOUBLING, A.DECLINE_DOUBLING, A.DECLARE_READY}
    assert expected <= seen_kinds, sorted(expected - seen_kinds)


def test_a_seat_without_a_decision_may_only_noop() -> None:
    settings, options = ROOMS["duel"]
    game = Game(settings, options)
    game.reset(3)
    while game.table.phase == "exchange":
        game.step(game.to_act(), L.CONFIRM)
    waiting = 1 - game.to_act()
    assert np.flatnonzero(game.mask(waiting)).tolist() == [L.NOOP]


def test_an_index_outside_the_mask_is_refused_and_changes_nothing() -> None:
    game = Game(ROOMS["erren"][0])
    game.reset(4)
    seat = game.to_act()
    events = len(game.table.events)
    with pytest.raises(IllegalActionError, match="not legal"):
        game.step(seat, L.PONG)
    assert len(game.table.events) == events


def test_a_triplet_or_shuffle_is_confirmed_only_with_three_tiles() -> None:
    table = Table(ROOMS["duel"][0])
    table.start_hand(5, items=({"shuffle_item": 1}, {"shuffle_item": 1}))
    for seat in (0, 1):
        table.apply(Action(seat, A.EXCHANGE))
    seat = table.to_move
    choice, mask = Choice(), np.zeros(L.ACTION_COUNT, np.int8)
    if not fill_mask(table, seat, choice, mask)[L.BEGIN_SHUFFLE]:
        pytest.skip("no unseen triplet for 移花接木 in this deal")
    choose(table, seat, choice, L.BEGIN_SHUFFLE, mask)
    held = [kind for kind in range(34) if table.state.hands[seat][kind]]
    for tile in held[:2]:
        assert not fill_mask(table, seat, choice, mask)[L.CONFIRM]
        choose(table, seat, choice, L.SELECT + tile, mask)
    fill_mask(table, seat, choice, mask)
    choose(table, seat, choice, L.SELECT + held[2], mask)
    assert np.flatnonzero(fill_mask(table, seat, choice, mask)).tolist() == [L.CONFIRM, L.LEAVE]


def test_every_index_has_a_name() -> None:
    names = [L.describe(index) for index in range(L.ACTION_COUNT)]
    assert len(set(names)) == L.ACTION_COUNT
    assert names[L.DISCARD + 4] == "discard 5m" and names[L.NOOP] == "noop"
