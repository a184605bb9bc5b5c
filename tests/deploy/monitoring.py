"""Offline checks of deploy/: what the monitoring reads (alert rules, dashboards, adapter rules)
and which metric names and label values its PromQL selects."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"

Doc = dict[str, Any]


# --- PromQL: which metric names an expression reads --------------------------------------------

PROMQL_KEYWORDS = frozenset(
    "and or unless by without on ignoring group_left group_right bool offset inf nan start end".split()
)
# Series Prometheus makes itself, not read from a /metrics page.
PROMETHEUS_SYNTHETIC = frozenset({"up", "scrape_duration_seconds", "ALERTS", "ALERTS_FOR_STATE"})
# Grafana's variables, replaced by values the PromQL parser accepts.
GRAFANA_VARIABLES = {
    r"\$__rate_interval": "1m",
    r"\$__interval": "1m",
    r"\$__range": "1h",
    r"\$\{?[A-Za-z_]\w*\}?": ".*",
}


def grafana_to_promql(expr: str) -> str:
    for pattern, value in GRAFANA_VARIABLES.items():
        expr = re.sub(pattern, value, expr)
    return expr


NAME_MATCHER = re.compile(r'__name__\s*(=~|=)\s*"([^"]*)"')


def expand_alternatives(pattern: str, operator: str = "=~") -> set[str]:
    """The names a ``__name__`` matcher selects: literal, or one level of ``(a|b)`` groups expanded.

    A pattern that stays a regular expression after expansion comes back as ``~<pattern>``: it must
    then match at least one exported name.

    >>> sorted(expand_alternatives("duel_(table|wallet)_up_total"))
    ['duel_table_up_total', 'duel_wallet_up_total']
    >>> expand_alternatives("duel_.+_total")
    {'~duel_.+_total'}
    """
    if operator == "=":
        return {pattern}
    group = re.search(r"\(([^()]*)\)", pattern)
    if group is None:
        return {pattern} if re.fullmatch(r"[\w:]+", pattern) else {f"~{pattern}"}
    expanded: set[str] = set()
    for choice in group.group(1).split("|"):
        expanded |= expand_alternatives(pattern[: group.start()] + choice + pattern[group.end() :])
    return expanded


def promql_metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (functions, keywords, labels and strings left out).

    >>> sorted(promql_metric_names('sum by (code) (rate(duel_x_total{code!="OK"}[5m])) / on() up'))
    ['duel_x_total', 'up']
    >>> sorted(promql_metric_names('histogram_quantile(0.99, sum by (le) (rate(a_bucket[1m] offset 5m)))'))
    ['a_bucket']
    >>> sorted(promql_metric_names('sum(rate({__name__=~"duel_(a|b)_x_total", code="OK"}[1m]))'))
    ['duel_a_x_total', 'duel_b_x_total']
    """
    expr = grafana_to_promql(expr)
    names = {n for m in NAME_MATCHER.finditer(expr) for n in expand_alternatives(m.group(2), m.group(1))}
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    for match in re.finditer(r"(?<![\w.:])[A-Za-z_:][\w:]*", expr):
        token = match.group(0)
        if token in PROMQL_KEYWORDS or expr[match.end() :].lstrip().startswith("("):
            continue
        if re.fullmatch(r"\d*[smhdwy]", token) and expr[: match.start()].rstrip().endswith("offset"):
            continue
        names.add(token)
    return names


def alert_rules() -> list[Doc]:
    rules: list[Doc] = []
    for path in sorted((DEPLOY / "prometheus" / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            rules.extend(group["rules"])
    return rules


def dashboards() -> dict[str, Doc]:
    return {
        path.name: json.loads(path.read_text())
        for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))
    }


def panels(dashboard: Doc) -> Iterator[Doc]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows keep their panels inside


def dashboard_exprs(dashboard: Doc) -> list[str]:
    exprs = [t["expr"] for p in panels(dashboard) for t in p.get("targets", []) if t.get("expr")]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        found = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", query or "")
        if found:
            exprs.append(found.group(1))
    return exprs


ANNOTATION_QUERY = re.compile(r'\bquery\s+"((?:[^"\\]|\\.)*)"')


def rule_exprs(rule: Doc) -> list[str]:
    """A rule's expression and the queries its annotations' templates run (``{{ with query "…" }}``).

    >>> rule_exprs({"expr": "a > 0", "annotations": {"summary": '{{ with query "max(b)" }}{{ . }}{{ end }}'}})
    ['a > 0', 'max(b)']
    """
    queries = [q for text in rule.get("annotations", {}).values() for q in ANNOTATION_QUERY.findall(text)]
    return [rule["expr"], *(q.replace('\\"', '"') for q in queries)]


def metrics_read_by_monitoring() -> dict[str, set[str]]:
    """metric name -> where it is read (alert names, dashboard files)."""
    used: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in {n for expr in rule_exprs(rule) for n in promql_metric_names(expr)}:
            used.setdefault(name, set()).add(f"alert {rule.get('alert') or rule.get('record')}")
    for file, dashboard in dashboards().items():
        for expr in dashboard_exprs(dashboard):
            for name in promql_metric_names(expr):
                used.setdefault(name, set()).add(f"dashboard {file}")
    for rule in adapter_rules():
        for name in promql_metric_names(rule["seriesQuery"]):
            used.setdefault(name, set()).add(f"adapter metric {rule['name']['as']}")
    return used


# --- Prometheus Adapter: the custom metrics the table HPA can use ------------------------------


def adapter_rules() -> list[Doc]:
    return yaml.safe_load((DEPLOY / "prometheus" / "adapter-rules.yaml").read_text())["rules"]


def adapter_metric_names() -> set[str]:
    return {rule["name"]["as"] for rule in adapter_rules()}


def load_dashboard_generator() -> ModuleType:
    """deploy/grafana/dashboards.py, the source the dashboard JSON files are rendered from."""
    name = "duel_dashboard_generator"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DEPLOY / "grafana" / "dashboards.py")
        if spec is None or spec.loader is None:
            raise ImportError("cannot load deploy/grafana/dashboards.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def label_values(expr: str, label: str) -> set[str]:
    """The values an expression's matchers on `label` name (`=` literal, `=~` alternatives).

    >>> sorted(label_values('rate(x{kind=~"a|b", outcome="ok"}[1m]) + y{kind="c"}', "kind"))
    ['a', 'b', 'c']
    """
    values: set[str] = set()
    for operator, value in re.findall(rf'\b{label}\s*(=~|=)\s*"([^"]*)"', expr):
        values |= set(value.split("|")) if operator == "=~" else {value}
    return values


def rpc_paths() -> set[str]:
    """Every RPC of the contract as the `method` label names it: /duelmahjong.v1.<Service>/<Rpc>."""
    paths: set[str] = set()
    for proto in (REPO / "proto" / "duelmahjong" / "v1").glob("*.proto"):
        service = ""
        for line in proto.read_text().splitlines():
            found = re.match(r"\s*service\s+(\w+)", line)
            service = found.group(1) if found else service
            rpc = re.match(r"\s*rpc\s+(\w+)", line)
            if rpc:
                paths.add(f"/duelmahjong.v1.{service}/{rpc.group(1)}")
    return paths


def monitoring_exprs() -> list[str]:
    """Every PromQL expression of the alert rules (their annotations' queries too), the adapter
    rules and the dashboards."""
    exprs = [expr for rule in alert_rules() for expr in rule_exprs(rule)]
    exprs.extend(rule[key] for rule in adapter_rules() for key in ("seriesQuery", "metricsQuery"))
    for dashboard in dashboards().values():
        exprs.extend(dashboard_exprs(dashboard))
    return exprs
