"""``duel bench env``: the training env's steps/s, one table and batched, beside PyPI ``riichienv``'s
(a compiled 4-player riichi env) in the same run, both building their observations; and the cost of
building observations alone.

A step is one decision played: ``Game.step`` for us (one index: an action, or one sub-decision of a
choice of several tiles), then the acting seat's planes and mask; one ``env.step`` for riichienv, then
``encode()`` and ``mask()`` of every player it returns an observation for. Both sides pick uniformly
among the legal actions (ours never picks leaving, which would end the hand at once), in the same
process, alternately (bench.common.compare). Batched: ``BatchTables`` of ``--tables`` tables, actions
drawn from the masks in numpy; a batch step counts one step per table.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bench.common import MIN_RUNS, Figure, compare, rate
from bench.engine import riichienv_random_kyoku

if TYPE_CHECKING:
    from duelmahjong.engine.table import Table

# Goal (issue 30): >= 1.5x riichienv's steps/s per core on both profiles, observations built.
BATCH_TABLES = 64


def our_steps(profile: str, seed: int = 1) -> Callable[[], int]:
    """One hand of uniformly random legal indices, the acting seat's planes and mask built each step."""
    import numpy as np

    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.env.game import EnvOptions, Game

    game = Game(RoomSettings(profile=profile), EnvOptions(allow_leave=False))
    rng = random.Random(seed)

    def one_hand() -> int:
        game.reset(rng.getrandbits(63))
        steps = 0
        seat = game.to_act()
        while not game.done:
            game.planes(seat)
            legal = np.flatnonzero(game.mask(seat))
            game.step(seat, int(legal[rng.randrange(len(legal))]))
            steps += 1
            seat = game.to_act()
        return steps

    return one_hand


def our_batch(profile: str, tables: int, seed: int = 1) -> Callable[[], int]:
    """``tables`` tables stepped together for 50 batch steps (auto-reset), random legal indices."""
    import numpy as np

    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.env import BatchTables, EnvOptions

    batch = BatchTables(
        tables, profile, RoomSettings(profile=profile), EnvOptions(allow_leave=False), seed=seed
    )
    step = batch.reset()
    noise = np.random.default_rng(seed)

    def fifty_steps() -> int:
        nonlocal step
        for _ in range(50):
            # A uniform draw among each row's legal indices: the largest of uniform noise on the mask.
            choice = (noise.random(step.action_mask.shape) * step.action_mask).argmax(axis=1)
            step = batch.step(choice)
        return 50 * tables

    return fifty_steps


def our_observations(profile: str, seed: int = 1) -> Callable[[], int]:
    """Observations alone: ``observe`` and ``planes`` for every seat of recorded states of a hand."""
    from duelmahjong.env.observe import observe
    from duelmahjong.env.planes import planes

    recorded = _recorded_tables(profile, seed)

    def every_state() -> int:
        for table, seat in recorded:
            planes(observe(table, seat))
        return len(recorded)

    return every_state


def _recorded_tables(profile: str, seed: int) -> list[tuple[Table, int]]:
    import numpy as np

    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.engine.table import Table
    from duelmahjong.env.game import EnvOptions, Game

    game = Game(RoomSettings(profile=profile), EnvOptions(allow_leave=False))
    rng = random.Random(seed)
    out: list[tuple[Table, int]] = []
    for hand in range(4):
        game.reset(hand)
        while not game.done:
            seat = game.to_act()
            out.append((Table.replay(game.table.events), seat))
            legal = np.flatnonzero(game.mask(seat))
            game.step(seat, int(legal[rng.randrange(len(legal))]))
    return out


def riichienv_steps(seed: int = 1) -> Callable[[], int]:
    """One kyoku of riichienv's random agent, every returned observation encoded with its mask."""
    return riichienv_random_kyoku(seed, observations=True)


def riichienv_observations(seed: int = 1) -> Callable[[], int]:
    """riichienv's ``encode()`` alone, over the observations of a recorded kyoku."""
    from riichienv import RiichiEnv
    from riichienv.agents import RandomAgent

    agent = RandomAgent()
    env = RiichiEnv()
    random.seed(seed)
    recorded = []
    observations = env.reset()
    while not env.done():
        recorded.extend(observations.values())
        observations = env.step({pid: agent.act(obs) for pid, obs in observations.items()})

    def every_observation() -> int:
        for observation in recorded:
            observation.encode()
        return len(recorded)

    return every_observation


def _have_riichienv() -> bool:
    try:
        import riichienv  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(prog="duel bench env")
    parser.add_argument("--runs", type=int, default=MIN_RUNS)
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum seconds per run")
    parser.add_argument("--tables", type=int, default=BATCH_TABLES, help="tables of the batched figure")
    parser.add_argument("--quick", action="store_true", help="short runs, 4 tables (a wiring check)")
    args = parser.parse_args(list(argv))
    seconds, tables = (0.02, 4) if args.quick else (args.seconds, args.tables)
    reference = _have_riichienv()
    if not reference:
        print("bench env: riichienv is not installed (the bench extra): our figures only", flush=True)
    for profile in ("duel", "erren"):
        figures = [
            (f"env.steps_{profile}", our_steps(profile), riichienv_steps),
            (f"env.batch{tables}_{profile}", our_batch(profile, tables), riichienv_steps),
            (f"env.observations_{profile}", our_observations(profile), riichienv_observations),
        ]
        for name, ours, theirs in figures:
            if reference:
                figure = compare(name, ours, "riichienv", theirs(), runs=args.runs, min_seconds=seconds)
            else:
                ours()
                runs = max(args.runs, MIN_RUNS)
                ours_rate = statistics.median(rate(ours, seconds) for _ in range(runs))
                figure = Figure(name, ours_rate, "none", 0, runs)
            print(figure.line(), flush=True)
    return 0
