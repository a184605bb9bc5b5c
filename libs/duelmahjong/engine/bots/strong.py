"""The strong house bot: tile acceptance, hand value and defence on top of the baseline's rules.

Against the baseline (:mod:`duelmahjong.engine.bot`) it
- discards for the most live tiles that bring the hand closer (受入), not only for the lowest shanten,
  weighing each discard by the hand value it keeps (duel: revealed bonus tiles, D1, each worth a fan);
- folds against a declared-ready opponent when far from ready, discarding the safest tile
  (:mod:`duelmahjong.engine.bots.safety`);
- claims only when the claim brings the hand closer and keeps half its acceptance, and from a
  concealed hand only when the claim makes it ready (:mod:`duelmahjong.engine.bots.claims`);
- exchanges lone tiles at the start (T4, :mod:`duelmahjong.engine.bots.exchanges`), and in erren
  every honour when that leaves a 清一色 open;
- in erren, declines a win (胡加倍) when the expected later win is worth more
  (:mod:`duelmahjong.engine.bots.doubling`);
- declares 报听 on the ready discard with the most live waits, takes 猜大小's big guess (positive
  expectation), and trades (T5 offers, T6 items) as the baseline does.
Decision time stays well under a millisecond: one pass of suit-key shanten per candidate and draw.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bots import claims, discards, doubling, exchanges
from duelmahjong.engine.state import TableState

_TRADES = frozenset({A.TAKE_TRIPLET, A.RUB, A.SWAP_ITEM, A.SHUFFLE_ITEM})


def choose(state: TableState, seat: int, legal: list[Action]) -> Action:
    """The strong bot's action for ``seat`` among ``legal``; ``state`` need hold only what the seat
    sees (its own tiles, the public table)."""
    by_kind = bot.group(legal)
    if A.SELF_DRAW_WIN in by_kind or A.WIN in by_kind:
        win = (by_kind.get(A.SELF_DRAW_WIN) or by_kind[A.WIN])[0]
        # The winning tile: the contract's win actions name none (a client's board has the draw).
        tile = (
            win.tile
            if win.tile >= 0
            else state.last_draw
            if win.kind == A.SELF_DRAW_WIN
            else state.last_discard
        )
        if not doubling.decline_win(state, seat, tile):
            return win
        # 胡加倍: a locked hand declines by passing, or by discarding the drawn tile (its only discard)
        return (by_kind.get(A.PASS) or by_kind[A.DISCARD])[0]
    if A.EXCHANGE in by_kind:
        return exchanges.exchange(state, seat)
    if A.CHOOSE_DOUBLING in by_kind:
        return by_kind[A.CHOOSE_DOUBLING if seat == state.dealer else A.DECLINE_DOUBLING][0]
    if A.GUESS_BIG in by_kind:
        return by_kind[A.GUESS_BIG][0]  # 0.486 × 3.5 − 0.514 > 0 (the baseline's reasoning)
    if _TRADES.intersection(by_kind):
        traded = bot.choose(state, seat, legal)
        if traded.kind in _TRADES:
            return traded
    if A.DISCARD in by_kind:
        return discards.turn(state, seat, by_kind)
    claim = claims.claim(state, seat, by_kind)
    if claim is not None:
        return claim
    if A.PASS in by_kind:
        return by_kind[A.PASS][0]
    return next(a for a in legal if a.kind != A.LEAVE)
