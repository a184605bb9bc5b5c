"""deploy/prometheus: promtool accepts both scrape configs and the rules, the rules' own unit tests
pass, and every alert is labelled, annotated, tested and explained in deploy/README.md."""

from __future__ import annotations

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
