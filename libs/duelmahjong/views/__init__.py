"""The engine's events and state as the contract's typed messages: what a seat is shown of a table
(``SeatView``, ``SeatEvent``) and the conversions they share (tiles, melds, actions, items).

The live table builds every message a seat is sent here, and anything that rebuilds those messages
from a table's log (the scoring service's archive, the replay library) uses the same code, so a
replay shows each event exactly as the seat saw it.
"""
