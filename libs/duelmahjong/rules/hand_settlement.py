"""One hand's settlement as scored: which fan the hand pays and its uncapped amount (docs/decisions.md §6).

The terms of a hand — the winner's total fan, the multipliers, erren's 开始加倍/胡加倍/task — go in as
plain numbers; H1 (duel), H2 then H1 (erren) and H3 (escape) come out, before any carry cap. Scoring
settles every hand result with it, and the training environment (``duelmahjong.env``) rewards with
it, so both read the same amount for the same hand.

Seed 002: 3 fan in a 1番=10 room, negotiated 5×, progressive 1× → 150.

>>> win_amount("duel", 3, fan_rate=10, negotiated=5, progressive=1).fan_amount
150
>>> escape_amount("erren", fan_rate=1, start_doublers=1).fan_amount  # 88 fan × S = 2
176
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.settlement import Doubling, duel_transfer, erren_doubling


@dataclass(frozen=True, slots=True)
class HandAmount:
    """What the payer owes as scored. ``total_fan`` is the fan the multipliers apply to (duel's total
    fan, erren's doubled F, an escape's highest fan); ``fan_amount`` = total × negotiated × progressive ×
    fan rate, uncapped (the wallet caps it by the carries it holds)."""

    total_fan: int
    negotiated: int
    progressive: int
    fan_amount: int
    doubling: Doubling | None = None


def _uncapped(total_fan: int, fan_rate: int, negotiated: int, progressive: int) -> int:
    # duel_transfer validates every term; with no carries given its capped amount is not used.
    return duel_transfer(
        total_fan,
        fan_rate=fan_rate,
        negotiated=negotiated,
        progressive=progressive,
        winner_carry=0,
        loser_carry=0,
    ).fan_amount


def win_amount(
    profile: str,
    base_fan: int,
    *,
    fan_rate: int,
    negotiated: int = 1,
    progressive: int = 1,
    start_doublers: int = 0,
    win_doublings: int = 0,
    task_multiplier: int | None = None,
) -> HandAmount:
    """A won hand: duel H1 (fan × negotiated × progressive × N); erren H2 then H1 with negotiated =
    progressive = 1 (the erren table has no T7 multipliers). ``task_multiplier`` only when the winner
    completed the task."""
    if profile == "erren":
        doubling = erren_doubling(
            base_fan,
            start_doublers=start_doublers,
            win_doublings=win_doublings,
            task_multiplier=task_multiplier,
        )
        total = doubling.doubled_fan
        return HandAmount(total, 1, 1, _uncapped(total, fan_rate, 1, 1), doubling)
    return HandAmount(
        base_fan, negotiated, progressive, _uncapped(base_fan, fan_rate, negotiated, progressive)
    )


def escape_amount(
    profile: str, *, fan_rate: int, negotiated: int = 1, progressive: int = 1, start_doublers: int = 0
) -> HandAmount:
    """H3: the profile's highest fan × the hand's multipliers × N. The multipliers: duel negotiated ×
    progressive (T7); erren the 开始加倍 factor S of H2 (seed 000: 该倍数为当局倍数), shown as the
    doubling of the highest fan."""
    highest = get_profile(profile).escape_fan
    if profile == "erren":
        doubling = erren_doubling(highest, start_doublers=start_doublers)
        total = doubling.doubled_fan
        return HandAmount(total, 1, 1, _uncapped(total, fan_rate, 1, 1), doubling)
    return HandAmount(highest, negotiated, progressive, _uncapped(highest, fan_rate, negotiated, progressive))
