"""A hand's settlement per seat in units of 1番: what the wallet would move at fan rate 1 and
unbounded carries (docs/decisions.md §6).

duel: the loser pays total fan × negotiated × progressive (H1); erren: the doubled fan F of H2; an
escape costs the escaper H3 (erren: × the 开始加倍 factor). A rolled 猜大小 (T12) is staked on the
winnings: right, the house adds stake × factor; wrong, the winnings go to the house. Paid erren
exchanges (T4) cost their fee each, to the house. Room fees are left out: both seats pay the same.

>>> from duelmahjong.engine.outcome import Outcome, Termination
>>> from duelmahjong.engine.settings import RoomSettings
>>> drawn = Outcome(Termination.DRAWN, 1, 0, 0, -1, -1, 1, 1, ("", ""))
>>> seat_nets(drawn, RoomSettings())
(0, 0)
"""

from __future__ import annotations

from duelmahjong.engine.outcome import Outcome, Termination
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.settlement import erren_doubling


def stake(outcome: Outcome) -> int:
    """What the loser of a won hand pays, in 1番 units (H1 or H2)."""
    if outcome.win is None:
        return 0
    fan = outcome.win.total_fan
    erren = outcome.erren
    if erren is None:
        return fan * outcome.negotiated * outcome.progressive
    task = erren.task
    multiplier = int(task.get("multiplier", 0)) if task and erren.task_completed else 0
    doubling = erren_doubling(
        fan,
        start_doublers=sum(erren.doubling),
        win_doublings=erren.win_doublings,
        task_multiplier=multiplier if multiplier > 0 else None,
    )
    return doubling.doubled_fan


def seat_nets(outcome: Outcome, settings: RoomSettings) -> tuple[int, int]:
    """Each seat's gain (negative: loss) from this hand, in 1番 units."""
    net = [0, 0]
    if outcome.termination is Termination.WIN:
        paid = stake(outcome)
        gain = paid
        guess = outcome.guess
        if guess is not None and guess.rolled:
            gain += paid * (guess.factor or 0) if guess.right else -paid
        net[outcome.winner] += gain
        net[outcome.loser] -= paid
    elif outcome.termination is Termination.ESCAPE:
        highest = get_profile(settings.profile).escape_fan
        erren = outcome.erren
        if erren is not None:
            penalty = erren_doubling(highest, start_doublers=sum(erren.doubling)).doubled_fan
        else:
            penalty = highest * outcome.negotiated * outcome.progressive
        net[outcome.escaper] -= penalty
        net[1 - outcome.escaper] += penalty
    if outcome.erren is not None:
        for seat, paid_exchanges in enumerate(outcome.erren.exchange_fees):
            net[seat] -= paid_exchanges * settings.exchange_fee
    return net[0], net[1]
