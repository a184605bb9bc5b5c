"""``duel bench rules``: our rules library against PyPI ``mahjong`` (pure-Python riichi) and
``pymahjonggb`` (C++ Chinese Official, module ``MahjongGB``), on one seeded corpus.

The corpus (``bench/rules_corpus.py``): half random winning hands, half random non-winning hands;
shanten runs on those hands minus one random tile (13 tiles).
Every library gets the hands in its own native form, prepared before timing:

* ours, hot path (``rules.win``, ``rules.shanten``): the four suit keys a ``Hand`` keeps
  (``analysis.win_keys`` / ``shanten_keys``);
* ours, ``Hand`` methods (``rules.win_hand``, ``rules.shanten_hand``): what the engine calls;
* ours, validated public API (``rules.win_counts``, ``rules.shanten_counts``): the 34-count vector
  (``analysis.is_winning`` / ``shanten``: validation, key encoding, lookups);
* ``mahjong``: the 34-count vector (``Agari.is_agari``, ``Shanten.calculate_shanten``);
* ``pymahjonggb``: tuples of tile names (``MahjongShanten(pack=(), hand=...)``).

Results are checked to agree before anything is timed, so every library answers the same question.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from bench import rules_evaluation
from bench.common import Figure, compare, timed
from bench.rules_corpus import GB_NAMES, SEED, corpus, minus_one_tile


def _over(items: Sequence[object], call: Callable[..., object], *, star: bool = False) -> Callable[[], int]:
    """A batch: ``call`` on every item (unpacked if ``star``); returns the number of calls."""
    if star:

        def batch() -> int:
            for item in items:
                call(*item)  # type: ignore[misc]
            return len(items)

    else:

        def batch() -> int:
            for item in items:
                call(item)
            return len(items)

    return batch


def figures(size: int, runs: int) -> tuple[list[Figure], list[str]]:
    from mahjong.agari import Agari
    from mahjong.shanten import Shanten
    from MahjongGB import MahjongShanten

    from duelmahjong.rules import analysis, keys, table_build
    from duelmahjong.rules.hand import Hand
    from duelmahjong.rules.tiles import tiles_of

    notes = [
        f"note rules.tables build={timed(table_build.build_tables):.2f}s (cached on disk after the first use)"
    ]
    hands = corpus(size)
    thirteen = minus_one_tile(hands)
    win_keys = [(*keys.suit_keys(c), 14) for c in hands]
    shanten_keys = [(*keys.suit_keys(c), 13) for c in thirteen]
    gb_hands = [tuple(GB_NAMES[k] for k in range(34) for _ in range(c[k])) for c in thirteen]

    def gb_shanten(hand: tuple[str, ...]) -> int:
        return MahjongShanten(pack=(), hand=hand)

    # Same answers first: a benchmark of different questions would measure nothing.
    ours_win = [analysis.win_keys(*k) for k in win_keys]
    if ours_win != [Agari.is_agari(c) for c in hands]:
        raise SystemExit("rules bench: win checks disagree with mahjong on the corpus")
    ours_shanten = [analysis.shanten_keys(*k) for k in shanten_keys]
    theirs = [Shanten.calculate_shanten(c) for c in thirteen]
    differ = sum(a != b for a, b in zip(ours_shanten, theirs, strict=True))
    # Expected differences: mahjong reads four identical tiles as one pair of seven pairs (E6: two);
    # pymahjonggb also knows the Chinese Official knitted forms (全不靠, 组合龙) our profiles lack.
    notes.append(f"note rules.shanten differs from mahjong on {differ}/{len(thirteen)} hands")
    differ_gb = sum(a != gb_shanten(h) for a, h in zip(ours_shanten, gb_hands, strict=True))
    notes.append(f"note rules.shanten differs from pymahjonggb on {differ_gb}/{len(thirteen)} hands")

    win_hands = [Hand(tuple(tiles_of(c))) for c in hands]
    ready_hands = [Hand(tuple(tiles_of(c))) for c in thirteen]
    agari, mahjong_shanten = _over(hands, Agari.is_agari), _over(thirteen, Shanten.calculate_shanten)
    gb = _over(gb_hands, gb_shanten)
    specs = [
        ("rules.win", _over(win_keys, analysis.win_keys, star=True), "mahjong", agari),
        ("rules.win_hand", _over(win_hands, Hand.is_winning), "mahjong", agari),
        ("rules.win_counts", _over(hands, analysis.is_winning), "mahjong", agari),
        ("rules.shanten", _over(shanten_keys, analysis.shanten_keys, star=True), "mahjong", mahjong_shanten),
        ("rules.shanten", _over(shanten_keys, analysis.shanten_keys, star=True), "pymahjonggb", gb),
        ("rules.shanten_hand", _over(ready_hands, Hand.shanten), "pymahjonggb", gb),
        ("rules.shanten_counts", _over(thirteen, analysis.shanten), "pymahjonggb", gb),
    ]
    # The full-evaluation figures (rules.evaluate vs mahjong HandCalculator and pymahjonggb
    # MahjongFanCalculator, issue 3) on the winning hands of the same corpus: bench/rules_evaluation.py.
    specs += rules_evaluation.specs(hands, SEED)
    found = [compare(name, ours, reference, theirs, runs=runs) for name, ours, reference, theirs in specs]
    return found, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="duel bench rules", description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=2000, help="corpus size (default 2000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure, at least 5")
    args = parser.parse_args(list(argv or []))
    try:
        found, notes = figures(args.hands, args.runs)
    except ImportError as error:
        print(
            f"bench rules: reference library missing ({error.name}); install with pip install -e '.[bench]'"
        )
        return 1
    for line in notes:
        print(line)
    for figure in found:
        print(figure.line(), flush=True)
    return 0
