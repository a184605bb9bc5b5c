"""The strong bot's 换牌 at the start of a hand (T4).

A lone tile (one copy, nothing within two ranks; a lone honour) is worth no more than the random tile
that replaces it, which may join the hand: every lone tile goes back, the loneliest first, a duel
bonus tile (D1) excepted. In erren, when the hand's honours all fit in the exchanges, they all go
back: a hand without honours may become 清一色 (24 fan) instead of 混一色 (6). Measured against the
baseline (docs/evaluation.md): exchanging is most of the strong bot's gain in both profiles.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import isolation
from duelmahjong.engine.bots.shape import Shape
from duelmahjong.engine.state import TableState

LONE = 3  # the baseline's isolation score of a tile with no neighbour within two ranks
# What one exchange beyond the free one is worth, in fan: erren, 4,000 hands against the baseline,
# paying for every exchange gains ~7.8 fan per paid exchange. The room's fee is in 威望; counted here as
# if 1番 = 1 威望, the dearest a fee can be in fan, so a room with a higher fan rate only pays less.
PAID_EXCHANGE_WORTH = 6
HONOURS = range(27, 34)


def exchange(state: TableState, seat: int) -> Action:
    settings = state.settings
    # None: unlimited (duel; its pool of 65 always covers both hands, and a seat's view has no pool).
    limit = settings.effective_exchange_limit
    if settings.exchange_fee > PAID_EXCHANGE_WORTH:  # then only the first, free, exchange (T4)
        limit = 1 if limit is None else min(limit, 1)
    counts = state.hands[seat]
    bonus = set(state.bonus) if settings.is_duel else set()
    lone = [
        kind
        for kind in Shape.of(state, seat).kinds
        if counts[kind] == 1 and kind not in bonus and isolation(counts, kind) >= LONE
    ]
    lone.sort(key=lambda kind: -isolation(counts, kind))
    honours = [kind for kind in HONOURS for _ in range(counts[kind])]
    if not settings.is_duel and honours and limit is not None and len(honours) <= limit:
        lone = honours + [kind for kind in lone if kind not in HONOURS]
    return Action(seat, A.EXCHANGE, tiles=tuple(sorted(lone[:limit])))
