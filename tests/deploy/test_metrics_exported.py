"""Every metric an alert rule, a dashboard query or the HPA's adapter rules read is exported: the
stack `make run` runs (four processes, `python -m services.<name>` as in the containers) comes up
on the session's real NATS and Postgres, and the /metrics page of each service is scraped. Each
service must also stop cleanly (exit 0) on SIGTERM, the signal Kubernetes and compose stop it with."""

from __future__ import annotations

import re
import signal
import urllib.request
from types import ModuleType

import pytest

from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import StackState

pytestmark = pytest.mark.integration


def exported_names(exposition: str) -> set[str]:
    """Every series name a /metrics page can carry, including families with no sample yet.

    >>> sorted(exported_names("# TYPE a_seconds histogram\\n# TYPE b_total counter\\nb_total 1.0\\n"))
    ['a_seconds', 'a_seconds_bucket', 'a_seconds_count', 'a_seconds_created', 'a_seconds_sum', 'b_total']
    """
    names: set[str] = set()
    for line in exposition.splitlines():
        typed = re.match(r"# TYPE (\S+) (\w+)", line)
        if typed:
            family, kind = typed.groups()
            names.add(family)
            if kind in ("histogram", "summary"):
                names |= {f"{family}_sum", f"{family}_count", f"{family}_created"}
            if kind == "histogram":
                names.add(f"{family}_bucket")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return str(reply.read().decode())


def test_every_metric_monitoring_reads_is_exported_by_a_service(
    kit: ModuleType, monitoring: ModuleType, make_run_stack: tuple[Stack, StackState]
) -> None:
    _stack, state = make_run_stack
    assert set(state.services) == {*kit.SERVICES, "matchmaking-2"}  # two matchmaking replicas
    exported: set[str] = set()
    for endpoint in state.services.values():
        exported |= exported_names(_scrape(endpoint.metrics))
    used = monitoring.metrics_read_by_monitoring()
    assert used, "no alert or dashboard reads any metric"
    missing = []
    for metric, readers in sorted(used.items()):
        if metric in monitoring.PROMETHEUS_SYNTHETIC:
            continue
        if metric.startswith("~"):
            found = any(re.fullmatch(metric[1:], e) for e in exported)
        else:
            found = metric in exported
        if not found:
            missing.append(f"{metric} (read by {', '.join(sorted(readers))})")
    assert not missing, "not exported by any service:\n" + "\n".join(missing)


def test_every_service_stops_cleanly_on_sigterm(make_run_stack: tuple[Stack, StackState]) -> None:
    stack, _state = make_run_stack
    for service in stack.processes:
        service.process.send_signal(signal.SIGTERM)
    codes = {service.name: service.process.wait(30) for service in stack.processes}
    assert len(codes) == 5  # two matchmaking replicas
    assert codes == dict.fromkeys(codes, 0)
