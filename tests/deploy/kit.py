"""Offline checks of deploy/: shared helpers (tools, rendered overlays, PromQL metric names).

No Docker engine and no cluster exist where these run: the checks validate with the real tools
(kubectl kustomize, the Kubernetes schemas of PyPI kubernetes-validate, promtool, docker-compose),
installed by `make deploy-tools` (deploy/install-tools.sh). A missing tool fails loudly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ("dev", "prod")
SERVICES = ("matchmaking", "table", "scoring", "wallet")
# The Kubernetes version the manifests are checked against: the oldest still served by the major
# clouds when this was written; native gRPC probes need >= 1.27.
KUBERNETES_VERSION = "1.31"

Doc = dict[str, Any]


class MissingToolError(RuntimeError):
    """A deploy check's tool is not installed: `make deploy-tools` installs it."""


def find_tool(*names: str) -> str:
    """The first of `names` found on PATH or in .tools/bin (where deploy/install-tools.sh puts it)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), str(REPO / ".tools" / "bin")])
    for name in names:
        found = shutil.which(name, path=search)
        if found:
            return found
    raise MissingToolError(f"none of {', '.join(names)} is installed: run `make deploy-tools`")


def run_tool(argv: list[str], cwd: Path = REPO) -> str:
    """Runs a checking tool; a non-zero exit fails the test with the tool's own words."""
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def kustomize_argv() -> list[str]:
    try:
        return [find_tool("kubectl"), "kustomize"]
    except MissingToolError:
        return [find_tool("kustomize"), "build"]


def compose_argv() -> list[str]:
    try:
        return [find_tool("docker-compose")]
    except MissingToolError:
        docker = find_tool("docker")
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
        if probe.returncode != 0:
            raise
        return [docker, "compose"]


def render_overlays() -> dict[str, list[Doc]]:
    """overlay name -> the manifests `kubectl kustomize deploy/k8s/overlays/<name>` renders."""
    out: dict[str, list[Doc]] = {}
    for overlay in OVERLAYS:
        text = run_tool([*kustomize_argv(), str(DEPLOY / "k8s" / "overlays" / overlay)])
        out[overlay] = [doc for doc in yaml.safe_load_all(text) if doc]
    return out


def workloads(docs: list[Doc]) -> Iterator[Doc]:
    yield from (d for d in docs if d["kind"] in ("Deployment", "StatefulSet"))


def duel_workloads(docs: list[Doc]) -> list[Doc]:
    return [d for d in workloads(docs) if d["metadata"]["name"] in SERVICES]


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    for doc in docs:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise LookupError(f"no {kind}/{name} in the rendered manifests")


def selects(selector: Doc, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels and matchExpressions); {} selects all."""
    match_labels = selector.get("matchLabels", {})
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        match_labels = {k: v for k, v in selector.items() if isinstance(v, str)}
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


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
    import json

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


def metrics_read_by_monitoring() -> dict[str, set[str]]:
    """metric name -> where it is read (alert names, dashboard files)."""
    used: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in promql_metric_names(rule["expr"]):
            used.setdefault(name, set()).add(f"alert {rule.get('alert') or rule.get('record')}")
    for file, dashboard in dashboards().items():
        for expr in dashboard_exprs(dashboard):
            for name in promql_metric_names(expr):
                used.setdefault(name, set()).add(f"dashboard {file}")
    for rule in adapter_rules():
        for name in promql_metric_names(rule["seriesQuery"]):
            used.setdefault(name, set()).add(f"adapter metric {rule['name']['as']}")
    return used


# --- NetworkPolicy reachability (ports only: who may talk is checked by the policies' selectors) --


def _port_number(template: Doc, port: int | str) -> int:
    if isinstance(port, int):
        return port
    for container in template["spec"]["containers"]:
        for declared in container.get("ports", []):
            if declared.get("name") == port:
                return int(declared["containerPort"])
    raise LookupError(f"no container port named {port!r}")


def _allowed(policies: list[Doc], template: Doc, port: int | str, direction: str) -> bool:
    """Whether some policy lets `port` through in `direction` ("Ingress"/"Egress") for the pod."""
    number = _port_number(template, port)
    labels = template["metadata"]["labels"]
    isolating = [
        p["spec"]
        for p in policies
        if direction in p["spec"].get("policyTypes", []) and selects(p["spec"]["podSelector"], labels)
    ]
    if not isolating:
        return True
    for spec in isolating:
        for rule in spec.get(direction.lower(), []):
            ports = rule.get("ports")
            if not ports or any(_port_number(template, p["port"]) == number for p in ports):
                return True
    return False


def ingress_allowed(policies: list[Doc], template: Doc, port: int | str) -> bool:
    return _allowed(policies, template, port, "Ingress")


def egress_allowed(policies: list[Doc], template: Doc, port: int) -> bool:
    return _allowed(policies, template, port, "Egress")


# --- Prometheus Adapter: the custom metrics the table HPA can use ------------------------------


def adapter_rules() -> list[Doc]:
    return yaml.safe_load((DEPLOY / "prometheus" / "adapter-rules.yaml").read_text())["rules"]


def adapter_metric_names() -> set[str]:
    return {rule["name"]["as"] for rule in adapter_rules()}


# --- The image and the entry point ----------------------------------------------------------------


def dockerfile_stages() -> dict[str, list[tuple[str, str]]]:
    """stage name -> its instructions as (KEYWORD, arguments), line continuations joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            found = re.search(r"\bAS\s+(\S+)", rest, re.IGNORECASE)
            current = stages.setdefault(found.group(1) if found else f"stage{len(stages)}", [])
        current.append((keyword, rest.strip()))
    return stages


def image_entrypoint(stage: str = "runtime") -> list[str]:
    import json

    entries = [json.loads(rest) for keyword, rest in dockerfile_stages()[stage] if keyword == "ENTRYPOINT"]
    if not entries:
        raise LookupError(f"the Dockerfile's {stage} stage has no ENTRYPOINT")
    return list(entries[-1])


def make_run_command(service: str) -> list[str]:
    """The argv `make run` (duelmahjong.platform.stack) starts `service` with, `python` by name.

    Captured from the stack's own spawn with process creation stubbed out, so the containers are
    compared with what `make run` really runs, not with a copy of it.
    """
    import tempfile
    from unittest import mock

    from duelmahjong.platform import stack

    captured: list[list[str]] = []

    class Capture:
        pid = 0

        def __init__(self, argv: list[str], **_options: object) -> None:
            captured.append(list(argv))

    with tempfile.TemporaryDirectory() as scratch, mock.patch.object(stack.subprocess, "Popen", Capture):
        local = stack.Stack(Path(scratch), [service], {})
        local._spawn(service, {}, 0, 0, Path(scratch) / "service.log")
        for log in local._logs:
            log.close()
    (argv,) = captured
    if argv[0] == sys.executable:
        argv[0] = "python"  # the stack runs its own interpreter; the image's is `python` on PATH
    return argv


def address_variables() -> dict[str, str]:
    """service -> the variable `make run` gives every service its gRPC address in (WALLET_ADDRESS…)."""
    from duelmahjong.platform.stackfile import address_variable

    return {service: address_variable(service) for service in SERVICES}


def load_dashboard_generator() -> ModuleType:
    """deploy/grafana/dashboards.py, the source the dashboard JSON files are rendered from."""
    import importlib.util

    name = "duel_dashboard_generator"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DEPLOY / "grafana" / "dashboards.py")
        if spec is None or spec.loader is None:
            raise ImportError("cannot load deploy/grafana/dashboards.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def requires_database(service: str) -> bool:
    """Whether the service's own config class says it keeps data in Postgres."""
    import importlib

    from duelmahjong.platform.config import ServiceConfig

    module = importlib.import_module(f"services.{service}.config")
    (config,) = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, ServiceConfig)
        and value.__module__ == module.__name__
    ]
    return bool(config.REQUIRES_DATABASE)


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
    """Every PromQL expression of the alert rules, the adapter rules and the dashboards."""
    exprs = [rule["expr"] for rule in alert_rules()]
    exprs.extend(rule[key] for rule in adapter_rules() for key in ("seriesQuery", "metricsQuery"))
    for dashboard in dashboards().values():
        exprs.extend(dashboard_exprs(dashboard))
    return exprs
