"""``duel simulate``: bot-vs-bot hands through the engine, with statistics; ``--check`` verifies the
engine's invariants after every event and exits 1 on the first violation."""

from __future__ import annotations

import argparse
import json
import sys

from duelmahjong.engine.errors import SettingsError
from duelmahjong.engine.invariants import InvariantViolation
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.simulate import simulate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", choices=("duel", "erren"), default="duel")
    parser.add_argument("--hands", type=int, default=1000, help="how many hands to play (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the hand seeds (default 0)")
    parser.add_argument("--check", action="store_true", help="verify invariants after every event")
    parser.add_argument("--json", action="store_true", help="print one JSON summary instead of text")
    parser.add_argument(
        "--offers",
        type=float,
        default=0.0,
        metavar="P",
        help="duel: probability of each in-game offer after a draw (T5; default 0)",
    )
    parser.add_argument("--guess", action="store_true", help="duel: play 猜大小 after wins (T12)")


def run(args: argparse.Namespace) -> int:
    if args.hands < 1:
        print("--hands must be at least 1", file=sys.stderr)
        return 2
    try:
        room = RoomSettings(profile=args.profile)
        if args.profile == "duel":
            room = RoomSettings(
                profile="duel",
                triplet_offer_probability=args.offers,
                rub_offer_probability=args.offers,
                guess_enabled=args.guess,
            )
        report = simulate(room, args.hands, args.seed, check=args.check)
    except SettingsError as error:
        print(f"duel simulate: {error}", file=sys.stderr)
        return 2
    except InvariantViolation as violation:
        print(f"invariant violated: {violation}", file=sys.stderr)
        return 1
    summary = report.summary()
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
        return 0
    print(
        f"profile {args.profile}: {summary['hands']} hands in {report.seconds:.2f}s "
        f"({summary['hands_per_second']} hands/s){' with --check' if args.check else ''}"
    )
    print(
        f"win rate: seat 0 {summary['win_rate'][0]:.1%}, seat 1 {summary['win_rate'][1]:.1%}; "
        f"drawn {summary['draw_rate']:.1%}; average fan {summary['average_fan']}"
    )
    print("top patterns: " + ", ".join(f"{pid} {count}" for pid, count in summary["top_patterns"]))
    return 0
