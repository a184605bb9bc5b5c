"""``duel bench <area>|all``: run ``bench/<area>.py``'s ``main(argv)`` from the repository's ``bench/``.

``bench/`` sits at the repository root, beside ``libs/``; it is found from this package's path (an
editable install), or from ``$DUELMAHJONG_BENCH_DIR``. ``all`` runs every area whose module does not
set ``IN_ALL = False`` (long runs such as a soak opt out), in name order.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import duelmahjong

# Modules of bench/ that areas share (the harness, the rules corpus): not areas themselves.
_NOT_AREAS = {
    "__init__",
    "capacity_gc",
    "capacity_seats",
    "capacity_wire",
    "common",
    "matchmaking_fakes",
    "matchmaking_load",
    "rules_corpus",
    "stack_probes",
    "table_logs",
}


def bench_dir() -> Path:
    explicit = os.environ.get("DUELMAHJONG_BENCH_DIR")
    if explicit:
        return Path(explicit)
    # libs/duelmahjong/__init__.py -> the repository root is two levels above the package.
    return Path(duelmahjong.__file__).resolve().parents[2] / "bench"


def areas(directory: Path) -> list[str]:
    return sorted(path.stem for path in directory.glob("*.py") if path.stem not in _NOT_AREAS)


def load(name: str) -> ModuleType:
    """Import ``bench.<name>`` from :func:`bench_dir` (the repository root goes on ``sys.path``)."""
    directory = bench_dir()
    root = str(directory.parent)
    if root not in sys.path:
        sys.path.insert(0, root)  # so ``bench.<area>`` and ``bench.common`` import as a package
    return importlib.import_module(f"{directory.name}.{name}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("area", help="a benchmark area (a module of bench/), or 'all'")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="passed on to the area's main()")


def run(args: argparse.Namespace) -> int:
    directory = bench_dir()
    if not (directory / "__init__.py").is_file():
        print(f"duel bench: no bench/ package at {directory} (set DUELMAHJONG_BENCH_DIR)", file=sys.stderr)
        return 2
    known = areas(directory)
    if args.area != "all" and args.area not in known:
        print(f"duel bench: unknown area {args.area!r}; known: {', '.join(known)} or all", file=sys.stderr)
        return 2
    status = 0
    for area in known if args.area == "all" else [args.area]:
        module = load(area)
        if args.area == "all" and not getattr(module, "IN_ALL", True):
            continue
        status = max(status, int(module.main(list(args.args))))
    return status
