"""The seeded hands of ``duel bench rules`` and ``duel bench rules_evaluation``, and the tile names
``pymahjonggb`` reads: shared by both areas (a module of ``bench/`` that is not an area itself).

The corpus: random winning hands (four random sets + a pair) and random non-winning hands (14 tiles
drawn from the 136), half each; shanten runs on those hands minus one random tile (13 tiles).
"""

from __future__ import annotations

import random

SEED = 20261130
GB_NAMES = [f"W{r}" for r in range(1, 10)] + [f"B{r}" for r in range(1, 10)] + [f"T{r}" for r in range(1, 10)]
GB_NAMES += ["F1", "F2", "F3", "F4", "J3", "J2", "J1"]  # winds E S W N; dragons 白 发 中


def corpus(size: int, seed: int = SEED) -> list[list[int]]:
    """``size`` 14-tile count vectors: half random wins, half random non-wins, shuffled."""
    from duelmahjong.rules.analysis import is_winning

    rng = random.Random(seed)
    wall = [kind for kind in range(34) for _ in range(4)]
    hands: list[list[int]] = []
    while len(hands) < size // 2:
        counts = [0] * 34
        for _ in range(4):
            if rng.random() < 0.5:
                counts[rng.randrange(34)] += 3
            else:
                first = rng.randrange(3) * 9 + rng.randrange(7)
                for kind in (first, first + 1, first + 2):
                    counts[kind] += 1
        counts[rng.randrange(34)] += 2
        if max(counts) <= 4:
            hands.append(counts)
    while len(hands) < size:
        counts = [0] * 34
        for kind in rng.sample(wall, 14):
            counts[kind] += 1
        if not is_winning(counts):
            hands.append(counts)
    rng.shuffle(hands)
    return hands


def minus_one_tile(hands: list[list[int]], seed: int = SEED) -> list[list[int]]:
    rng = random.Random(seed + 1)
    thirteen = []
    for counts in hands:
        fewer = list(counts)
        fewer[rng.choice([kind for kind in range(34) if counts[kind]])] -= 1
        thirteen.append(fewer)
    return thirteen
