"""``duel bench soak``'s parts that need no stack: its arguments, percentiles, /proc readings, error
kinds and the end-of-run verdicts (which violation is reported, and that a clean run has none)."""

from __future__ import annotations

import argparse
import http.server
import os
import subprocess
import threading

import grpc
import pytest

from duelmahjong.cli.bench import load
from duelmahjong.client.session import QueueEnded
from duelmahjong.platform.stackfile import ServiceEndpoint, StackState

soak = load("soak")  # bench/ is not an installed package: loaded the way `duel bench` loads it
probes = load("stack_probes")


def test_defaults_are_ten_minutes_of_sixteen_pairs_and_the_soak_stays_out_of_bench_all() -> None:
    args = soak.parse_args([])
    assert (args.minutes, args.pairs, args.max_rss_growth_mb) == (10.0, 16, 64.0)
    assert soak.IN_ALL is False


@pytest.mark.parametrize(
    "argv",
    [["--minutes", "0"], ["--pairs", "0"], ["--interval", "-1"], ["--hands", "0"], ["--escape-rate", "1.5"]],
)
def test_nonsense_arguments_are_refused_with_usage_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        soak.parse_args(argv)
    assert exit_info.value.code == 2


def test_percentile_is_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert probes.percentile(values, 0.5) == 50.0
    assert probes.percentile(values, 0.99) == 99.0
    assert probes.percentile([7.0], 0.99) == 7.0
    assert probes.percentile([], 0.5) == 0


def test_proc_sample_reads_this_process_and_nothing_for_a_finished_one() -> None:
    sample = probes.proc_sample(os.getpid())
    assert sample is not None and sample.rss_mb > 1 and sample.fds > 2 and sample.started_at > 0
    assert probes.proc_sample(os.getpid()).started_at == sample.started_at  # stable: restarts show
    finished = subprocess.Popen(["true"])
    finished.wait()
    assert probes.proc_sample(finished.pid) is None


def _rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="went wrong")


def test_errors_are_counted_by_kind_and_only_server_bugs_are_defects() -> None:
    tally = soak.Tally()
    for error in (
        QueueEnded("declined"),
        TimeoutError(),
        _rpc_error(grpc.StatusCode.FAILED_PRECONDITION),
        _rpc_error(grpc.StatusCode.INTERNAL),
        KeyError("seat"),
    ):
        tally.count(error)
    assert set(tally.errors) == {
        "queue_ended",
        "timeout",
        "grpc.FAILED_PRECONDITION",
        "grpc.INTERNAL",
        "unexpected.KeyError",
    }
    assert tally.examples["grpc.INTERNAL"] == "went wrong"
    assert tally.defects() == {"grpc.INTERNAL": 1, "unexpected.KeyError": 1}


def _sample(rss_mb: float, started_at: int = 100) -> object:
    return probes.ProcSample(rss_mb=rss_mb, fds=20, started_at=started_at)


def _verdicts(**changes: object) -> list[str]:
    """The violations of a run that was clean but for ``changes``."""
    args = argparse.Namespace(max_rss_growth_mb=64.0)
    tally = soak.Tally(hands=12)
    first = {"wallet": _sample(50.0), "table": _sample(70.0)}
    after = changes.get("after", {"wallet": _sample(52.0), "table": _sample(71.0)})
    ledger = changes.get("ledger", (0, 0, []))
    settled = changes.get("settled", (0, 0.0, 0))
    return soak.verdicts(args, (0, first), first, after, ledger, settled, changes.get("tally", tally))


def test_a_clean_run_has_no_violation(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verdicts() == []
    assert "FAIL" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("changes", "reported"),
    [
        ({"ledger": (5, 0, [])}, "ledger total before 0 after 5"),
        ({"ledger": (0, 0, ["the balances sum to 5, not 0"])}, "wallet audit the balances sum to 5"),
        ({"ledger": (0, 2, [])}, "open holds 2"),
        ({"settled": (0, 3.0, 0)}, "live tables 3"),
        ({"settled": (0, 0.0, 7)}, "consumer lag at the end 7"),
        ({"tally": soak.Tally()}, "hands finished 0"),
        (
            {"after": {"wallet": _sample(52.0, started_at=999), "table": _sample(71.0)}},
            "wallet pid RESTARTED",
        ),
        ({"after": {"wallet": None, "table": _sample(71.0)}}, "wallet pid RESTARTED OR DEAD"),
        (
            {"after": {"wallet": _sample(52.0), "table": _sample(150.0)}},
            "table rss 70MB -> 150MB growth +80.0MB",
        ),
    ],
)
def test_each_violation_is_reported(changes: dict[str, object], reported: str) -> None:
    violations = _verdicts(**changes)
    assert len(violations) == 1 and violations[0].startswith(reported), violations


def test_only_a_stack_on_loopback_is_soaked() -> None:
    def state(grpc_host: str, nats_url: str = "nats://127.0.0.1:4333") -> StackState:
        endpoint = ServiceEndpoint(f"{grpc_host}:7001", "http://127.0.0.1:9001/metrics", 1)
        return StackState(
            services={"wallet": endpoint}, nats_url=nats_url, database_url="postgresql://p@[::1]:5/x"
        )

    probes.require_loopback(state("127.0.0.1"))
    probes.require_loopback(state("localhost"))
    with pytest.raises(probes.BenchViolation, match="stackhost is not"):
        probes.require_loopback(state("stackhost"))
    with pytest.raises(probes.BenchViolation, match=r"10\.0\.0\.7 is not a loopback address"):
        probes.require_loopback(state("10.0.0.7"))
    with pytest.raises(probes.BenchViolation, match=r"192\.168\.1\.2"):
        probes.require_loopback(state("127.0.0.1", nats_url="nats://192.168.1.2:4222"))


class _Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server's hook name
        body = b'# TYPE duel_table_live_tables_count gauge\nduel_table_live_tables_count{shard="a"} 3.0\n'
        body += b'duel_table_live_tables_count{shard="b"} 2.0\n'
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # quiet
        pass


def test_scrape_gauge_sums_a_metric_and_answers_none_when_absent_or_unreachable() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        assert probes.scrape_gauge(url, probes.LIVE_TABLES) == 5.0
        assert probes.scrape_gauge(url, "duel_table_nothing_count") is None
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert probes.scrape_gauge(url, probes.LIVE_TABLES) is None  # nobody listens there any more
