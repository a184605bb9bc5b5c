"""A seat's observation as fixed-shape feature planes: float32 [CHANNELS, 34], one column per tile kind.

Tile channels hold counts / 4 (or a one-hot) over the 34 kinds; scalar channels fill their whole row
with one value in [0, 1]. Channels are relative to the observing seat ("own", "opponent"). The planes
read only the :class:`SeatObservation` and the seat's choice in progress, so they leak nothing the
observation does not hold. ``CHANNELS`` is the table docs/env.md shows.

>>> len(CHANNELS), CHANNELS[0]
(66, ('hand', 'own concealed tiles (drawn tile included), count / 4'))
"""

from __future__ import annotations

import math

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
    ("opponent_hidden_kongs", "scalar: the opponent's concealed kongs not shown, number / 4"),
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
    ("task_pattern", "a 番型 task's pattern, one-hot on columns 0-5: " + ", ".join(TASK_PATTERNS)),
)
CHANNEL = {name: index for index, (name, _) in enumerate(CHANNELS)}
SHAPE = (len(CHANNELS), 34)
# Channels whose entries count copies: scaled by 1/4 after counting.
_COUNTED = ("hand", "own_melds", "opponent_melds", "own_river", "opponent_river", "own_claimed",
            "opponent_drawn_discards", "bonus", "seen", "selected")  # fmt: skip
_SCALE = np.ones((len(CHANNELS), 1), np.float32)
for _name in _COUNTED:
    _SCALE[CHANNEL[_name]] = 0.25
_SIZE = len(CHANNELS) * 34
_PHASE_ROW = {phase: CHANNEL[f"phase_{phase}"] for phase in _PHASES}
_CHOICE_ROW = {kind: CHANNEL[f"choosing_{kind}"] for kind in _CHOICES}
_NO_CHOICE = Choice()


def _row(name: str) -> int:
    return CHANNEL[name] * 34


def _melded(at: int, melds: tuple[Meld, ...], put: list[int]) -> int:
    """Count the tiles of shown melds at row offset ``at``; returns the hidden concealed kongs."""
    hidden = 0
    for meld in melds:
        kind, tile = meld.kind, meld.tile
        if tile == HIDDEN_KONG:
            hidden += 1
        elif kind == "chi":
            put += (at + tile, at + tile + 1, at + tile + 2)
        else:
            put += [at + tile] * MELD_SIZES[kind]
    return hidden


def planes(obs: SeatObservation, choice: Choice = _NO_CHOICE) -> Planes:
    """The observation (and the seat's choice in progress) as float32 planes of shape ``SHAPE``."""
    own, opp = obs.seat, 1 - obs.seat
    put: list[int] = []  # flat indices, one per unit counted (copies of a tile, a one-hot)
    hand = obs.hand
    for tile in range(34):
        copies = hand[tile]
        if copies:
            put += [_HAND + tile] * copies
            put += [_SEEN + tile] * copies
    if obs.drawn >= 0:
        put.append(_DRAWN + obs.drawn)
    own_melds, opp_melds = obs.melds[own], obs.melds[opp]
    _melded(_OWN_MELDS, own_melds, put)
    _melded(_SEEN, own_melds, put)
    hidden = _melded(_OPP_MELDS, opp_melds, put)
    _melded(_SEEN, opp_melds, put)
    for meld in own_melds:
        if meld.kind == "concealed_kong":
            put.append(_OWN_CKONGS + meld.tile)
    for seat, river_row, recent_row, ready_row in (
        (own, _OWN_RIVER, _OWN_RECENT, _OWN_READY_DISCARD),
        (opp, _OPP_RIVER, _OPP_RECENT, _OPP_READY_DISCARD),
    ):
        river, flags = obs.rivers[seat], obs.river_flags[seat]
        for tile, flag in zip(river, flags, strict=True):
            put.append(river_row + tile)
            if flag & DISCARD_CLAIMED:
                if seat == own:
                    put.append(_OWN_CLAIMED + tile)
            else:
                put.append(_SEEN + tile)
            if flag & DISCARD_READY:
                put.append(ready_row + tile)
            if flag & DISCARD_DRAWN and seat == opp:
                put.append(_OPP_DRAWN + tile)
        for back, tile in enumerate(river[-1 : -RECENT - 1 : -1]):
            put.append(recent_row + back * 34 + tile)
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
    out = np.bincount(put, minlength=_SIZE).astype(np.float32).reshape(SHAPE)
    out *= _SCALE
    _scalars(obs, choice, out, hidden)
    return out


def _scalars(obs: SeatObservation, choice: Choice, out: Planes, hidden_kongs: int) -> None:
    """Fill the scalar rows (only the non-zero ones: the rest are zero already)."""
    own, opp = obs.seat, 1 - obs.seat
    values = [
        (_C["opponent_hidden_kongs"], hidden_kongs / 4),
        (_C["own_dealer"], float(obs.dealer == own)),
        (_C["own_ready"], float(obs.ready[own])),
        (_C["opponent_ready"], float(obs.ready[opp])),
        (_C["own_doubled"], float(obs.doubling[own] is True)),
        (_C["opponent_doubled"], float(obs.doubling[opp] is True)),
        (_C["opponent_doubling_unknown"], float(obs.profile == "erren" and obs.doubling[opp] is None)),
        (_C["own_win_doublings"], obs.win_doublings[own] / 8),
        (_C["opponent_win_doublings"], obs.win_doublings[opp] / 8),
        (_C["wall_remaining"], min(1.0, obs.wall_remaining / 100)),
        (_C["pool_remaining"], min(1.0, obs.pool_remaining / 100)),
        (_C["progressive"], min(1.0, math.log2(max(obs.progressive, 1)) / 8)),
        (_C["own_hand_size"], obs.hand_sizes[own] / 14),
        (_C["opponent_hand_size"], obs.hand_sizes[opp] / 14),
        (_C["own_flowers"], len(obs.flowers[own]) / 8),
        (_C["opponent_flowers"], len(obs.flowers[opp]) / 8),
        (_C["offer_triplet"], float(obs.offer == "triplet")),
        (_C["offer_rub"], float(obs.offer == "rub")),
        (_C["own_move"], float(obs.to_move == own)),
        (_C["erren"], float(obs.profile == "erren")),
    ]
    if obs.items:
        values.append((_C["swap_items"], min(1.0, obs.item_count("swap_item") / 4)))
        values.append((_C["shuffle_items"], min(1.0, obs.item_count("shuffle_item") / 4)))
    phase_row = _PHASE_ROW.get(obs.phase)
    if phase_row is not None:
        values.append((phase_row, 1.0))
    if choice.kind or (obs.phase == "exchange" and any(a.kind == A.EXCHANGE for a in obs.legal)):
        values.append((_CHOICE_ROW[choice.kind or A.EXCHANGE], 1.0))
    task = obs.task
    if task is not None:
        if task.kind in TASK_KINDS:
            values.append((_C[f"task_{task.kind}"], 1.0))
        values.append((_C["task_multiplier"], min(1.0, task.multiplier / 8)))
    for row, value in values:
        if value:
            out[row] = value


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
