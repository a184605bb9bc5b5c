"""deploy/k8s/nats: the NATS server's authorization is what the code derives, a real nats-server
accepts it, the dev keys belong together, and every service mounts its own seed and no other's."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.nats_permissions import (
    HARNESS,
    SERVICES,
    TOOLS,
    deployment_authorization,
    nkey_variable,
    public_key,
    service_uses,
)

Doc = dict[str, Any]
AUTHORIZATION = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "nats" / "authorization.conf"
SEED_PATH = "/var/run/secrets/duel/nats/seed"


def _generated(docs: list[Doc], kind: str, name: str) -> Doc:
    """A ConfigMap or Secret kustomize generated (its name carries a hash suffix)."""
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].rsplit("-", 1)[0] == name]
    return found


def test_the_committed_authorization_is_what_the_code_derives() -> None:
    assert AUTHORIZATION.read_text() == deployment_authorization(), (
        "render it again: python -m duelmahjong.platform.nats_permissions authorization "
        f"> {AUTHORIZATION.relative_to(AUTHORIZATION.parents[3])}"
    )


def test_it_names_the_services_and_the_tools_never_the_harness_nor_a_wildcard_grant() -> None:
    text = AUTHORIZATION.read_text()
    for identity in (*SERVICES, TOOLS):
        assert f"${nkey_variable(identity)}" in text
    assert nkey_variable(HARNESS) not in text
    assert '"allow": [\n            ">"' not in text and '">",' not in text  # no identity may do anything


def test_nats_server_accepts_it_with_the_dev_public_keys(
    rendered: dict[str, list[Doc]], tmp_path: Path
) -> None:
    identities = _generated(rendered["dev"], "ConfigMap", "nats-identities")["data"]
    assert set(identities) == {nkey_variable(name) for name in (*SERVICES, TOOLS)}
    (tmp_path / "authorization.conf").write_text(AUTHORIZATION.read_text())
    (tmp_path / "nats.conf").write_text("port: -1\ninclude ./authorization.conf\n")
    checked = subprocess.run(
        [EmbeddedNats.binary(), "-t", "-c", str(tmp_path / "nats.conf")],
        env={**os.environ, **identities},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout


def test_the_dev_seeds_are_the_keys_the_dev_nats_lets_in(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["dev"]
    identities = _generated(docs, "ConfigMap", "nats-identities")["data"]
    for identity in (*SERVICES, TOOLS):
        secret = _generated(docs, "Secret", f"nats-nkey-{identity}")
        seed = base64.b64decode(secret["data"]["seed"])
        assert public_key(seed) == identities[nkey_variable(identity)], identity


@pytest.mark.parametrize("overlay", ("dev", "prod"))
def test_each_service_mounts_its_own_seed_and_no_other(
    kit: ModuleType, rendered: dict[str, list[Doc]], overlay: str
) -> None:
    assert set(service_uses()) == set(SERVICES)
    for workload in kit.duel_workloads(rendered[overlay]):
        name = workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env["NATS_NKEY_SEED_FILE"] == SEED_PATH
        secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
        nkeys = [s for s in secrets if s.startswith("nats-nkey-")]
        assert [s.rsplit("-", 1)[0] if overlay == "dev" else s for s in nkeys] == [f"nats-nkey-{name}"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "nats-nkey")
        assert mount.get("readOnly") and SEED_PATH.startswith(mount["mountPath"] + "/")


def test_the_services_reach_nats_over_tls_only(rendered: dict[str, list[Doc]]) -> None:
    for overlay, docs in rendered.items():
        config = _generated(docs, "ConfigMap", "duel-config")["data"]
        assert all(url.startswith("tls://") for url in config["NATS_URL"].split(",")), overlay
