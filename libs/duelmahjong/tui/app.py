"""The prompt_toolkit application of ``duel play``: one full-screen window that draws the current
screen and hands it every key, on the same asyncio loop as the gRPC calls.

The window is redrawn four times a second (the clocks count down) and after every change. A screen
smaller than 80 × 24 is drawn cut and asks for a larger terminal. Ctrl-C quits from anywhere (at a
table the seat is then away: the table waits for it, then 托管 plays it, as after any drop).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.styles import Style

from duelmahjong.tui.board import Board, Line, fit
from duelmahjong.tui.seat import PersonSeat
from duelmahjong.tui.settlement import SettlementView
from duelmahjong.tui.tiles import TileStyle

MIN_WIDTH, MIN_HEIGHT = 80, 24
STYLE = Style.from_dict(
    {
        "title": "bold #ffd75f",
        "rule": "#585858",
        "opponent": "bold #87afff",
        "me": "bold #87ff87",
        "balance": "#ffd75f",
        "wall": "bold #ffffff",
        "tile": "#ffffff",
        "back": "#5f87af",
        "meld": "#afd7ff",
        "claimed": "#6c6c6c",
        "ready": "underline",
        "picked": "reverse bold",
        "marked": "bold #ff8700",
        "cursor": "bold #ffd75f",
        "dim": "#808080",
        "prompt": "bold #ffd75f",
        "keys": "#d7d7ff",
        "clock": "#87d787",
        "alert": "bold #ff5f5f",
        "note": "#ff8700",
        "typing": "bold #ffffff",
        "code": "reverse bold #ffd75f",
        "money": "bold #ffd75f",
        "log": "#a8a8a8",
    }
)
# prompt_toolkit's key names → the names screens take.
_NAMED = {
    Keys.Left: "left",
    Keys.Right: "right",
    Keys.Up: "up",
    Keys.Down: "down",
    Keys.Enter: "enter",
    Keys.Escape: "escape",
    Keys.Backspace: "backspace",
    Keys.Tab: "right",
    Keys.BackTab: "left",
}


class Drawn(Protocol):
    def lines(self, width: int) -> list[Line]: ...

    def press(self, key: str) -> None: ...


class TableScreen:
    """The board during a hand, the settlement once it is revealed; the last events below."""

    def __init__(self, seat: PersonSeat, style: TileStyle, room_name: str) -> None:
        self.seat = seat
        self.board = Board(seat, style, room_name)
        self.settlement = SettlementView(seat, style)
        self.height = MIN_HEIGHT

    def lines(self, width: int) -> list[Line]:
        seat = self.seat
        over = seat.revealed is not None and (seat.settled is not None or seat.ended or seat.between_hands())
        body = self.settlement.lines(width) if over else self.board.lines(width)
        room = self.height - len(body) - 1
        return body + self.board.log_lines(room, width)

    def press(self, key: str) -> None:
        self.seat.press(key)


class PlayUi:
    """Shows one screen at a time; ``ask`` shows one and waits for its answer."""

    def __init__(self, footer: str = "") -> None:
        self.screen: Drawn | None = None
        self.footer = footer
        bindings = KeyBindings()
        for key, name in _NAMED.items():
            bindings.add(key)(self._named(name))
        bindings.add(Keys.ControlC)(lambda event: self.quit())
        bindings.add(Keys.Any)(self._char)
        control = FormattedTextControl(self._text, focusable=True, show_cursor=False)
        self.app: Application[None] = Application(
            layout=Layout(Window(control, wrap_lines=False)),
            key_bindings=bindings,
            style=STYLE,
            full_screen=True,
            refresh_interval=0.25,
            mouse_support=False,
        )
        self.quitting: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def _named(self, name: str) -> Any:
        def handler(event: KeyPressEvent) -> None:
            self.press(name)

        return handler

    def _char(self, event: KeyPressEvent) -> None:
        data = event.data
        self.press("space" if data == " " else data)

    def press(self, key: str) -> None:
        if self.screen is not None:
            self.screen.press(key)
        self.app.invalidate()

    def quit(self) -> None:
        if not self.quitting.done():
            self.quitting.set_result(None)

    def show(self, screen: Drawn) -> None:
        self.screen = screen
        self.app.invalidate()

    def invalidate(self) -> None:
        self.app.invalidate()

    async def ask(self, screen: Any) -> Any:
        """Show ``screen`` and wait for its ``done``; Ctrl-C first raises :class:`Quit`."""
        self.show(screen)
        done, _ = await asyncio.wait({screen.done, self.quitting}, return_when=asyncio.FIRST_COMPLETED)
        if self.quitting in done:
            raise Quit
        return screen.done.result()

    def _text(self) -> StyleAndTextTuples:
        size = self.app.output.get_size()
        width, height = max(size.columns, 20), max(size.rows, 5)
        if isinstance(self.screen, TableScreen):
            self.screen.height = height - 1
        lines = self.screen.lines(width) if self.screen is not None else []
        lines = lines[: height - 1]
        lines += [[("", "")]] * (height - 1 - len(lines))
        footer = f" {self.footer} · Ctrl-C quit"
        if isinstance(self.screen, TableScreen) and self.screen.seat.reconnects:
            footer += f" · reconnected {self.screen.seat.reconnects}×"
        if size.columns < MIN_WIDTH or size.rows < MIN_HEIGHT:
            footer = f" the terminal is {size.columns}×{size.rows}: make it at least 80×24"
        lines.append([("class:dim", fit(footer, width - 1))])
        fragments: StyleAndTextTuples = []
        for index, line in enumerate(lines):
            if index:
                fragments.append(("", "\n"))
            fragments.extend(line)
        return fragments


class Quit(Exception):
    """The person asked to quit (Ctrl-C)."""
