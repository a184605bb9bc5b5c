"""Per-suit tables: key encoding, a few entries by hand, and the disk cache (atomic, versioned)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from duelmahjong.rules import keys, tables
from duelmahjong.rules.tiles import counts_of, parse_tiles


def key(text: str) -> int:
    """The suit key of one suit's tiles, e.g. ``key("1123m")``."""
    return keys.suit_keys(counts_of(parse_tiles(text)))[0]


def test_suit_keys_read_counts_as_base_5_digits_rank_1_first() -> None:
    assert keys.suit_keys(counts_of(parse_tiles("1123m9p5s7z"))) == (
        int("211000000", 5),
        int("000000001", 5),
        int("000010000", 5),
        int("0000001", 5),
    )
    with pytest.raises(ValueError):
        keys.suit_keys([5] + [0] * 33)


def test_entries_by_hand() -> None:
    t = tables.get_tables()
    assert t.suit_win[key("123m")] == 1 and t.suit_win[key("12344m")] == 2 and t.suit_win[key("124m")] == 0
    assert t.suit_pairs[key("1111223m")] == 3  # four of a kind = two pairs (E6)
    assert t.suit_orphans[key("1199m")] == 2 + 16 and t.suit_orphans[key("5m")] == 0
    assert t.sou_green[key("23456m")] == 4  # 2 3 4 6 (of 条, when this key is the s suit)
    waits = t.suit_waits[key("1112345678999m")]
    assert waits & 511 == 511 and waits & 512  # nine-sided, completing with the pair
    assert t.suit_readings[key("111123m")] == ((-1, ((False, 0), (True, 0))),)  # 111 pung + 123 chow


def test_cache_round_trips_and_rejects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tables.pickle"
    built = tables.get_tables()
    tables._save(path, built)
    assert tables._load(path) == built
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # the temporary file was renamed
    path.write_bytes(b"not a pickle")
    assert tables._load(path) is None
    assert tables._load(tmp_path / "missing.pickle") is None


def test_cache_file_is_named_by_the_builder_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DUELMAHJONG_CACHE_DIR", str(tmp_path))
    path = tables.cache_path()
    assert path.parent == tmp_path and path.name.startswith("rules-tables-") and path.suffix == ".pickle"


def test_the_cache_is_inside_the_project_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DUELMAHJONG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a user cache setting is not followed
    project = Path(__file__).resolve().parents[3]
    assert tables.cache_dir() == project / ".local" / "cache"
    assert tables.cache_path().is_relative_to(project)


def test_a_table_bound_before_use_loads_on_first_lookup_and_then_is_the_table() -> None:
    namespace: dict[str, object] = {}
    namespace["WIN"] = tables.OnFirstUse("suit_win", namespace)
    namespace["READINGS"] = tables.OnFirstUse("suit_readings", namespace)
    assert namespace["WIN"][key("123m")] == 1  # type: ignore[index]
    built = tables.get_tables()
    assert namespace["WIN"] is built.suit_win and namespace["READINGS"] is built.suit_readings


def test_loading_all_binds_every_table_of_a_namespace_before_any_lookup() -> None:
    namespace: dict[str, object] = {"OTHER": 7}
    namespace["WIN"] = tables.OnFirstUse("suit_win", namespace)
    namespace["MERGE"] = tables.OnFirstUse("merge", namespace)
    tables.OnFirstUse.load_all(namespace)
    built = tables.get_tables()
    assert namespace == {"OTHER": 7, "WIN": built.suit_win, "MERGE": built.merge}


_LOAD_AT_START = """
from duelmahjong.rules import analysis, tables
unbound = lambda: sorted(n for n, v in vars(analysis).items() if isinstance(v, tables.OnFirstUse))
print(bool(unbound()), tables.get_tables.cache_info().currsize)
analysis.load_tables()
print(unbound(), tables.get_tables.cache_info().currsize)
"""


def test_a_service_loads_the_analysis_tables_at_start_in_one_load(tmp_path: Path) -> None:
    tables._save(tmp_path / tables.cache_path().name, tables.get_tables())
    env = {**os.environ, "DUELMAHJONG_CACHE_DIR": str(tmp_path)}
    child = subprocess.run(
        [sys.executable, "-c", _LOAD_AT_START], env=env, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines() == ["True 0", "[] 1"]


_IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import duelmahjong.rules
from duelmahjong.rules import tables
for module in pkgutil.walk_packages(duelmahjong.rules.__path__, "duelmahjong.rules."):
    importlib.import_module(module.name)
print("loaded on import:", tables.get_tables.cache_info().currsize)
from duelmahjong.rules.analysis import is_winning
from duelmahjong.rules.tiles import counts_of, parse_tiles
print("first use:", is_winning(counts_of(parse_tiles("123m456p789s11222z"))))
"""


def test_importing_the_rules_library_has_no_side_effect(tmp_path: Path) -> None:
    home, user_cache, cache = tmp_path / "home", tmp_path / "xdg", tmp_path / "cache"
    for directory in (home, user_cache, cache):
        directory.mkdir()
    # The tables the child will find, so its first use reads them instead of building them (seconds).
    tables._save(cache / tables.cache_path().name, tables.get_tables())
    seeded = sorted(cache.iterdir())
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(user_cache),
        "DUELMAHJONG_CACHE_DIR": str(cache),
    }
    child = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERYTHING], env=env, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines() == ["loaded on import: 0", "first use: True"]
    assert list(home.iterdir()) == [] and list(user_cache.iterdir()) == []
    assert sorted(cache.iterdir()) == seeded  # first use read the tables and wrote nothing new
