"""Chow groups counted the 国标 way (套算一次原则), for the erren catalogue.

Erren scores 一色四同顺/四步高, 三同顺/三步高/清龙 and the two-chow 一般高/连六/老少副 as
国标 does: a chow takes part in at most one three- or four-chow pattern, and pairs of chows
never count more often than the chows can link. :func:`chow_patterns` gives, for the chows of one
arrangement, how many times each such pattern occurs.
"""

from __future__ import annotations

from functools import lru_cache

from duelmahjong.rules.tiles import rank_of, suit_of


def same_suit(*tiles: int) -> bool:
    return len({suit_of(t) for t in tiles}) == 1


def _four_chow_pattern(chows: tuple[int, ...]) -> str | None:
    if len(chows) != 4 or not same_suit(*chows):
        return None
    a, b, c, d = chows
    if a == b == c == d:
        return "quadruple_chow"
    for step in (1, 2):
        if b - a == c - b == d - c == step:
            return "four_pure_shifted_chows"
    return None


def _three_chow_pattern(chows: tuple[int, ...]) -> str | None:
    """一色三同顺 / 清龙 / 一色三步高 for three ascending chows, or None."""
    a, b, c = chows
    if not same_suit(a, b, c):
        return None
    if a == b == c:
        return "pure_triple_chow"
    if rank_of(a) == 1 and b == a + 3 and c == a + 6:
        return "pure_straight"
    if b - a == c - b and b - a in (1, 2):
        return "pure_shifted_chows"
    return None


def _two_chow_pattern(low: int, high: int) -> str | None:
    if not same_suit(low, high):
        return None
    if low == high:
        return "pure_double_chow"
    if high - low == 3:
        return "short_straight"
    if rank_of(low) == 1 and high - low == 6:
        return "two_terminal_chows"
    return None


# 一般高 > 连六 > 老少副: the order in which a chow pair is read when only one reading may count.
_TWO_CHOW_ORDER = ("pure_double_chow", "short_straight", "two_terminal_chows")


@lru_cache(maxsize=4096)
def chow_patterns(chows: tuple[int, ...]) -> dict[str, int]:
    """Chow-group patterns of ascending chows, counted once each as 国标 does (套算一次原则).

    A chow takes part in at most one three- or four-chow pattern; the chows of such a pattern are
    not paired again among themselves, and the remaining chow pairs once with one of them. Without
    one, every pair of related chows counts, but no more pairs than the chows can link (n - 1 for a
    connected group), dropping repeats of 老少副, then 连六, then 一般高 first.

    >>> chow_patterns((0, 3, 6))
    {'pure_straight': 1}
    >>> chow_patterns((0, 0, 3, 3))
    {'pure_double_chow': 2, 'short_straight': 1}
    """
    four = _four_chow_pattern(chows)
    if four is not None:
        return {four: 1}
    for skip in (3, 2, 1, 0) if len(chows) == 4 else (None,):
        three = tuple(c for i, c in enumerate(chows) if i != skip)
        found = _three_chow_pattern(three) if len(three) == 3 else None
        if found is not None:
            result = {found: 1}
            if skip is not None:
                extra = chows[skip]
                links = {_two_chow_pattern(*sorted((extra, other))) for other in three}
                for name in _TWO_CHOW_ORDER:
                    if name in links:
                        result[name] = 1
                        break
            return result
    n = len(chows)
    pairs = {(i, j): _two_chow_pattern(chows[i], chows[j]) for i in range(n) for j in range(i + 1, n)}
    counts = {name: list(pairs.values()).count(name) for name in _TWO_CHOW_ORDER}
    isolated = sum(1 for i in range(n) if not any(v for pair, v in pairs.items() if i in pair))
    allowed = max(n - 1 - isolated, 0)
    total = sum(counts.values())
    for keep in (1, 0):  # first drop repeats, then whole readings, cheapest-looking first
        for name in reversed(_TWO_CHOW_ORDER):
            while total > allowed and counts.get(name, 0) > keep:
                counts[name] -= 1
                total -= 1
    return {name: n for name, n in counts.items() if n}
