"""The benchmark harness and ``duel bench``: print format, medians over ≥ 5 runs, area discovery."""

from __future__ import annotations

import re

import pytest

from duelmahjong.cli import main
from duelmahjong.cli.bench import areas, bench_dir, load
from duelmahjong.rules.analysis import is_winning

common = load("common")  # bench/ is not an installed package: loaded the way `duel bench` loads it
rules_corpus = load("rules_corpus")
MIN_RUNS, Figure, compare = common.MIN_RUNS, common.Figure, common.compare

LINE = re.compile(r"^bench [a-z_]+\.[a-z_]+ ours=\d+/s ref=\S+ \d+/s ratio=\d+\.\d\d$")


def test_figure_line_has_the_common_format() -> None:
    line = Figure("rules.win", 1_234_567.8, "mahjong", 192_000.2, 5).line()
    assert line == "bench rules.win ours=1234568/s ref=mahjong 192000/s ratio=6.43"
    assert LINE.match(line)


def test_compare_runs_both_sides_at_least_five_times() -> None:
    calls = {"ours": 0, "theirs": 0}

    def ours() -> int:
        calls["ours"] += 1
        return 10

    def theirs() -> int:
        calls["theirs"] += 1
        return 1

    figure = compare("x.y", ours, "ref", theirs, runs=1, min_seconds=0.0)
    assert figure.runs == MIN_RUNS and calls == {"ours": MIN_RUNS + 1, "theirs": MIN_RUNS + 1}
    assert figure.ours > figure.theirs > 0


def test_rules_corpus_is_seeded_and_half_winning() -> None:
    hands = rules_corpus.corpus(200)
    assert hands == rules_corpus.corpus(200)
    assert sum(map(is_winning, hands)) == 100
    assert all(sum(counts) == 13 for counts in rules_corpus.minus_one_tile(hands))


def test_duel_bench_finds_the_areas_and_rejects_unknown_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert (bench_dir() / "common.py").is_file()
    assert "rules" in areas(bench_dir()) and not {"common", "rules_corpus"} & set(areas(bench_dir()))
    assert "capacity" in areas(bench_dir())
    parts = {"capacity_gc", "capacity_seats", "capacity_wire", "matchmaking_fakes", "matchmaking_load"}
    assert "matchmaking" in areas(bench_dir()) and not parts & set(areas(bench_dir()))  # parts, not areas
    assert main(["bench", "no_such_area"]) == 2
    assert "unknown area 'no_such_area'" in capsys.readouterr().err


def test_capacity_seat_errors_count_since_the_run_began() -> None:
    """A seat refused while a step warms up leaves that step and every later one short of tables:
    taking a window's samples resets what the window measured, never the streams lost."""
    samples = load("capacity_seats").Samples(latencies=[0.001], sent=5, rejected=1, errors=2, attached=7)
    taken = samples.take()
    assert (taken.sent, taken.rejected, taken.errors, taken.attached) == (5, 1, 2, 7)
    assert (samples.latencies, samples.sent, samples.rejected, samples.errors) == ([], 0, 0, 2)
    assert samples.attached == 7  # the parent releases a step's seats once all it added are attached


def test_matchmaking_lines_say_where_a_configuration_was_overloaded_and_the_goal() -> None:
    bench, StepResult = load("matchmaking"), load("matchmaking_load").StepResult

    def step(config: str, rate: float, seated: int, unseated: int = 0, reference: float = 0.0) -> object:
        result = StepResult(
            sent=seated + unseated,
            seated=seated,
            matched=[0.010] * seated + [30.0] * unseated,
            ready=[0.020] * seated + [30.0] * unseated,
            late=[0.001],
            updates={"queued": seated + unseated},
            unseated=unseated,
        )
        cpu = {"mm-a": 2.0, "nats": 1.0, "load": 0.5}
        return bench.Step(config, rate, 10.0, result, 10.0, cpu, [0.1], busy=4.0, reference_p99=reference)

    settings = bench.Settings(rates=(50.0, 200.0), runs=1, configs=("memory", "replicas3_lease"))
    outcome = bench.Outcome(
        [
            (0, step("memory", 50.0, 1000)),
            (0, step("memory", 200.0, 4000)),
            (0, step("replicas3_lease", 50.0, 600, unseated=400, reference=10.0)),
        ]
    )
    lines = outcome.lines(settings)
    assert lines[0] == (
        "bench matchmaking.memory rate=50/s matched_p50=10.0ms matched_p99=10.0ms ready_p50=20.0ms "
        "ready_p99=20.0ms pairings=50.0/s cpu_per_pairing mm-a=4.00 nats=2.00 load=1.00 ms "
        "updates=1.0/player others_cpu=5%"
    )
    assert lines[2].startswith("bench matchmaking.replicas3_lease rate=50/s matched_p50=10.0ms ")
    assert lines[2].endswith(" unseated=400 ratio_p99_to_memory=3000.00 others_cpu=5%")
    assert (
        lines[3]
        == "bench matchmaking.replicas3_lease rate=200/s not run: overloaded at 50/s (30.0 pairings/s)"
    )
    assert lines[4].startswith("bench matchmaking.load rate=50/s workers=2 busiest_worker=10% of a core")
    assert lines[6] == (
        "bench matchmaking.goal replicas3_lease rate=200/s: NOT met, overloaded at 50/s (30.0 pairings/s)"
    )
    assert len(lines) == 7 and not outcome.failures()
