"""Decisions as training records in the env's own terms, and the samples a learner reads back.

A record of one decision (``duel export`` writes one per decision of a seat whose player shares) holds
the seat's :class:`SeatObservation` as JSON and the **steps** the decision took in the env: one step for
most actions, several for a choice of several tiles (begin, SELECT…, CONFIRM). Each step keeps the
seat's choice in progress, its legal indices (the mask) and the index played. :func:`samples` turns a
record back into exactly what the env showed a policy at each step — ``planes(obs, choice)``, the mask,
the index — so a model trained on exported hands reads the env's observation and answers in its
action space.

>>> from duelmahjong.engine.settings import RoomSettings
>>> from duelmahjong.engine.table import Table
>>> table = Table(RoomSettings(profile="duel"))
>>> _ = table.start_hand(seed=7)
>>> seat = table.state.dealer
>>> fields = env_fields(table, seat, Action(seat, "exchange", tiles=(0,)))
>>> [step["index"] for step in fields["steps"]], fields["steps"][1]["choice"]
([204, 282], {'kind': 'exchange', 'tiles': [0], 'source': -1})
>>> [sample.index for sample in samples(fields)]
[204, 282]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from duelmahjong.engine.actions import Action
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L
from duelmahjong.env.observation import Meld, SeatObservation, Task
from duelmahjong.env.observe import observe
from duelmahjong.env.planes import Planes, planes
from duelmahjong.env.selection import Choice, Mask, choose, fill_mask


@dataclass(frozen=True, slots=True)
class Sample:
    """One step of a decision as the env showed it: the planes, the mask, and the index played."""

    planes: Planes
    mask: Mask
    index: int


def observation_json(obs: SeatObservation) -> dict[str, Any]:
    """``obs`` as JSON-able values (legal actions in their text form); :func:`observation_of` reads it."""
    return {
        "profile": obs.profile,
        "seat": obs.seat,
        "phase": obs.phase,
        "to_move": obs.to_move,
        "hand_number": obs.hand_number,
        "dealer": obs.dealer,
        "round_wind": obs.round_wind,
        "progressive": obs.progressive,
        "wall_remaining": obs.wall_remaining,
        "pool_remaining": obs.pool_remaining,
        "bonus_tiles": list(obs.bonus_tiles),
        "task": None
        if obs.task is None
        else {"kind": obs.task.kind, "pattern": obs.task.pattern, "multiplier": obs.task.multiplier},
        "last_discard": obs.last_discard,
        "hand": list(obs.hand),
        "drawn": obs.drawn,
        "hand_sizes": list(obs.hand_sizes),
        "melds": [[[meld.kind, meld.tile] for meld in melds] for melds in obs.melds],
        "rivers": [list(river) for river in obs.rivers],
        "river_flags": [list(flags) for flags in obs.river_flags],
        "flowers": [list(flowers) for flowers in obs.flowers],
        "ready": list(obs.ready),
        "doubling": list(obs.doubling),
        "win_doublings": list(obs.win_doublings),
        "items": dict(obs.items),
        "offer": obs.offer,
        "offer_tile": obs.offer_tile,
        "legal": [str(action) for action in obs.legal],
    }


def _pair(values: list[Any]) -> tuple[Any, Any]:
    first, second = values
    return first, second


def observation_of(data: Mapping[str, Any]) -> SeatObservation:
    """The :class:`SeatObservation` :func:`observation_json` wrote."""
    task = data["task"]
    melds = [tuple(Meld(str(kind), int(tile)) for kind, tile in seat) for seat in data["melds"]]
    return SeatObservation(
        profile=data["profile"],
        seat=data["seat"],
        phase=data["phase"],
        to_move=data["to_move"],
        hand_number=data["hand_number"],
        dealer=data["dealer"],
        round_wind=data["round_wind"],
        progressive=data["progressive"],
        wall_remaining=data["wall_remaining"],
        pool_remaining=data["pool_remaining"],
        bonus_tiles=tuple(data["bonus_tiles"]),
        task=None if task is None else Task(task["kind"], task["pattern"], task["multiplier"]),
        last_discard=data["last_discard"],
        hand=tuple(data["hand"]),
        drawn=data["drawn"],
        hand_sizes=_pair(data["hand_sizes"]),
        melds=_pair(melds),
        rivers=_pair([tuple(river) for river in data["rivers"]]),
        river_flags=_pair([tuple(flags) for flags in data["river_flags"]]),
        flowers=_pair([tuple(flowers) for flowers in data["flowers"]]),
        ready=_pair(data["ready"]),
        doubling=_pair(data["doubling"]),
        win_doublings=_pair(data["win_doublings"]),
        items=tuple(sorted(data["items"].items())),
        offer=data["offer"],
        offer_tile=data["offer_tile"],
        legal=tuple(Action.parse(text) for text in data["legal"]),
    )


def _choice_json(choice: Choice) -> dict[str, Any]:
    return {"kind": choice.kind, "tiles": list(choice.tiles), "source": choice.source}


def _choice_of(data: Mapping[str, Any] | None) -> Choice:
    choice = Choice()
    if data:
        choice.kind, choice.tiles, choice.source = data["kind"], list(data["tiles"]), data["source"]
    return choice


def env_fields(table: Table, seat: int, action: Action) -> dict[str, Any]:
    """The env's record of ``seat`` playing ``action`` on ``table`` (as it stands before the action):
    ``observation`` (:func:`observation_json`) and ``steps``, one per index of the action's sequence,
    each with the choice in progress (omitted when none), the legal indices and the index. The table
    is not changed. Leaving is offered as the env offers it (``allow_leave``, its default)."""
    choice = Choice()
    mask = np.zeros(L.ACTION_COUNT, np.int8)
    steps: list[dict[str, Any]] = []
    for index in L.index_of(action):
        fill_mask(table, seat, choice, mask)
        step: dict[str, Any] = {"legal": np.flatnonzero(mask).tolist(), "index": index}
        if choice.kind or choice.tiles or choice.source >= 0:
            step["choice"] = _choice_json(choice)
        steps.append(step)
        choose(table, seat, choice, index, mask)  # refuses an index the mask does not hold
    return {"observation": observation_json(observe(table, seat)), "steps": steps}


def samples(record: Mapping[str, Any]) -> Iterator[Sample]:
    """What the env showed the seat at each step of a record's decision (:func:`env_fields`)."""
    obs = observation_of(record["observation"])
    for step in record["steps"]:
        mask = np.zeros(L.ACTION_COUNT, np.int8)
        mask[step["legal"]] = 1
        yield Sample(planes(obs, _choice_of(step.get("choice"))), mask, int(step["index"]))
