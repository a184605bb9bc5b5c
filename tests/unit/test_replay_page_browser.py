"""The replay page in a real headless Chromium (tests/unit/replay_page.py): stepped through with its
buttons and arrow keys, the tiles it shows at each step are the replay's state at that step, the
browser's own recomputation of the wall commitment says verified, and screenshots are real pictures."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from duelmahjong.cli import main
from duelmahjong.cli.replay import write_replay
from duelmahjong.replay.html import render_html
from duelmahjong.replay.verify import verify_replay
from duelmahjong.v1 import archive_pb2, tiles_pb2
from tests.unit.replay_page import (
    as_engine_sees,
    browser_page,
    chromium,
    engine_tables,
    expected_table,
    go_to_step,
    shown_at_every_step,
    shown_table,
)
from tests.unit.replay_samples import every_hand, hand_made_replay, won_hand_with_melds

pytestmark = pytest.mark.timeout(120)


def _unfiltered(kind: int, line: bytes, above: bytes, channels: int) -> bytes:
    """One PNG row with its filter undone (PNG spec, filter method 0: None, Sub, Up, Average, Paeth);
    every row must be undone, since the next may be filtered against it."""
    if kind == 0:
        return line
    if kind == 2:
        return bytes((x + b) & 0xFF for x, b in zip(line, above, strict=True))
    out = bytearray(line)
    for i in range(len(out)):
        a = out[i - channels] if i >= channels else 0
        if kind == 1:
            out[i] = (out[i] + a) & 0xFF
        elif kind == 3:
            out[i] = (out[i] + (a + above[i]) // 2) & 0xFF
        else:
            b, c = above[i], above[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return bytes(out)


def _png_size_and_colours(png: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct colours of an 8-bit RGB(A) PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6), "Chromium writes 8-bit RGB or RGBA"
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    colours: set[bytes] = set()
    previous = bytes(stride)
    every = max(1, height // 60)
    for row in range(height):
        start = row * (stride + 1)
        line = _unfiltered(raw[start], raw[start + 1 : start + 1 + stride], previous, channels)
        if row % every == 0:
            colours.update(line[i : i + 3] for i in range(0, stride, channels * 7))
        previous = line
    return width, height, len(colours)


def _check_every_step(page, replay: archive_pb2.Replay) -> None:
    """Steps forward with the next button through every step, comparing every shown tile."""
    assert shown_table(page) == expected_table(replay.initial)
    for index, step in enumerate(replay.steps, start=1):
        page.click("#next")
        assert page.get_attribute("#step-counter", "data-step") == str(index)
        assert shown_table(page) == expected_table(step.state), f"step {index}"
    assert page.is_disabled("#next") and page.is_disabled("#end")


def test_the_hand_made_replay_is_shown_step_by_step(tmp_path: Path) -> None:
    replay = hand_made_replay()
    page_file = tmp_path / "replay.html"
    page_file.write_text(render_html(replay, None), encoding="utf-8")
    with browser_page(page_file) as page:
        assert page.get_attribute("#fairness-browser", "data-status") == "verified"
        assert page.get_attribute("#fairness-server", "data-status") == "absent"
        _check_every_step(page, replay)
        # Back with the arrow key and the start button; the end button jumps to the last step.
        page.keyboard.press("ArrowLeft")
        assert shown_table(page) == expected_table(replay.steps[-2].state)
        page.click("#start")
        assert shown_table(page) == expected_table(replay.initial) and page.is_disabled("#prev")
        go_to_step(page, 2)
        assert shown_table(page) == expected_table(replay.steps[1].state)
        page.click("#end")
        assert page.is_visible("#result") and "Ana wins" in page.inner_text("#result-title")
        assert page.get_attribute("#winning-hand .win-tile", "data-tile") == "5z"
        assert page.locator("#patterns tr[data-pattern]").count() == 2


def test_a_tampered_commitment_is_shown_as_a_mismatch(tmp_path: Path) -> None:
    replay = hand_made_replay()
    replay.fairness.salt = bytes(16)
    page_file = tmp_path / "replay.html"
    page_file.write_text(render_html(replay, None), encoding="utf-8")
    with browser_page(page_file) as page:
        assert page.get_attribute("#fairness-browser", "data-status") == "mismatch"


def test_a_changed_draw_fails_the_verification_the_page_shows(tmp_path: Path) -> None:
    replay = archive_pb2.Replay()
    replay.CopyFrom(won_hand_with_melds("duel", 1).replay)
    step = next(s for s in replay.steps if s.event.first_seat.tile_drawn.tile)
    drawn = step.event.first_seat.tile_drawn
    drawn.tile = "1z" if drawn.tile != "1z" else "2z"
    verification = verify_replay(replay)
    assert not verification.ok and verification.step == step.index
    page_file = tmp_path / "tampered.html"
    page_file.write_text(render_html(replay, verification), encoding="utf-8")
    with browser_page(page_file) as page:
        # The commitment still holds (seed and salt are untouched); the re-derived tiles do not.
        assert page.get_attribute("#fairness-browser", "data-status") == "verified"
        assert page.get_attribute("#fairness-server", "data-status") == "failed"
        assert verification.problem in page.inner_text("#fairness-server")
        page.click("#fairness-server .go-step")
        assert page.get_attribute("#step-counter", "data-step") == str(step.index)


@pytest.mark.parametrize(("profile", "seed"), [("duel", 1), ("erren", 1)])
def test_a_real_won_hand_is_shown_as_the_engine_played_it(
    profile: str, seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hand = won_hand_with_melds(profile, seed)
    replay = hand.replay
    engine = engine_tables(hand.records)
    verification = verify_replay(replay)
    assert verification.ok, verification.problem
    # The page as `duel replay --file F --html FILE` writes it.
    saved, page_file = tmp_path / f"{profile}.json", tmp_path / f"{profile}.html"
    write_replay(replay, saved)
    assert main(["replay", "--file", str(saved), "--html", str(page_file)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"{page_file}: hand {replay.hand_id}, {len(replay.steps)} steps, verified"
    )
    with browser_page(page_file) as page:
        assert page.get_attribute("#fairness-browser", "data-status") == "verified"
        assert page.get_attribute("#fairness-server", "data-status") == "verified"
        checks = page.locator("#fairness-server .check-chip.ok")
        assert checks.count() == len(verification.checks)
        assert shown_table(page) == expected_table(replay.initial)
        compared = 0
        for index, step in enumerate(replay.steps, start=1):
            # Both controls: the next button (a real click) and the right arrow key.
            if index % 4 == 1:
                page.click("#next")
            else:
                page.keyboard.press("ArrowRight")
            assert page.get_attribute("#step-counter", "data-step") == str(index)
            shown = shown_table(page)
            assert shown == expected_table(step.state), f"step {index}: the page is not the replay's state"
            if step.HasField("event") and step.event.sequence in engine:
                # The page against the log folded by the engine itself, not through build_replay.
                assert as_engine_sees(shown) == engine[step.event.sequence], f"step {index}"
                compared += 1
        assert compared > len(replay.steps) // 2, "most steps are events both seats were shown"
        assert any(seat["melds"] for seat in shown.values()), "the hand has a meld"
        assert page.is_visible("#result") and "wins" in page.inner_text("#result-title")
        won = next(s.event.first_seat.won for s in replay.steps if s.event.first_seat.HasField("won"))
        assert page.get_attribute("#winning-hand .win-tile", "data-tile") == won.win_tile
        shown_patterns = page.locator("#patterns tr[data-pattern]").count()
        assert shown_patterns == len(replay.result.evaluation.patterns) > 0
        assert page.get_attribute("#settlement .formula", "data-fan-amount") == str(
            replay.result.settlement.fan_amount
        )
        end_png = page.screenshot(full_page=True)

        # Back to the middle with the keys: the same tiles as on the way forward.
        middle = len(replay.steps) // 2
        go_to_step(page, middle)
        assert shown_table(page) == expected_table(replay.steps[middle - 1].state)
        page.keyboard.press("End")
        page.keyboard.press("ArrowLeft")
        assert page.get_attribute("#step-counter", "data-step") == str(len(replay.steps) - 1)
        go_to_step(page, middle)
        middle_png = page.screenshot(full_page=True)
    for name, png in (("middle", middle_png), ("end", end_png)):
        (tmp_path / f"{profile}-{name}.png").write_bytes(png)
        width, height, colours = _png_size_and_colours(png)
        assert width >= 1000 and height >= 700, f"{name}: {width}x{height}"
        assert colours >= 40, f"{name}: a picture of a table has many colours, not {colours}"


OUTCOME_HEADLINES = {
    archive_pb2.ARCHIVED_OUTCOME_WIN: "wins",
    archive_pb2.ARCHIVED_OUTCOME_DRAWN: "Drawn",
    archive_pb2.ARCHIVED_OUTCOME_ESCAPE: "escaped",
    archive_pb2.ARCHIVED_OUTCOME_VOID: "Void",
}


def test_every_hand_of_real_matches_is_shown_to_its_end(tmp_path: Path) -> None:
    """Won, drawn and escaped hands of both profiles, with 换牌, triplet offers and 搓牌, items, chi,
    pong and kongs (a concealed one too): the tiles the page draws at every step are the replay's."""
    hands = [*every_hand("duel", 9, offers=0.3), every_hand("duel", 2)[0], every_hand("erren", 2)[2]]
    assert {replay.result.outcome for replay in hands} >= {
        archive_pb2.ARCHIVED_OUTCOME_WIN,
        archive_pb2.ARCHIVED_OUTCOME_DRAWN,
        archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
    }
    melds = {m.kind for r in hands for s in r.steps for seat in s.state.seats for m in seat.melds}
    assert tiles_pb2.MELD_KIND_CONCEALED_KONG in melds and tiles_pb2.MELD_KIND_CHI in melds
    with chromium() as browser:
        for replay in hands:
            page_file = tmp_path / f"{replay.hand_id}.html"
            page_file.write_text(render_html(replay, verify_replay(replay)), encoding="utf-8")
            page = browser.open(page_file)
            assert page.get_attribute("#fairness-browser", "data-status") == "verified"
            assert page.get_attribute("#fairness-server", "data-status") == "verified", replay.hand_id
            states = [replay.initial, *(step.state for step in replay.steps)]
            shown = shown_at_every_step(page)
            for index, (state, seen) in enumerate(zip(states, shown, strict=True)):
                assert seen == expected_table(state), f"{replay.hand_id} step {index}"
            last = len(replay.steps)
            page.keyboard.press("Home")
            page.keyboard.press("End")
            assert page.get_attribute("#step-counter", "data-step") == str(last)
            told = page.locator("#steps li").all_text_contents()
            assert len(told) == last + 1 and all(line.strip() for line in told), "every step is told"
            assert OUTCOME_HEADLINES[replay.result.outcome] in page.inner_text("#result-title")
            page.close()
