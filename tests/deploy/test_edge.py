"""deploy/k8s: the edge. Clients on the internet reach the API (wallet, matchmaking, scoring) through
the Gateway's TLS-terminating listener and a GRPCRoute, and every table pod the HPA may create at
its own public name through the TLS passthrough listener, a TLSRoute and a Service that selects that
pod alone; that name is what the pod advertises (and so what matchmaking hands out in table_ready
and LocateTable). Every service serves TLS with a certificate cert-manager keeps renewed in place.
The generated files are what deploy/k8s/edge.py renders."""

from __future__ import annotations

import base64
import fnmatch
import re
from types import ModuleType
from typing import Any

import pytest

Doc = dict[str, Any]
OVERLAYS = ("dev", "prod")
TLS_FILES = {"TLS_CERT_FILE": "tls.crt", "TLS_KEY_FILE": "tls.key"}


def _parameters(kit: ModuleType, edge: ModuleType, overlay: str) -> Any:
    return edge.EdgeParameters.load(kit.DEPLOY / "k8s" / "overlays" / overlay / "edge.yaml")


def _of_kind(docs: list[Doc], kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _unhashed(name: str) -> str:
    """A generated ConfigMap's or Secret's name without the content hash kustomize appends."""
    return re.sub(r"-[a-z0-9]{10}$", "", name)


def _generated(docs: list[Doc], kind: str, name: str) -> Doc:
    (doc,) = [d for d in docs if d["kind"] == kind and _unhashed(d["metadata"]["name"]) == name]
    return doc


def _listener(docs: list[Doc], parent: Doc) -> Doc:
    gateway = _of_kind(docs, "Gateway")[parent["name"]]
    (listener,) = [item for item in gateway["spec"]["listeners"] if item["name"] == parent["sectionName"]]
    return dict(listener)


def _container(workload: Doc) -> Doc:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _env(workload: Doc) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in _container(workload)["env"]}


def _advertised(workload: Doc, pod: str) -> str:
    """What the pod named `pod` advertises: its ADVERTISE_ADDRESS with the variables expanded."""
    expanded = _env(workload)["ADVERTISE_ADDRESS"].replace("$(POD_NAME)", pod)
    assert "$(" not in expanded, expanded
    return expanded


def _pod_labels(table: Doc, pod: str) -> dict[str, str]:
    """The labels the StatefulSet controller gives pod `pod`: its template's plus its own name."""
    return {**table["spec"]["template"]["metadata"]["labels"], "statefulset.kubernetes.io/pod-name": pod}


def _certificate_of_secret(docs: list[Doc], secret: str) -> Doc:
    (certificate,) = [c for c in _of_kind(docs, "Certificate").values() if c["spec"]["secretName"] == secret]
    return certificate


def _covers(dns_names: list[str], host: str) -> bool:
    """TLS name matching: exact, or a wildcard standing for exactly one leftmost label."""
    for name in dns_names:
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_custom_resources_validate_against_their_crds(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    custom = [d for d in rendered[overlay] if kit.is_custom_resource(d)]
    assert {d["kind"] for d in custom} >= {
        "Certificate",
        "Gateway",
        "GRPCRoute",
        "TLSRoute",
        "BackendTLSPolicy",
    }
    assert not kit.custom_resource_problems(custom)
    # The validator does reject what the CRD forbids.
    certificate = next(d for d in custom if d["kind"] == "Certificate")
    broken = {**certificate, "spec": {**certificate["spec"], "secretName": 7}}
    assert kit.custom_resource_problems([broken]), "a wrong type must not validate"


def test_generated_edge_files_are_what_the_generator_renders(
    kit: ModuleType, edge: ModuleType, rendered: dict[str, list[Doc]]
) -> None:
    for overlay in OVERLAYS:
        folder = kit.DEPLOY / "k8s" / "overlays" / overlay
        for name, text in edge.rendered_files(overlay, rendered[overlay]).items():
            on_disk = (folder / name).read_text(encoding="utf-8")
            assert on_disk == text, f"overlays/{overlay}/{name} is stale: run `python deploy/k8s/edge.py`"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_table_pod_the_hpa_may_create_has_its_service_and_route(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    table = kit.find(docs, "StatefulSet", "table")
    hpa = kit.find(docs, "HorizontalPodAutoscaler", "table")
    assert hpa["spec"]["scaleTargetRef"]["name"] == table["metadata"]["name"]
    pods = [f"{table['metadata']['name']}-{ordinal}" for ordinal in range(hpa["spec"]["maxReplicas"])]
    services = _of_kind(docs, "Service")
    routes = _of_kind(docs, "TLSRoute")
    # One route per pod the HPA may create, none for a pod that cannot exist.
    assert set(routes) == set(pods)
    grpc_port = next(p["containerPort"] for p in _container(table)["ports"] if p["name"] == "grpc")
    every_template = {w["metadata"]["name"]: w["spec"]["template"] for w in kit.workloads(docs)}
    for pod in pods:
        service = services[pod]
        # Exactly its own pod: not another ordinal, not any other workload's pods.
        for other in pods:
            assert kit.selects(service["spec"]["selector"], _pod_labels(table, other)) == (other == pod)
        for name, template in every_template.items():
            assert not kit.selects(service["spec"]["selector"], template["metadata"]["labels"]), name
        # A draining pod (unready: no new tables) still serves the seats of the tables it finishes.
        assert service["spec"]["publishNotReadyAddresses"] is True
        route = routes[pod]["spec"]
        (rule,) = route["rules"]
        (backend,) = rule["backendRefs"]
        assert backend["name"] == pod and backend.get("kind", "Service") == "Service"
        (port,) = [p for p in service["spec"]["ports"] if p["port"] == backend["port"]]
        assert kit.port_number(table["spec"]["template"], port["targetPort"]) == grpc_port
        # The pod advertises exactly the name and port its route serves.
        host, _, advertised_port = _advertised(table, pod).rpartition(":")
        assert route["hostnames"] == [host]
        (parent,) = route["parentRefs"]
        listener = _listener(docs, parent)
        assert listener["port"] == int(advertised_port)
        assert fnmatch.fnmatchcase(host, listener["hostname"]) and host.count(".") == listener[
            "hostname"
        ].count(".")
        # The pod terminates TLS itself (its certificate, below): the gateway only reads the SNI.
        assert listener["protocol"] == "TLS" and listener["tls"]["mode"] == "Passthrough"
        assert {"kind": "TLSRoute"} in listener["allowedRoutes"]["kinds"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_api_listener_terminates_tls_and_routes_each_grpc_service_to_the_service_that_serves_it(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    (route,) = _of_kind(docs, "GRPCRoute").values()
    (parent,) = route["spec"]["parentRefs"]
    listener = _listener(docs, parent)
    assert listener["protocol"] == "HTTPS" and listener["tls"]["mode"] == "Terminate"
    assert route["spec"]["hostnames"] == [listener["hostname"]]
    # The listener's certificate is cert-manager's, for the name the clients dial.
    (secret_ref,) = listener["tls"]["certificateRefs"]
    assert secret_ref.get("kind", "Secret") == "Secret"
    assert _covers(_certificate_of_secret(docs, secret_ref["name"])["spec"]["dnsNames"], listener["hostname"])
    routed: dict[str, str] = {}
    for rule in route["spec"]["rules"]:
        (backend,) = rule["backendRefs"]
        service = kit.find(docs, "Service", backend["name"])
        assert backend["port"] in [p["port"] for p in service["spec"]["ports"]]
        for match in rule["matches"]:
            assert match["method"]["type"] == "Exact" and "method" not in match["method"]
            routed[match["method"]["service"]] = backend["name"]
    # Each routed gRPC service is one the backend's code registers on its server.
    for grpc_service, backend in routed.items():
        short = grpc_service.rsplit(".", 1)[1]
        code = " ".join(p.read_text() for p in (kit.REPO / "services" / backend).glob("*.py"))
        assert re.search(rf"\badd_{short}Servicer_to_server\b", code), (
            f"{backend} does not serve {grpc_service}"
        )
    # Every service of the contract is reachable from outside: the table's through the table pods'
    # own routes, the others here; health and reflection are not routed.
    contract = set(re.findall(r"^service (\w+)", _protos(kit), re.MULTILINE))
    assert {name.rsplit(".", 1)[1] for name in routed} == contract - {"TableService"}


def _protos(kit: ModuleType) -> str:
    return " ".join(p.read_text() for p in (kit.REPO / "proto" / "duelmahjong" / "v1").glob("*.proto"))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_gateway_speaks_tls_to_the_services_and_verifies_their_names(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    (route,) = _of_kind(docs, "GRPCRoute").values()
    backends = {rule["backendRefs"][0]["name"] for rule in route["spec"]["rules"]}
    policies = {
        target["name"]: policy["spec"]["validation"]
        for policy in _of_kind(docs, "BackendTLSPolicy").values()
        for target in policy["spec"]["targetRefs"]
    }
    assert set(policies) == backends
    for backend, validation in policies.items():
        workload = kit.find(docs, "Deployment", backend)
        (volume,) = [v for v in workload["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
        certificate = _certificate_of_secret(docs, volume["secret"]["secretName"])
        assert _covers(certificate["spec"]["dnsNames"], validation["hostname"]), backend
        # The same bundle the services verify each other with.
        (bundle,) = validation["caCertificateRefs"]
        assert (bundle["kind"], bundle["name"]) == ("ConfigMap", _trust_bundle(workload))


def _file_source(workload: Doc, path: str) -> tuple[Doc, str]:
    """The volume a file of the container comes from, and the key of that Secret or ConfigMap."""
    folder, _, file = path.rpartition("/")
    (mount,) = [m for m in _container(workload)["volumeMounts"] if m["mountPath"] == folder]
    # A directory mount: the kubelet swaps it whole when the Secret is renewed, and the service
    # sees the new files (a subPath mount never changes).
    assert "subPath" not in mount and mount["readOnly"] is True, path
    (volume,) = [v for v in workload["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    kind = "secret" if "secret" in volume else "configMap"
    (item,) = [i for i in volume[kind]["items"] if i["path"] == file]
    return volume, str(item["key"])


def _trust_bundle(workload: Doc) -> str:
    (trust,) = [v for v in workload["spec"]["template"]["spec"]["volumes"] if v["name"] == "trust"]
    return str(trust["configMap"]["name"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_service_mounts_its_certificate_and_is_told_where_it_is(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    config = _generated(docs, "ConfigMap", "duel-config")
    for workload in kit.duel_workloads(docs):
        name = workload["metadata"]["name"]
        env = _env(workload)

        secrets = set()
        for variable, key in TLS_FILES.items():
            volume, item_key = _file_source(workload, env[variable])
            assert item_key == key, (name, variable)
            secrets.add(volume["secret"]["secretName"])
            # Readable by the service's group only (fsGroup), never by the world.
            assert volume["secret"]["defaultMode"] & 0o007 == 0, name
        (secret,) = secrets
        certificate = _certificate_of_secret(docs, secret)
        # The certificate names how the service is dialed: the table at every advertised name,
        # the others at their in-cluster address (the *_ADDRESS the other services are given).
        if workload["kind"] == "StatefulSet":
            hpa = kit.find(docs, "HorizontalPodAutoscaler", name)
            hosts = [
                _advertised(workload, f"{name}-{n}").rpartition(":")[0]
                for n in range(hpa["spec"]["maxReplicas"])
            ]
        else:
            hosts = [config["data"][kit.address_variables()[name]].rpartition(":")[0]]
        for host in hosts:
            assert _covers(certificate["spec"]["dnsNames"], host), (name, host)
        assert "server auth" in certificate["spec"]["usages"]
        # A fresh key at every renewal.
        assert certificate["spec"]["privateKey"]["rotationPolicy"] == "Always"
        volume, key = _file_source(workload, env["TLS_CA_FILE"])
        assert (volume["configMap"]["name"], key) == (_trust_bundle(workload), "ca.crt"), name
        volume, key = _file_source(workload, env["NATS_NKEY_SEED_FILE"])
        assert (_unhashed(volume["secret"]["secretName"]), key) == (f"nats-{name}", "seed"), name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_reach_nats_and_postgres_over_verified_tls(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    config = _generated(docs, "ConfigMap", "duel-config")
    assert all(url.startswith("tls://") for url in config["data"]["NATS_URL"].split(","))
    if overlay != "dev":
        return  # prod's URLs are in the operators' Secrets
    ca_file = _env(kit.find(docs, "Deployment", "wallet"))["TLS_CA_FILE"]
    for secret in ("wallet-database", "scoring-database"):
        data = _generated(docs, "Secret", secret)["data"]
        url = base64.b64decode(data["url"]).decode()
        assert "sslmode=verify-full" in url and f"sslrootcert={ca_file}" in url, secret
        host = re.match(r"postgresql://[^@]+@([^:/]+)", url)
        assert host is not None
        assert _covers(kit.find(docs, "Certificate", "postgres")["spec"]["dnsNames"], host.group(1))
    nats_host = config["data"]["NATS_URL"].removeprefix("tls://").rpartition(":")[0]
    assert _covers(kit.find(docs, "Certificate", "nats")["spec"]["dnsNames"], nats_host)
    # The in-cluster servers serve TLS with those certificates.
    # (NATS's in its configuration file, beside its authorization: test_nats_authorization.py)
    nats_config = kit.find(docs, "ConfigMap", "nats-config")["data"]["nats.conf"]
    assert "tls {" in nats_config and "cert_file: /etc/nats/tls/tls.crt" in nats_config
    postgres = _container(kit.find(docs, "StatefulSet", "postgres"))
    assert "ssl=on" in postgres["args"]
    for workload, secret in (("nats", "nats-tls"), ("postgres", "postgres-tls")):
        volumes = kit.find(docs, "StatefulSet", workload)["spec"]["template"]["spec"]["volumes"]
        assert secret in {v["secret"]["secretName"] for v in volumes if "secret" in v}, workload


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_gateway_and_the_callers_reach_a_grpc_port(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    edge_namespace = {"duel-mahjong.io/edge": "gateway"}
    for workload in kit.duel_workloads(docs):
        template = workload["spec"]["template"]
        labels = template["metadata"]["labels"]
        sources = []
        for policy in policies:
            spec = policy["spec"]
            if "Ingress" not in spec["policyTypes"] or not kit.selects(spec["podSelector"], labels):
                continue
            for rule in spec.get("ingress", []):
                ports = [kit.port_number(template, p["port"]) for p in rule.get("ports", [])]
                if 50051 in ports or not ports:
                    # No rule opens the gRPC port to everyone.
                    assert "from" in rule, policy["metadata"]["name"]
                    sources.extend(rule["from"])
        from_edge = [s for s in sources if "namespaceSelector" in s]
        assert from_edge and all(
            kit.selects(s["namespaceSelector"], edge_namespace) and s["namespaceSelector"] != {}
            for s in from_edge
        ), workload["metadata"]["name"]
        assert not any("ipBlock" in s for s in sources), workload["metadata"]["name"]
    # Matchmaking opens tables at their public names: through the gateway's namespace.
    matchmaking = kit.find(docs, "Deployment", "matchmaking")["spec"]["template"]
    egress = [
        rule
        for p in policies
        if "Egress" in p["spec"]["policyTypes"]
        and kit.selects(p["spec"]["podSelector"], matchmaking["metadata"]["labels"])
        for rule in p["spec"].get("egress", [])
    ]
    assert any(
        kit.selects(peer.get("namespaceSelector", {"matchLabels": {"-": "-"}}), edge_namespace)
        for rule in egress
        for peer in rule.get("to", [])
    )
