"""The strong bot's claims on the opponent's discard (T2): kong, pong or chi only when the hand gets
closer to winning without losing half its acceptance, and from a concealed hand only when the claim
makes it ready: a concealed hand is worth fan in both profiles (duel 门清, 门清报听, 门清自摸; erren
门前清, 不求人), more than a step of shanten early on (measured: docs/evaluation.md)."""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bots.shape import Shape
from duelmahjong.engine.state import TableState


def _used(action: Action, discard: int) -> list[int]:
    """The held tiles a claim takes out of the hand."""
    if action.kind == A.CHI:
        return [t for t in (action.tile, action.tile + 1, action.tile + 2) if t != discard]
    return [discard] * (3 if action.kind == A.KONG else 2)


def _after(shape: Shape, action: Action, discard: int) -> tuple[int, int]:
    """(shanten, 受入) after the claim (and, for a pong or chi, the best discard that follows)."""
    used = _used(action, discard)
    for tile in used:
        shape.add(tile, -1)
    try:
        if action.kind == A.KONG:  # a replacement draw follows: the hand is 3k+1 as it stands
            shanten = shape.shanten()
            return shanten, shape.acceptance(shanten)
        held = [k for k in shape.kinds if shape.counts[k]]
        return min((shape.after_discard(k) for k in held), key=lambda sa: (sa[0], -sa[1]))
    finally:
        for tile in used:
            shape.add(tile, 1)


def claim(state: TableState, seat: int, by_kind: dict[str, list[Action]]) -> Action | None:
    options = by_kind.get(A.KONG, []) + by_kind.get(A.PONG, []) + by_kind.get(A.CHI, [])
    if not options or state.ready[seat]:
        return by_kind[A.KONG][0] if state.ready[seat] and A.KONG in by_kind else None
    shape = Shape.of(state, seat)
    current = shape.shanten()
    acceptance = shape.acceptance(current)
    discard = state.last_discard
    opened = any(kind != "concealed_kong" for kind, _ in state.melds[seat])
    best: tuple[int, int, Action] | None = None
    for action in options:
        shanten, after = _after(shape, action, discard)
        better = shanten < current or (action.kind == A.KONG and shanten == current)
        if not opened and shanten > 0:
            continue
        if better and after >= acceptance // 2 and (best is None or (shanten, -after) < best[:2]):
            best = (shanten, -after, action)
    return best[2] if best is not None else None
