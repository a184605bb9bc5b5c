"""Claim timing that leaks nothing (``RoomRules.claim_window_ms``, docs/protocol.md "Claim windows").

Without the option a discard the opponent cannot claim is followed by the next draw at once, and one it
can claim waits for the opponent: how long the table waits tells the discarder whether the opponent had
an option. With it, what follows an *opener* (a discard, an added kong that could be robbed, a
declared-ready hand's draw that could win) is held back from both seats until the window after the
opener has passed, whether the engine moved on at once (no option), the seat with the option passed,
or it did not answer. Only a claim or a win, public anyway, ends a window sooner.

The engine is not told: it moves on as it always does and every record is written ahead as it happens,
so the log and its replay are those of a room without the option. What is held is only what the seats
are shown: :class:`Windows` keeps the open windows, each with the events shown when it ends. A window
opened by an event that is itself held starts when that event is shown (a declared-ready hand's
automatic discard after a draw that was held), so the seats see every opener followed by a full window.

While anything is held no seat decides (the engine's state is ahead of what the seats were shown), the
seats' views are built from the engine as it was after the last event shown
(:meth:`Windows.shown_table`), and their sequences stop at the last event shown.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from duelmahjong.engine.events import Claimed, Discarded, Drew, Event, Konged, Won
from duelmahjong.engine.table import Table

# The seat that decides inside a window has its default played this long before the window ends, so
# that the engine step, its write-ahead and the release happen on the same path as a pass in time: a
# default played at the very end would show its draw one write later than a pass would.
ANSWER_MARGIN_SECONDS = 0.1
# Engine events that show a decision to both seats and end the open window at once.
_PUBLIC_ANSWERS = (Claimed, Won)

ItemT = TypeVar("ItemT")


def opens(event: Event, ready: Sequence[bool]) -> bool:
    """Whether a seat may hold a hidden option on ``event``: the opponent to claim or win a discard or
    rob an added kong; a declared-ready seat (``ready``, T3) to win on its own draw, which it is asked
    about while every other draw of it is discarded at once."""
    match event:
        case Discarded():
            return True
        case Drew():
            return not event.flower and ready[event.seat]
        case Konged():
            return event.meld == "added_kong"
    return False


def answer_margin(seconds: float) -> float:
    """How long before a window's end the server answers for a seat that has not (at most a quarter of
    a short window)."""
    return min(ANSWER_MARGIN_SECONDS, seconds / 4)


@dataclass
class Window(Generic[ItemT]):
    """One open window: it ends at ``ends_at`` (the table's monotonic clock); ``held`` are the numbered
    events to show then, each with the count of engine events up to it (0: an event of the table's
    own); ``moved`` says the engine went past the opener (the opponent passed, or had no option), so
    nobody decides until the window ends."""

    ends_at: float
    held: list[tuple[ItemT, int]] = field(default_factory=list)
    moved: bool = False
    # The opener's stamp (wall clock, ns): what the window holds is stamped this plus the window,
    # however late the engine moved on; None for a window opened again by an adoption.
    opener_at: int | None = None


@dataclass
class Windows(Generic[ItemT]):
    """The open windows of one table, oldest first, and where the seats' picture of the engine stops."""

    seconds: float
    # The engine as the seats were shown it: each engine event is folded here once it is shown (at
    # once, or when its window ends), so a view asked for while events are held costs what any view
    # costs, in every case alike.
    table: Table
    open: deque[Window[ItemT]] = field(default_factory=deque)
    shown_events: int = 1  # engine events shown (or passed over unseen) so far: table_opened first

    def holding(self) -> bool:
        """The engine is ahead of what the seats were shown: nobody decides, views are frozen."""
        return any(window.moved or window.held for window in self.open)

    def deciding_until(self) -> float | None:
        """When the open window ends in which the opponent decides now (the engine waits on it)."""
        if len(self.open) == 1 and not self.open[0].moved and not self.open[0].held:
            return self.open[0].ends_at
        return None

    def open_after(self, now: float, opener_at: int | None = None) -> None:
        """An opener was placed: shown now (no window open) or at the end of the last one open."""
        start = self.open[-1].ends_at if self.open else now
        self.open.append(Window(start + self.seconds, opener_at=opener_at))

    def stamp(self, window: Window[ItemT], at: int, now: float) -> int:
        """When an event ``window`` holds is shown, as its ``occurred_at`` and the log say (wall clock,
        ns): the opener's stamp plus the window, whether the engine moved on in the opener's own step
        (no option) or later (a pass): a stamp taken from the window's end would carry the opener's
        write-ahead time only in the second case, and so tell the discarder the opponent had an option."""
        if window.opener_at is not None:
            return window.opener_at + int(self.seconds * 1e9)
        return at + int((window.ends_at - now) * 1e9)

    def answered(self, event: Event) -> None:
        """A claim or a win ends the window it answers: what follows is shown at once."""
        if (
            isinstance(event, _PUBLIC_ANSWERS)
            and self.open
            and not self.open[-1].moved
            and not self.open[-1].held
        ):
            self.open.pop()

    def holding_window(self) -> Window[ItemT] | None:
        """The last window that holds anything: an event of the table's own is shown after it."""
        return next((w for w in reversed(self.open) if w.moved or w.held), None)

    def delay(self, first: int, seconds: float) -> None:
        """The windows from ``first`` on end ``seconds`` later (their opener was shown that much later)."""
        for index in range(first, len(self.open)):
            self.open[index].ends_at += seconds

    def due(self, now: float) -> Window[ItemT] | None:
        """The oldest window, taken off if it has ended. Only it: each window opened while another was
        open was opened by what the one before it holds, so it runs from when that is shown, maybe later
        than the one before ended (a busy loop). The caller shows what the ended window held, then moves
        the windows after it by as much as that came late (:meth:`delay`), so each opener is followed
        by a whole window from when it left for the streams, however late the loop got to it."""
        if self.open and self.open[0].ends_at <= now:
            return self.open.popleft()
        return None

    def next_end(self) -> float | None:
        return self.open[0].ends_at if self.open else None

    def shown_table(self, engine: Table) -> Table:
        """The engine as the seats were last shown it: the live engine when nothing is held."""
        return self.table if self.holding() else engine

    def catch_up(self, engine: Table) -> None:
        """Fold into :attr:`table` what the seats have been shown of ``engine`` since the last call."""
        for event in engine.events[len(self.table.events) : self.shown_events]:
            self.table.emit(event)
