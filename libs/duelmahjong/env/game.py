"""One table as the env steps it: hands dealt from an episode seed, indices in, rewards out.

The AEC, parallel and batched forms all drive this object. An episode is one hand, or a pairing of
``hands`` hands on one table (the duel progressive multiplier doubling each hand); it ends early when
a seat leaves. Every hand's seed is drawn from the episode seed, so ``reset(seed)`` replays the same
deal, and the same indices replay the same events.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import CLOSED, OVER
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L
from duelmahjong.env.observation import SeatObservation
from duelmahjong.env.observe import observe
from duelmahjong.env.planes import Planes, planes
from duelmahjong.env.rewards import hand_rewards
from duelmahjong.env.selection import Choice, Mask, check_index, choose, fill_mask, has_decision

SEATS = (0, 1)


Items = tuple[Mapping[str, int], Mapping[str, int]]


class EnvOptionArgs(TypedDict, total=False):
    """:class:`EnvOptions`' fields as the env factories' keyword arguments."""

    hands: int
    carries: tuple[int, int] | None
    allow_leave: bool
    items: Items | None


@dataclass(frozen=True, slots=True)
class EnvOptions:
    """What an episode is beyond the room's settings.

    ``hands``: hands per episode (a pairing on one table: the duel progressive multiplier doubles each
    hand). ``carries``: each seat's carry at the episode's start, capping rewards as the wallet does
    (None: uncapped, as scored). ``allow_leave``: False masks leaving (escape, T10) out. ``items``:
    each seat's item counts at every deal (T6, e.g. ``{"swap_item": 1}``), as the wallet would grant.
    """

    hands: int = 1
    carries: tuple[int, int] | None = None
    allow_leave: bool = True
    items: Items | None = None

    def __post_init__(self) -> None:
        if self.hands < 1:
            raise ValueError(f"an episode has at least one hand, got {self.hands}")


class Game:
    """A table, both seats' choices in progress, and the episode's rewards."""

    def __init__(self, settings: RoomSettings, options: EnvOptions | None = None) -> None:
        self.settings = settings
        self.options = options or EnvOptions()
        self.table = Table(settings)
        self.choices = (Choice(), Choice())
        self.rewards = [0.0, 0.0]  # of the last step
        self.outcomes: list[Outcome] = []
        self.carries: list[int] | None = None
        self.done = True
        self._rng = random.Random(0)
        self._masks = (np.zeros(L.ACTION_COUNT, np.int8), np.zeros(L.ACTION_COUNT, np.int8))
        self._mask_keys: list[tuple[int, str, int, int] | None] = [None, None]

    def reset(self, seed: int | None = None) -> None:
        """A new episode: a new table, its first hand dealt from ``seed`` (None: from the OS)."""
        self._rng = random.Random(seed)
        self.table = Table(self.settings)
        for choice in self.choices:
            choice.clear()
        self.rewards = [0.0, 0.0]
        self.outcomes = []
        carries = self.options.carries
        self.carries = None if carries is None else list(carries)
        self.done = False
        self._mask_keys = [None, None]
        self._deal()

    def _deal(self) -> None:
        self.table.start_hand(self._rng.getrandbits(64), items=self.options.items)

    # --- reading -----------------------------------------------------------------------------------------
    def deciding(self) -> list[int]:
        """The seats with a decision now (both during 开始加倍 and 换牌, else at most one)."""
        if self.done:
            return []
        table = self.table
        return [seat for seat in SEATS if has_decision(table.legal_actions(seat))]

    def to_act(self) -> int:
        """The seat the AEC form asks next: one in the middle of a choice, else the first deciding."""
        for seat in SEATS:
            if self.choices[seat].kind:
                return seat
        deciding = self.deciding()
        return deciding[0] if deciding else -1

    def mask(self, seat: int) -> Mask:
        """``seat``'s legal indices now (int8, shape (ACTION_COUNT,)); cached until the next step. Do not
        mutate: copy it to keep it."""
        choice = self.choices[seat]
        key = (self.table.state.events_folded, choice.kind, len(choice.tiles), choice.source)
        mask = self._masks[seat]
        if self._mask_keys[seat] != key:
            if self.done:
                mask.fill(0)
                mask[L.NOOP] = 1
            else:
                fill_mask(self.table, seat, choice, mask, allow_leave=self.options.allow_leave)
            self._mask_keys[seat] = key
        return mask

    def observation(self, seat: int) -> SeatObservation:
        return observe(self.table, seat)

    def planes(self, seat: int) -> Planes:
        return planes(observe(self.table, seat), self.choices[seat])

    # --- stepping ----------------------------------------------------------------------------------------
    def step(self, seat: int, index: int) -> None:
        """Play one index for ``seat``; ``rewards`` are then the step's (non-zero when a hand ended)."""
        self.rewards = [0.0, 0.0]
        self._play(seat, index, self.mask(seat))

    def step_all(self, indices: tuple[int, int]) -> None:
        """The parallel form: both seats' indices, each checked against its mask before either is
        played; then played in seat order. A seat without a decision sends NOOP. When the first seat's
        action ends the hand, the second's index (decided in that hand) is dropped."""
        self.rewards = [0.0, 0.0]
        masks = [self.mask(seat).copy() for seat in SEATS]
        for seat in SEATS:
            check_index(masks[seat], seat, indices[seat])
        hands_over = len(self.outcomes)
        for seat in SEATS:
            if self.done or len(self.outcomes) != hands_over or indices[seat] == L.NOOP:
                continue
            current = self.mask(seat)
            if current[indices[seat]]:
                self._play(seat, indices[seat], current)

    def _play(self, seat: int, index: int, mask: Mask) -> None:
        action = choose(self.table, seat, self.choices[seat], index, mask)
        if action is None:
            return
        table = self.table
        table.apply(action)
        if table.state.phase in (OVER, CLOSED):
            self._hand_over()

    def _hand_over(self) -> None:
        table = self.table
        outcome = table.outcome
        if outcome is None:
            raise RuntimeError(f"the table is in phase {table.state.phase!r} without an outcome")
        self.outcomes.append(outcome)
        carries = None if self.carries is None else (self.carries[0], self.carries[1])
        gained = hand_rewards(outcome, self.settings.profile, carries)
        for seat in SEATS:
            self.rewards[seat] += gained[seat]
            if self.carries is not None:
                self.carries[seat] = max(0, self.carries[seat] + int(gained[seat]))
        for choice in self.choices:
            choice.clear()
        if table.state.phase == CLOSED or len(self.outcomes) >= self.options.hands:
            self.done = True
        else:
            self._deal()
