"""The strong bot's turn: kongs, 报听 and the discard (受入 weighed by hand value, or defence)."""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import isolation
from duelmahjong.engine.bots.safety import danger, passed_after_ready, threatened
from duelmahjong.engine.bots.shape import Shape
from duelmahjong.engine.state import TableState
from duelmahjong.rules.analysis import waits

FOLD_SHANTEN = 2  # against a declared-ready opponent, a hand this far from ready stops pushing
BASE_FAN = 2.0  # a duel win's fan without bonus tiles, roughly (the baseline's wins average 2.1)


def turn(state: TableState, seat: int, by_kind: dict[str, list[Action]]) -> Action:
    shape = Shape.of(state, seat)
    options = by_kind[A.DISCARD]
    if state.ready[seat]:  # locked (T3): kong when offered (it keeps the waits), else the drawn tile
        kongs = by_kind.get(A.CONCEALED_KONG, []) + by_kind.get(A.ADDED_KONG, [])
        return kongs[0] if kongs else options[0]
    if A.DECLARE_READY in by_kind:
        ready = _best_ready(state, seat, shape, by_kind[A.DECLARE_READY])
        if ready is not None:
            return ready
    current = shape.shanten()
    for action in by_kind.get(A.CONCEALED_KONG, []) + by_kind.get(A.ADDED_KONG, []):
        shape.add(action.tile, -4 if action.kind == A.CONCEALED_KONG else -1)
        kept = shape.shanten() <= current
        shape.add(action.tile, 4 if action.kind == A.CONCEALED_KONG else 1)
        if kept:
            return action
    return _discard(state, seat, shape, options)


def _best_ready(state: TableState, seat: int, shape: Shape, options: list[Action]) -> Action | None:
    """报听 on the ready discard with the most live waits (none live: not declared)."""
    best: tuple[int, Action] | None = None
    profile = state.settings.profile
    melded = state.melded_tiles(seat)
    for action in options:
        shape.add(action.tile, -1)
        live = sum(shape.live(k) for k in waits(shape.counts, profile=profile, melded_tiles=melded))
        shape.add(action.tile, 1)
        if best is None or live > best[0]:
            best = (live, action)
    return best[1] if best is not None and best[0] > 0 else None


def _value_weight(state: TableState, shape: Shape, kind: int) -> float:
    """The hand value a discard keeps, as a weight on its acceptance: duel's revealed bonus tiles (D1)
    each add a fan to a ~2-fan win, so discarding one costs about a third of the hand's worth."""
    if not shape.duel or not state.bonus:
        return 1.0
    held = sum(shape.counts[b] for b in state.bonus)
    lost = sum(1 for b in state.bonus if b == kind)
    return (BASE_FAN + held - lost) / (BASE_FAN + held)


def _discard(state: TableState, seat: int, shape: Shape, options: list[Action]) -> Action:
    scored: list[tuple[int, float, int, Action]] = []
    for action in options:
        shanten, acceptance = shape.after_discard(action.tile)
        value = acceptance * _value_weight(state, shape, action.tile)
        scored.append((shanten, value, isolation(shape.counts, action.tile), action))
    best_shanten = min(s for s, _, _, _ in scored)
    if threatened(state, seat) and best_shanten >= FOLD_SHANTEN:
        passed = passed_after_ready(state, seat)
        return min(scored, key=lambda e: (danger(shape, e[3].tile, passed), e[0], -e[1], -e[2]))[3]
    return min(scored, key=lambda e: (e[0], -e[1], -e[2]))[3]
