"""What one seat may know, as one frozen value: the env's observation before it becomes planes.

The same visibility as the engine's seat view and a seat's stream (``engine/view.py``): the seat's own
concealed tiles and drawn tile, both seats' melds with the opponent's concealed kongs hidden, both
rivers in order, flowers, bonus tiles, ready flags, 开始加倍 once revealed, 胡加倍, its own items, what is
left of the wall and the pool, the pairing's position, the phase and seat to move as this seat is
shown them, its own T5 offer, the erren task, and its legal actions. Never the opponent's concealed
tiles, the wall's or the pool's tiles, the seed, or the opponent's 开始加倍 before both are revealed.

Everything here is a plain number, string or tuple, so a builder from the engine (``observe.py``) and
one from the gRPC contract (``play_pb2.SeatView`` + ``LegalActions``) produce equal values; the planes
(``planes.py``) read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.engine.actions import Action

NO_TILE = -1
HIDDEN_KONG = -1  # the tile of the opponent's concealed kong: not shown until the hand is over
# Flags of one discard (the same bits as the engine's ``river_marks`` and the contract's ``Discard``).
DISCARD_READY = 1  # discarded with 报听
DISCARD_DRAWN = 2  # the tile just drawn, discarded straight away
DISCARD_CLAIMED = 4  # taken by the opponent's chi, pong, kong or win


@dataclass(frozen=True, slots=True)
class Meld:
    """A declared meld: its kind (chi, pong, exposed_kong, added_kong, concealed_kong) and tile (a
    chow's lowest tile; :data:`HIDDEN_KONG` for the opponent's concealed kong)."""

    kind: str
    tile: int


@dataclass(frozen=True, slots=True)
class Task:
    """The erren hand's task (T8): its kind (pong, pattern, kong, double), the pattern a 番型 task
    names ("" for the others) and its multiplier."""

    kind: str
    pattern: str
    multiplier: int


@dataclass(frozen=True, slots=True)
class SeatObservation:
    """One seat's knowledge of the table. Per-seat tuples are indexed by seat (0, 1), not relative."""

    profile: str  # duel, erren
    seat: int
    phase: str  # as shown to this seat: an opponent's claim window shows as its turn
    to_move: int  # as shown: -1 when both seats decide at once (开始加倍, 换牌) or nobody does
    hand_number: int
    dealer: int
    round_wind: int  # 0 east … 3 north
    progressive: int
    wall_remaining: int
    pool_remaining: int
    bonus_tiles: tuple[int, ...]  # sorted, as flowers: their order tells nothing (the contract's notation)
    task: Task | None
    last_discard: int
    hand: tuple[int, ...]  # own concealed tile counts by kind (34), the drawn tile included
    drawn: int  # own drawn tile this turn, or NO_TILE
    hand_sizes: tuple[int, int]  # concealed tile counts of both seats
    melds: tuple[tuple[Meld, ...], tuple[Meld, ...]]
    rivers: tuple[tuple[int, ...], tuple[int, ...]]  # every discard in order, claimed ones too
    river_flags: tuple[tuple[int, ...], tuple[int, ...]]  # DISCARD_* bits, one per discard
    flowers: tuple[tuple[int, ...], tuple[int, ...]]  # flower kinds 34–41, sorted
    ready: tuple[bool, bool]
    doubling: tuple[bool | None, bool | None]  # the opponent's None until both are revealed
    win_doublings: tuple[int, int]
    items: tuple[tuple[str, int], ...]  # own items left (count > 0), sorted by item
    offer: str  # own pending T5 offer: "", "triplet" or "rub"
    offer_tile: int  # the offered triplet's kind, or NO_TILE
    legal: tuple[Action, ...]

    @property
    def opponent(self) -> int:
        return 1 - self.seat

    def seat_wind(self, seat: int) -> int:
        """E17: the dealer sits East (0), the non-dealer West (2); -1 before the deal."""
        if self.dealer < 0:
            return -1
        return 0 if seat == self.dealer else 2

    def item_count(self, item: str) -> int:
        return dict(self.items).get(item, 0)


def task_of(task: dict[str, object] | None) -> Task | None:
    """The engine's and the log's task JSON (``{"kind", "pattern"?, "multiplier"}``) as a value."""
    if not task:
        return None
    multiplier = task.get("multiplier", 0)
    return Task(
        kind=str(task.get("kind", "")),
        pattern=str(task.get("pattern", "")),
        multiplier=multiplier if isinstance(multiplier, int) else 0,
    )
