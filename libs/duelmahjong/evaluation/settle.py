"""A hand's settlement per seat in units of 1番 as duplicate evaluation counts it: what the wallet
would move at fan rate 1 and unbounded carries (:func:`duelmahjong.engine.rewards.hand_rewards`: H1,
H2, H3 and a rolled 猜大小, the env's rewards too), and the paid erren exchanges (T4), whose fee each goes
to the house: a bot that pays for exchanges must earn them back. Room fees are left out: both seats pay
the same.

>>> from duelmahjong.engine.outcome import Outcome, Termination
>>> from duelmahjong.engine.settings import RoomSettings
>>> drawn = Outcome(Termination.DRAWN, 1, 0, 0, -1, -1, 1, 1, ("", ""))
>>> seat_nets(drawn, RoomSettings())
(0, 0)
"""

from __future__ import annotations

from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.rewards import hand_rewards
from duelmahjong.engine.settings import RoomSettings


def seat_nets(outcome: Outcome, settings: RoomSettings) -> tuple[int, int]:
    """Each seat's gain (negative: loss) from this hand, in 1番 units."""
    rewards = hand_rewards(outcome, settings.profile)
    net = [round(rewards[0]), round(rewards[1])]
    if outcome.erren is not None:
        for seat, paid_exchanges in enumerate(outcome.erren.exchange_fees):
            net[seat] -= paid_exchanges * settings.exchange_fee
    return net[0], net[1]
