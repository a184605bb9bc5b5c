"""No leak: a seat's observation (and its planes) is unchanged when what it cannot see changes — the
opponent's concealed tiles traded with wall tiles, the wall and the pool reshuffled, the seed, the
opponent's 开始加倍 before both are revealed — and it agrees with the engine's own seat view."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import DOUBLING
from duelmahjong.engine.table import Table
from duelmahjong.env.game import Game
from duelmahjong.env.observation import DISCARD_CLAIMED, HIDDEN_KONG
from duelmahjong.env.observe import observe
from duelmahjong.env.planes import planes
from duelmahjong.rules.tiles import format_tiles, tile_names, tiles_of
from tests.unit.env.play import MixedPolicy

# Default rooms: no T5 offers and no items, whose legal lists name the unseen kinds by design (T5/T6).
ROOMS = (RoomSettings(profile="duel"), RoomSettings(profile="erren"))


def _hidden_changed(table: Table, viewer: int, rng: random.Random) -> Table:
    """The same table with everything ``viewer`` cannot see changed, consistently with what it saw."""
    other = Table.replay(table.events)
    state = other.state
    opponent = 1 - viewer
    live = list(range(state.head, state.tail))
    held = [kind for kind in range(34) for _ in range(state.hands[opponent][kind])]
    rng.shuffle(held)
    for tile, position in zip(held, rng.sample(live, min(len(live), len(held))), strict=False):
        if state.wall[position] < 34:  # trade a concealed tile for a wall tile (flowers stay)
            state._move(opponent, tile, -1)
            state._move(opponent, state.wall[position], 1)
            state.wall[position] = tile
    segment = state.wall[state.head : state.tail]
    rng.shuffle(segment)
    state.wall[state.head : state.tail] = segment
    rng.shuffle(state.pool)
    state.seed = rng.getrandbits(64)
    if state.phase == DOUBLING and state.doubling[opponent] is not None:
        state.doubling[opponent] = not state.doubling[opponent]
    return other


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    room=st.sampled_from(ROOMS),
    steps=st.integers(0, 80),
    viewer=st.sampled_from((0, 1)),
    hidden=st.randoms(use_true_random=False),
)
def test_an_observation_does_not_change_with_what_the_seat_cannot_see(
    seed: int, room: RoomSettings, steps: int, viewer: int, hidden: random.Random
) -> None:
    game, policy = Game(room), MixedPolicy(seed)
    game.reset(seed)
    for _ in range(steps):
        if game.done:
            break
        seat = game.to_act()
        game.step(seat, policy.index(game, seat))
    seen = observe(game.table, viewer)
    changed = observe(_hidden_changed(game.table, viewer, hidden), viewer)
    assert changed == seen
    assert np.array_equal(planes(changed), planes(seen))


def test_an_observation_agrees_with_the_engines_seat_view() -> None:
    for room in ROOMS:
        game, policy = Game(room), MixedPolicy(3)
        for episode in range(5):
            game.reset(episode)
            while not game.done:
                for viewer in (0, 1):
                    _agrees(observe(game.table, viewer), game.table.view(viewer))
                seat = game.to_act()
                game.step(seat, policy.index(game, seat))


def _agrees(obs: object, view: dict[str, object]) -> None:
    from duelmahjong.env.observation import SeatObservation

    assert isinstance(obs, SeatObservation)
    assert format_tiles(tiles_of(list(obs.hand))) == view["seats"][obs.seat]["hand"]  # type: ignore[index]
    assert (obs.phase, obs.to_move, obs.wall_remaining) == (
        view["phase"],
        view["to_move"],
        view["wall_remaining"],
    )
    assert [str(a) for a in obs.legal] == view["legal_actions"]
    for seat, entry in enumerate(view["seats"]):  # type: ignore[arg-type]
        unclaimed = [
            t for t, f in zip(obs.rivers[seat], obs.river_flags[seat], strict=True) if not f & DISCARD_CLAIMED
        ]
        assert tile_names(unclaimed) == entry["discards"]
        assert obs.doubling[seat] == entry.get("doubling")
        hidden = [m for m in entry["melds"] if not m["tiles"]]
        assert len(hidden) == sum(m.tile == HIDDEN_KONG for m in obs.melds[seat])
    assert obs.drawn == (-1 if "drawn" not in view else tiles_of_name(str(view["drawn"])))


def tiles_of_name(name: str) -> int:
    from duelmahjong.rules.tiles import Tile

    return Tile.parse(name).kind
