"""Actions a seat can take, as small frozen values with a text form that round-trips.

``Action.parse("0 discard 5m") == Action(0, DISCARD, tile=M5)`` and ``str(action)`` gives the text back.
A service turns a client's request into an ``Action``; the engine checks it against ``legal_actions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.rules.tiles import Tile, tile_name

# Before the deal
CHOOSE_DOUBLING = "double"  # erren 开始加倍 (T8): tile unused, flag = choice
DECLINE_DOUBLING = "no_double"
EXCHANGE = "exchange"  # T4: tiles = the tiles given back (may be empty = keep the hand)
# On your turn
DISCARD = "discard"
DECLARE_READY = "ready"  # 报听 with this discard (T3)
SELF_DRAW_WIN = "self_draw_win"
CONCEALED_KONG = "concealed_kong"
ADDED_KONG = "added_kong"
TAKE_TRIPLET = "take_triplet"  # T5: tiles = the three tiles given back for the offered triplet
RUB = "rub"  # T5 搓牌: tile = the unseen tile taken as this draw
SWAP_ITEM = "swap_item"  # T6 偷天换日: tile = from, target = the named kind
SHUFFLE_ITEM = "shuffle_item"  # T6 移花接木: tiles = three tiles of the hand
# On the opponent's discard, added kong or an extra draw
WIN = "win"
KONG = "kong"
PONG = "pong"
CHI = "chi"  # tile = the lowest tile of the chow
PASS = "pass"
# After a win (T12)
GUESS_BIG = "big"
GUESS_SMALL = "small"
COLLECT = "collect"
# Any time
LEAVE = "leave"

KINDS = (
    CHOOSE_DOUBLING,
    DECLINE_DOUBLING,
    EXCHANGE,
    DISCARD,
    DECLARE_READY,
    SELF_DRAW_WIN,
    CONCEALED_KONG,
    ADDED_KONG,
    TAKE_TRIPLET,
    RUB,
    SWAP_ITEM,
    SHUFFLE_ITEM,
    WIN,
    KONG,
    PONG,
    CHI,
    PASS,
    GUESS_BIG,
    GUESS_SMALL,
    COLLECT,
    LEAVE,
)
KIND_SET = frozenset(KINDS)
# Other spellings of four kinds that table logs may hold (riichi's words, which the log used before the
# kinds took the contract's names): read as their kind, so every log kept for its retention replays.
LOG_SPELLINGS: Final = {"ron": WIN, "tsumo": SELF_DRAW_WIN, "ankan": CONCEALED_KONG, "kakan": ADDED_KONG}
NO_TILE = -1


@dataclass(frozen=True, slots=True, order=True)
class Action:
    """What one seat does. ``tile``/``target`` are tile kinds (``-1`` = none), ``tiles`` a sorted tuple."""

    seat: int
    kind: str
    tile: int = NO_TILE
    tiles: tuple[int, ...] = ()
    target: int = NO_TILE

    def __str__(self) -> str:
        parts = [str(self.seat), self.kind]
        if self.tile != NO_TILE:
            parts.append(tile_name(self.tile))
        if self.target != NO_TILE:
            parts.append(">" + tile_name(self.target))
        if self.tiles or self.kind in (EXCHANGE, TAKE_TRIPLET, SHUFFLE_ITEM):
            parts.append("[" + ",".join(tile_name(t) for t in self.tiles) + "]")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Action.parse({str(self)!r})"

    @classmethod
    def parse(cls, text: str) -> Action:
        """Parse the text form: ``"<seat> <kind> [tile] [>target] [[t,t,t]]"``."""
        words = text.split()
        if len(words) >= 2:
            words[1] = LOG_SPELLINGS.get(words[1], words[1])
        if len(words) < 2 or words[0] not in ("0", "1") or words[1] not in KIND_SET:
            raise IllegalActionError(f"cannot read action {text!r}: expected '<seat 0|1> <kind> ...'")
        tile = target = NO_TILE
        tiles: tuple[int, ...] = ()
        for word in words[2:]:
            if word.startswith("["):
                inner = word.strip("[]")
                tiles = tuple(sorted(Tile.parse(t).kind for t in inner.split(",") if t))
            elif word.startswith(">"):
                target = Tile.parse(word[1:]).kind
            else:
                tile = Tile.parse(word).kind
        return cls(int(words[0]), words[1], tile, tiles, target)


_INTERNED: dict[tuple[int, str, int], Action] = {}


def act(seat: int, kind: str, tile: int = NO_TILE) -> Action:
    """The shared ``Action(seat, kind, tile)`` value: legal-action lists reuse these (a few hundred at
    most), so listing them allocates nothing and membership tests hit on identity."""
    key = (seat, kind, tile)
    action = _INTERNED.get(key)
    if action is None:
        action = _INTERNED[key] = Action(seat, kind, tile)
    return action
