"""The client library's side of bring-your-own-bot, against the engine without a server: the table's
view builder (``seat_views``) shows each seat its view, :class:`EnvPolicy` plays it, and at every
decision its observation, planes and masks equal the env's; every index sequence becomes a contract
action (a ``PlayRequest``) that the table decodes back to the engine action it meant, for every kind
of action; and ``load_policy`` (``duel bot --policy``) reads ``module:callable`` or says why it cannot."""

from __future__ import annotations

import random
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from duelmahjong.cli.bot import policy_of
from duelmahjong.client.env_observation import seat_observation_from_view
from duelmahjong.client.env_policy import EnvObservation, EnvPolicy, PolicyError, load_policy
from duelmahjong.client.policy import BaselineBot
from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import choose as bot_choose
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import CLOSED, OVER
from duelmahjong.engine.table import Table
from duelmahjong.engine.wall import stack_tiles
from duelmahjong.env import aec_env
from duelmahjong.env import layout as L
from duelmahjong.env.observe import observe
from duelmahjong.env.selection import has_decision
from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2
from duelmahjong.views import codec, seat_views
from tests.unit.env.play import ITEMS, ROOMS, check_against_env

PLAYERS = (rules_pb2.SeatPlayer(player_id="a"), rules_pb2.SeatPlayer(player_id="b"))


def view_of(table: Table, seat: int) -> play_pb2.SeatView:
    """What the table server would show ``seat`` now, its decision included."""
    state = table.state
    facts = seat_views.TableFacts(
        table_id="t",
        hand_id="t-h1",
        players=PLAYERS,
        connected=(True, True),
        fan_rate=10,
        sequence=len(table.events),
        items=(dict(state.items[0]), dict(state.items[1])),
    )
    actions, default = seat_views.engine_decision(table, seat)
    legal = seat_views.legal_actions(
        actions, default, sequence=len(table.events), remaining=None, decision_seconds=15, bank=30
    )
    return seat_views.seat_view(table, seat, facts, legal)


class Planned:
    """An env policy that plays a planned index sequence, else a random offered index (not leaving)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.planned: list[int] = []

    def __call__(self, observation: EnvObservation) -> int:
        if self.planned:
            return self.planned.pop(0)
        offered = [int(i) for i in np.flatnonzero(observation["action_mask"]) if i != L.LEAVE]
        return self.rng.choice(offered)


def decisions(profile: str, seed: int, hands: int) -> Iterator[tuple[Table, int, EnvPolicy, Planned]]:
    """Each decision of ``hands`` hands of ``profile``: (table, seat, the seat's env policy, its
    callable), the caller deciding and applying before the next."""
    settings, _ = ROOMS[profile]
    rng = random.Random(seed)
    table = Table(settings)
    callables = (Planned(seed), Planned(seed + 1))
    policies = (EnvPolicy(callables[0]), EnvPolicy(callables[1]))
    for _ in range(hands):
        table.start_hand(rng.getrandbits(64), items=ITEMS if profile == "duel" else None)
        while table.state.phase not in (OVER, CLOSED):
            seat = next(s for s in (0, 1) if has_decision(table.legal_actions(s)))
            yield table, seat, policies[seat], callables[seat]


@pytest.mark.parametrize(("profile", "seed"), [("duel", 1), ("duel", 2), ("erren", 3), ("erren", 4)])
def test_the_client_observation_planes_and_masks_equal_the_env_s_at_every_decision(
    profile: str, seed: int
) -> None:
    """Both seats' observations at every step (the one waiting too), and the deciding seat's planes and
    masks through each step of its decision; the action it sends is the one its indices meant."""
    rng = random.Random(seed)
    seen: Counter[str] = Counter()
    for table, seat, policy, planned in decisions(profile, seed, hands=12):
        legal = table.legal_actions(seat)
        if rng.random() < 0.7:  # mostly the engine's bot, so hands are won, guessed and doubled
            wanted = bot_choose(table.state, seat, legal)
            if wanted.kind != A.LEAVE:
                planned.planned = L.index_of(wanted)
        other = 1 - seat  # waiting (or deciding at once): its view builds its observation too
        assert seat_observation_from_view(view_of(table, other)) == observe(table, other)
        view = view_of(table, seat)
        message = policy.decide(view, view.legal_actions)
        decided = policy.last
        assert decided is not None
        check_against_env(table, seat, decided)
        # index sequence → PlayRequest → the engine action the table decodes: the one the indices meant
        request = table_pb2.PlayRequest.FromString(table_pb2.PlayRequest(action=message).SerializeToString())
        action = codec.decode_action(request.action, seat, legal)
        assert action == decided.action
        seen[action.kind] += 1
        table.apply(action)
    assert seen[A.DISCARD] > 20


def test_every_kind_of_action_goes_from_indices_to_a_play_request_and_back() -> None:
    """Every legal action of every decision, as its index sequence, through the adapter to the
    contract and back to the same engine action; every kind is met."""
    seen: set[str] = set()
    for profile, seed in (("duel", 5), ("erren", 6), ("duel", 7)):
        rng = random.Random(seed)
        for table, seat, _, planned in decisions(profile, seed, hands=8):
            view = view_of(table, seat)
            legal = table.legal_actions(seat)
            for action in legal:
                if action.kind == A.LEAVE:
                    continue
                planned.planned = L.index_of(action)
                message = EnvPolicy(planned, allow_leave=True).decide(view, view.legal_actions)
                request = table_pb2.PlayRequest(action=message)
                assert codec.decode_action(request.action, seat, legal) == action, (action, message)
                seen.add(action.kind)
            if any(action.kind == A.LEAVE for action in legal):  # escape (T10): not during 猜大小
                leave = EnvPolicy(lambda _: L.LEAVE, allow_leave=True).decide(view, view.legal_actions)
                assert leave.WhichOneof("kind") == "leave"
                seen.add(A.LEAVE)
            wanted = bot_choose(table.state, seat, legal)
            if wanted.kind == A.LEAVE or rng.random() < 0.2:
                wanted = rng.choice([a for a in legal if a.kind != A.LEAVE])
            table.apply(wanted)
    assert seen == set(A.KINDS), set(A.KINDS) - seen


def test_the_observation_is_built_from_the_view_alone() -> None:
    table = Table(RoomSettings(profile="erren"))
    table.start_hand(7)
    for seat in (0, 1):
        view = view_of(table, seat)
        assert seat_observation_from_view(view) == observe(table, seat)


def test_an_index_the_mask_does_not_offer_is_refused() -> None:
    table = Table(RoomSettings(profile="duel"))
    table.start_hand(3)
    view = view_of(table, 0)
    with pytest.raises(PolicyError, match="does not offer"):
        EnvPolicy(lambda _: L.NOOP).decide(view, view.legal_actions)


def test_load_policy_reads_module_callable_classes_and_factories(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("mybot_for_test")

    class Bot:
        def __call__(self, observation: EnvObservation) -> int:
            return int(np.flatnonzero(observation["action_mask"])[0])

    def make() -> Bot:
        return Bot()

    module.policy = Bot()  # type: ignore[attr-defined]
    module.Bot = Bot  # type: ignore[attr-defined]
    module.make = make  # type: ignore[attr-defined]
    module.nothing = 3  # type: ignore[attr-defined]
    module.needs = lambda size: Bot()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mybot_for_test", module)
    assert load_policy("mybot_for_test:policy") is module.policy  # type: ignore[attr-defined]
    assert isinstance(load_policy("mybot_for_test:Bot"), Bot)
    assert isinstance(load_policy("mybot_for_test:make()"), Bot)
    for spec, why in (
        ("mybot_for_test", "expected module:callable"),
        ("no_such_module_here:policy", "cannot import"),
        ("mybot_for_test:missing", "has no 'missing'"),
        ("mybot_for_test:nothing", "is not callable"),
        ("mybot_for_test:needs()", "cannot be called without arguments"),
    ):
        with pytest.raises(PolicyError, match=why):
            load_policy(spec)


def test_duel_bot_plays_the_baseline_bot_or_the_env_policy_it_is_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = types.ModuleType("mybot_for_cli")
    module.policy = lambda observation: 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mybot_for_cli", module)
    assert isinstance(policy_of(None), BaselineBot)
    chosen = policy_of("mybot_for_cli:policy")
    assert isinstance(chosen, EnvPolicy) and chosen.policy is module.policy  # type: ignore[attr-defined]
    assert policy_of("mybot_for_cli:absent") is None
    assert "has no 'absent'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "duelmahjong.client.env_policy", None)  # the env extra missing
    assert policy_of("mybot_for_cli:policy") is None
    assert "--policy needs the training env" in capsys.readouterr().err


def test_the_client_library_imports_the_env_only_for_a_policy() -> None:
    """``duel bot`` and the SDK work without the env extra: none of them imports it (or numpy)."""
    script = (
        "import sys, duelmahjong.cli.bot, duelmahjong.client.play, duelmahjong.client.session\n"
        "print(sorted(m for m in sys.modules if m.startswith(('duelmahjong.env', 'numpy', 'pettingzoo'))))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_example_policy_of_the_docs_plays_in_the_env_and_through_the_client() -> None:
    """docs/protocol.md "Bring your own bot": its example runs as written, in both places."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "protocol.md").read_text()
    source = "#" + text.split("# mypkg/mybot.py", 1)[1].split("```", 1)[0]
    example = types.ModuleType("mybot")
    exec(compile(source, "docs/protocol.md", "exec"), example.__dict__)
    env = aec_env("duel")
    env.reset(seed=5)
    for _agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else example.policy(observation))
    for profile, seed in (("duel", 8), ("erren", 9)):
        for table, seat, _, _ in decisions(profile, seed, hands=2):
            view = view_of(table, seat)
            message = EnvPolicy(example.policy).decide(view, view.legal_actions)
            table.apply(codec.decode_action(message, seat, table.legal_actions(seat)))


def play_by_policy(table: Table, text: str) -> None:
    """Play the action ``text`` through an env policy on the seat's view: checked against the env."""
    action = Action.parse(text)
    planned = Planned(0)
    planned.planned = L.index_of(action)
    policy = EnvPolicy(planned)
    view = view_of(table, action.seat)
    message = policy.decide(view, view.legal_actions)
    assert policy.last is not None
    check_against_env(table, action.seat, policy.last)
    table.apply(codec.decode_action(message, action.seat, table.legal_actions(action.seat)))


def stacked(settings: RoomSettings, **tiles: str) -> Table:
    """A table dealt ``tiles`` (tile notation), both seats keeping their hands at 换牌."""
    table = Table(settings)
    table.start_hand(1, stacked=stack_tiles(settings.profile, **tiles))
    for seat in (0, 1):
        play_by_policy(table, f"{seat} exchange")
    return table


def test_the_rare_decisions_robbing_a_kong_an_extra_draw_and_a_heavenly_win_then_a_guess() -> None:
    """Decisions simulated hands seldom reach, scripted (tests/unit/engine's hands): the client's
    observation and masks equal the env's there too."""
    robbing = stacked(
        RoomSettings(profile="duel"),
        dealer_hand="3m12m456p789s11z77p5z",
        other_hand="33m1246789p1s2s3s5s",
        draws="7p3m",
    )
    for text in ("0 discard 3m", "1 pong 3m", "1 discard 5s", "0 discard 5z", "1 added_kong 3m"):
        play_by_policy(robbing, text)
    assert robbing.phase == "rob_kong"
    play_by_policy(robbing, "0 win 3m")  # the kong's tile, which the view names (kong_tile)
    extra = stacked(
        RoomSettings(profile="duel"),
        dealer_hand="234567m23456p33z7z",
        other_hand="1111s555s9999s1z2z",
        replacements="1z",
        pool="7p",
    )
    play_by_policy(extra, "0 ready 7z")
    phases = set()
    while extra.phase not in (OVER, CLOSED):
        phases.add(extra.phase)
        seat = extra.to_move
        default = extra.default_action(seat)
        assert default is not None
        wins = [a for a in extra.legal_actions(seat) if a.kind == A.SELF_DRAW_WIN]
        play_by_policy(extra, str(wins[0] if wins and extra.phase == "extra_draw" else default))
    assert "extra_draw" in phases and extra.outcome is not None and extra.outcome.win is not None
    heavenly = stacked(
        RoomSettings(profile="duel", guess_enabled=True),
        dealer_hand="123m456p789m11122z",
        other_hand="1111s555s9999s1z2z",
    )
    play_by_policy(heavenly, "0 self_draw_win 2z")  # no tile drawn: the win names the highest kind
    assert heavenly.phase == "guess"
    play_by_policy(heavenly, "0 big")
