"""What a spectator is shown of a table: each engine event as neither seat hides it, and the public
table — the same builders a seat's messages use (:mod:`.seat_events`, :mod:`.seat_views`), for no
seat.

An event about a seat reads as its opponent was shown it: the engine's ``for_seat`` of no seat is its
public part only (no concealed or drawn tile, no offer's tiles, no 开始加倍 choice before its reveal;
the hands a hand's end reveals are public then). The table's own events (settlement, connections, the
end) are the same for everyone and need nothing here.
"""

from __future__ import annotations

from duelmahjong.engine.events import Event
from duelmahjong.engine.table import Table
from duelmahjong.v1 import play_pb2
from duelmahjong.views.seat_events import NO_NOTE, Note, seat_event
from duelmahjong.views.seat_views import TableFacts, seat_view

# No seat: not 0 or 1, and not -1 (the engine's "about no seat", which an event about no seat would
# read as its own).
SPECTATOR = -2


def spectator_event(
    event: Event, sequence: int, facts: TableFacts, note: Note = NO_NOTE, at: int = 0
) -> play_pb2.SeatEvent:
    """One engine event both seats were shown (under ``sequence``, first shown ``at``), as a spectator
    may see it."""
    return seat_event(event, SPECTATOR, sequence, facts, note, at)


def spectator_table(table: Table, facts: TableFacts) -> play_pb2.PublicTableState:
    """The table as a spectator sees it: every seat's public state, no seat's tiles; a claim or robbing
    window reads as the turn that follows (the engine's view of no seat)."""
    return seat_view(table, SPECTATOR, facts, None).table
