"""``duel bench evaluation``: the strong bot against the house bot by duplicate evaluation, on both
profiles (docs/evaluation.md; ``duel evaluate`` prints the lines).

The full run plays 20,000 hands per profile (10,000 walls × 2 seats), the size docs/benchmarks.md
quotes, in two worker processes, and fails (exit 1) when the gain's 95 % interval does not exclude
zero. ``--quick`` plays 200 per profile in one process: a wiring check that ``make test`` runs, too
short for the interval to decide (erren's 胡加倍 makes its samples wide), so it does not fail on it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from duelmahjong.cli.evaluate import lines, summary
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.evaluation.runner import evaluate

FULL_HANDS = 20_000
QUICK_HANDS = 200
SEED = 2026


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(prog="duel bench evaluation")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_HANDS} hands a profile, one process")
    parser.add_argument("--hands", type=int, default=FULL_HANDS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(list(argv))
    hands, workers = (QUICK_HANDS, 1) if args.quick else (args.hands, args.workers)
    status = 0
    for profile in ("duel", "erren"):
        tally = evaluate(
            RoomSettings(profile=profile), "strong", "house", hands=hands, seed=args.seed, workers=workers
        )
        shown = argparse.Namespace(profile=profile, seed=args.seed, agent_a="strong", agent_b="house")
        result = summary(shown, tally)
        print("\n".join(lines(result)), flush=True)
        mean, low = result["mean_per_hand"], result["ci95"][0]
        print(f"bench evaluation.strong_vs_house_{profile} mean={mean:+.3f} ci95_low={low:+.3f}")
        if low <= 0 and not args.quick:
            status = 1
    return status
