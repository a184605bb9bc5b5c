"""deploy/prometheus: promtool accepts both scrape configs and the rules, the rules' own unit tests
pass, and every alert is labelled, annotated, tested and explained in deploy/README.md, its runbook a
section of a doc in the repo."""

from __future__ import annotations

import re
from types import ModuleType

import pytest
import yaml

CONFIGS = ("prometheus.yml", "prometheus-k8s.yml")
SEVERITIES = {"page", "ticket"}


@pytest.mark.parametrize("config", CONFIGS)
def test_promtool_accepts_the_scrape_config(kit: ModuleType, config: str) -> None:
    kit.run_tool([kit.find_tool("promtool"), "check", "config", config], cwd=kit.DEPLOY / "prometheus")


def test_promtool_accepts_the_rules_and_their_unit_tests_pass(kit: ModuleType) -> None:
    prometheus = kit.DEPLOY / "prometheus"
    rules = sorted(str(p.relative_to(prometheus)) for p in (prometheus / "rules").glob("*.yml"))
    tests = sorted(str(p.relative_to(prometheus)) for p in (prometheus / "tests").glob("*.yml"))
    assert rules and tests
    promtool = kit.find_tool("promtool")
    kit.run_tool([promtool, "check", "rules", *rules], cwd=prometheus)
    kit.run_tool([promtool, "test", "rules", *tests], cwd=prometheus)


def test_compose_and_kubernetes_scrape_the_same_job_with_the_same_rules(kit: ModuleType) -> None:
    loaded = [yaml.safe_load((kit.DEPLOY / "prometheus" / c).read_text()) for c in CONFIGS]
    assert loaded[0]["rule_files"] == loaded[1]["rule_files"]
    jobs = [{j["job_name"] for j in config["scrape_configs"]} for config in loaded]
    assert "duel" in jobs[0] & jobs[1]


def test_every_alert_is_labelled_annotated_tested_and_documented(
    kit: ModuleType, monitoring: ModuleType
) -> None:
    alerts = [rule for rule in monitoring.alert_rules() if "alert" in rule]
    names = [rule["alert"] for rule in alerts]
    assert len(names) == len(set(names)), "alert names must be unique"
    tested = {
        case["alertname"]
        for path in (kit.DEPLOY / "prometheus" / "tests").glob("*.yml")
        for test in yaml.safe_load(path.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    readme = (kit.DEPLOY / "README.md").read_text()
    for rule in alerts:
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        assert rule["alert"] in tested, f"{rule['alert']} has no promtool test where it fires"
        assert f"`{rule['alert']}`" in readme, f"{rule['alert']} is not explained in deploy/README.md"


def heading_anchors(markdown: str) -> set[str]:
    """The anchors a Markdown renderer gives a document's headings (lower case, punctuation dropped,
    spaces as dashes).

    >>> sorted(heading_anchors("# Ops\\n## When a table server dies\\n### Containers: `make x`\\n"))
    ['containers-make-x', 'ops', 'when-a-table-server-dies']
    """
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_runbook_is_a_section_of_a_doc_in_the_repo(kit: ModuleType, monitoring: ModuleType) -> None:
    runbooks = {rule["alert"]: rule["annotations"].get("runbook") for rule in monitoring.alert_rules()}
    for alert, runbook in runbooks.items():
        if runbook is None:
            continue
        path, _, anchor = runbook.partition("#")
        doc = kit.REPO / path
        assert doc.is_file() and doc.resolve().is_relative_to(kit.REPO), f"{alert}: {runbook}"
        assert anchor in heading_anchors(doc.read_text()), f"{alert}: no section #{anchor} in {path}"


def test_every_matchmaking_alert_points_at_what_to_do_when_a_replica_dies(kit: ModuleType) -> None:
    rules = kit.DEPLOY / "prometheus" / "rules" / "duel-matchmaking.yml"
    alerts = [rule for group in yaml.safe_load(rules.read_text())["groups"] for rule in group["rules"]]
    assert alerts
    for rule in alerts:
        assert rule["annotations"]["runbook"] == "docs/operations.md#when-a-matchmaking-replica-dies", rule[
            "alert"
        ]


def test_adapter_rules_map_series_to_table_pods(monitoring: ModuleType) -> None:
    for rule in monitoring.adapter_rules():
        overrides = rule["resources"]["overrides"]
        assert overrides["namespace"]["resource"] == "namespace"
        assert overrides["pod"]["resource"] == "pod"
        assert "<<.Series>>" in rule["metricsQuery"] and "<<.LabelMatchers>>" in rule["metricsQuery"]


def test_label_values_in_queries_name_real_rpcs_and_wallet_event_kinds(monitoring: ModuleType) -> None:
    from services.wallet.events import SOURCES

    rpcs = monitoring.rpc_paths()
    wallet_kinds = {source.durable.removeprefix("wallet-") for source in SOURCES}
    for expr in monitoring.monitoring_exprs():
        assert monitoring.label_values(expr, "method") <= rpcs, expr
        if "duel_wallet_events_handled_total" in expr or "duel_wallet_settlement_duration" in expr:
            assert monitoring.label_values(expr, "kind") <= wallet_kinds, expr
