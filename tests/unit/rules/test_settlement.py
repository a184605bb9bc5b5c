"""Settlement math (docs/decisions.md §6): H1 duel transfer, H2 erren doubling, H3 escape penalty."""

from __future__ import annotations

import pytest

from duelmahjong.rules.settlement import (
    SettlementError,
    Transfer,
    duel_transfer,
    erren_doubling,
    erren_transfer,
    escape_penalty,
    progressive_multiplier,
)


def test_h1_seed_002_example_gives_150() -> None:
    # 1番=10威望, negotiated 5×, progressive 1×, 3 fan: 3*5*1*10 = 150.
    transfer = duel_transfer(3, fan_rate=10, negotiated=5, progressive=1, winner_carry=1000, loser_carry=1000)
    assert transfer == Transfer(fan_amount=150, amount=150)
    assert not transfer.capped_by_carry


@pytest.mark.parametrize(
    ("winner_carry", "loser_carry", "amount"),
    [(1000, 1000, 640), (500, 1000, 500), (1000, 300, 300), (0, 1000, 0), (200, 100, 100)],
)
def test_h1_carry_caps_the_transfer_on_both_sides(winner_carry: int, loser_carry: int, amount: int) -> None:
    transfer = duel_transfer(
        64, fan_rate=10, negotiated=1, progressive=1, winner_carry=winner_carry, loser_carry=loser_carry
    )
    assert transfer.fan_amount == 640
    assert transfer.amount == amount
    assert transfer.capped_by_carry == (amount < 640)


def test_h1_multipliers_multiply() -> None:
    transfer = duel_transfer(
        13, fan_rate=7, negotiated=10, progressive=8, winner_carry=10**9, loser_carry=10**9
    )
    assert transfer.amount == 13 * 7 * 10 * 8


def test_t7_progressive_multiplier_doubles_every_hand() -> None:
    assert [progressive_multiplier(n) for n in range(1, 7)] == [1, 2, 4, 8, 16, 32]
    with pytest.raises(SettlementError, match="hand_number"):
        progressive_multiplier(0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"negotiated": 3}, "negotiated multiplier must be one of"),
        ({"progressive": 3}, "power of two"),
        ({"progressive": 0}, "progressive must be an integer >= 1"),
        ({"fan_rate": 0}, "fan_rate must be an integer >= 1"),
        ({"winner_carry": -1}, "winner_carry"),
        ({"loser_carry": 1.5}, "loser_carry"),
        ({"negotiated": True}, "negotiated multiplier"),
    ],
)
def test_h1_rejects_impossible_inputs(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"fan_rate": 10, "winner_carry": 100, "loser_carry": 100, **kwargs}
    with pytest.raises(SettlementError, match=message):
        duel_transfer(3, **arguments)  # type: ignore[arg-type]


def test_h2_seed_000_worked_example_gives_84() -> None:
    # 10X2(本人加倍)X2(对方加倍) + (10+2)X2(胡加倍) + 10X2(任务加倍) = 84
    doubling = erren_doubling(10, start_doublers=2, win_doublings=1, task_multiplier=2)
    assert (doubling.s, doubling.h, doubling.t, doubling.doubled_fan) == (4, 24, 20, 84)


@pytest.mark.parametrize(("k", "h"), [(1, 24), (2, 56), (3, 128), (8, 26 * 256)])
def test_h2_win_doubling_table_of_seed_000(k: int, h: int) -> None:
    # 加倍k次: (底番 + 2k 番) × 2^k
    assert erren_doubling(10, win_doublings=k).h == h


def test_h2_without_any_doubling_is_the_base_fan() -> None:
    assert erren_doubling(17).doubled_fan == 17
    assert erren_doubling(17, start_doublers=1).doubled_fan == 34


def test_h2_limits() -> None:
    with pytest.raises(SettlementError, match="at most 8"):
        erren_doubling(10, win_doublings=9)
    with pytest.raises(SettlementError, match="at most 2 players"):
        erren_doubling(10, start_doublers=3)
    with pytest.raises(SettlementError, match="task_multiplier"):
        erren_doubling(10, task_multiplier=0)


def test_h2_then_h1_with_unit_multipliers() -> None:
    doubling, transfer = erren_transfer(
        10,
        fan_rate=10,
        start_doublers=2,
        win_doublings=1,
        task_multiplier=2,
        winner_carry=5000,
        loser_carry=600,
    )
    assert doubling.doubled_fan == 84
    assert transfer == Transfer(fan_amount=840, amount=600)


def test_h3_duel_escape_is_64_fan_times_the_hand_multipliers() -> None:
    penalty = escape_penalty("duel", fan_rate=10, negotiated=5, progressive=2, escaper_carry=10**6)
    assert penalty == 64 * 10 * 5 * 2


def test_h3_escape_is_capped_by_the_escapers_carry() -> None:
    assert escape_penalty("duel", fan_rate=10, negotiated=10, escaper_carry=1234) == 1234


def test_h3_erren_escape_is_88_fan() -> None:
    assert escape_penalty("erren", fan_rate=10, escaper_carry=10**6) == 880
