"""Per-suit tables: key encoding, a few entries by hand, and the disk cache (atomic, versioned)."""

from __future__ import annotations

from pathlib import Path

import pytest

from duelmahjong.rules import tables
from duelmahjong.rules.tiles import counts_of, parse_tiles


def key(text: str) -> int:
    """The suit key of one suit's tiles, e.g. ``key("1123m")``."""
    return tables.suit_keys(counts_of(parse_tiles(text)))[0]


def test_suit_keys_read_counts_as_base_5_digits_rank_1_first() -> None:
    assert tables.suit_keys(counts_of(parse_tiles("1123m9p5s7z"))) == (
        int("211000000", 5),
        int("000000001", 5),
        int("000010000", 5),
        int("0000001", 5),
    )
    with pytest.raises(ValueError):
        tables.suit_keys([5] + [0] * 33)


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
