"""The rules library and the engine are pure: importing them changes nothing in the process.

Run in a fresh interpreter, so no module this test session imported already (gRPC, NATS, the
platform) hides an import, and with ``GRPC_ENABLE_FORK_SUPPORT`` out of its environment, so a
module that sets it would show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import importlib, json, os, pkgutil, sys
before = dict(os.environ)
imported = []
for package_name in ("duelmahjong.rules", "duelmahjong.engine"):
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(package.__path__, package_name + "."):
        importlib.import_module(module.name)
        imported.append(module.name)
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
others = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("grpc", "nats", "duelmahjong")
    and name != "duelmahjong"
    and not name.startswith(("duelmahjong.rules", "duelmahjong.engine"))
)
print(json.dumps({"imported": imported, "changed": changed, "others": others}))
"""


def test_importing_the_rules_and_the_engine_sets_nothing_and_loads_no_transport() -> None:
    env = {key: value for key, value in os.environ.items() if key != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(seen["imported"]) > 3, seen["imported"]
    assert seen["changed"] == [], f"importing them changed the environment: {seen['changed']}"
    assert seen["others"] == [], f"importing them loaded {seen['others']}"
