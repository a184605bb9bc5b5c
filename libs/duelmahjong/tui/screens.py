"""The small screens of ``duel play`` before and after a table: text prompts, the room list, the
queue with the T7 negotiation, and the end of a table. Each draws itself as lines of fragments and
takes keys; the ones that wait for the person resolve ``done`` with the answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from duelmahjong.tui.board import Line, fit, rule
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2

PROFILE_NAMES = {rules_pb2.PROFILE_DUEL: "duel", rules_pb2.PROFILE_ERREN: "erren"}
MULTIPLIER_KEYS = {"1": 1, "2": 2, "5": 5, "0": 10}
# T7 on the person's key: (pairing id, multiplier to propose, accept); multiplier 0 = an answer.
Negotiate = Callable[[str, int, bool], None]


class Screen:
    """A screen waiting for one answer (``done``); ``press`` takes prompt_toolkit key names."""

    title = ""

    def __init__(self) -> None:
        self.done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.note = ""

    def lines(self, width: int) -> list[Line]:
        raise NotImplementedError

    def press(self, key: str) -> None:
        raise NotImplementedError

    def finish(self, answer: Any) -> None:
        if not self.done.done():
            self.done.set_result(answer)

    def frame(self, body: list[Line], width: int, keys: str) -> list[Line]:
        out: list[Line] = [[("class:title", f" Duel Mahjong · {self.title}")], rule(width), *body]
        out += [[("", "")], [("class:keys", " " + fit(keys, width - 2))]]
        if self.note:
            out.append([("class:note", " " + fit(self.note, width - 2))])
        return [[(style, fit(text, width)) for style, text in line] for line in out]


class TextPrompt(Screen):
    """One line of text: Enter answers it, Esc answers None."""

    def __init__(
        self, title: str, question: str, default: str = "", hint: str = "", allowed: str = ""
    ) -> None:
        super().__init__()
        self.title, self.question, self.text, self.hint, self.allowed = (
            title,
            question,
            default,
            hint,
            allowed,
        )

    def lines(self, width: int) -> list[Line]:
        body: list[Line] = [
            [("", "")],
            [("class:prompt", f" {self.question} "), ("class:typing", self.text + "_")],
        ]
        if self.hint:
            body += [[("", "")], [("class:dim", f" {self.hint}")]]
        return self.frame(body, width, "Enter confirm · Backspace erase · Esc back")

    def press(self, key: str) -> None:
        if key == "enter" and self.text.strip():
            self.finish(self.text.strip())
        elif key == "escape":
            self.finish(None)
        elif key == "backspace":
            self.text = self.text[:-1]
        elif len(key) == 1 and key.isprintable() and (not self.allowed or key in self.allowed):
            self.text += key


def room_lines(room: mm.Room) -> tuple[str, str]:
    r, t = room.rules, room.times
    profile = PROFILE_NAMES.get(r.profile, "?")
    first = f"{room.name or room.room_id}  [{room.room_id}] · {profile}"
    extras = [f"1番={r.fan_rate} 威望", f"fee {r.fee}", f"carry {r.carry_min}–{r.carry_max}"]
    if r.claim_window_ms:
        extras.append(f"claim window {r.claim_window_ms / 1000:g} s")
    extras.append(f"bot after {t.bot_fill_millis / 1000:g} s" if t.bot_fill_millis else "no bot fill")
    if r.items_enabled:
        extras.append("items")
    if r.guess_enabled:
        extras.append("猜大小")
    if r.triplet_offer_probability or r.pick_offer_probability:
        extras.append("offers")
    if room.waiting:
        extras.append(f"{room.waiting} waiting")
    return first, " · ".join(extras)


class RoomsScreen(Screen):
    """Answers ("queue" | "open", room), ("join", None) or ("quit", None)."""

    title = "rooms"

    def __init__(
        self, rooms: list[mm.Room], player: str, balance: str, about: str = "", sharing: str = ""
    ) -> None:
        super().__init__()
        self.rooms, self.player, self.balance, self.about, self.selected = rooms, player, balance, about, 0
        self.sharing = sharing  # whether the player's hands are shared for research, in words

    def lines(self, width: int) -> list[Line]:
        body: list[Line] = [
            [("class:me", f" {self.player}"), ("class:balance", f" · {self.balance}")],
            [("class:dim", f" {self.about}")],
        ]
        if self.sharing:
            body.append([("class:dim", f" {self.sharing}")])
        body.append([("", "")])
        for index, room in enumerate(self.rooms):
            first, second = room_lines(room)
            picked = index == self.selected
            body.append([("class:picked" if picked else "class:me", f" {'▶' if picked else ' '} {first}")])
            body.append([("class:dim", f"     {second}")])
        if not self.rooms:
            body.append([("class:dim", " matchmaking lists no rooms")])
        keys = "↑/↓ choose · Enter play · o open a private table · j join with a code · q quit"
        return self.frame(body, width, keys)

    def press(self, key: str) -> None:
        if key in ("up", "down") and self.rooms:
            self.selected = (self.selected + (1 if key == "down" else -1)) % len(self.rooms)
        elif key == "enter" and self.rooms:
            self.finish(("queue", self.rooms[self.selected]))
        elif key == "o" and self.rooms:
            self.finish(("open", self.rooms[self.selected]))
        elif key == "j":
            self.finish(("join", None))
        elif key == "q":
            self.finish(("quit", None))


class QueueScreen(Screen):
    """The way from the queue to a table: updates as they come, the T7 negotiation's keys. Answers
    nothing itself (the queue stream ends it); ``cancel`` is set when the person gives up (Esc).
    While the client follows a broken queue stream again (``reconnecting``) it says so; the updates
    that come after show the entry's state again, so what was shown already is not shown twice and a
    T7 step the person answered does not ask again."""

    title = "finding a table"

    def __init__(self, room: str, carry: int, bot_fill_millis: int, negotiate: Negotiate) -> None:
        super().__init__()
        self.room, self.carry, self.negotiate = room, carry, negotiate
        self.started = time.monotonic()
        self.bot_fill = bot_fill_millis / 1000
        self.status: list[str] = []
        self.code = ""
        self.negotiation: mm.Negotiation | None = None
        self.opponent = ""
        self.cancelled = asyncio.get_running_loop().create_future()
        # The T7 steps (pairing, state) the person answered: shown again after a break, not asked again.
        self.answered: set[tuple[str, int]] = set()
        self.reconnecting = ""  # why the queue stream broke, while the client follows it again
        self.followed_again = False

    def broke(self, why: str) -> None:
        """The queue stream broke; the client follows the entry again (until the next update)."""
        self.reconnecting, self.followed_again = why, True

    def refused(self, pairing_id: str, multiplier: int, note: str) -> None:
        """An answer the person gave did not go through: the step may be asked again."""
        state = mm.NEGOTIATION_STATE_AWAITING_PROPOSAL if multiplier else mm.NEGOTIATION_STATE_PROPOSED
        self.answered.discard((pairing_id, state))
        self.note = note

    def update(self, update: mm.QueueUpdate) -> None:
        self.reconnecting = ""
        line = self._line(update)
        if line and not (self.followed_again and line in self.status):  # state already shown
            self.status = [*self.status, line][-8:]

    def _line(self, update: mm.QueueUpdate) -> str:
        kind = update.WhichOneof("kind")
        if kind == "queued":
            return "in the queue"
        if kind == "position":
            return f"position {update.position.position} of {update.position.waiting}"
        if kind == "private_code":
            self.code = update.private_code.code
            return "private table open: give your friend the code"
        if kind == "matched":
            m = update.matched
            bot = " (house bot)" if m.opponent_is_bot else ""
            self.opponent = m.opponent_display_name or m.opponent_player_id
            seat = "first" if m.seat == rules_pb2.SEAT_FIRST else "second"
            return f"matched with {self.opponent}{bot}; you sit {seat}"
        if kind == "negotiation":
            n = update.negotiation
            if n.your_turn and (n.pairing_id, n.state) in self.answered:
                return ""  # answered already: the stream that broke had not shown the answer yet
            self.negotiation = n
            return self._negotiation_text(n)
        if kind == "table_ready":
            return f"table ready at {update.table_ready.address}"
        if kind == "expired":
            return f"the queue ended: {update.expired.reason}"
        return ""

    @staticmethod
    def _negotiation_text(n: mm.Negotiation) -> str:
        if n.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL:
            return (
                "negotiation: you propose the multiplier"
                if n.your_turn
                else "negotiation: waiting for a proposal"
            )
        if n.state == mm.NEGOTIATION_STATE_PROPOSED:
            ask = "accept?" if n.your_turn else "waiting for the answer"
            return f"negotiation: {n.multiplier}× proposed, {ask}"
        if n.state == mm.NEGOTIATION_STATE_ACCEPTED:
            return f"negotiation: {n.multiplier}× accepted"
        return "negotiation: declined"

    def lines(self, width: int) -> list[Line]:
        waited = time.monotonic() - self.started
        body: list[Line] = [[("class:me", f" room {self.room} · carry {self.carry} · {waited:.0f} s")]]
        if self.code:
            body += [[("", "")], [("class:prompt", " private code: "), ("class:code", f" {self.code} ")]]
        elif self.bot_fill and not self.opponent:
            left = max(0.0, self.bot_fill - waited)
            body.append([("class:dim", f" a house bot sits down if nobody comes within {left:.0f} s")])
        body.append([("", "")])
        body += [[("", f" {line}")] for line in self.status]
        if self.reconnecting:
            body.append([("class:alert", f" reconnecting to matchmaking… ({self.reconnecting})")])
        keys = "Esc leave the queue"
        n = self.negotiation
        if n is not None and n.your_turn and n.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL:
            keys = "propose the multiplier (T7): 1 ×1 · 2 ×2 · 5 ×5 · 0 ×10 · Esc leave"
        elif n is not None and n.your_turn and n.state == mm.NEGOTIATION_STATE_PROPOSED:
            keys = f"y accept {n.multiplier}× · n decline (the pairing ends) · Esc leave"
        return self.frame(body, width, keys)

    def press(self, key: str) -> None:
        n = self.negotiation
        if key == "escape":
            if not self.cancelled.done():
                self.cancelled.set_result(None)
        elif n is not None and n.your_turn and n.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL:
            if key in MULTIPLIER_KEYS:
                self._answer(n)
                self.negotiate(n.pairing_id, MULTIPLIER_KEYS[key], True)
        elif n is not None and n.your_turn and n.state == mm.NEGOTIATION_STATE_PROPOSED:
            if key in ("y", "n"):
                self._answer(n)
                self.negotiate(n.pairing_id, 0, key == "y")

    def _answer(self, n: mm.Negotiation) -> None:
        self.negotiation = None
        self.answered.add((n.pairing_id, n.state))


class MessageScreen(Screen):
    """A few lines and the keys to go on: Enter answers "back" (to ``back_to``), q answers "quit"."""

    def __init__(self, title: str, body: list[str], back_to: str = "the rooms") -> None:
        super().__init__()
        self.title, self.body, self.back_to = title, body, back_to

    def lines(self, width: int) -> list[Line]:
        body: list[Line] = [[("", "")], *[[("", f" {line}")] for line in self.body]]
        return self.frame(body, width, f"Enter back to {self.back_to} · q quit")

    def press(self, key: str) -> None:
        if key == "enter":
            self.finish("back")
        elif key == "q":
            self.finish("quit")
