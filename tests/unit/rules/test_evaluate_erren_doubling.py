"""H2 (docs/decisions.md §6) against seed 000's doubling text, line by line: an erren hand's fan."""

from __future__ import annotations

import re

import pytest

from duelmahjong.rules.settlement import erren_doubling

# Seed 000, 3.加倍系统 2）胡加倍, as printed (full-width brackets and spaces kept).
SEED_000_WIN_DOUBLING = """
加倍1次获得的实际倍数：（底番+2番 赢）×2倍
加倍2次获得的实际倍数：(底番+4 番 赢) ×4倍
加倍3次获得的实际倍数：(底番+6 番 赢) ×8倍
加倍4次获得的实际倍数：(底番+8 番 赢) ×16倍
加倍5次获得的实际倍数：(底番+10番 赢) ×32倍
加倍6次获得的实际倍数：（底番+12番 赢）×64倍
加倍7次获得的实际倍数：（底番+14番 赢）×128倍
加倍8次获得的实际倍数：（底番+16番 赢）×256倍
"""
SEED_LINES = [
    tuple(int(n) for n in found)
    for found in re.findall(r"加倍(\d)次.*?底番\+(\d+)\s*番.*?×(\d+)倍", SEED_000_WIN_DOUBLING)
]


def test_h2_the_seed_table_has_eight_lines() -> None:
    assert [k for k, _, _ in SEED_LINES] == list(range(1, 9))


@pytest.mark.parametrize(("k", "added", "factor"), SEED_LINES)
@pytest.mark.parametrize("base", [8, 10, 24, 88])
def test_h2_win_doubling_follows_every_line_of_the_seed_table(
    k: int, added: int, factor: int, base: int
) -> None:
    # H = (底番 + 2k 番) × 2^k, added to B·S (no start doubling here: S = 1) and no task.
    doubling = erren_doubling(base, win_doublings=k)
    assert doubling.h == (base + added) * factor
    assert doubling.doubled_fan == base + (base + added) * factor


def test_h2_the_seed_worked_example_term_by_term() -> None:
    # 10X2（本人加倍）X2（对方加倍）+(10+2)X2（胡加倍）+10X2（任务加倍）=84番
    doubling = erren_doubling(10, start_doublers=2, win_doublings=1, task_multiplier=2)
    assert (doubling.base_fan * doubling.s, doubling.h, doubling.t) == (10 * 2 * 2, (10 + 2) * 2, 10 * 2)
    assert doubling.doubled_fan == 84


def test_h2_every_multiplier_multiplies_only_the_base() -> None:
    # "以上所有倍数只与底番相乘，胡牌总番数为各种加倍番数相加而得": the terms add, never compound.
    alone = [
        erren_doubling(12, start_doublers=1).doubled_fan - 12,
        erren_doubling(12, win_doublings=2).doubled_fan - 12,
        erren_doubling(12, task_multiplier=3).doubled_fan - 12,
    ]
    together = erren_doubling(12, start_doublers=1, win_doublings=2, task_multiplier=3).doubled_fan
    assert together == 12 + sum(alone)
