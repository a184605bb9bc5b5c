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


# The API groups of the custom resources the overlays use: cert-manager's and Gateway API's. The
# Kubernetes schemas of kubernetes-validate do not have them.
CUSTOM_RESOURCE_GROUPS = ("cert-manager.io", "gateway.networking.k8s.io")


def is_custom_resource(doc: Doc) -> bool:
    return str(doc["apiVersion"]).split("/")[0] in CUSTOM_RESOURCE_GROUPS


def custom_resource_problems(docs: list[Doc]) -> list[str]:
    """What is wrong with each custom resource by its CRD's schema (tests/deploy/crd_validate.mjs,
    with the schemas deploy/install-tools.sh installs)."""
    import json

    modules = REPO / ".tools" / "crd-schemas" / "node_modules"
    if not (modules / ".installed").exists():
        raise MissingToolError("the CRD schemas are not installed: run `make deploy-tools`")
    script = Path(__file__).with_name("crd_validate.mjs")
    done = subprocess.run(
        [find_tool("node"), str(script), str(modules)],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{script.name} exited {done.returncode}:\n{done.stderr}")
    return [f"{p['name']}: {p['problem']}" for p in json.loads(done.stdout)]


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


# --- NetworkPolicy reachability (ports only: who may talk is checked by the policies' selectors) --


def port_number(template: Doc, port: int | str) -> int:
    if isinstance(port, int):
        return port
    for container in template["spec"]["containers"]:
        for declared in container.get("ports", []):
            if declared.get("name") == port:
                return int(declared["containerPort"])
    raise LookupError(f"no container port named {port!r}")


def _allowed(
    policies: list[Doc], template: Doc, port: int | str, direction: str, peer: Doc | None = None
) -> bool:
    """Whether some policy lets `port` through in `direction` ("Ingress"/"Egress") for the pod;
    with `peer` (a pod template of the same namespace), only rules whose peers select it count."""
    number = port_number(template, port)
    labels = template["metadata"]["labels"]
    isolating = [
        p["spec"]
        for p in policies
        if direction in p["spec"].get("policyTypes", []) and selects(p["spec"]["podSelector"], labels)
    ]
    if not isolating:
        return True
    peers_key = "from" if direction == "Ingress" else "to"
    for spec in isolating:
        for rule in spec.get(direction.lower(), []):
            ports = rule.get("ports")
            if ports and not any(port_number(template, p["port"]) == number for p in ports):
                continue
            if peer is None or peers_key not in rule:
                return True
            for allowed in rule[peers_key]:
                same_namespace = "namespaceSelector" not in allowed and "ipBlock" not in allowed
                if same_namespace and selects(allowed["podSelector"], peer["metadata"]["labels"]):
                    return True
    return False


def ingress_allowed(policies: list[Doc], template: Doc, port: int | str, peer: Doc | None = None) -> bool:
    return _allowed(policies, template, port, "Ingress", peer)


def egress_allowed(policies: list[Doc], template: Doc, port: int, peer: Doc | None = None) -> bool:
    return _allowed(policies, template, port, "Egress", peer)


# The game client library's modules a DuelClient runs when it queues and plays (session.py: wallet
# and matchmaking; play.py: the table it is sent to).
CLIENT_MODULES = ("session.py", "play.py")


def _stub_targets(code: str) -> set[str]:
    return {t.lower() for t in re.findall(r"\b(\w+?)_pb2_grpc\.\w+ServiceStub\(", code)}


def grpc_calls() -> dict[str, set[str]]:
    """service -> the services its code opens gRPC stubs to (the calls the network must allow).

    A service that runs game clients of its own (matchmaking's house bots: a ``DuelClient``) also
    calls whatever the client calls, its own service included: through its Service, any replica.
    """
    client_code = " ".join((REPO / "libs" / "duelmahjong" / "client" / m).read_text() for m in CLIENT_MODULES)
    calls: dict[str, set[str]] = {}
    for service in SERVICES:
        code = " ".join(p.read_text() for p in (REPO / "services" / service).glob("*.py"))
        calls[service] = _stub_targets(code) - {service}
        if re.search(r"\bDuelClient\(", code):
            calls[service] |= _stub_targets(client_code)
    return calls


def selected_workloads(docs: list[Doc], selector: Doc) -> set[str]:
    """The names of the workloads (Deployments, StatefulSets) whose pods `selector` selects."""
    return {
        w["metadata"]["name"]
        for w in workloads(docs)
        if selects(selector, w["spec"]["template"]["metadata"]["labels"])
    }


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


def dockerfile_arg_defaults() -> dict[str, str]:
    """The Dockerfile's build arguments with a default (`ARG NAME=value`), by name."""
    found = re.findall(r"^ARG\s+(\w+)=(\S+)\s*$", (REPO / "Dockerfile").read_text(), re.MULTILINE)
    return dict(found)


def image_health_probe(stage: str = "runtime") -> str:
    """The command name the image installs deploy/docker/grpc_health_probe.py as (on its PATH)."""
    for keyword, rest in dockerfile_stages()[stage]:
        parts = rest.split()
        if keyword == "COPY" and "deploy/docker/grpc_health_probe.py" in parts:
            destination = parts[-1]
            if destination.startswith("/usr/local/bin/"):
                return destination.removeprefix("/usr/local/bin/")
            return destination
    raise LookupError(f"the Dockerfile's {stage} stage does not install deploy/docker/grpc_health_probe.py")


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
        local._spawn(service, service, {}, 0, 0, Path(scratch) / "service.log")
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


def requires_database(service: str) -> bool:
    """Whether the service's own config class says it keeps data in Postgres."""
    return bool(config_class(service).REQUIRES_DATABASE)


def database_variable(service: str) -> str:
    """The variable the service's config reads its database URL from (DATABASE_URL, SCORING_DATABASE_URL)."""
    return str(config_class(service).database_variable())


def config_class(service: str) -> type:
    """The service's own ServiceConfig subclass (services/<name>/config.py)."""
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
    return config


# Read by a library the services run on, not by a setting of ours: gRPC core's choice of resolver
# and its tracing.
LIBRARY_VARIABLES = frozenset({"GRPC_DNS_RESOLVER", "GRPC_TRACE", "GRPC_VERBOSITY"})


def known_variables(service: str) -> set[str]:
    """What a service's environment may hold: its settings, the addresses `make run` passes to
    every service (not every service reads all of them) and the libraries' own variables."""
    settings = {variable for variable, _default, _help in config_class(service).settings_table()}
    return settings | set(address_variables().values()) | LIBRARY_VARIABLES


def drain_budget_seconds(env: dict[str, str]) -> dict[str, float]:
    """What a table server may spend after SIGTERM, from its environment or its config's defaults:
    DRAIN_SECONDS for live hands, SETTLEMENT_WAIT_SECONDS for the last one's settlement, then
    SHUTDOWN_GRACE_SECONDS for in-flight RPCs."""
    defaults = {variable: default for variable, default, _help in config_class("table").settings_table()}
    budget = {}
    for variable in ("DRAIN_SECONDS", "SETTLEMENT_WAIT_SECONDS", "SHUTDOWN_GRACE_SECONDS"):
        budget[variable] = float(env.get(variable, defaults[variable]))
    return budget
