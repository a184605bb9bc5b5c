"""Full fan evaluation: our ``evaluate`` against PyPI ``mahjong`` (``HandCalculator.estimate_hand_value``)
and ``pymahjonggb`` (``MahjongFanCalculator``), on the seeded corpus of ``bench/rules_corpus.py``.

``duel bench rules`` prints these figures with the others (``rules.evaluate``); ``duel bench
rules_evaluation`` prints only them. The hands are the winning half of ``rules_corpus.corpus`` (random sets +
a pair; a full evaluation of a non-winning hand is only a failed win check, measured by ``rules.win``);
in each hand one random tile is the winning tile, and a seeded coin says whether it was self-drawn.
Every library gets the same hands in its own form, prepared before timing:

* ours: a ``HandDescription`` (profile duel, concealed 13 tiles + the winning tile) -> ``evaluate``;
* ``mahjong``: 136-tile ids + ``HandConfig(is_tsumo=…)`` -> ``estimate_hand_value``;
* ``pymahjonggb``: tile names -> ``MahjongFanCalculator``.

Before timing, all three must agree that every hand wins (the non-winning half of the corpus is used
only for that check: each library must also reject it).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence

from bench.common import Figure, compare
from bench.rules_corpus import GB_NAMES, SEED, corpus

IN_ALL = False  # ``duel bench all`` already runs these figures through bench/rules.py
SEED_OFFSET = 3


def _winning_tiles(hands: list[list[int]], seed: int) -> list[tuple[int, bool]]:
    rng = random.Random(seed + SEED_OFFSET)
    return [
        (rng.choice([kind for kind in range(34) if counts[kind]]), rng.random() < 0.5) for counts in hands
    ]


def specs(hands: list[list[int]], seed: int) -> list[tuple[str, Callable[[], int], str, Callable[[], int]]]:
    """(name, ours, reference, theirs) for ``bench.common.compare``, after checking the libraries agree."""
    from mahjong.hand_calculating.hand import HandCalculator
    from mahjong.hand_calculating.hand_config import HandConfig
    from mahjong.tile import TilesConverter
    from MahjongGB import MahjongFanCalculator

    from duelmahjong.rules.description import HandDescription
    from duelmahjong.rules.errors import InvalidHandError
    from duelmahjong.rules.evaluate import evaluate
    from duelmahjong.rules.tiles import format_tiles, tiles_of

    wins = _winning_tiles(hands, seed)
    descriptions = []
    riichi = []
    gb = []
    for counts, (win, self_drawn) in zip(hands, wins, strict=True):
        concealed = tiles_of(counts)
        concealed.remove(win)
        descriptions.append(
            HandDescription.from_json(
                {
                    "profile": "duel",
                    "concealed": format_tiles(concealed),
                    "win_tile": format_tiles([win]),
                    "self_drawn": self_drawn,
                }
            )
        )
        tiles136 = TilesConverter.to_136_array(counts)
        riichi.append((tiles136, next(t for t in tiles136 if t // 4 == win), HandConfig(is_tsumo=self_drawn)))
        gb.append((tuple(GB_NAMES[kind] for kind in concealed), GB_NAMES[win], self_drawn))

    calculator = HandCalculator()

    def ours_one(desc: HandDescription) -> bool:
        try:
            evaluate(desc)
        except InvalidHandError:
            return False
        return True

    def mahjong_one(item: tuple[list[int], int, object]) -> bool:
        tiles, win_tile, config = item
        return calculator.estimate_hand_value(tiles, win_tile, config=config).error != "hand_not_winning"  # type: ignore[arg-type]

    def gb_one(item: tuple[tuple[str, ...], str, bool]) -> bool:
        hand, win_tile, self_drawn = item
        try:
            MahjongFanCalculator(
                pack=(),
                hand=hand,
                winTile=win_tile,
                flowerCount=0,
                isSelfDrawn=self_drawn,
                is4thTile=False,
                isAboutKong=False,
                isWallLast=False,
                seatWind=0,
                prevalentWind=0,
            )
        except TypeError:  # pymahjonggb's way of saying "not a win" (ERROR_NOT_WIN)
            return False
        return True

    # Same question for everybody: which hands win. (Seven pairs with four identical tiles is two pairs
    # for us (E6) and for pymahjonggb but not for mahjong; such hands are rare and only noted.)
    ours_wins = [ours_one(desc) for desc in descriptions]
    if ours_wins != [gb_one(item) for item in gb]:
        raise SystemExit("rules bench: evaluation disagrees with pymahjonggb on which hands win")
    differ = sum(a != mahjong_one(item) for a, item in zip(ours_wins, riichi, strict=True))
    if differ > len(hands) // 100:
        raise SystemExit(f"rules bench: evaluation disagrees with mahjong on {differ} hands")

    winning = [index for index, wins in enumerate(ours_wins) if wins]
    descriptions = [descriptions[index] for index in winning]
    riichi = [riichi[index] for index in winning]
    gb = [gb[index] for index in winning]

    def over(items: Sequence[object], one: Callable[[object], bool]) -> Callable[[], int]:
        def batch() -> int:
            for item in items:
                one(item)
            return len(items)

        return batch

    ours = over(descriptions, ours_one)  # type: ignore[arg-type]
    return [
        ("rules.evaluate", ours, "mahjong", over(riichi, mahjong_one)),  # type: ignore[arg-type]
        ("rules.evaluate", ours, "pymahjonggb", over(gb, gb_one)),  # type: ignore[arg-type]
    ]


def figures(size: int, runs: int) -> list[Figure]:
    return [
        compare(name, ours, reference, theirs, runs=runs)
        for name, ours, reference, theirs in specs(corpus(size), SEED)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="duel bench rules_evaluation", description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=2000, help="corpus size (default 2000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure, at least 5")
    args = parser.parse_args(list(argv or []))
    try:
        found = figures(args.hands, args.runs)
    except ImportError as error:
        print(f"bench rules_evaluation: reference library missing ({error.name}); pip install -e '.[bench]'")
        return 1
    for figure in found:
        print(figure.line(), flush=True)
    return 0
