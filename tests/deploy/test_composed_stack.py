"""A match through the composed containers (`make compose-test`): two bot clients play hands of
both profiles through matchmaking and the table (`duel demo`, pointed at the compose addresses),
the ledger sums to the same total before and after, and Prometheus has scraped every service and
loaded every alert rule of deploy/prometheus/rules.

Only the compose test runner runs these (deploy/compose, profile "test"): it sets
DUEL_DEPLOYED_STACK=1, the *_ADDRESS variables, DUEL_DEPLOYED_DATABASE_URL (the Postgres admin
URL, for the ledger) and DUEL_DEPLOYED_PROMETHEUS_URL, and mounts deploy/prometheus. On the
stack `make run` runs, tests/e2e/test_match.py plays the same matches.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from duelmahjong.cli.demo import ledger_balances

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not os.environ.get("DUEL_DEPLOYED_PROMETHEUS_URL"),
        reason="runs in the compose test runner (make compose-test) against the containers",
    ),
]

HANDS = 2
SCRAPE_WAIT_SECONDS = 90.0  # the scrape interval is 15 s; the first scrape may come late under load
# Where the services find each other through the compose network's DNS (Docker; under podman the
# script pins addresses in /etc/hosts instead), a service whose first lookup of another is answered
# with an error while a container joins the network, as this runner just did, answers UNAVAILABLE
# "errors resolving" until gRPC resolves again. Only that error is given this long to pass; any
# other failure fails at once.
RESOLVING_GRACE_SECONDS = 30.0


def _ledger_total() -> int:
    balances = asyncio.run(ledger_balances(os.environ["DUEL_DEPLOYED_DATABASE_URL"]))
    assert balances is not None
    return sum(balances.values())


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_two_bots_play_a_match_through_the_containers_and_the_ledger_is_conserved(profile: str) -> None:
    before = _ledger_total()
    # The *_ADDRESS variables name the containers; no state file exists in the runner.
    duel = str(Path(sys.executable).parent / "duel")
    deadline = time.monotonic() + RESOLVING_GRACE_SECONDS
    while True:
        done = subprocess.run(
            [duel, "demo", "--profile", profile, "--hands", str(HANDS), "--json", "--state-file", "/none"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode == 0 or "errors resolving" not in done.stderr or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["profile"] == profile
    assert len(summary["hands"]) == HANDS
    for hand in summary["hands"]:
        assert hand["outcome"] in ("win", "drawn", "escape"), hand
        if hand["outcome"] == "win":
            assert hand["total_fan"] >= 1 and hand["patterns"], hand
    balances = asyncio.run(ledger_balances(os.environ["DUEL_DEPLOYED_DATABASE_URL"]))
    assert balances is not None
    assert all(f"player:{player}" in balances for player in summary["players"])
    assert sum(balances.values()) == before, "prestige was created or lost by the match"


def _prometheus(path: str, **params: str) -> Any:
    url = os.environ["DUEL_DEPLOYED_PROMETHEUS_URL"].rstrip("/") + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def _until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + SCRAPE_WAIT_SECONDS
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {SCRAPE_WAIT_SECONDS:.0f} s")
        time.sleep(2)


def test_prometheus_scraped_every_service(kit: ModuleType) -> None:
    def duel_targets_up() -> dict[str, str]:
        targets = _prometheus("/api/v1/targets", state="active")["activeTargets"]
        health = {t["labels"]["service"]: t["health"] for t in targets if t["labels"].get("job") == "duel"}
        return health if set(health) == set(kit.SERVICES) and set(health.values()) == {"up"} else {}

    _until(duel_targets_up, "every service's /metrics was not scraped up")
    # Each service's own metrics, not only Prometheus' `up`: the series the alerts read exist.
    result = _prometheus("/api/v1/query", query='count by (service) ({job="duel", __name__=~"duel_.+"})')
    counted = {sample["metric"]["service"]: float(sample["value"][1]) for sample in result["result"]}
    assert set(counted) == set(kit.SERVICES), counted
    assert all(count > 0 for count in counted.values())


def test_prometheus_loaded_every_alert_rule(kit: ModuleType) -> None:
    expected = set()
    for rules_file in sorted((kit.DEPLOY / "prometheus" / "rules").glob("*.yml")):
        for group in yaml.safe_load(rules_file.read_text())["groups"]:
            expected |= {rule["alert"] for rule in group["rules"] if "alert" in rule}
    assert expected, "deploy/prometheus/rules is mounted into the runner"
    groups = _prometheus("/api/v1/rules")["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"] if rule["type"] == "alerting"}
    assert set(loaded) == expected
    broken = {name: rule.get("lastError") for name, rule in loaded.items() if rule["health"] == "err"}
    assert not broken, broken
