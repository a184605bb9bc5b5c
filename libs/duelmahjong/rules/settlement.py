"""Settlement math (docs/decisions.md §6), pure: duel transfer (H1), erren doubling (H2), escape (H3).

Amounts are prestige (威望) integers. Every function validates its inputs and raises
:class:`SettlementError` with a readable message.

Seed 002: a 1番=10威望 room, negotiated 5×, progressive 1×, 3 fan → 150.

>>> duel_transfer(3, fan_rate=10, negotiated=5, progressive=1, winner_carry=1000, loser_carry=1000).amount
150

Seed 000: base 10 fan, both players start-doubled, one 胡加倍, a ×2 task → 84 fan.

>>> erren_doubling(10, start_doublers=2, win_doublings=1, task_multiplier=2).doubled_fan
84
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.profiles import get_profile

NEGOTIATED_MULTIPLIERS: tuple[int, ...] = (1, 2, 5, 10)  # T7: the first player seated proposes one
MAX_WIN_DOUBLINGS = 8  # 000: "目前最高加倍次数为8"
PLAYERS = 2


class SettlementError(RulesError):
    """Settlement inputs that cannot occur (a negative carry, a 3× negotiated multiplier…)."""


@dataclass(frozen=True, slots=True)
class Transfer:
    """What the loser pays the winner: ``fan_amount`` before the carry caps, ``amount`` after them."""

    fan_amount: int
    amount: int

    @property
    def capped_by_carry(self) -> bool:
        return self.amount < self.fan_amount


@dataclass(frozen=True, slots=True)
class Doubling:
    """H2's terms: F = B·S + H + T."""

    base_fan: int  # B
    s: int  # 2 ** (players who chose 开始加倍)
    h: int  # (B + 2k)·2^k after k 胡加倍, else 0
    t: int  # B·t when the winner completed the task with multiplier t, else 0
    doubled_fan: int  # F


def _count(name: str, value: object, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise SettlementError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def progressive_multiplier(hand_number: int) -> int:
    """T7: 1 in the first hand of a pairing, doubling every following hand.

    >>> [progressive_multiplier(n) for n in (1, 2, 3, 4)]
    [1, 2, 4, 8]
    """
    return 1 << (_count("hand_number", hand_number, 1) - 1)


def duel_transfer(
    total_fan: int,
    *,
    fan_rate: int,
    negotiated: int = 1,
    progressive: int = 1,
    winner_carry: int,
    loser_carry: int,
) -> Transfer:
    """H1: min(total_fan × negotiated × progressive × N, winner's carry, loser's carry).

    The winner receives exactly what the loser pays. The room fee is separate: each finished hand
    costs each player the fee, booked to the house.

    >>> duel_transfer(13, fan_rate=10, negotiated=10, progressive=4, winner_carry=3000, loser_carry=8000)
    Transfer(fan_amount=5200, amount=3000)
    """
    _count("total_fan", total_fan)
    _count("fan_rate", fan_rate, 1)
    if negotiated not in NEGOTIATED_MULTIPLIERS or type(negotiated) is not int:
        raise SettlementError(
            f"negotiated multiplier must be one of {NEGOTIATED_MULTIPLIERS}, got {negotiated!r}"
        )
    _count("progressive", progressive, 1)
    if progressive & (progressive - 1):
        raise SettlementError(f"progressive multiplier must be a power of two (T7), got {progressive}")
    _count("winner_carry", winner_carry)
    _count("loser_carry", loser_carry)
    fan_amount = total_fan * negotiated * progressive * fan_rate
    return Transfer(fan_amount, min(fan_amount, winner_carry, loser_carry))


def erren_doubling(
    base_fan: int, *, start_doublers: int = 0, win_doublings: int = 0, task_multiplier: int | None = None
) -> Doubling:
    """H2: F = B·S + H + T with S = 2^(start doublers), H = (B + 2k)·2^k, T = B·t.

    >>> erren_doubling(10)
    Doubling(base_fan=10, s=1, h=0, t=0, doubled_fan=10)
    >>> erren_doubling(10, win_doublings=3).h
    128
    """
    base = _count("base_fan", base_fan)
    doublers = _count("start_doublers", start_doublers)
    if doublers > PLAYERS:
        raise SettlementError(f"at most {PLAYERS} players can choose 开始加倍, got {doublers}")
    k = _count("win_doublings", win_doublings)
    if k > MAX_WIN_DOUBLINGS:
        raise SettlementError(f"at most {MAX_WIN_DOUBLINGS} 胡加倍, got {k}")
    s = 2**doublers
    h = (base + 2 * k) * 2**k if k else 0
    t = base * _count("task_multiplier", task_multiplier, 1) if task_multiplier is not None else 0
    return Doubling(base, s, h, t, base * s + h + t)


def erren_transfer(
    base_fan: int,
    *,
    fan_rate: int,
    start_doublers: int = 0,
    win_doublings: int = 0,
    task_multiplier: int | None = None,
    winner_carry: int,
    loser_carry: int,
) -> tuple[Doubling, Transfer]:
    """H2 then H1 with negotiated = progressive = 1.

    >>> erren_transfer(10, fan_rate=5, start_doublers=2, win_doublings=1, task_multiplier=2,
    ...                winner_carry=10_000, loser_carry=300)[1]
    Transfer(fan_amount=420, amount=300)
    """
    doubling = erren_doubling(
        base_fan, start_doublers=start_doublers, win_doublings=win_doublings, task_multiplier=task_multiplier
    )
    transfer = duel_transfer(
        doubling.doubled_fan, fan_rate=fan_rate, winner_carry=winner_carry, loser_carry=loser_carry
    )
    return doubling, transfer


def escape_penalty(
    profile: str, *, fan_rate: int, negotiated: int = 1, progressive: int = 1, escaper_carry: int
) -> int:
    """H3: the profile's highest fan (duel 64, erren 88) × the hand's multipliers × N, capped by the
    escaper's carry; paid to the opponent.

    >>> escape_penalty("duel", fan_rate=10, negotiated=2, progressive=2, escaper_carry=100_000)
    2560
    >>> escape_penalty("duel", fan_rate=10, escaper_carry=500)
    500
    """
    highest = get_profile(profile).escape_fan
    carry = _count("escaper_carry", escaper_carry)
    transfer = duel_transfer(
        highest,
        fan_rate=fan_rate,
        negotiated=negotiated,
        progressive=progressive,
        winner_carry=carry,
        loser_carry=carry,
    )
    return transfer.amount
