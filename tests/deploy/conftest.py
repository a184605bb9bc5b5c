"""Fixtures of the offline deploy checks: the helpers in kit.py (tools, manifests, image) and
monitoring.py (alerts, dashboards, PromQL), and the rendered overlays.

Test modules import nothing from each other under --import-mode=importlib, so the helpers come
to them as fixtures.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _load(file: str) -> ModuleType:
    name = f"duel_deploy_{Path(file).stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file} next to {__file__}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def kit() -> ModuleType:
    return _load("kit.py")


@pytest.fixture(scope="session")
def monitoring() -> ModuleType:
    return _load("monitoring.py")


@pytest.fixture(scope="session")
def rendered(kit: ModuleType) -> dict[str, list[dict[str, Any]]]:
    """overlay name -> the manifests kustomize renders for it (rendered once per session)."""
    return kit.render_overlays()
