"""Bring your own bot: an env policy plays on a real table server through the client library, and the
observation the client builds from its stream equals the env's at every decision.

Each seat plays with :class:`EnvPolicy` over the SDK's seat loop (``play_table``) on real gRPC streams.
The table server builds every view from its engine; the test keeps, for each view that asks a seat to
decide, a replay of that engine's log up to that moment (``Table.replay(table.events)``). At each
decision the client's :class:`SeatObservation` must equal the env's ``observe()`` of the replayed
table, and at each step of the decision (a choice of several tiles takes several) the planes and mask
the policy was given must equal the env's (``planes``, ``fill_mask``), and the env's ``choose`` must
complete the same engine action the client sent. Every message either seat received is checked for
hidden information as the other table tests check theirs.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from duelmahjong.client.env_policy import Decided, EnvObservation, EnvPolicy
from duelmahjong.client.play import MatchPlan, play_table
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import play_pb2, rules_pb2
from duelmahjong.views import seat_views
from tests.unit.env.play import check_against_env

pytestmark = pytest.mark.asyncio

_EAGER = (L.SELF_DRAW_WIN, L.WIN, L.BEGIN_SWAP, L.BEGIN_TRIPLET, L.BEGIN_SHUFFLE, L.KONG, L.PONG)


class HeuristicPolicy:
    """An env policy written against planes and mask only: wins, begins every choice of several tiles
    and claims when it may (to reach them all), 报听 when it can, and otherwise discards the tile with
    the fewest neighbours in its hand; in a choice it selects a few tiles at random, then confirms."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, observation: EnvObservation) -> int:
        mask = observation["action_mask"]
        offered = [int(i) for i in np.flatnonzero(mask)]
        for index in _EAGER:
            if mask[index] and self.rng.random() < 0.8:
                return index
        if mask[L.CONFIRM] and (self.rng.random() < 0.5 or not mask[L.SELECT : L.SWAP_TARGET].any()):
            return L.CONFIRM
        selects = [i for i in offered if L.SELECT <= i < L.SWAP_TARGET + L.TILE_KINDS]
        if selects:
            return self.rng.choice(selects)
        ready = [i for i in offered if L.READY <= i < L.READY + L.TILE_KINDS]
        if ready:
            return self.rng.choice(ready)
        discards = [i for i in offered if L.DISCARD <= i < L.DISCARD + L.TILE_KINDS]
        if discards:
            hand = observation["observation"][0] * 4
            return min(discards, key=lambda tile: (_neighbours(hand, tile), self.rng.random()))
        return self.rng.choice([i for i in offered if i != L.LEAVE] or offered)


def _neighbours(hand: np.ndarray, tile: int) -> float:
    near = hand[tile] - 1
    if tile < 27:
        rank = tile % 9
        near += sum(hand[tile + d] for d in (-2, -1, 1, 2) if 0 <= rank + d < 9) * 0.5
    return float(near)


class Witness:
    """What the server's engine was when it built each deciding view, and the checks at each decision."""

    def __init__(self) -> None:
        self.tables: dict[tuple[int, bytes], Table] = {}
        self.decisions = 0
        self.steps = 0
        self.seen: Counter[str] = Counter()

    def capture(self, built: Callable[..., play_pb2.SeatView]) -> Callable[..., play_pb2.SeatView]:
        def seat_view(table: Table, seat: int, facts: Any, legal: Any) -> play_pb2.SeatView:
            view = built(table, seat, facts, legal)
            if legal is not None and legal.actions and seat >= 0:
                key = (seat, view.SerializeToString(deterministic=True))
                self.tables[key] = Table.replay(table.events)
            return view

        return seat_view

    def check(self, view: play_pb2.SeatView, decided: Decided) -> None:
        seat = decided.observation.seat
        check_against_env(self.tables[seat, view.SerializeToString(deterministic=True)], seat, decided)
        self.decisions += 1
        self.steps += len(decided.steps)
        self.seen[decided.observation.phase] += 1
        self.seen[decided.action.kind] += 1


@pytest.mark.parametrize(
    ("rules", "items"),
    [
        pytest.param(
            rules_pb2.RoomRules(
                profile=rules_pb2.PROFILE_DUEL,
                fan_rate=10,
                items_enabled=True,
                guess_enabled=True,
                triplet_offer_probability=0.3,
                pick_offer_probability=0.3,
            ),
            [
                rules_pb2.ItemCount(item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, count=2),
                rules_pb2.ItemCount(item=rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS, count=2),
            ],
            id="duel-items-offers-guess",
        ),
        pytest.param(rules_pb2.RoomRules(profile=rules_pb2.PROFILE_ERREN, fan_rate=10), None, id="erren"),
        pytest.param(  # views built while claim windows hold events back (docs/protocol.md "Claim windows")
            rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=10, claim_window_ms=10),
            None,
            id="duel-claim-windows",
        ),
    ],
)
async def test_an_env_policy_sees_on_the_server_what_it_sees_in_the_env(
    kit: SimpleNamespace,
    table_server: Any,
    open_table: Callable[..., Any],
    client_tls: ClientTls,
    monkeypatch: pytest.MonkeyPatch,
    rules: rules_pb2.RoomRules,
    items: list[rules_pb2.ItemCount] | None,
) -> None:
    witness = Witness()
    monkeypatch.setattr(seat_views, "seat_view", witness.capture(seat_views.seat_view))
    table_id, first, second = await open_table(rules, items)
    live = kit.live(table_server, table_id)
    hands = 4
    outcomes = await asyncio.wait_for(
        asyncio.gather(
            *(
                play_table(
                    kit.table_ready(table_server.address, table_id, client),
                    client.token,
                    EnvPolicy(HeuristicPolicy(seed=client.seat), watch=witness.check),
                    MatchPlan(hands=hands),
                    tls=client_tls,
                    watch=client.received.append,  # kept to check below that nothing hidden reached it
                )
                for client in (first, second)
            )
        ),
        timeout=60,
    )
    print(f"{witness.decisions} decisions, {witness.steps} steps: {dict(witness.seen)}")
    for outcome in outcomes:
        assert outcome.hands_settled == hands, outcome.ended_reason
        assert not outcome.rejections, outcome.rejections
    assert witness.decisions > 10 * hands
    for client in (first, second):
        assert kit.check_hidden(client, live) > 100  # the fields the observation added hide nothing
    assert witness.seen["turn"] and witness.seen["exchange"]
