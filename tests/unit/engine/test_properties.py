"""Property tests over random seeds and random legal actions: no crash, tile conservation and the other
invariants at every step, replay = live, determinism byte for byte, hidden information stays hidden,
illegal actions change nothing."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.events import Event, canonical_log
from duelmahjong.engine.invariants import check_state, check_view
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

ROOMS = [
    RoomSettings(profile="duel"),
    RoomSettings(
        profile="duel", triplet_offer_probability=0.3, rub_offer_probability=0.3, guess_enabled=True
    ),
    RoomSettings(profile="erren"),
    RoomSettings(profile="erren", minimum_fan=0),
]
ITEMS = ({"swap_item": 1, "shuffle_item": 1, "qiankun": 1}, {"swap_item": 1})


def _random_hand(
    room: RoomSettings, seed: int, rng: random.Random, *, leave: bool
) -> tuple[Table, list[Action]]:
    table = Table(room)
    items = ITEMS if room.is_duel else None
    qiankun = [0] if room.is_duel and rng.random() < 0.3 else []
    table.start_hand(seed, items=items, qiankun=qiankun)
    played: list[Action] = []
    while table.phase not in ("over", "closed"):
        options = [a for seat in (0, 1) for a in table.legal_actions(seat) if a.kind != A.LEAVE]
        if leave and rng.random() < 0.02:
            options = [Action(rng.randrange(2), A.LEAVE)]
        action = rng.choice(options)
        before = len(table.events)
        table.apply(action)
        played.append(action)
        check_state(table.state)
        for seat in (0, 1):
            check_view(table.state, table.view(seat))
        assert len(table.events) > before
    return table, played


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), room=st.sampled_from(ROOMS), choices=st.randoms(use_true_random=False))
def test_random_play_keeps_every_invariant_and_replays(
    seed: int, room: RoomSettings, choices: random.Random
) -> None:
    table, played = _random_hand(room, seed, choices, leave=True)
    assert [Event.from_json(event.to_json()) for event in table.events] == table.events  # JSON round trip
    replayed = Table.replay([event.to_json() for event in table.events])
    assert vars(replayed.state) == vars(table.state)
    # Same seed, same actions: the same events byte for byte.
    again = Table(room)
    again.start_hand(
        seed,
        items=ITEMS if room.is_duel else None,
        qiankun=list(table.events[1].qiankun),
    )
    for action in played:
        again.apply(action)
    assert canonical_log(again.events) == canonical_log(table.events)
    assert table.outcome is not None


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), room=st.sampled_from(ROOMS), choices=st.randoms(use_true_random=False))
def test_illegal_actions_leave_the_state_untouched(
    seed: int, room: RoomSettings, choices: random.Random
) -> None:
    table = Table(room)
    table.start_hand(seed)
    for _ in range(60):
        if table.phase in ("over", "closed"):
            break
        seat = choices.randrange(2)
        legal = table.legal_actions(seat)
        wrong = [
            Action(seat, A.DISCARD, choices.randrange(34)),
            Action(seat, A.PONG, choices.randrange(34)),
            Action(1 - seat, A.SELF_DRAW_WIN, choices.randrange(34)),
            Action(seat, A.GUESS_BIG),
            # Anything at all: any kind, tile kinds out of range, stray fields (never a crash).
            Action(
                seat,
                choices.choice(A.KINDS),
                choices.randrange(-2, 44),
                tuple(sorted(choices.randrange(-1, 43) for _ in range(choices.choice((0, 1, 3))))),
                choices.choice((-1, choices.randrange(-2, 44))),
            ),
        ]
        for action in wrong:
            if action in legal or action in table.legal_actions(action.seat) or _accepted(table, action):
                continue
            snapshot = copy.deepcopy(vars(table.state))
            count = len(table.events)
            with pytest.raises(IllegalActionError):
                table.apply(action)
            assert vars(table.state) == snapshot and len(table.events) == count
        options = [a for s in (0, 1) for a in table.legal_actions(s) if a.kind != A.LEAVE]
        table.apply(choices.choice(options))


def _accepted(table: Table, action: Action) -> bool:
    """Whether ``table.check`` takes the action (a combinatorial choice may be legal unlisted)."""
    try:
        table.check(action)
    except IllegalActionError:
        return False
    return True


def test_views_never_show_hidden_information() -> None:
    table = Table(RoomSettings())
    table.start_hand(42, salt=bytes(range(16)))
    text = repr(table.view(0)) + repr(table.view(1))
    for secret in ("'seed'", "'salt'", "'wall'", "'pool'"):
        assert secret not in text
    opponent = table.view(0)["seats"][1]
    assert "hand" not in opponent and opponent["hand_size"] in (13, 14)
