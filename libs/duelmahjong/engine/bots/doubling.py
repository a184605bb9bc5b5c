"""erren's doubling decisions (T8, H2) by expected value: 开始加倍 and 胡加倍.

胡加倍: declining a win now (B·S + H_k) for a later win worth B·S + H_{k+1}, H_k = (B + 2k)·2^k, and,
with a 加倍 task, the task's B·t as well. The later win is a race: the seat's waits against the
opponent's, over the draws left (:func:`race`). The seat declines when
``q·later − o·loss > now``, ``loss`` being what an opponent's win would cost.
"""

from __future__ import annotations

from duelmahjong.engine.bots.shape import Shape
from duelmahjong.engine.state import TableState
from duelmahjong.rules.analysis import waits

TYPICAL_FAN = 26.0  # an erren win's base fan B, about (half flush, 报听, pungs: the bots' wins average 26-32)
OPPONENT_WAITS = 5.0  # live waits of a ready opponent whose waits are unknown
READY_PER_CYCLE = 0.2  # chance an opponent not yet ready gets ready in one draw-and-discard cycle


def race(mine: float, theirs: float, unseen: int, cycles: int, opponent_ready: bool) -> tuple[float, float]:
    """(P(the seat wins first), P(the opponent wins first)) when each cycle gives each ready side two
    chances (its own draw, the other's discard) on its live waits among ``unseen`` tiles."""
    if unseen <= 0:
        return 0.0, 0.0
    hit_me = 1 - (1 - mine / unseen) ** 2
    hit_them = 1 - (1 - theirs / unseen) ** 2
    q = o = 0.0
    alive_ready, alive_not = (1.0, 0.0) if opponent_ready else (0.0, 1.0)
    for _ in range(cycles):
        q += (alive_ready + alive_not) * hit_me
        alive_ready *= 1 - hit_me
        alive_not *= 1 - hit_me
        o += alive_ready * hit_them
        alive_ready *= 1 - hit_them
        became = alive_not * READY_PER_CYCLE
        alive_not -= became
        alive_ready += became
    return q, o


def _h(base: float, k: int) -> float:
    return (base + 2 * k) * (1 << k) if k else 0.0


def decline_win(state: TableState, seat: int, win_tile: int, base_fan: float = TYPICAL_FAN) -> bool:
    """Whether declining this win (胡加倍) is worth more than taking it."""
    settings = state.settings
    k = state.win_doublings[seat]
    if settings.is_duel or k >= settings.max_win_doublings or not state.ready[seat]:
        return False  # only a locked ready hand keeps its waits for sure (T3)
    shape = Shape.of(state, seat)
    counts = list(shape.counts)
    if shape.size % 3 == 2:
        counts[win_tile] -= 1  # a self-draw declined: the drawn tile goes to the river
    melded = state.melded_tiles(seat)
    live = sum(shape.live(t) for t in waits(counts, profile="erren", melded_tiles=melded))
    unseen = sum(shape.live(t) for t in shape.kinds)
    s = 1 << sum(1 for chosen in state.doubling if chosen)
    task = state.task or {}
    t = int(task.get("multiplier", 0)) if task.get("kind") == "double" and k == 0 else 0
    now = base_fan * s + _h(base_fan, k)
    later = base_fan * s + _h(base_fan, k + 1) + base_fan * t
    loss = TYPICAL_FAN * s
    q, o = race(live, OPPONENT_WAITS, unseen, state.wall_remaining // 2, bool(state.ready[1 - seat]))
    return q * later - o * loss > now
