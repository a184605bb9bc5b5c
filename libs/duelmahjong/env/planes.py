"""A seat's observation as fixed-shape feature planes: float32 [CHANNELS, 34], one column per tile kind.

Tile channels hold counts / 4 (or a one-hot) over the 34 kinds; scalar channels fill their whole row
with one value in [0, 1]. Channels are relative to the observing seat ("own", "opponent"). The planes
read only the :class:`SeatObservation` and the seat's choice in progress, so they leak nothing the
observation does not hold. ``CHANNELS`` is the table docs/env.md shows.

>>> len(CHANNELS), CHANNELS[0]
(66, ('hand', 'own concealed tiles (drawn tile included), count / 4'))
"""

from __future__ import annotations

import functools
import math
from itertools import compress

import numpy as np
import numpy.typing as npt

from duelmahjong.engine import actions as A
from duelmahjong.engine.result import MELD_SIZES
from duelmahjong.engine.wall import TASK_KINDS, TASK_PATTERNS
from duelmahjong.env.observation import (
    DISCARD_CLAIMED,
    DISCARD_DRAWN,
    DISCARD_READY,
    HIDDEN_KONG,
    Meld,
    SeatObservation,
)
from duelmahjong.env.selection import Choice

Planes = npt.NDArray[np.float32]
RECENT = 4  # the last discards of each seat, one channel each
_PHASES = ("doubling", "exchange", "turn", "claim", "rob_kong", "extra_draw", "guess")
_CHOICES = (A.EXCHANGE, A.TAKE_TRIPLET, A.SHUFFLE_ITEM, A.SWAP_ITEM)

CHANNELS: tuple[tuple[str, str], ...] = (
    ("hand", "own concealed tiles (drawn tile included), count / 4"),
    ("drawn", "own drawn tile this turn, one-hot"),
    ("own_melds", "tiles of own melds, count / 4"),
    ("own_concealed_kongs", "kinds of own concealed kongs, one-hot"),
    ("opponent_melds", "tiles of the opponent's melds as shown (concealed kongs hidden), count / 4"),
    ("own_river", "own discards, claimed ones included, count / 4"),
    ("opponent_river", "the opponent's discards, claimed ones included, count / 4"),
    ("own_claimed", "own discards the opponent claimed, count / 4"),
    ("opponent_drawn_discards", "the opponent's discards of the tile just drawn (摸切), count / 4"),
    ("own_ready_discard", "own discard declaring 报听, one-hot"),
    ("opponent_ready_discard", "the opponent's discard declaring 报听, one-hot"),
    *((f"own_recent_{i}", f"own discard {i + 1} from the last, one-hot") for i in range(RECENT)),
    *(
        (f"opponent_recent_{i}", f"the opponent's discard {i + 1} from the last, one-hot")
        for i in range(RECENT)
    ),
    ("last_discard", "the last discard of the hand, one-hot"),
    ("bonus", "bonus tiles (D1), count / 4"),
    ("seen", "every copy this seat sees: own hand, shown melds, unclaimed discards, count / 4"),
    ("own_wind", "own seat wind, one-hot on its wind tile (1z east, 3z west)"),
    ("round_wind", "the round wind, one-hot on its wind tile"),
    ("offer_tile", "the kind of the triplet offered to this seat (T5), one-hot"),
    ("selected", "tiles selected so far in a choice of several tiles, count / 4"),
    ("swap_source", "the tile a 偷天换日 in progress changes, one-hot"),
    ("task_pattern", "a 番型 task's pattern, one-hot on columns 0-5: " + ", ".join(TASK_PATTERNS)),
    ("opponent_hidden_kongs", "scalar: the opponent's concealed kongs not shown, number / 4"),
    ("own_dealer", "scalar: this seat deals"),
    ("own_ready", "scalar: this seat declared 报听"),
    ("opponent_ready", "scalar: the opponent declared 报听"),
    ("own_doubled", "scalar: this seat chose 开始加倍"),
    ("opponent_doubled", "scalar: the opponent chose 开始加倍 (once both are revealed)"),
    ("opponent_doubling_unknown", "scalar: the opponent's 开始加倍 is not revealed yet"),
    ("own_win_doublings", "scalar: own 胡加倍 / 8"),
    ("opponent_win_doublings", "scalar: the opponent's 胡加倍 / 8"),
    ("wall_remaining", "scalar: live wall tiles / 100 (at most 1)"),
    ("pool_remaining", "scalar: unused pool tiles / 100 (at most 1)"),
    ("progressive", "scalar: log2(progressive multiplier) / 8 (at most 1)"),
    ("own_hand_size", "scalar: own concealed tiles / 14"),
    ("opponent_hand_size", "scalar: the opponent's concealed tiles / 14"),
    ("own_flowers", "scalar: own flowers / 8"),
    ("opponent_flowers", "scalar: the opponent's flowers / 8"),
    ("swap_items", "scalar: own 偷天换日 items / 4 (at most 1)"),
    ("shuffle_items", "scalar: own 移花接木 items / 4 (at most 1)"),
    ("offer_triplet", "scalar: a triplet is offered to this seat (T5)"),
    ("offer_rub", "scalar: 搓牌 is offered to this seat (T5)"),
    *((f"phase_{phase}", f"scalar: the phase is {phase} (as shown to this seat)") for phase in _PHASES),
    ("own_move", "scalar: this seat is shown as the one to move"),
    *((f"choosing_{kind}", f"scalar: a {kind} choice is in progress") for kind in _CHOICES),
    ("erren", "scalar: the profile is erren"),
    *((f"task_{kind}", f"scalar: the erren task is {kind} (T8)") for kind in TASK_KINDS),
    ("task_multiplier", "scalar: the task's multiplier / 8 (at most 1)"),
)
CHANNEL = {name: index for index, (name, _) in enumerate(CHANNELS)}
SHAPE = (len(CHANNELS), 34)
# Channels whose entries count copies: scaled by 1/4 after counting.
_COUNTED = ("hand", "own_melds", "opponent_melds", "own_river", "opponent_river", "own_claimed",
            "opponent_drawn_discards", "bonus", "seen", "selected")  # fmt: skip
_SIZE = len(CHANNELS) * 34
_SCALE = np.ones(_SIZE, np.float32)  # per entry: what one unit counted is worth
for _name in _COUNTED:
    _SCALE[CHANNEL[_name] * 34 : CHANNEL[_name] * 34 + 34] = 0.25
# Tile channels first, then the scalar ones (one value per row), filled in one assignment.
_FIRST_SCALAR = CHANNEL["opponent_hidden_kongs"]
_NO_CHOICE = Choice()
_KINDS = range(34)
_CACHED = 4096  # rivers and melds of recent observations (a few hundred per hand)


def _row(name: str) -> int:
    return CHANNEL[name] * 34


@functools.lru_cache(maxsize=_CACHED)
def _meld_units(melds: tuple[Meld, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The units a seat's melds put in its own planes and in its opponent's, and how many concealed
    kongs they hide. Melds change a few times a hand: counted once per change for both seats (cached)."""
    own: list[int] = []
    opponent: list[int] = []
    hidden = 0
    for meld in melds:
        kind, tile = meld.kind, meld.tile
        if tile == HIDDEN_KONG:
            hidden += 1
            continue
        tiles = (tile, tile + 1, tile + 2) if kind == "chi" else (tile,) * MELD_SIZES[kind]
        seen = [_SEEN + t for t in tiles]
        own += [_OWN_MELDS + t for t in tiles] + seen
        opponent += [_OPP_MELDS + t for t in tiles] + seen
        if kind == "concealed_kong":
            own.append(_OWN_CKONGS + tile)
    return tuple(own), tuple(opponent), hidden


@functools.lru_cache(maxsize=_CACHED)
def _river_units(river: tuple[int, ...], flags: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The units a seat's river puts in its own planes and in its opponent's; counted once per discard
    for both seats (cached)."""
    own: list[int] = []
    opponent: list[int] = []
    for tile, flag in zip(river, flags, strict=True):
        own.append(_OWN_RIVER + tile)
        opponent.append(_OPP_RIVER + tile)
        if flag & DISCARD_CLAIMED:
            own.append(_OWN_CLAIMED + tile)
        else:
            own.append(_SEEN + tile)
            opponent.append(_SEEN + tile)
        if flag & DISCARD_READY:
            own.append(_OWN_READY_DISCARD + tile)
            opponent.append(_OPP_READY_DISCARD + tile)
        if flag & DISCARD_DRAWN:
            opponent.append(_OPP_DRAWN + tile)
    for back, tile in enumerate(river[-1 : -RECENT - 1 : -1]):
        own.append(_OWN_RECENT + back * 34 + tile)
        opponent.append(_OPP_RECENT + back * 34 + tile)
    return tuple(own), tuple(opponent)


def planes(obs: SeatObservation, choice: Choice = _NO_CHOICE) -> Planes:
    """The observation (and the seat's choice in progress) as float32 planes of shape ``SHAPE``."""
    own, opp = obs.seat, 1 - obs.seat
    put: list[int] = []  # flat indices, one per unit counted (copies of a tile, a one-hot)
    hand = obs.hand
    for tile in compress(_KINDS, hand):
        copies = hand[tile]
        put += [_HAND + tile] * copies
        put += [_SEEN + tile] * copies
    if obs.drawn >= 0:
        put.append(_DRAWN + obs.drawn)
    put += _meld_units(obs.melds[own])[0]
    _, opponent_melds, hidden = _meld_units(obs.melds[opp])
    put += opponent_melds
    put += _river_units(obs.rivers[own], obs.river_flags[own])[0]
    put += _river_units(obs.rivers[opp], obs.river_flags[opp])[1]
    if obs.last_discard >= 0:
        put.append(_LAST_DISCARD + obs.last_discard)
    put += [_BONUS + tile for tile in obs.bonus_tiles if tile < 34]
    wind = obs.seat_wind(own)
    if wind >= 0:
        put.append(_OWN_WIND + 27 + wind)
    put.append(_ROUND_WIND + 27 + obs.round_wind)
    if obs.offer_tile >= 0:
        put.append(_OFFER_TILE + obs.offer_tile)
    put += [_SELECTED + tile for tile in choice.tiles]
    if choice.source >= 0:
        put.append(_SWAP_SOURCE + choice.source)
    task = obs.task
    if task is not None and task.pattern in TASK_PATTERNS:
        put.append(_TASK_PATTERN + TASK_PATTERNS.index(task.pattern))
    # One pass in numpy: count the units, scale them to float32 (the cheapest of the ways measured).
    counts = np.bincount(np.array(put, np.intp), minlength=_SIZE)
    out = np.multiply(counts, _SCALE, dtype=np.float32).reshape(SHAPE)
    out[_FIRST_SCALAR:] = np.array(_scalars(obs, choice, hidden), np.float32)[:, None]
    return out


def _scalars(obs: SeatObservation, choice: Choice, hidden_kongs: int) -> list[float]:
    """The scalar channels' values, in their order (from ``opponent_hidden_kongs`` on)."""
    own, opp = obs.seat, 1 - obs.seat
    erren = obs.profile == "erren"
    items = obs.items
    task = obs.task
    phase = obs.phase
    choosing = choice.kind or (
        A.EXCHANGE if phase == "exchange" and any(a.kind == A.EXCHANGE for a in obs.legal) else ""
    )
    return [
        hidden_kongs / 4,
        float(obs.dealer == own),
        float(obs.ready[own]),
        float(obs.ready[opp]),
        float(obs.doubling[own] is True),
        float(obs.doubling[opp] is True),
        float(erren and obs.doubling[opp] is None),
        obs.win_doublings[own] / 8,
        obs.win_doublings[opp] / 8,
        min(1.0, obs.wall_remaining / 100),
        min(1.0, obs.pool_remaining / 100),
        min(1.0, math.log2(max(obs.progressive, 1)) / 8),
        obs.hand_sizes[own] / 14,
        obs.hand_sizes[opp] / 14,
        len(obs.flowers[own]) / 8,
        len(obs.flowers[opp]) / 8,
        min(1.0, obs.item_count("swap_item") / 4) if items else 0.0,
        min(1.0, obs.item_count("shuffle_item") / 4) if items else 0.0,
        float(obs.offer == "triplet"),
        float(obs.offer == "rub"),
        *(float(phase == name) for name in _PHASES),
        float(obs.to_move == own),
        *(float(choosing == kind) for kind in _CHOICES),
        float(erren),
        *(float(task is not None and task.kind == kind) for kind in TASK_KINDS),
        min(1.0, task.multiplier / 8) if task is not None else 0.0,
    ]


_C = CHANNEL
_HAND, _DRAWN, _SEEN = _row("hand"), _row("drawn"), _row("seen")
_OWN_MELDS, _OPP_MELDS, _OWN_CKONGS = _row("own_melds"), _row("opponent_melds"), _row("own_concealed_kongs")
_OWN_RIVER, _OPP_RIVER = _row("own_river"), _row("opponent_river")
_OWN_CLAIMED, _OPP_DRAWN = _row("own_claimed"), _row("opponent_drawn_discards")
_OWN_READY_DISCARD, _OPP_READY_DISCARD = _row("own_ready_discard"), _row("opponent_ready_discard")
_OWN_RECENT, _OPP_RECENT = _row("own_recent_0"), _row("opponent_recent_0")
_LAST_DISCARD, _BONUS = _row("last_discard"), _row("bonus")
_OWN_WIND, _ROUND_WIND, _OFFER_TILE = _row("own_wind"), _row("round_wind"), _row("offer_tile")
_SELECTED, _SWAP_SOURCE, _TASK_PATTERN = _row("selected"), _row("swap_source"), _row("task_pattern")
