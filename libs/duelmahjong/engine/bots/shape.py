"""A seat's hand as the strong bot measures it: shanten, tile acceptance (受入, ukeire) and what the
seat has seen, from the seat's own tiles and the public table only.

Everything is computed from ``state.hands[seat]``, the seat's melds and ``state.visible`` through the
rules library's suit-key hot path, never from the engine's cached keys: the same code then runs on a
live state, a seat's masked copy and a client's ``seat_board`` (which fills counts only).
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.engine.hand_state import PLACE_OF, SUIT_OF
from duelmahjong.engine.state import TableState
from duelmahjong.rules.analysis import shanten_keys
from duelmahjong.rules.keys import suit_keys

DUEL_KINDS = tuple(range(34))
ERREN_KINDS = tuple(range(9)) + tuple(range(27, 34))  # erren has 万 and honours only (§1)


@dataclass
class Shape:
    """One seat's concealed tiles as counts and suit keys, with the tiles it knows are not live."""

    counts: list[int]
    keys: list[int]
    size: int
    duel: bool
    green: int  # the rules library's green_melds of the seat
    seen: list[int]  # copies of each kind the seat sees: own hand, own melds, the table's visible tiles
    kinds: tuple[int, ...]

    @classmethod
    def of(cls, state: TableState, seat: int) -> Shape:
        counts = state.hands[seat]
        duel = state.settings.is_duel
        seen = [counts[k] + state.visible[k] for k in range(34)]
        for kind, tile in state.melds[seat]:
            if kind == "concealed_kong" and tile >= 0:  # own concealed kongs are not in ``visible``
                seen[tile] += 4
        return cls(
            counts,
            list(suit_keys(counts)),
            sum(counts),
            duel,
            state.green_melds[seat],
            seen,
            DUEL_KINDS if duel else ERREN_KINDS,
        )

    def live(self, kind: int) -> int:
        """Copies of ``kind`` the seat cannot see: in the wall, the pool or the opponent's hand."""
        return max(0, 4 - self.seen[kind])

    def add(self, kind: int, copies: int = 1) -> None:
        """Change the hand by ``copies`` of ``kind`` (negative: remove). ``seen`` stays: a discarded
        tile is still seen (in the river), and a tile drawn in thought is not yet."""
        self.counts[kind] += copies
        self.keys[SUIT_OF[kind]] += PLACE_OF[kind] * copies
        self.size += copies

    def shanten(self) -> int:
        k = self.keys
        return shanten_keys(k[0], k[1], k[2], k[3], self.size, self.duel, self.green)

    def acceptance(self, current: int | None = None) -> int:
        """受入 of a 3k+1 hand: live copies of the kinds whose draw lowers its shanten."""
        base = self.shanten() if current is None else current
        total = 0
        keys, size, duel, green = self.keys, self.size + 1, self.duel, self.green
        for kind in self.kinds:
            live = 4 - self.seen[kind]
            if live <= 0:
                continue
            suit, place = SUIT_OF[kind], PLACE_OF[kind]
            keys[suit] += place
            if shanten_keys(keys[0], keys[1], keys[2], keys[3], size, duel, green) < base:
                total += live
            keys[suit] -= place
        return total

    def after_discard(self, kind: int) -> tuple[int, int]:
        """(shanten, 受入) of the hand once one ``kind`` is discarded."""
        self.add(kind, -1)
        try:
            shanten = self.shanten()
            return shanten, self.acceptance(shanten)
        finally:
            self.add(kind, 1)
