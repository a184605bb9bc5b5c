"""``duel play`` as a person uses it: the real command in a pseudo-terminal of 80 × 24 (pexpect), its
screen read back through a terminal emulator (pyte), keys typed as a person types them, on the whole
stack against the house bot.

The first test walks one whole hand: the name prompt, the room list (profile, 1番, fee, carry range,
the room's options), the carry, the T7 proposal, the hand drawn as 13 or 14 tiles, the legal actions shown as
keys, the wall count going down, the settlement with its breakdown, leaving, the end screen, and the
guest remembered for the next run. It plays like a patient beginner: discard the drawn tile, else the
first numbered action, keep the hand at 换牌. The second drops its Play stream after a few actions
(``--drop-after-actions``) and checks that the hand goes on and ends on the screen as before, then
shrinks the terminal below 80 × 24 and sees the client ask for a larger one. The third stops the
client (Ctrl-C) in the middle of a hand and starts it again: it sits down at the same table and plays
the hand to its end.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest

from duelmahjong.client.session import DuelClient
from duelmahjong.platform.stackfile import StackState

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

HAND_SECONDS = 120.0  # one hand of a person who answers at once against the house bot: ~20 s
_QUICK = {
    "fee": 2,
    "minimum_balance": 100,
    "carry_min": 100,
    "carry_max": 1000,
    "bot_fill_seconds": 0.2,
    "decision_millis": 15000,
    "time_bank_millis": 30000,
    "negotiation_seconds": 30,
}
ROOMS = [
    {"room_id": "tui-duel", "name": "决斗麻将 · 测试", "profile": "duel", "fan_rate": 10, **_QUICK},
    {"room_id": "tui-extras", "profile": "duel", "fan_rate": 20, "guess_enabled": True, **_QUICK},
]
TILE = re.compile("[\U0001f000-\U0001f02b]")


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    settings = {"MATCHMAKING_ROOMS": json.dumps(ROOMS), "MATCHMAKING_BOT_POOL": "2"}
    with stack_with("play", settings) as state:
        yield state


class Terminal:
    """``duel play`` in a pty; ``text()`` is what a person would see on the screen now."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)
        duel = str(Path(sys.executable).parent / "duel")
        self.child = pexpect.spawn(duel, ["play", *args], env=env, dimensions=(24, 80), timeout=5)

    def pump(self, seconds: float = 0.1) -> None:
        end = time.monotonic() + seconds
        while True:
            try:
                self.stream.feed(self.child.read_nonblocking(65536, timeout=0.05))
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                return
            if time.monotonic() >= end:
                return

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, wanted: str | Callable[[str], bool], within: float = 30.0) -> str:
        check = wanted if callable(wanted) else (lambda text: wanted in text)
        end = time.monotonic() + within
        while time.monotonic() < end:
            self.pump()
            if check(self.text()):
                return self.text()
        raise AssertionError(f"the screen never showed {wanted!r}; it shows:\n{self.text()}")

    def press(self, keys: str) -> None:
        self.child.send(keys)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def _environment(stack: StackState, config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
    env.update(
        TERM="xterm-256color",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        DUEL_PLAY_CONFIG=str(config),
        WALLET_ADDRESS=stack.services["wallet"].grpc,
        MATCHMAKING_ADDRESS=stack.target("matchmaking"),
        TLS_CA_FILE=stack.ca_file,  # the addresses from the environment: the CA too
    )
    return env


def _my_hand(text: str) -> list[str]:
    """The tiles of the person's hand line (the last "hand" row: the opponent's comes first)."""
    rows = [line for line in text.splitlines() if line.startswith("  hand")]
    return TILE.findall(rows[-1]) if rows else []


def _my_melds(text: str) -> int:
    rows = [line for line in text.splitlines() if line.startswith("  melds")]
    return rows[-1].count("[") if rows else 0


def _wall(text: str) -> int | None:
    found = re.search(r"wall (\d+)", text)
    return int(found.group(1)) if found else None


def _to_the_table(term: Terminal) -> str:
    """Rooms → carry → queue → T7 → the first screen of the hand; returns that screen."""
    rooms = term.wait_for("Enter play")
    term.press("\r")
    term.wait_for("Carry (携带威望): 998")
    term.press("\r")
    queue = term.wait_for(lambda t: "propose the multiplier" in t or "y accept" in t or "wall" in t)
    if "propose the multiplier" in queue:
        term.press("2")
    elif "y accept" in queue:
        term.press("y")
    return rooms


def _play_the_hand(term: Terminal, on_screen: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Answer every decision as a patient beginner until the settlement shows; what was seen."""
    seen: dict[str, Any] = {"walls": [], "hands": set(), "keys": set(), "answered": 0}
    end = time.monotonic() + HAND_SECONDS
    last = ""
    while time.monotonic() < end:
        term.pump(0.15)
        text = term.text()
        on_screen(text)
        if "is over" in text and "balances" in text:
            seen["settlement"] = text
            return seen
        if _without_clocks(text) == last or "your move" not in text:
            continue  # nothing new to answer
        wall = _wall(text)
        if wall is not None:
            seen["walls"].append(wall)
        seen["hands"].add(len(_my_hand(text)) + 3 * _my_melds(text))  # a kong counts as 3
        keys = re.findall(r"(?:^|\s)([1-9]) \S", text.split("your move", 1)[1])
        seen["keys"].update(keys)
        if "换牌" in text and "Enter exchange" in text:
            term.press("\r")  # keep the hand
        elif "Enter discard" in text:
            term.press("\r")  # the drawn tile: the cursor starts on it
        elif keys:
            term.press(keys[0])
        else:
            continue
        seen["answered"] += 1
        last = _without_clocks(text)
        term.wait_for(lambda t, before=last: _without_clocks(t) != before, within=20)
    raise AssertionError(f"the hand did not end within {HAND_SECONDS}s; the screen:\n{term.text()}")


def test_a_person_plays_a_whole_hand(stack: StackState, tmp_path: Path) -> None:
    config = tmp_path / "guest.json"
    term = Terminal([], _environment(stack, config))
    try:
        term.wait_for("Your name at the table")
        term.press("Tester\r")
        rooms = _to_the_table(term)
        assert "Tester" in rooms and "威望 1000" in rooms and "rating duel 1500 ±" in rooms, rooms
        assert "your hands are not shared for research" in rooms, rooms  # off until the player says so
        assert "决斗麻将 · 测试" in rooms and "[tui-duel] · duel" in rooms, rooms
        assert "1番=10 威望 · fee 2 · carry 100–1000" in rooms, rooms
        assert "[tui-extras] · duel" in rooms and "猜大小" in rooms, rooms

        first = term.wait_for(lambda t: "your move" in t and len(_my_hand(t)) >= 13, within=30)
        assert len(_my_hand(first)) in (13, 14), first
        assert "×2×1" in first and "Bot" in first and "concealed" in first, first
        assert re.search(r"time █*░* +\d+\.\d s +bank +\d+\.\d s", first), first

        middle: list[str] = []
        seen = _play_the_hand(term, lambda text: middle.append(text) if "your move" in text else None)
        walls = seen["walls"]
        assert seen["hands"] <= {13, 14} and seen["hands"], seen["hands"]
        assert len(walls) >= 3 and walls == sorted(walls, reverse=True) and walls[-1] < walls[0], walls
        settlement = seen["settlement"]
        for part in ("amount", "× 2 negotiated × 1 progressive × 10 =", "transfer", "fees", "balances"):
            assert part in settlement, settlement
        assert re.search(r"rating +(you|Bot \d) \d+ → \d+ \([+-]\d+\)", settlement), settlement
        assert "c continue (next hand ×2 progressive)" in settlement and "x leave" in settlement, settlement
        _keep(tmp_path, "play-screen.txt", _busiest(middle))
        _keep(tmp_path, "settlement-screen.txt", settlement)

        term.press("x")
        closed = term.wait_for("hands played: 1")
        assert "table closed: a player left between hands" in closed, closed
        assert "hands played: 1" in closed and re.search(r"balance \d+ 威望", closed), closed
        term.press("q")
        term.child.expect(pexpect.EOF, timeout=10)
        term.child.close()
        assert term.child.exitstatus == 0
    finally:
        term.close()
    remembered = json.loads(config.read_text())["guests"][stack.services["wallet"].grpc]
    assert remembered["display_name"] == "Tester" and remembered["refresh_token"]

    again = Terminal([], _environment(stack, config))  # the same player comes back, not asked again
    try:
        rooms = again.wait_for("Enter play")
        assert remembered["player_id"] in rooms and "welcome back" in rooms, rooms
        again.press("j")  # a friend's private code: refused with a readable message, back to the rooms
        again.wait_for("Your friend's code")
        again.press("abc def\r")
        again.wait_for("Carry (携带威望)")
        again.press("\r")
        refused = again.wait_for(
            lambda t: "private tables (UNIMPLEMENTED)" in t or "matchmaking refused" in t
        )
        assert "Enter back to the rooms" in refused, refused
        again.press("\r")
        again.wait_for("Enter play")
        again.press("o")  # open a private table: its code, or the same refusal
        again.wait_for("Carry (携带威望)")
        again.press("\r")
        opened = again.wait_for(lambda t: "private tables (UNIMPLEMENTED)" in t or "private code:" in t)
        if "private code:" in opened:
            # The code ends its line on the captured screen (its padding is trailing space).
            assert re.search(r"private code:  [2-9A-HJKMNP-Z]{6}\b", opened), opened
            again.press("\x1b")  # leave it: back to the rooms
        else:
            again.press("\r")
        again.wait_for("Enter play")
        again.press("q")
        again.child.expect(pexpect.EOF, timeout=10)
    finally:
        again.close()


class _Friend:
    """A friend who opens a private table in ``room_id`` and keeps it open until ``close``: the client
    library on its own event loop, in a thread beside the terminal."""

    def __init__(self, stack: StackState, room_id: str, carry: int) -> None:
        self.codes: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._args = (stack.services["wallet"].grpc, stack.target("matchmaking"), room_id, carry)
        self._tls = stack.client_tls()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    async def _run(self) -> None:
        wallet, matchmaking, room_id, carry = self._args
        client = DuelClient(wallet=wallet, matchmaking=matchmaking, tls=self._tls)
        try:
            await client.login("Friend")

            async def follow() -> None:
                async for update in client.open_private(room_id, carry):
                    if update.HasField("private_code"):
                        self.codes.put(update.private_code.code)

            following = asyncio.ensure_future(follow())
            stopped = asyncio.ensure_future(asyncio.to_thread(self._stop.wait))
            await asyncio.wait({following, stopped}, return_when=asyncio.FIRST_COMPLETED)
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
        finally:
            await client.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_friends_code_joins_with_an_affordable_carry_and_a_refused_carry_asks_again(
    stack: StackState, tmp_path: Path
) -> None:
    """The join's carry prompt offers what the player can afford with a room's fee on top (998 of
    1,000 available where the fee is 2); a carry matchmaking refuses (1,000: 1,002 needed) asks for
    the carry again with the code kept, and the default then joins the friend's table."""
    friend = _Friend(stack, "tui-duel", 500)
    term = Terminal(["--name", "Joiner"], _environment(stack, tmp_path / "guest.json"))
    try:
        code = friend.codes.get(timeout=30)
        term.wait_for("Enter play")
        term.press("j")
        term.wait_for("Your friend's code")
        term.press(code.lower() + "\r")
        term.wait_for("Carry (携带威望): 998")  # affordable: 1,000 available, a room fee up to 2 on top
        term.press("\x7f\x7f\x7f1000\r")
        refused = term.wait_for("matchmaking refused")
        assert "needs 1002 prestige available" in refused and "Enter back to the carry" in refused, refused
        term.press("\r")
        again = term.wait_for("Carry (携带威望): 998")  # the carry asked again, the code kept
        assert f"private table {code}" in again and "carry 1000 refused" in again, again
        term.press("\r")
        joined = term.wait_for(lambda t: "matched with Friend" in t or "negotiation" in t)
        assert f"private table {code}" in joined, joined
        term.press("\x1b")
    finally:
        term.close()
        friend.close()


def test_the_client_reconnects_by_itself(stack: StackState, tmp_path: Path) -> None:
    env = _environment(stack, tmp_path / "guest.json")
    term = Terminal(["--name", "Dropper", "--ascii", "--drop-after-actions", "3"], env)
    try:
        _to_the_table(term)
        first = term.wait_for(lambda t: "your move" in t, within=30)
        assert "🀫" not in first and "##" in first, first  # --ascii: letters, backs as ##
        seen = _play_the_hand(term)
        assert seen["answered"] > 3, seen  # play went on after the drop
        assert "reconnected 1×" in term.text() or "reconnected 1×" in seen["settlement"], term.text()
        term.press("x")
        closed = term.wait_for("hands played: 1")
        assert "reconnected 1 time(s)" in closed, closed
        term.screen.resize(20, 60)  # a terminal made too small is told so
        term.child.setwinsize(20, 60)
        term.wait_for("the terminal is 60×20: make it at least 80×24")
    finally:
        term.close()


def test_a_client_stopped_mid_hand_sits_down_again(stack: StackState, tmp_path: Path) -> None:
    env = _environment(stack, tmp_path / "guest.json")
    term = Terminal(["--name", "Quitter"], env)
    try:
        _to_the_table(term)
        term.wait_for(lambda t: "your move" in t and "wall" in t, within=30)
        term.press("\x03")  # Ctrl-C in the middle of the hand: the client stops, the table holds the seat
        term.child.expect(pexpect.EOF, timeout=10)
    finally:
        term.close()
    back = Terminal([], env)
    try:
        board = back.wait_for(lambda t: "wall" in t and "concealed" in t, within=30)
        assert "your table" in board and "welcome back" in board, board
        seen = _play_the_hand(back)
        assert "is over" in seen["settlement"], seen
        back.press("x")
        back.wait_for("hands played: 1")
    finally:
        back.close()


def _without_clocks(text: str) -> str:
    """The screen without what changes by itself (the decision's clocks)."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(" time "))


def _busiest(screens: list[str]) -> str:
    """The mid-hand screen with the most tiles in the rivers (the one worth showing)."""
    return max(screens, key=lambda text: len(TILE.findall(text)), default="")


def _keep(directory: Path, name: str, text: str) -> None:
    (directory / name).write_text(text + "\n")
    target = os.environ.get("DUEL_PLAY_SCREENS")  # where to copy the screens (docs/play-screen.txt)
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / name).write_text(text + "\n")
