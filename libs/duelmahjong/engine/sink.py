"""What the steps of a hand need of a table: its state, a way to add an event, and the legal actions.

Dealing, drawing, ending a hand, swapping and the flow write events one at a time and read the state
they fold into; they take a :class:`Sink` (the flow a :class:`Seats`, which also answers legal actions
through the table's cache) rather than the table itself, so they need not import ``table.py``, which
imports them.
"""

from __future__ import annotations

from typing import Protocol

from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Event
from duelmahjong.engine.state import TableState


class Sink(Protocol):
    """Where a step writes: the state it reads and the log it appends to."""

    @property
    def state(self) -> TableState: ...

    def emit(self, event: Event) -> None:
        """Fold ``event`` into the state and append it to the log."""


class Seats(Sink, Protocol):
    """A sink that also lists each seat's legal actions in the current state."""

    def legal_actions(self, seat: int) -> list[Action]: ...
