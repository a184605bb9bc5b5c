"""Duplicate evaluation (docs/evaluation.md): the swap gives each agent the other's seat and luck,
identical agents settle to exactly 0 per wall pair, the settlement and the interval are computed as
documented, and agents see only their seat."""

from __future__ import annotations

import math
import random

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bots import strong
from duelmahjong.engine.outcome import ErrenTerms, Guess, Outcome, Termination, Win
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import TableState
from duelmahjong.engine.table import Table
from duelmahjong.evaluation.agents import AgentError, CallableAgent, resolve_agent
from duelmahjong.evaluation.duplicate import play_game, play_pair
from duelmahjong.evaluation.runner import evaluate
from duelmahjong.evaluation.settle import seat_nets
from duelmahjong.evaluation.stats import mean_ci, percentile
from duelmahjong.evaluation.visibility import seat_state


class Recorder:
    """The house bot, remembering the concealed tiles it was dealt (seen at its first 换牌 decision)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dealt: list[tuple[int, tuple[int, ...]]] = []

    def decide(self, state: TableState, seat: int, legal: list[Action]) -> Action:
        if any(a.kind == A.EXCHANGE for a in legal):
            self.dealt.append((seat, tuple(state.hands[seat])))
        return bot.choose(state, seat, legal)


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_swap_gives_each_agent_the_seat_and_tiles_the_other_had(profile: str) -> None:
    a, b = Recorder("a"), Recorder("b")
    for seed in (3, 17, 2**40 + 5):
        a.dealt.clear(), b.dealt.clear()
        play_pair(RoomSettings(profile=profile), seed, a, b)
        (a_first, a_second), (b_first, b_second) = a.dealt, b.dealt
        assert a_first[0] == 0 and a_second[0] == 1  # A sits in seat 0, then seat 1
        assert a_second == b_first and b_second == a_first  # each gets exactly what the other had
        assert sum(a_first[1]) + sum(b_first[1]) == 27  # dealt: 14 + 13


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_identical_deterministic_agents_settle_to_exactly_zero_per_wall_pair(profile: str) -> None:
    tally = evaluate(RoomSettings(profile=profile), "house", "house", hands=200, seed=1)
    assert tally.hands == 200
    assert tally.pair_totals == [0] * 100
    assert tally.per_hand() == (0.0, 0.0)
    assert tally.a.wins == tally.b.wins and tally.a.deal_ins == tally.b.deal_ins


def test_workers_play_the_same_walls_as_one_process() -> None:
    settings = RoomSettings(profile="erren")
    alone = evaluate(settings, "strong", "house", hands=40, seed=9)
    shared = evaluate(settings, "strong", "house", hands=40, seed=9, workers=2)
    assert sorted(alone.pair_totals) == sorted(shared.pair_totals)


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_strong_beats_house_and_random_loses(profile: str) -> None:
    settings = RoomSettings(profile=profile)
    strong_run = evaluate(settings, "strong", "house", hands=200, seed=2)
    mean, half = strong_run.per_hand()
    assert mean - half > 0, (mean, half)
    random_run = evaluate(settings, "random", "house", hands=40, seed=2)
    assert random_run.per_hand()[0] < 0
    assert percentile(strong_run.a.times, 0.99) < 0.020  # the 20 ms budget of a decision


def test_the_interval_is_over_pair_sums_and_halved_per_hand() -> None:
    assert mean_ci([1.0, 3.0]) == (2.0, round(1.959964 * math.sqrt(2 / 2), 2))
    assert mean_ci([5.0])[1] == math.inf
    assert percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0


def _win(fan: int, self_drawn: bool = False) -> Win:
    return Win(self_drawn, {}, {"total_fan": fan, "patterns": []})


def _outcome(termination: Termination, winner: int = -1, escaper: int = -1, **extra: object) -> Outcome:
    base = dict(hand=1, dealer=0, dealer_passes=0, negotiated=2, progressive=1, hands=("", ""))
    return Outcome(termination, winner=winner, escaper=escaper, **base | extra)  # type: ignore[arg-type]


def test_settlement_in_fan_units() -> None:
    duel = RoomSettings(negotiated_multiplier=2)
    assert seat_nets(_outcome(Termination.WIN, 1, win=_win(3)), duel) == (-6, 6)  # H1: 3 × 2
    right = Guess("big", (6, 5, 4), True, 3)
    assert seat_nets(_outcome(Termination.WIN, 0, win=_win(3), guess=right), duel) == (24, -6)
    wrong = Guess("big", (1, 1, 2), False, 0)
    assert seat_nets(_outcome(Termination.WIN, 0, win=_win(3), guess=wrong), duel) == (0, -6)
    assert seat_nets(_outcome(Termination.ESCAPE, escaper=0), duel) == (-128, 128)  # H3: 64 × 2
    erren = RoomSettings(profile="erren", exchange_fee=5)
    terms = ErrenTerms((True, True), 1, {"kind": "pong", "multiplier": 2}, True, (0, 2))
    won = _outcome(Termination.WIN, 0, win=_win(10), erren=terms, negotiated=1)
    assert seat_nets(won, erren) == (84, -84 - 10)  # H2's seed example; two paid exchanges
    escaped = _outcome(Termination.ESCAPE, escaper=1, erren=terms, negotiated=1)
    assert seat_nets(escaped, erren) == (88 * 4, -88 * 4 - 10)


def test_agents_resolve_from_names() -> None:
    assert resolve_agent("house").name == "house"
    custom = resolve_agent("engine:duelmahjong.engine.bots.strong:choose")
    assert isinstance(custom, CallableAgent) and custom.function is strong.choose
    for bad in (
        "nobody",
        "engine:duelmahjong.engine.bot:missing",
        "engine:no.such.module:f",
        "engine:duelmahjong.engine",
        "no.such.module:f",
        "duelmahjong.engine:A",
    ):
        with pytest.raises(AgentError):
            resolve_agent(bad)


def _scrambled(state: TableState, seat: int, rng: random.Random) -> TableState:
    """The live state with what ``seat`` may not know replaced by other tiles."""
    out = seat_state(state, seat)
    other = [0] * 34
    for _ in range(sum(state.hands[1 - seat])):
        other[rng.randrange(34)] += 1
    out.hands = [state.hands[0], other] if seat == 0 else [other, state.hands[1]]
    out.wall = [rng.randrange(34) for _ in state.wall]
    out.pool = [rng.randrange(34) for _ in state.pool]
    return out


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_seat_state_hides_the_opponent_and_strong_reads_nothing_hidden(profile: str) -> None:
    rng = random.Random(5)
    for seed in range(6):
        table = Table(RoomSettings(profile=profile))
        table.start_hand(seed)
        while table.outcome is None:
            seat = next(s for s in (0, 1) if [a for a in table.legal_actions(s) if a.kind != A.LEAVE])
            legal = table.legal_actions(seat)
            view = seat_state(table.state, seat)
            assert view.hands[1 - seat] == [0] * 34 and set(view.wall) <= {0} and view.seed == 0
            assert view.hands[seat] == table.state.hands[seat]
            choice = strong.choose(view, seat, legal)
            assert strong.choose(_scrambled(table.state, seat, rng), seat, legal) == choice
            table.apply(choice)


def test_a_game_reports_its_decision_times() -> None:
    game = play_game(RoomSettings(), 11, (resolve_agent("strong"), resolve_agent("house")))
    assert game.times[0] and game.times[1]
    assert sum(game.nets) <= 0 or game.outcome.guess is not None  # the loser pays the winner


def test_the_command_line_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    from duelmahjong.cli import main

    assert main(["evaluate", "house", "house", "--hands", "20", "--profile", "erren"]) == 0
    out = capsys.readouterr().out
    assert "house vs house: +0.000 番/hand, 95% CI [+0.000, +0.000] over wall pairs" in out
    assert "decision p50" in out
    assert main(["evaluate", "house", "nobody", "--hands", "20"]) == 2
    assert main(["evaluate", "house", "house", "--room-settings", '{"bonus_tile_count": 9}']) == 2
    assert main(["evaluate", "house", "house", "--hands", "4", "--json"]) == 0
    assert '"mean_per_hand": 0.0' in capsys.readouterr().out
