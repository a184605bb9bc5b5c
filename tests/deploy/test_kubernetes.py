"""deploy/k8s: every overlay builds with kustomize and validates against the Kubernetes schemas
offline; the shape the issue asks for (per-pod table addresses, probes, drain, HPA, PDB, limits,
secrets, network policies, NATS/Postgres in-cluster in dev and external in prod, matchmaking
replicated over the DUEL_MATCHMAKING bucket) holds."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest

Doc = dict[str, Any]
OVERLAYS = ("dev", "prod")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_manifest_validates_against_the_kubernetes_schema(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    assert docs, f"overlay {overlay} rendered nothing"
    problems = []
    for doc in docs:
        if kit.is_custom_resource(doc):
            continue  # cert-manager's and Gateway API's: test_edge.py validates them against their CRDs
        try:
            kubernetes_validate.validate(doc, kit.KUBERNETES_VERSION, strict=True)
        except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as error:
            problems.append(f"{doc['kind']}/{doc['metadata']['name']}: {error.message}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_service_runs_once_in_its_own_workload(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    kinds = {w["metadata"]["name"]: w["kind"] for w in kit.duel_workloads(rendered[overlay])}
    assert kinds == {
        "matchmaking": "Deployment",
        "scoring": "Deployment",
        "wallet": "Deployment",
        "table": "StatefulSet",
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_table_pods_are_addressable_one_by_one(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    table = kit.find(docs, "StatefulSet", "table")
    headless = kit.find(docs, "Service", table["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    pod_labels = table["spec"]["template"]["metadata"]["labels"]
    assert kit.selects(headless["spec"]["selector"], pod_labels)
    assert {p["name"] for p in headless["spec"]["ports"]} >= {"grpc", "metrics"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_table_pods_advertise_their_own_public_name(
    kit: ModuleType, edge: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    table = kit.find(rendered[overlay], "StatefulSet", "table")
    (container,) = table["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    parameters = edge.EdgeParameters.load(kit.DEPLOY / "k8s" / "overlays" / overlay / "edge.yaml")
    # Its pod name under the play domain, at the gateway's port: what its TLSRoute serves
    # (test_edge.py), not an in-cluster name no client on the internet resolves.
    assert (
        env["ADVERTISE_ADDRESS"]["value"]
        == f"$(POD_NAME).{parameters.play_domain}:{parameters.listener_port}"
    )
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    # $(VAR) expands only from variables defined earlier in the list.
    names = list(env)
    assert names.index("POD_NAME") < names.index("ADVERTISE_ADDRESS")


def _asks_grpc_health(kit: ModuleType, docs: list[Doc], container: Doc) -> bool:
    """Whether a probe runs the image's gRPC health probe against this container's gRPC port: the
    probe dials GRPC_PORT over TLS (the kubelet's own gRPC probe speaks plaintext only)."""
    probe = container["readinessProbe"]
    if probe.get("exec", {}).get("command") != [kit.image_health_probe()]:
        return False
    config = next(
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("duel-config")
    )
    grpc_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
    # The exec takes a Python start: more than the default second on a busy node.
    return int(config["data"]["GRPC_PORT"]) == grpc_port and probe["timeoutSeconds"] >= 3


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_readiness_is_grpc_health_and_liveness_is_a_separate_check(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    for workload in kit.duel_workloads(rendered[overlay]):
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        assert _asks_grpc_health(kit, rendered[overlay], container), workload["metadata"]["name"]
        # A draining table server is not ready but must stay alive until its hands finish.
        assert {"grpc", "exec"} & set(container["livenessProbe"]) == set(), workload["metadata"]["name"]


# SIGTERM hands a table server's tables to pods with room (a step's ack and a compare-and-set each:
# seconds); DRAIN_SECONDS is only the fallback for tables no pod has room for, which finish their
# hand here or are closed with it void. A hand at human pace fits in two minutes; the T11 worst case
# (~12 minutes) no longer sets the grace period, so rollouts and scale-downs do not wait on it.
HAND_OFF_SECONDS = 10
FALLBACK_HAND_SECONDS = 120
LONGEST_GRACE_SECONDS = 300


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_table_servers_hand_off_within_a_short_grace_period(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    spec = kit.find(rendered[overlay], "StatefulSet", "table")["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] <= LONGEST_GRACE_SECONDS
    (container,) = spec["containers"]
    pause = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep", "the table server needs a preStop pause before its SIGTERM drain"
    # After the pause: the hand-off, DRAIN_SECONDS for the tables kept, the last settlement wait, the
    # gRPC grace.
    drain = kit.drain_budget_seconds({e["name"]: e["value"] for e in container["env"] if "value" in e})
    assert FALLBACK_HAND_SECONDS <= drain["DRAIN_SECONDS"]
    budget = float(pause[1]) + HAND_OFF_SECONDS + sum(drain.values())
    assert budget < spec["terminationGracePeriodSeconds"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_table_servers_scale_on_cpu_and_custom_metrics_the_adapter_serves(
    kit: ModuleType, monitoring: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    hpa = kit.find(rendered[overlay], "HorizontalPodAutoscaler", "table")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "table"}
    resources = [m["resource"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Resource"]
    assert resources == ["cpu"]
    custom = {m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"}
    assert custom <= monitoring.adapter_metric_names(), "the HPA's metrics must be ones the adapter serves"
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    # Live tables per pod: scale out before the pod is full.
    (container,) = kit.find(rendered[overlay], "StatefulSet", "table")["spec"]["template"]["spec"][
        "containers"
    ]
    capacity = int(next(e["value"] for e in container["env"] if e["name"] == "TABLE_CAPACITY"))
    tables = [m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert [t["metric"]["name"] for t in tables] == ["duel_table_live_tables"]
    assert 0 < float(tables[0]["target"]["averageValue"]) < capacity


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_has_a_disruption_budget(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    budgets = [d for d in rendered[overlay] if d["kind"] == "PodDisruptionBudget"]
    for workload in kit.duel_workloads(rendered[overlay]):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        covering = [b for b in budgets if kit.selects(b["spec"]["selector"], labels)]
        assert len(covering) == 1, workload["metadata"]["name"]
    table_budget = kit.find(rendered[overlay], "PodDisruptionBudget", "table")
    assert table_budget["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_has_requests_and_limits_and_runs_unprivileged(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    for workload in kit.workloads(rendered[overlay]):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in pod["containers"]:
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), container["name"]
            assert {"cpu", "memory"} <= set(resources["limits"]), container["name"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def _references(pod: Doc) -> set[tuple[str, str]]:
    refs: set[tuple[str, str]] = set()
    for container in pod["containers"]:
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                refs.add(("ConfigMap", source["configMapRef"]["name"]))
            if "secretRef" in source:
                refs.add(("Secret", source["secretRef"]["name"]))
        for env in container.get("env", []):
            value_from = env.get("valueFrom", {})
            if "secretKeyRef" in value_from:
                refs.add(("Secret", value_from["secretKeyRef"]["name"]))
            if "configMapKeyRef" in value_from:
                refs.add(("ConfigMap", value_from["configMapKeyRef"]["name"]))
    for volume in pod.get("volumes", []):
        if "secret" in volume:
            refs.add(("Secret", volume["secret"]["secretName"]))
        if "configMap" in volume:
            refs.add(("ConfigMap", volume["configMap"]["name"]))
    return refs


# What the operators bring (docs/operations.md "Exposing the stack"): the trust bundle everywhere,
# and in prod every credential, never committed.
PROD_CREDENTIALS = {
    ("Secret", name)
    for name in (
        "duel-secrets",
        "wallet-database",
        "scoring-database",
        "nats-matchmaking",
        "nats-table",
        "nats-scoring",
        "nats-wallet",
    )
}
TRUST_BUNDLE = {("ConfigMap", "duel-ca-bundle")}


@pytest.mark.parametrize(
    ("overlay", "brought_by_operators"),
    [("dev", TRUST_BUNDLE), ("prod", TRUST_BUNDLE | PROD_CREDENTIALS)],
)
def test_referenced_config_and_secrets_exist_or_are_the_operators(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str, brought_by_operators: set[tuple[str, str]]
) -> None:
    docs = rendered[overlay]
    present = {(d["kind"], d["metadata"]["name"]) for d in docs}
    # cert-manager writes each Certificate's Secret.
    present |= {("Secret", d["spec"]["secretName"]) for d in docs if d["kind"] == "Certificate"}
    wanted = set().union(*(_references(w["spec"]["template"]["spec"]) for w in kit.workloads(docs)))
    assert wanted - present == brought_by_operators
    # Secrets never sit in a ConfigMap.
    config = kit.find(
        docs, "ConfigMap", next(n for k, n in wanted if k == "ConfigMap" and n.startswith("duel-config"))
    )
    assert not {"TOKEN_SECRET", "DATABASE_URL", "SCORING_DATABASE_URL"} & set(config["data"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_gets_the_addresses_make_run_gives_it(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    (config,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("duel-config")
    ]
    for service, variable in kit.address_variables().items():
        target = kit.find(docs, "Service", service)
        port = next(p["port"] for p in target["spec"]["ports"] if p["name"] == "grpc")
        assert config["data"][variable] == f"{service}:{port}"
    for workload in kit.duel_workloads(docs):
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        assert {"configMapRef": {"name": config["metadata"]["name"]}} in container["envFrom"]


def test_dev_runs_nats_and_postgres_in_cluster_and_prod_points_outside(
    kit: ModuleType, rendered: dict[str, list[Doc]]
) -> None:
    dev_workloads = {w["metadata"]["name"] for w in kit.workloads(rendered["dev"])}
    assert {"nats", "postgres"} <= dev_workloads
    prod_workloads = {w["metadata"]["name"] for w in kit.workloads(rendered["prod"])}
    assert not {"nats", "postgres"} & prod_workloads
    for name in ("nats", "postgres"):
        assert kit.find(rendered["prod"], "Service", name)["spec"]["type"] == "ExternalName"
        assert kit.find(rendered["dev"], "Service", name)["spec"].get("type", "ClusterIP") == "ClusterIP"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_deny_by_default_and_let_every_service_port_through(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    deny = kit.find(docs, "NetworkPolicy", "default-deny")["spec"]
    assert deny["podSelector"] == {} and set(deny["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny and "egress" not in deny
    pods = {w["metadata"]["name"]: w["spec"]["template"] for w in kit.workloads(docs)}
    for service in (d for d in docs if d["kind"] == "Service" and "selector" in d["spec"]):
        for name, template in pods.items():
            if not kit.selects(service["spec"]["selector"], template["metadata"]["labels"]):
                continue
            for port in service["spec"]["ports"]:
                assert kit.ingress_allowed(policies, template, port["targetPort"]), (
                    f"Service {service['metadata']['name']} port {port['name']} cannot reach {name}"
                )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_services_that_keep_data_get_and_reach_postgres(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    for workload in kit.duel_workloads(docs):
        template = workload["spec"]["template"]
        wants_db = kit.requires_database(workload["metadata"]["name"])
        env = {e["name"] for e in template["spec"]["containers"][0].get("env", [])}
        assert (kit.database_variable(workload["metadata"]["name"]) in env) == wants_db, workload["metadata"][
            "name"
        ]
        assert kit.egress_allowed(policies, template, 5432) == wants_db, workload["metadata"]["name"]
        assert kit.egress_allowed(policies, template, 4222), workload["metadata"]["name"]


# Set for $(VAR) expansion in other variables (the table's advertised address), read by no config.
DOWNWARD_API = {"POD_NAME", "POD_NAMESPACE"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_variable_a_service_gets_is_a_setting_it_reads(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    for workload in kit.duel_workloads(docs):
        name = workload["metadata"]["name"]
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        given = {env["name"] for env in container.get("env", [])}
        for source in container.get("envFrom", []):
            given |= set(kit.find(docs, "ConfigMap", source["configMapRef"]["name"])["data"])
        unknown = given - kit.known_variables(name) - DOWNWARD_API
        assert not unknown, f"{name} is given variables no setting reads: {sorted(unknown)}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_reach_exactly_the_services_their_code_calls(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    pods = {w["metadata"]["name"]: w["spec"]["template"] for w in kit.duel_workloads(docs)}
    calls = kit.grpc_calls()
    # The house bots play through matchmaking's Service: matchmaking calls itself, on any replica.
    assert calls["matchmaking"] >= {"wallet", "table", "matchmaking"}, "the call graph is read from the code"
    for source, template in pods.items():
        for target, peer in pods.items():
            port = next(
                p["containerPort"] for p in peer["spec"]["containers"][0]["ports"] if p["name"] == "grpc"
            )
            # A table server is called at the public name it advertises: through the gateway, never
            # pod to pod (test_edge.py checks that way).
            direct = target in calls[source] and target not in REACHED_THROUGH_THE_EDGE
            assert kit.egress_allowed(policies, template, port, peer) == direct, f"{source} -> {target}"
            assert kit.ingress_allowed(policies, peer, "grpc", template) == direct, f"{source} -> {target}"


REACHED_THROUGH_THE_EDGE = {"table"}


# Matchmaking keeps its state in the DUEL_MATCHMAKING bucket and any replica serves any RPC
# (docs/operations.md "When a matchmaking replica dies"): prod runs three, dev one.
MATCHMAKING_REPLICAS = {"dev": 1, "prod": 3}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_matchmaking_runs_replicated_and_rolls_one_pod_at_a_time(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    matchmaking = kit.find(rendered[overlay], "Deployment", "matchmaking")["spec"]
    assert matchmaking["replicas"] == MATCHMAKING_REPLICAS[overlay]
    # A new pod ready before an old one goes: never fewer replicas than asked for.
    assert matchmaking["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_matchmaking_scales_on_cpu_from_its_replica_count(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    (hpa,) = [
        d
        for d in docs
        if d["kind"] == "HorizontalPodAutoscaler" and d["spec"]["scaleTargetRef"]["name"] == "matchmaking"
    ]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "matchmaking",
    }
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
    # The HPA never takes the Deployment below the replicas it is deployed with.
    replicas = kit.find(docs, "Deployment", "matchmaking")["spec"]["replicas"]
    assert hpa["spec"]["minReplicas"] == replicas < hpa["spec"]["maxReplicas"]
    # Every pod removed moves its rooms: down one at a time.
    policies = hpa["spec"]["behavior"]["scaleDown"]["policies"]
    assert [(p["type"], p["value"]) for p in policies] == [("Pods", 1)]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_matchmaking_budget_selects_exactly_its_pods_and_lets_one_go_at_a_time(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    budget = kit.find(docs, "PodDisruptionBudget", "matchmaking")["spec"]
    assert kit.selected_workloads(docs, budget["selector"]) == {"matchmaking"}
    # maxUnavailable, not minAvailable: one pod at a time however far the HPA scaled, and a single
    # replica (dev) never blocks a node drain.
    assert budget["maxUnavailable"] == 1 and "minAvailable" not in budget
    # A replica cut off from the store is unready and serves nothing: it may always be evicted.
    assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_matchmaking_replicas_spread_over_nodes(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    spec = kit.find(docs, "Deployment", "matchmaking")["spec"]["template"]["spec"]
    by_topology = {c["topologyKey"]: c for c in spec["topologySpreadConstraints"]}
    nodes = by_topology["kubernetes.io/hostname"]
    assert nodes["maxSkew"] == 1 and nodes["whenUnsatisfiable"] == "DoNotSchedule"
    # A cordoned (tainted) node counts as no domain, or a drain would leave a replica Pending.
    assert nodes["nodeTaintsPolicy"] == "Honor"
    for constraint in by_topology.values():
        assert kit.selected_workloads(docs, constraint["labelSelector"]) == {"matchmaking"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_store_outage_makes_matchmaking_unready_and_never_restarts_it(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    template = kit.find(rendered[overlay], "Deployment", "matchmaking")["spec"]["template"]
    (container,) = template["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    # Ready = gRPC health SERVING on the overall server (""), which the service turns NOT_SERVING
    # while its view of the DUEL_MATCHMAKING bucket is not current.
    assert _asks_grpc_health(kit, rendered[overlay], container)
    # Whatever restarts a container (liveness; startup, until it first passes) asks the process
    # over HTTP, never the gRPC health, which a store outage turns NOT_SERVING on every replica.
    for probe in ("livenessProbe", "startupProbe"):
        assert set(container[probe]) & {"grpc", "exec", "tcpSocket"} == set(), probe
        assert kit.port_number(template, container[probe]["httpGet"]["port"]) == ports["metrics"], probe


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_matchmaking_reaches_nats_the_wallet_and_its_own_replicas(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    pods = {w["metadata"]["name"]: w["spec"]["template"] for w in kit.duel_workloads(docs)}
    matchmaking = pods["matchmaking"]
    assert kit.egress_allowed(policies, matchmaking, 4222)
    for target in ("wallet", "matchmaking"):
        assert kit.egress_allowed(policies, matchmaking, 50051, pods[target]), target
    # The bots' calls arrive at another replica's gRPC port like any client's.
    assert kit.ingress_allowed(policies, matchmaking, "grpc")
    # Only the gRPC port: nothing else of a replica is open to the others.
    assert not kit.egress_allowed(policies, matchmaking, 9100, matchmaking)
