"""Running an evaluation: the walls of a run, split over worker processes, tallied and merged.

The walls come from one seed (``--seed``), so a run is reproducible and two runs with the same seed
play the same walls whatever the worker count. Workers receive agent names, not agents: each resolves
its own (agents need not pickle).
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from duelmahjong.engine.settings import RoomSettings
from duelmahjong.evaluation.agents import resolve_agent
from duelmahjong.evaluation.duplicate import PairResult, is_deal_in, play_pair
from duelmahjong.evaluation.stats import SeatTally, Tally


def wall_seeds(walls: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(walls)]


def record(pair: PairResult, tally: Tally) -> None:
    """Add one wall pair to ``tally``: A's duplicate sample and both agents' hands."""
    tally.pair_totals.append(pair.a_total)
    for index, game in enumerate(pair.games):
        a_seat = index  # A sits in seat 0 in the first game, seat 1 in the second
        for seat, seat_tally in ((a_seat, tally.a), (1 - a_seat, tally.b)):
            _count(game.outcome, seat, seat_tally)
            seat_tally.times.extend(game.times[seat])


def _count(outcome: Any, seat: int, tally: SeatTally) -> None:
    tally.hands += 1
    if outcome.win is None:
        tally.drawn += outcome.winner < 0 and outcome.escaper < 0
    elif outcome.winner == seat:
        tally.wins += 1
        tally.win_fan += outcome.win.total_fan
    elif is_deal_in(outcome, seat):
        tally.deal_ins += 1


def play_walls(settings_json: dict[str, Any], a_name: str, b_name: str, seeds: list[int]) -> Tally:
    """One worker's share: every wall of ``seeds``, played twice (a pure function of its arguments)."""
    settings = RoomSettings.from_json(settings_json)
    a = resolve_agent(a_name, seed=seeds[0] if seeds else 0)
    b = resolve_agent(b_name, seed=~seeds[0] if seeds else 1)
    tally = Tally()
    for seed in seeds:
        record(play_pair(settings, seed, a, b), tally)
    return tally


def evaluate(
    settings: RoomSettings, a_name: str, b_name: str, *, hands: int, seed: int = 0, workers: int = 1
) -> Tally:
    """A against B over ``hands`` hands (rounded up to whole wall pairs)."""
    started = time.perf_counter()
    seeds = wall_seeds((hands + 1) // 2, seed)
    if workers <= 1:
        tally = play_walls(settings.to_json(), a_name, b_name, seeds)
    else:
        tally = Tally()
        shares = [seeds[i::workers] for i in range(workers)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(play_walls, settings.to_json(), a_name, b_name, share)
                for share in shares
                if share
            ]
            for future in futures:
                tally.merge(future.result())
    tally.seconds = time.perf_counter() - started
    return tally
