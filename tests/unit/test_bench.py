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
    parts = {"capacity_gc", "capacity_seats", "capacity_wire"}
    assert not parts & set(areas(bench_dir()))  # its parts, not areas
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
