"""``duel evaluate A B``: duplicate evaluation of agent A against agent B (docs/evaluation.md).

Each wall is played twice with the seats swapped; the result is A's mean settlement per hand in 1番
units with its 95 % interval over wall pairs, each agent's win, deal-in and drawn rates, the mean fan
of its wins and its decision times. Agents: house, strong, random, module:callable (an env policy,
as ``duel bot --policy`` takes it) or engine:module:callable (the engine bot's signature).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from duelmahjong.engine.errors import SettingsError
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.evaluation.agents import AgentError, resolve_agent
from duelmahjong.evaluation.runner import evaluate
from duelmahjong.evaluation.stats import SeatTally, Tally, percentile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "agent_a",
        metavar="AGENT_A",
        help="house, strong, random, module:callable (an env policy) or engine:module:callable",
    )
    parser.add_argument("agent_b", metavar="AGENT_B", help="the agent A is measured against")
    parser.add_argument("--hands", type=int, default=2000, help="hands to play, two per wall (default 2000)")
    parser.add_argument("--profile", choices=("duel", "erren"), default="duel")
    parser.add_argument("--seed", type=int, default=0, help="seed of the walls (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--room-settings",
        default="{}",
        metavar="JSON",
        help="more room settings as a JSON object, e.g. '{\"guess_enabled\": true}'",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def settings_of(profile: str, extra: str) -> RoomSettings:
    """The room: the profile plus the JSON object of ``--room-settings`` (SettingsError if invalid)."""
    try:
        data = json.loads(extra)
    except json.JSONDecodeError as error:
        raise SettingsError(f"--room-settings is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise SettingsError("--room-settings must be a JSON object")
    return RoomSettings.from_json({**data, "profile": profile})


def _seat(name: str, tally: SeatTally) -> dict[str, Any]:
    return {
        "agent": name,
        "win_rate": round(tally.rate(tally.wins), 4),
        "deal_in_rate": round(tally.rate(tally.deal_ins), 4),
        "draw_rate": round(tally.rate(tally.drawn), 4),
        "mean_win_fan": round(tally.mean_win_fan, 2),
        "decision_ms_p50": round(percentile(tally.times, 0.50) * 1000, 3),
        "decision_ms_p99": round(percentile(tally.times, 0.99) * 1000, 3),
    }


def summary(args: argparse.Namespace, tally: Tally) -> dict[str, Any]:
    mean, half = tally.per_hand()
    return {
        "profile": args.profile,
        "hands": tally.hands,
        "walls": len(tally.pair_totals),
        "seed": args.seed,
        "room_settings": json.loads(getattr(args, "room_settings", "{}")),
        "mean_per_hand": round(mean, 3),
        "ci95": [round(mean - half, 3), round(mean + half, 3)],
        "a": _seat(args.agent_a, tally.a),
        "b": _seat(args.agent_b, tally.b),
        "seconds": round(tally.seconds, 1),
    }


def lines(result: dict[str, Any]) -> list[str]:
    """The printed report (docs/benchmarks.md quotes these lines)."""
    a, b = result["a"], result["b"]
    low, high = result["ci95"]
    extra = result["room_settings"]
    room = f" --room-settings '{json.dumps(extra, ensure_ascii=False)}'" if extra else ""
    out = [
        f"duel evaluate {a['agent']} {b['agent']} --profile {result['profile']} --hands {result['hands']} "
        f"--seed {result['seed']}{room}  ({result['walls']} walls × 2 seats, {result['seconds']} s, "
        f"{datetime.now(UTC):%Y-%m-%d})",
        f"{a['agent']} vs {b['agent']}: {result['mean_per_hand']:+.3f} 番/hand, 95% CI "
        f"[{low:+.3f}, {high:+.3f}] over wall pairs",
    ]
    for seat in (a, b):
        out.append(
            f"  {seat['agent']}: win {seat['win_rate']:.1%}, deal-in {seat['deal_in_rate']:.1%}, "
            f"drawn {seat['draw_rate']:.1%}, mean win fan {seat['mean_win_fan']:.2f}, "
            f"decision p50 {seat['decision_ms_p50']:.2f} ms p99 {seat['decision_ms_p99']:.2f} ms"
        )
    return out


def run(args: argparse.Namespace) -> int:
    if args.hands < 2 or args.workers < 1:
        print("duel evaluate: --hands must be at least 2 and --workers at least 1", file=sys.stderr)
        return 2
    try:
        settings = settings_of(args.profile, args.room_settings)
        for name in (args.agent_a, args.agent_b):
            resolve_agent(name)  # fail here, not in a worker
        tally = evaluate(
            settings, args.agent_a, args.agent_b, hands=args.hands, seed=args.seed, workers=args.workers
        )
    except (SettingsError, AgentError, TypeError) as error:
        print(f"duel evaluate: {error}", file=sys.stderr)
        return 2
    result = summary(args, tally)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print("\n".join(lines(result)))
    return 0
