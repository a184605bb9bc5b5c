"""deploy/k8s/nats: the NATS server's authorization is what the code derives, a real nats-server
accepts it, and the dev NATS reads it with a public key for each identity it names. (Each service's
seed and TLS to NATS: tests/deploy/test_edge.py.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.nats_permissions import (
    HARNESS,
    SERVICES,
    TOOLS,
    deployment_authorization,
    nkey_variable,
    public_key,
    seeds_in,
)

Doc = dict[str, Any]
AUTHORIZATION = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "nats" / "authorization.conf"


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
    assert '">"' not in text  # no identity may publish or subscribe to everything


def test_nats_server_accepts_it_with_a_public_key_per_identity(tmp_path: Path) -> None:
    seeds = seeds_in(tmp_path / "nkeys", (*SERVICES, TOOLS))
    keys = {nkey_variable(name): public_key(seed) for name, seed in seeds.items()}
    (tmp_path / "authorization.conf").write_text(AUTHORIZATION.read_text())
    (tmp_path / "nats.conf").write_text("port: -1\ninclude ./authorization.conf\n")

    def check(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EmbeddedNats.binary(), "-t", "-c", str(tmp_path / "nats.conf")],
            env={**os.environ, **environment},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    accepted = check(keys)
    assert accepted.returncode == 0, accepted.stderr + accepted.stdout
    missing = check({name: key for name, key in keys.items() if name != nkey_variable("table")})
    assert missing.returncode != 0 and nkey_variable("table") in missing.stderr + missing.stdout


def test_the_dev_nats_reads_the_authorization_with_a_key_for_each_identity(
    rendered: dict[str, list[Doc]],
) -> None:
    docs = rendered["dev"]
    identities = _generated(docs, "ConfigMap", "nats-identities")["data"]
    assert set(identities) == {nkey_variable(name) for name in (*SERVICES, TOOLS)}
    authorization = _generated(docs, "ConfigMap", "nats-authorization")["data"]
    assert authorization == {"authorization.conf": AUTHORIZATION.read_text()}
    nats = next(d for d in docs if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "nats")
    pod = nats["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    identities_map = _generated(docs, "ConfigMap", "nats-identities")["metadata"]["name"]
    assert {"configMapRef": {"name": identities_map}} in container["envFrom"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    (auth_mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/nats/auth"]
    authorization_map = _generated(docs, "ConfigMap", "nats-authorization")["metadata"]["name"]
    assert volumes[auth_mount["name"]]["configMap"]["name"] == authorization_map
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "nats-config")
    assert "include ../auth/authorization.conf" in config["data"]["nats.conf"]
    assert container["args"] == ["--config", "/etc/nats/config/nats.conf"]
