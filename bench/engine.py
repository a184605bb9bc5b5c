"""``duel bench engine``: engine steps/s with uniformly random legal actions against PyPI ``riichienv``'s
random-agent ``env.step`` rate (a compiled 4-player riichi engine), and bot-vs-bot duel hands/s.

A step is one action applied: ``Table.apply`` for us (validation, events, fold, and the automatic steps
that follow), one ``env.step`` for riichienv. Both sides pick uniformly among the legal actions
(ours never picks leaving, which would end the hand at once), the same way, in the same process.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Sequence

from bench.common import MIN_RUNS, compare, rate

# Goals (issue 4): steps >= 0.5x riichienv's; >= 300 bot-vs-bot duel hands/s on one core.


def our_random_hands(profile: str, seed: int = 1) -> Callable[[], int]:
    from duelmahjong.engine import actions as A
    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.engine.table import Table

    settings = RoomSettings(profile=profile)
    rng = random.Random(seed)

    def one_hand() -> int:
        table = Table(settings)
        table.start_hand(rng.getrandbits(64))
        steps = 0
        while table.state.phase not in ("over", "closed"):
            options = [a for s in (0, 1) for a in table.legal_actions(s) if a.kind != A.LEAVE]
            table.apply(rng.choice(options))
            steps += 1
        return steps

    return one_hand


def riichienv_random_kyoku(seed: int = 1, *, observations: bool = False) -> Callable[[], int]:
    """One kyoku of riichienv's random agent; with ``observations``, every observation it returns is
    encoded with its mask before the step (``duel bench env``)."""
    from riichienv import RiichiEnv
    from riichienv.agents import RandomAgent

    agent = RandomAgent()
    env = RiichiEnv()
    random.seed(seed)

    def one_kyoku() -> int:
        seen = env.reset()
        steps = 0
        while not env.done():
            if observations:
                for observation in seen.values():
                    observation.encode()
                    observation.mask()
            seen = env.step({pid: agent.act(obs) for pid, obs in seen.items()})
            steps += 1
        return steps

    return one_kyoku


def our_bot_hands(seed: int = 1) -> Callable[[], int]:
    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.engine.simulate import bot_turn
    from duelmahjong.engine.table import Table

    settings = RoomSettings(profile="duel")
    rng = random.Random(seed)

    def eight_hands() -> int:
        table = Table(settings)  # one pairing of 8 hands: progressive multiplier, dealer rotation
        for _ in range(8):
            table.start_hand(rng.getrandbits(64))
            while bot_turn(table):
                pass
        return 8

    return eight_hands


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(prog="duel bench engine")
    parser.add_argument("--runs", type=int, default=MIN_RUNS)
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum seconds per run")
    args = parser.parse_args(list(argv))
    reference = riichienv_random_kyoku()
    for profile in ("duel", "erren"):
        figure = compare(
            f"engine.steps_{profile}",
            our_random_hands(profile),
            "riichienv",
            reference,
            runs=args.runs,
            min_seconds=args.seconds,
        )
        print(figure.line(), flush=True)
    bots = our_bot_hands()
    bots()
    hands = statistics.median(rate(bots, args.seconds) for _ in range(max(args.runs, MIN_RUNS)))
    print(f"bench engine.bot_hands ours={hands:.0f}/s", flush=True)
    return 0
