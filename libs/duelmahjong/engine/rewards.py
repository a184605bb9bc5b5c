"""A finished hand's settlement per seat as the wallet would move it, in units of 1番 (fan rate 1): the
training env's rewards (``duelmahjong.env``) and duplicate evaluation's figures (``duelmahjong.evaluation``).

The amount as scored comes from ``rules.hand_settlement`` (scoring's own arithmetic): duel H1 (total
fan × negotiated × progressive), erren H2 (开始加倍, 胡加倍, the task), an escape's H3. With carries the
transfer is capped by them as the wallet caps it (H1: both carries; H3: the escaper's). The loser
pays the winner, so the two rewards sum to zero — except for 猜大小 (T12), which the winner plays
against the house: right, the house pays the transfer × the factor; wrong, the winnings go to it.
Room and exchange fees are prestige owed to the house, not fan: they are not part of a reward.
"""

from __future__ import annotations

from duelmahjong.engine.outcome import Outcome, Termination
from duelmahjong.rules.hand_settlement import HandAmount, escape_amount, win_amount

FAN_RATE = 1  # rewards count in fan: 1番 = 1


def hand_amount(outcome: Outcome, profile: str) -> HandAmount | None:
    """What the hand's payer owes as scored (uncapped), or None for a drawn hand."""
    erren = outcome.erren
    doublers = sum(erren.doubling) if erren is not None else 0
    if outcome.termination is Termination.ESCAPE:
        return escape_amount(
            profile,
            fan_rate=FAN_RATE,
            negotiated=outcome.negotiated,
            progressive=outcome.progressive,
            start_doublers=doublers,
        )
    if outcome.win is None:
        return None
    task_multiplier = None
    if erren is not None and erren.task and erren.task_completed:
        multiplier = int(erren.task.get("multiplier", 0))
        task_multiplier = multiplier if multiplier > 0 else None
    return win_amount(
        profile,
        outcome.win.total_fan,
        fan_rate=FAN_RATE,
        negotiated=outcome.negotiated,
        progressive=outcome.progressive,
        start_doublers=doublers,
        win_doublings=erren.win_doublings if erren is not None else 0,
        task_multiplier=task_multiplier,
    )


def hand_rewards(
    outcome: Outcome, profile: str, carries: tuple[int, int] | None = None
) -> tuple[float, float]:
    """Each seat's gain from the hand (negative: a loss). ``carries`` cap as the wallet does (None:
    uncapped, as scored)."""
    amount = hand_amount(outcome, profile)
    if amount is None:
        return (0.0, 0.0)
    rewards = [0.0, 0.0]
    if outcome.termination is Termination.ESCAPE:
        payer = outcome.escaper
        paid = amount.fan_amount if carries is None else min(amount.fan_amount, carries[payer])
        rewards[payer], rewards[1 - payer] = -paid, paid
        return (rewards[0], rewards[1])
    payee, payer = outcome.winner, outcome.loser
    paid = amount.fan_amount
    if carries is not None:
        paid = min(paid, carries[payee], carries[payer])
    rewards[payer], rewards[payee] = -paid, paid
    guess = outcome.guess
    if guess is not None and guess.rolled:
        if guess.right:
            rewards[payee] += paid * (guess.factor or 0)
        else:  # the winnings go to the house (the winner holds them: they were just paid)
            rewards[payee] -= paid
    return (rewards[0], rewards[1])
