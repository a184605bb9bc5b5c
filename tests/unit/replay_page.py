"""The replay page in a real browser: Chromium from the Debian packages (/usr/bin/chromium), driven by
Playwright for Python with ``executable_path`` (Playwright never downloads a browser here). Tests read
what the page shows from the DOM's data attributes and compare it with a ``ReplayState``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.rules.tiles import format_tiles, parse_tiles
from duelmahjong.v1 import archive_pb2, rules_pb2, tiles_pb2

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1200, "height": 900}
# Bounds every browser step: a page that hangs fails the test instead of the suite's timeout.
STEP_TIMEOUT_MS = 10_000

Shown = dict[str, dict[str, Any]]


def chromium_or_skip() -> str:
    """The browser's path, or a skip that says why the page's browser test cannot run here."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright for Python is not installed (pip install -e '.[dev]')")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM}: deploy/install-tools.sh installs the Debian package")
    return CHROMIUM


class Browser:
    """A fresh headless Chromium with its own profile; :meth:`open` opens pages in it."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.errors: list[str] = []

    def open(self, html_file: Path) -> Any:
        """The page opened from ``html_file`` (file://), once its script finished (the fairness check
        included). Script errors are collected in ``errors``."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.errors.append(f"{html_file.name}: {error}"))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.goto(html_file.resolve().as_uri())
        page.wait_for_selector("body[data-ready=true]", state="attached")
        return page


@contextmanager
def chromium() -> Iterator[Browser]:
    """A browser for the test; every step it takes is bounded, and any script error fails the test."""
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    with tempfile.TemporaryDirectory(prefix="replay-page-profile-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=executable, args=FLAGS, headless=True, viewport=VIEWPORT
        )
        browser = Browser(context)
        try:
            context.set_default_timeout(STEP_TIMEOUT_MS)
            yield browser
        finally:
            context.close()
    assert not browser.errors, f"the page reported errors: {browser.errors}"


@contextmanager
def browser_page(html_file: Path) -> Iterator[Any]:
    """One page in a browser of its own (:func:`chromium`)."""
    with chromium() as browser:
        yield browser.open(html_file)


_READ_TABLE = """() => {
  const zone = (seat, name) => document.querySelector(`.seat[data-seat="${seat}"] [data-zone="${name}"]`);
  const tiles = (root) => Array.from(root.querySelectorAll(".tile"), (t) => t.dataset.tile);
  const out = {};
  for (const seat of ["SEAT_FIRST", "SEAT_SECOND"]) {
    out[seat] = {
      concealed: tiles(zone(seat, "concealed")),
      drawn: tiles(zone(seat, "drawn")),
      flowers: tiles(zone(seat, "flowers")),
      melds: Array.from(zone(seat, "melds").querySelectorAll(".meld"),
        (m) => [m.dataset.meldKind, tiles(m).join(" ")]),
      discards: Array.from(zone(seat, "discards").querySelectorAll(".tile"),
        (t) => [t.dataset.tile, t.dataset.claimed === "true", t.dataset.declaredReady === "true"]),
    };
  }
  return out;
}"""


def _tupled(shown: Shown) -> Shown:
    for seat in shown.values():
        seat["melds"] = [tuple(m) for m in seat["melds"]]
        seat["discards"] = [tuple(d) for d in seat["discards"]]
    return shown


def shown_table(page: Any) -> Shown:
    """What the page shows of both seats: each tile as the notation in its data-tile attribute."""
    return _tupled(page.evaluate(_READ_TABLE))


def shown_at_every_step(page: Any) -> list[Shown]:
    """What the page shows at step 0, 1, … to the end, each step drawn by the page's own ``show`` in
    one call (the controls are exercised elsewhere; this reads every state quickly)."""
    read_all = f"() => {{ const read = {_READ_TABLE}; const out = [];"
    read_all += " for (let i = 0; i <= STEPS.length; i++) { show(i); out.push(read()); } return out; }"
    return [_tupled(shown) for shown in page.evaluate(read_all)]


def _singles(notation: str) -> list[str]:
    return [format_tiles([kind]) for kind in parse_tiles(notation)]


def expected_table(state: archive_pb2.ReplayState) -> Shown:
    """A ``ReplayState`` in the form of :func:`shown_table`."""
    expected: Shown = {}
    for seat in state.seats:
        expected[rules_pb2.Seat.Name(seat.seat)] = {
            "concealed": _singles(seat.concealed),
            "drawn": _singles(seat.drawn_tile),
            "flowers": _singles(seat.flowers),
            "melds": [(tiles_pb2.MeldKind.Name(m.kind), " ".join(_singles(m.tiles))) for m in seat.melds],
            "discards": [(d.tile, d.claimed, d.declared_ready) for d in seat.discards],
        }
    return expected


def go_to_step(page: Any, index: int) -> None:
    """Moves with the keys (Home, then the right arrow) to step ``index`` and checks the counter."""
    page.keyboard.press("Home")
    for _ in range(index):
        page.keyboard.press("ArrowRight")
    assert page.get_attribute("#step-counter", "data-step") == str(index)


# The engine's meld kinds as the page names them, written out here rather than taken from the
# library's codec, so the comparison does not go through the code that built the replay.
_MELDS = {
    "chi": ("MELD_KIND_CHI", (0, 1, 2)),
    "pong": ("MELD_KIND_PONG", (0, 0, 0)),
    "kong": ("MELD_KIND_EXPOSED_KONG", (0, 0, 0, 0)),
    "exposed_kong": ("MELD_KIND_EXPOSED_KONG", (0, 0, 0, 0)),
    "concealed_kong": ("MELD_KIND_CONCEALED_KONG", (0, 0, 0, 0)),
    "added_kong": ("MELD_KIND_ADDED_KONG", (0, 0, 0, 0)),
}
_SEAT_NAMES = ("SEAT_FIRST", "SEAT_SECOND")


def _engine_seats(state: Any) -> Shown:
    """Both seats of the engine's table state: every tile in hand (concealed and drawn together, as
    the engine keeps them), melds, discards and flowers."""
    from duelmahjong.engine.state import DISCARD_CLAIMED, DISCARD_READY

    seats: Shown = {}
    for seat, name in enumerate(_SEAT_NAMES):
        hand = [kind for kind, copies in enumerate(state.hands[seat]) for _ in range(copies)]
        melds = []
        for kind, tile in state.melds[seat]:
            meld_name, offsets = _MELDS[kind]
            melds.append((meld_name, " ".join(format_tiles([tile + o]) for o in offsets)))
        seats[name] = {
            "in_hand": sorted(format_tiles([k]) for k in hand),
            "melds": melds,
            "discards": [
                (format_tiles([tile]), bool(flags & DISCARD_CLAIMED), bool(flags & DISCARD_READY))
                for tile, flags in state.river_marks[seat]
            ],
            "flowers": [format_tiles([k]) for k in sorted(state.flowers[seat])],
        }
    return seats


def engine_tables(records: list[Any]) -> dict[int, Shown]:
    """An independent replay of a table's log: every engine event folded into the engine's own table
    state, and both seats as they stood after each event both seats were shown (by its sequence)."""
    from duelmahjong.engine.events import Event
    from duelmahjong.engine.state import TableState

    state = TableState()
    after: dict[int, Shown] = {}
    for record in records:
        if not record.HasField("engine_event"):
            continue
        state.fold(Event.from_json(json.loads(record.engine_event.canonical_json)))
        if record.engine_event.seat_sequence:
            after[record.engine_event.seat_sequence] = _engine_seats(state)
    return after


def as_engine_sees(shown: Shown) -> Shown:
    """What the page shows in the engine's terms: concealed and drawn tiles as one sorted hand."""
    return {
        seat: {
            "in_hand": sorted(s["concealed"] + s["drawn"]),
            "melds": s["melds"],
            "discards": s["discards"],
            "flowers": sorted(s["flowers"]),
        }
        for seat, s in shown.items()
    }
