"""Defence: how likely a discard is to hand a ready opponent the win, from what the seat sees.

The rules have no 振听 (docs/decisions.md §5 says nothing like it): a tile in the opponent's river is
not safe by rule. What is safe: a kind with no live copy (the opponent cannot complete on it), and a
tile a declared-ready opponent threw away after declaring: its hand is locked (T3), so it discarded
that draw because it did not win with it, and its waits have not changed since.
"""

from __future__ import annotations

from duelmahjong.engine.bots.shape import Shape
from duelmahjong.engine.state import DISCARD_READY, TableState


def threatened(state: TableState, seat: int) -> bool:
    """The opponent has declared ready (报听): it wins on its waits from any discard."""
    return bool(state.ready[1 - seat])


def passed_after_ready(state: TableState, seat: int) -> set[int]:
    """Kinds the opponent discarded after declaring ready (the declaring discard itself excluded)."""
    marks = state.river_marks[1 - seat]
    declared = next((i for i, (_, flags) in enumerate(marks) if flags & DISCARD_READY), len(marks))
    return {tile for tile, _ in marks[declared + 1 :]}


def danger(shape: Shape, kind: int, passed: set[int]) -> float:
    """A rough chance weight that ``kind`` wins for the opponent: 0 when it cannot, else growing with
    the live copies (more copies, more hands that wait on it); terminals and honours join fewer
    shapes (no chow waits on both sides of them)."""
    live = shape.live(kind)
    if live == 0 or kind in passed:
        return 0.0
    edge = kind >= 27 or kind % 9 in (0, 8)
    return live * (0.6 if edge else 1.0)
