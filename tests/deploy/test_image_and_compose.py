"""The Dockerfile and deploy/compose: the compose file parses (docker-compose's own validation),
and references only images, build stages, files, commands and ports that exist; every service
runs the entry point `make run` uses."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

Doc = dict[str, Any]
COMPOSE_DIR = "deploy/compose"


def _resolved(kit: ModuleType, *files: str) -> Doc:
    """The compose files as docker-compose resolves them (merged, anchors expanded, paths absolute)."""
    argv = [*kit.compose_argv(), "--project-directory", str(kit.DEPLOY / "compose")]
    for file in files:
        argv += ["-f", str(kit.DEPLOY / "compose" / file)]
    kit.run_tool([*argv, "config", "--quiet"])
    resolved: Doc = yaml.safe_load(kit.run_tool([*argv, "config"]))
    return resolved


@pytest.fixture(scope="module")
def compose(kit: ModuleType) -> Doc:
    return _resolved(kit, "docker-compose.yml")


def _volumes(service: Doc) -> list[tuple[str, str, str]]:
    """(source, target, type) of each mount, from the long syntax (compose v2) or the short (v1)."""
    out = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            out.append((volume["source"], volume["target"], volume["type"]))
        else:
            source, target = volume.split(":")[:2]
            out.append((source, target, "bind" if source.startswith("/") else "volume"))
    return out


def _ports(service: Doc) -> list[tuple[str, int]]:
    """(host address:port, container port) of each published port, long or short syntax."""
    out = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            out.append((f"{port.get('host_ip', '')}:{port['published']}", int(port["target"])))
        else:
            *host, target = port.split("/")[0].split(":")
            out.append((":".join(host), int(target)))
    return out


def _dockerignored(kit: ModuleType, relative: str) -> bool:
    patterns = [
        line.strip()
        for line in (kit.REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return any(fnmatch.fnmatch(relative, p) or relative.startswith(p.rstrip("/") + "/") for p in patterns)


def test_image_is_multi_stage_non_root_and_generates_code_in_the_build(kit: ModuleType) -> None:
    stages = kit.dockerfile_stages()
    assert {"build", "test", "runtime"} <= set(stages)
    runtime = stages["runtime"]
    user = [rest for keyword, rest in runtime if keyword == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert not any(keyword == "RUN" and "gcc" in rest for keyword, rest in runtime), "no compiler at run"
    build_runs = " ".join(rest for keyword, rest in stages["build"] if keyword == "RUN")
    assert "grpc_tools.protoc" in build_runs and "proto/duelmahjong/v1/*.proto" in build_runs


def test_what_the_build_imports_from_the_project_exists(kit: ModuleType) -> None:
    import importlib

    runs = " ".join(
        rest for _stage in kit.dockerfile_stages().values() for keyword, rest in _stage if keyword == "RUN"
    )
    imports = re.findall(r"from (duelmahjong[\w.]*|services[\w.]*) import ([\w, ]+)", runs)
    assert imports, "the build warms the rules tables through the project's own function"
    for module, names in imports:
        loaded = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(loaded, name), f"the Dockerfile uses {module}.{name}, which does not exist"


def test_every_file_the_image_copies_exists_and_is_not_ignored(kit: ModuleType) -> None:
    defaults = kit.dockerfile_arg_defaults()
    assert "PYTHON_IMAGE" in defaults and "WHEELHOUSE" in defaults, "the base and wheels are build args"
    for stage, instructions in kit.dockerfile_stages().items():
        for keyword, rest in instructions:
            if keyword != "COPY" or "--from=" in rest:
                continue
            *sources, _target = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], rest).split()
            for source in sources:
                assert (kit.REPO / source).exists(), f"{stage}: COPY {source}: no such file"
                assert not _dockerignored(kit, source.rstrip("/")), f"{stage}: {source} is dockerignored"


def test_services_run_the_make_run_entry_point(kit: ModuleType, compose: Doc) -> None:
    entrypoint = kit.image_entrypoint("runtime")
    for name in kit.SERVICES:
        service = compose["services"][name]
        assert service["build"]["target"] == "runtime"
        assert entrypoint + service["command"] == kit.make_run_command(name), name


def test_images_are_built_here_or_pinned_and_match_the_dev_cluster(
    kit: ModuleType, compose: Doc, rendered: dict[str, list[Doc]]
) -> None:
    stages = kit.dockerfile_stages()
    cluster_images = {
        c["image"].split(":")[0]: c["image"]
        for w in kit.workloads(rendered["dev"])
        for c in w["spec"]["template"]["spec"]["containers"]
    }
    for name, service in compose["services"].items():
        if "build" in service:
            assert service["build"]["target"] in stages, name
            assert (kit.REPO / service["build"].get("dockerfile", "Dockerfile")).is_file()
            continue
        repository, _, tag = service["image"].partition(":")
        assert tag and tag != "latest", f"{name}: pin the image tag of {service['image']}"
        if repository in cluster_images:
            assert cluster_images[repository] == service["image"], f"{name}: compose and dev differ"


def test_mounted_files_exist(compose: Doc) -> None:
    for name, service in compose["services"].items():
        for source, _target, kind in _volumes(service):
            if kind == "bind" and Path(source).name != "tls":  # the certificates: made before `up`
                assert Path(source).exists(), f"{name} mounts {source}, which does not exist"


def test_every_service_serves_tls_with_its_own_certificate_made_before_up(
    kit: ModuleType, compose: Doc
) -> None:
    """Each service serves /tls/<name>.pem (for its compose name: what the others and the probe dial),
    trusts /tls/ca.pem, and deploy/compose-test.sh makes them on the host before the stack comes up."""
    for name in kit.SERVICES:
        service = compose["services"][name]
        env = service["environment"]
        assert env["TLS_CERT_FILE"] == f"/tls/{name}.pem" and env["TLS_KEY_FILE"] == f"/tls/{name}-key.pem"
        assert env["TLS_CA_FILE"] == "/tls/ca.pem" and "GRPC_PLAINTEXT" not in env, name
        assert any(target == "/tls" for _source, target, _kind in _volumes(service)), name
    runner = compose["services"]["test-runner"]
    assert runner["environment"]["TLS_CA_FILE"] == "/tls/ca.pem"
    script = (Path(__file__).parents[2] / "deploy" / "compose-test.sh").read_text()
    assert f"-m duelmahjong.platform.pki deploy/compose/tls {' '.join(kit.SERVICES)}" in script


def test_ports_and_health_checks_match_what_the_services_listen_on(kit: ModuleType, compose: Doc) -> None:
    host_ports: list[str] = []
    for name in kit.SERVICES:
        service = compose["services"][name]
        env = service["environment"]
        listening = {int(env["GRPC_PORT"]), int(env["METRICS_PORT"])}
        assert env["GRPC_HOST"] == "0.0.0.0", f"{name} must listen beyond the container's loopback"
        for host, target in _ports(service):
            assert target in listening, f"{name} publishes {target}, which it does not serve"
            host_ports.append(host)
        assert service["healthcheck"]["test"][-1] == "grpc-health-probe"
        assert len(env["TOKEN_SECRET"].encode()) >= 32, "the platform refuses shorter token keys"
        assert (kit.database_variable(name) in env) == kit.requires_database(name), name
        unknown = set(env) - kit.known_variables(name)
        assert not unknown, f"{name} is given variables no setting reads: {sorted(unknown)}"
        for other, variable in kit.address_variables().items():
            other_port = compose["services"][other]["environment"]["GRPC_PORT"]
            assert env[variable] == f"{other}:{other_port}", f"{name}: {variable}"
        assert ("postgres" in service.get("depends_on", {})) == kit.requires_database(name), name
        assert ("postgres-roles" in service.get("depends_on", {})) == kit.requires_database(name), name
    assert len(host_ports) == len(set(host_ports)), "two services publish the same host port"


def test_the_table_server_advertises_the_address_others_reach_it_at(compose: Doc) -> None:
    env = compose["services"]["table"]["environment"]
    assert env["ADVERTISE_ADDRESS"] == f"table:{env['GRPC_PORT']}"


def test_compose_waits_for_a_table_server_to_drain(kit: ModuleType, compose: Doc) -> None:
    table = compose["services"]["table"]
    drain = kit.drain_budget_seconds(table["environment"])
    grace = table["stop_grace_period"]
    seconds = int(grace[:-1]) * {"s": 1, "m": 60}[grace[-1]] if isinstance(grace, str) else int(grace)
    assert sum(drain.values()) < seconds


def test_dependencies_wait_for_health_that_exists(compose: Doc) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in services, f"{name} depends on unknown {dependency}"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency], f"{dependency} has no health check"


def test_prometheus_scrapes_every_service_at_its_metrics_port(kit: ModuleType, compose: Doc) -> None:
    config = yaml.safe_load((kit.DEPLOY / "prometheus" / "prometheus.yml").read_text())
    (duel,) = [job for job in config["scrape_configs"] if job["job_name"] == "duel"]
    targets = {t: s["labels"]["service"] for s in duel["static_configs"] for t in s["targets"]}
    expected = {f"{n}:{compose['services'][n]['environment']['METRICS_PORT']}": n for n in kit.SERVICES}
    assert targets == expected


def test_nats_keeps_jetstream_on_a_volume_and_postgres_has_a_health_check(compose: Doc) -> None:
    nats = compose["services"]["nats"]
    assert "--jetstream" in nats["command"]
    store = nats["command"][nats["command"].index("--store_dir") + 1]
    assert (store, "volume") in {(target, kind) for _source, target, kind in _volumes(nats)}
    postgres = compose["services"]["postgres"]
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert any(kind == "volume" for _source, _target, kind in _volumes(postgres))


def test_a_test_runner_plays_the_end_to_end_tests_against_the_stack(kit: ModuleType, compose: Doc) -> None:
    runner = compose["services"]["test-runner"]
    assert runner["build"]["target"] == "test"
    command = kit.image_entrypoint("test") + runner["command"]
    assert command[:3] == ["python", "-m", "pytest"]
    tests = kit.REPO / command[3]
    assert tests.is_file() and "DUEL_DEPLOYED_STACK" in tests.read_text()
    assert runner["environment"]["DUEL_DEPLOYED_STACK"] == "1"
    for variable in kit.address_variables().values():
        assert variable in runner["environment"]
    assert all(runner["depends_on"][n]["condition"] == "service_healthy" for n in kit.SERVICES)


def test_postgres_creates_the_database_of_every_service_with_data(kit: ModuleType, compose: Doc) -> None:
    postgres = compose["services"]["postgres"]
    mounts = {target: source for source, target, _kind in _volumes(postgres)}
    init = kit.DEPLOY / "compose" / "postgres-init"
    assert mounts.get("/docker-entrypoint-initdb.d") == str(init)
    assert "POSTGRES_DATABASES" in (init / "10-databases.sh").read_text()
    created = set(re.split(r"[\s,]+", postgres["environment"]["POSTGRES_DATABASES"].strip()))
    for name in kit.SERVICES:
        for variable, value in compose["services"][name]["environment"].items():
            if variable.endswith("DATABASE_URL"):
                database = urlsplit(value).path.lstrip("/")
                assert database in created, f"{name}: {variable} names {database}, which nothing creates"


def test_each_service_with_data_connects_as_the_role_the_one_shot_setup_gives_it(
    kit: ModuleType, compose: Doc
) -> None:
    setup = compose["services"]["postgres-roles"]
    assert kit.image_entrypoint("runtime") + setup["command"] == [
        "python", "-m", "duelmahjong.platform.pgroles", "setup",
    ]  # fmt: skip
    assert setup["restart"] == "no" and setup["healthcheck"]["test"] == ["NONE"]  # disabled
    given = setup["environment"]
    admin = urlsplit(given["DATABASE_ADMIN_URL"])
    for name in kit.SERVICES:
        if not kit.requires_database(name):
            continue
        service = compose["services"][name]
        url = urlsplit(service["environment"][kit.database_variable(name)])
        assert (url.username, url.path) == (name, f"/{name}"), "its own role, its own database"
        assert url.password == given[f"{name.upper()}_DATABASE_PASSWORD"] != admin.password
        assert (url.hostname, url.port) == (admin.hostname, admin.port)
        assert service["depends_on"]["postgres-roles"] == {"condition": "service_completed_successfully"}


def test_the_local_override_swaps_only_the_infrastructure_for_local_images(
    kit: ModuleType, compose: Doc
) -> None:
    local = _resolved(kit, "docker-compose.yml", "docker-compose.local.yml")["services"]
    swapped = {name for name, ours in compose["services"].items() if local[name]["image"] != ours["image"]}
    assert swapped == {"nats", "postgres", "prometheus"}
    for name in swapped:
        assert local[name]["image"].startswith("localhost/"), "a local image is never pulled"
        assert (kit.DEPLOY / "local" / f"{name}.Containerfile").is_file()
        assert local[name].get("command") == compose["services"][name].get("command")
        assert local[name].get("healthcheck") == compose["services"][name].get("healthcheck")
    assert local["grafana"]["profiles"] == ["grafana"], "grafana has no local image: left out"


def test_the_static_address_override_names_every_service_in_every_hosts_file(
    kit: ModuleType, compose: Doc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under podman every container finds the others through /etc/hosts: each service's fixed address
    is the one every container's hosts entry gives its name, and the runner has the entries too."""
    monkeypatch.setenv("DUEL_SUBNET", "10.213.7")
    monkeypatch.setenv("DUEL_NETWORK", "duel-net")
    pinned = _resolved(kit, "docker-compose.yml", "docker-compose.static-addresses.yml")
    services = pinned["services"]
    address = {
        name: service["networks"]["default"]["ipv4_address"]
        for name, service in services.items()
        if name != "test-runner"
    }
    assert set(address) | {"test-runner"} == set(compose["services"]), "a service without a fixed address"
    assert len(set(address.values())) == len(address), "two services share an address"
    for name, service in services.items():
        hosts = service["extra_hosts"]  # docker-compose 1 gives a mapping, the compose spec a list
        entries = dict(hosts) if isinstance(hosts, dict) else dict(h.split(":", 1) for h in hosts)
        assert entries == address, name
    assert pinned["networks"]["default"] == {"external": True, "name": "duel-net"}
