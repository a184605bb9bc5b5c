"""The person's seat at the table: what the Play stream showed, and the decision the keys answer.

:class:`PersonSeat` is both the client library's policy (``decide`` returns a future the keys
resolve, so the stream goes on reading while the person thinks: a decision the server timed out
is seen gone) and its watcher (every message folds into what the board draws). Keys:

* ``←`` ``→`` pick a tile of the hand, ``Enter`` discards it (a discard is always the tile picked);
* ``r`` discards the picked tile with 报听 (T3), when that leaves the hand ready;
* ``Space`` marks tiles: 换牌 (T4: ``Enter`` gives the marked ones back, none keeps the hand) and
  the three tiles given back for a T5 triplet offer (``t``);
* ``1`` … ``9`` the other actions, listed with their keys (胡, 碰, 吃, 杠, pass, 搓牌 picks, 开始加倍,
  胡加倍, 猜大小 …); ``i`` types an item's choice (T6: ``5m>7z`` 偷天换日, ``123m`` 移花接木) and
  ``p`` the tile taken from a 搓牌 offer of many tiles;
* between hands ``c`` continues (``g`` with 乾坤大挪移 when the seat has one) and ``x`` leaves; during
  a hand ``x`` is escape (逃跑, the H3 penalty) and asks again before it is sent.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from duelmahjong.client.narrate import Narrator
from duelmahjong.tui.choices import PICKS_AS_KEYS, Choice, make_action, numbered_choices
from duelmahjong.tui.events import event_line
from duelmahjong.tui.tiles import split_tiles
from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2

K = play_pb2
LOG_LINES = 40
_SECOND_PERSON = {"discards": "discard", "draws": "draw", "wins": "win", "is": "are", "left": "left"}


def _entry(legal: play_pb2.LegalActions | None, kind: int) -> play_pb2.LegalAction | None:
    if legal is None:
        return None
    return next((e for e in legal.actions if e.kind == kind), None)


class PersonSeat:
    """One person's seat: policy, watcher and key handler of ``duel play``'s table screen."""

    def __init__(self, me: str, changed: Callable[[], None] = lambda: None) -> None:
        self.me = me  # the player id
        self.changed = changed
        self.view: play_pb2.SeatView | None = None
        self.info: play_pb2.TableInfo | None = None
        self.legal: play_pb2.LegalActions | None = None
        self.offered_at = 0.0  # time.monotonic() when the decision came
        self.pending: asyncio.Future[play_pb2.Action] | None = None
        self.cursor = 0
        self.marked: set[int] = set()
        self.typing: str | None = None  # an item choice or a 搓牌 pick being typed
        self.typing_pick = False  # what is typed is the 搓牌 pick (else an item's choice)
        self.confirm_escape = False
        self.note = ""  # one line for the person: a refusal, a reminder
        self.reconnecting = ""
        self.reconnects = 0
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self.names: dict[int, str] = {}  # seat index → "you" or the opponent's name
        self.players: dict[str, str] = {}  # player id → the same
        self.narrator = Narrator(self.names, self._say)
        self.won: play_pb2.HandWon | None = None
        self.revealed: play_pb2.HandRevealed | None = None
        self.settled: play_pb2.HandSettled | None = None
        self.guess: play_pb2.GuessMade | None = None
        self.ended = ""
        self.hands_settled = 0
        self.seen = 0  # the last event sequence folded

    def _say(self, line: str) -> None:
        words = line.strip().split(" ", 2)
        if words[0] == "you" and len(words) > 1:  # the narrator speaks of seats in the third person
            words[1] = _SECOND_PERSON.get(words[1], words[1])
        self.log.append(" ".join(words).removeprefix("── ").removesuffix(" ──"))

    # -- the policy ------------------------------------------------------------------------------
    def decide(
        self, view: play_pb2.SeatView, legal: play_pb2.LegalActions
    ) -> asyncio.Future[play_pb2.Action]:
        self._drop_decision()
        self.view, self.legal, self.offered_at = view, legal, time.monotonic()
        self.pending = asyncio.get_running_loop().create_future()
        self.marked.clear()
        # On the drawn tile (the default discard), else on the first.
        self.cursor = max(0, len(self.hand()) - 1) if view.drawn_tile else 0
        self.changed()
        return self.pending

    def _drop_decision(self) -> None:
        if self.pending is not None and not self.pending.done():
            self.pending.cancel()
        self.pending, self.legal, self.typing, self.confirm_escape = None, None, None, False

    def _answer(self, action: play_pb2.Action) -> None:
        if self.pending is not None and not self.pending.done():
            self.pending.set_result(action)
        self.pending, self.legal, self.typing, self.confirm_escape = None, None, None, False
        self.marked.clear()
        self.note = ""

    # -- the watcher -----------------------------------------------------------------------------
    def __call__(self, response: table_pb2.PlayResponse) -> None:
        self.reconnecting = ""
        kind = response.WhichOneof("kind")
        if kind == "event":
            self._event(response.event)
        elif kind == "view":
            self._view(response.view)
        elif kind == "rejected":
            self.note = f"refused: {response.rejected.reason}"
            if response.rejected.HasField("view"):
                self._view(response.rejected.view)
        self.changed()

    def on_break(self, reason: str) -> None:
        self.reconnecting = reason or "the connection dropped"
        self.reconnects += 1
        self._drop_decision()  # offered again on the new stream if still open
        self.changed()

    def _view(self, view: play_pb2.SeatView) -> None:
        self.view = view
        offered = view.legal_actions if view.HasField("legal_actions") else None
        if self.legal is not None and (offered is None or offered.sequence != self.legal.sequence):
            self._drop_decision()  # answered, timed out or replaced: the server moved on
        if self.cursor >= len(self.hand()):
            self.cursor = max(0, len(self.hand()) - 1)

    def _event(self, event: play_pb2.SeatEvent) -> None:
        if event.sequence and event.sequence <= self.seen:
            return  # sent again on a resume from an earlier sequence
        self.seen = max(self.seen, event.sequence)
        which = event.WhichOneof("kind")
        if which == "table_opened":
            self.info = event.table_opened
            for player in event.table_opened.players:
                mine = player.player_id == self.me
                name = "you" if mine else player.display_name or player.player_id
                self.names[0 if player.seat == rules_pb2.SEAT_FIRST else 1] = name
                self.players[player.player_id] = name
        elif which == "hand_started":
            self.won = self.revealed = self.settled = self.guess = None
        elif which == "won":
            self.won = event.won
        elif which == "hand_revealed":
            self.revealed = event.hand_revealed
        elif which == "hand_settled":
            self.settled = event.hand_settled
            self.hands_settled += 1
        elif which == "guess_made":
            self.guess = event.guess_made
        elif which == "table_ended":
            self.ended = event.table_ended.reason or "the table closed"
        self.narrator(table_pb2.PlayResponse(event=event))
        line = event_line(event, self.names)
        if line is not None:
            self.log.append(line)

    # -- what the board asks ---------------------------------------------------------------------
    def hand(self) -> list[str]:
        """Own tiles, the drawn one last."""
        if self.view is None:
            return []
        return split_tiles(self.view.concealed) + split_tiles(self.view.drawn_tile)

    def deciding(self) -> bool:
        return self.legal is not None and self.pending is not None and not self.pending.done()

    def between_hands(self) -> bool:
        return self.deciding() and _entry(self.legal, K.ACTION_KIND_CONTINUE) is not None

    def discards(self) -> set[str]:
        entry = _entry(self.legal, K.ACTION_KIND_DISCARD) if self.deciding() else None
        return set(entry.choices) if entry else set()

    def ready_discards(self) -> set[str]:
        entry = _entry(self.legal, K.ACTION_KIND_DECLARE_READY) if self.deciding() else None
        return set(entry.choices) if entry else set()

    def exchange(self) -> play_pb2.LegalAction | None:
        return _entry(self.legal, K.ACTION_KIND_EXCHANGE) if self.deciding() else None

    def triplet_offer(self) -> play_pb2.Offer | None:
        if not self.deciding() or self.view is None:
            return None
        return next((o for o in self.view.offers if o.kind == play_pb2.Offer.KIND_TRIPLET), None)

    def claim_window(self) -> bool:
        """The decision is on the opponent's last discard (pass is offered: claim, win or let it go)."""
        return self.deciding() and _entry(self.legal, K.ACTION_KIND_PASS) is not None

    def picks(self) -> list[str]:
        """The tiles a 搓牌 offer lets the seat take (T5)."""
        entry = _entry(self.legal, K.ACTION_KIND_RESPOND_OFFER) if self.deciding() else None
        return [c for c in entry.choices if len(split_tiles(c)) == 1] if entry else []

    def items(self) -> list[str]:
        entry = _entry(self.legal, K.ACTION_KIND_USE_ITEM) if self.deciding() else None
        return list(entry.choices) if entry else []

    def has_grand_shift(self) -> bool:
        view = self.view
        return view is not None and any(
            i.item == rules_pb2.ITEM_KIND_GRAND_SHIFT and i.count > 0 for i in view.items
        )

    def choices(self) -> list[Choice]:
        return numbered_choices(self.legal) if self.deciding() and self.legal is not None else []

    def clocks(self) -> tuple[float, float]:
        """Seconds left of the decision's own time and of the time bank, counting down."""
        if self.legal is None:
            return 0.0, 0.0
        spent = time.monotonic() - self.offered_at
        own = self.legal.decision_millis_remaining / 1000
        bank = self.legal.time_bank_millis_remaining / 1000
        return max(0.0, own - spent), max(0.0, bank - max(0.0, spent - own))

    # -- keys ------------------------------------------------------------------------------------
    def press(self, key: str) -> None:
        """One key of the table screen (prompt_toolkit's names: "left", "enter", "space", "a"…)."""
        if not self.deciding():
            return
        if self.typing is not None:
            self._type(key)
        elif self.between_hands():
            self._between_hands(key)
        else:
            self._in_hand(key)
        self.changed()

    def _between_hands(self, key: str) -> None:
        if key == "c":
            self._answer(make_action(continue_playing=K.ContinueAction()))
        elif key == "g" and self.has_grand_shift():
            self._answer(make_action(continue_playing=K.ContinueAction(use_grand_shift=True)))
        elif key == "x":
            self._answer(make_action(leave=K.LeaveAction()))

    def _in_hand(self, key: str) -> None:
        hand = self.hand()
        if key != "x":
            self.confirm_escape = False
        if key in ("left", "right") and hand:
            self.cursor = (self.cursor + (1 if key == "right" else -1)) % len(hand)
        elif key == "space" and hand:
            self.marked ^= {self.cursor}
        elif key == "enter":
            self._enter(hand)
        elif key == "r" and hand:
            tile = hand[self.cursor]
            if tile in self.ready_discards():
                self._answer(make_action(declare_ready=K.DeclareReadyAction(discard=tile)))
            else:
                self.note = f"报听 is not possible discarding {tile}"
        elif key == "t" and (offer := self.triplet_offer()) is not None:
            give = "".join(sorted(hand[i] for i in self.marked))
            self._answer(
                make_action(
                    respond_offer=K.RespondOfferAction(offer_id=offer.offer_id, accept=True, give_back=give)
                )
            )
        elif key == "i" and self.items():
            self.typing, self.typing_pick = "", False
        elif key == "p" and len(self.picks()) > PICKS_AS_KEYS:
            self.typing, self.typing_pick = "", True
        elif key == "x":
            if self.confirm_escape:
                self._answer(make_action(leave=K.LeaveAction()))
            else:
                self.confirm_escape = True
                self.note = (
                    "x again to escape (逃跑): you pay the escape penalty; any other key keeps playing"
                )
        else:
            chosen = next((c for c in self.choices() if c.key == key), None)
            if chosen is not None:
                self._answer(chosen.action)

    def _enter(self, hand: list[str]) -> None:
        exchange = self.exchange()
        if exchange is not None:
            given = [hand[i] for i in sorted(self.marked)]
            if len(given) > exchange.max_tiles:
                self.note = f"at most {exchange.max_tiles} tiles may be exchanged"
                return
            self._answer(make_action(exchange=K.ExchangeAction(tiles="".join(given))))
        elif hand and hand[self.cursor] in self.discards():
            self._answer(make_action(discard=K.DiscardAction(tile=hand[self.cursor])))
        elif self.discards():
            self.note = f"{hand[self.cursor] if hand else 'that tile'} cannot be discarded now"

    def _type(self, key: str) -> None:
        assert self.typing is not None
        if key == "escape":
            self.typing = None
        elif key == "backspace":
            self.typing = self.typing[:-1]
        elif key == "enter" and self.typing_pick:
            self._pick(self.typing.strip())
        elif key == "enter":
            self._use_item(self.typing.strip())
        elif len(key) == 1 and (key.isalnum() or key == ">"):
            self.typing += key

    def _pick(self, tile: str) -> None:
        if tile not in self.picks():
            self.note = f"{tile!r} cannot be taken: pick one of {' '.join(self.picks())}"
            self.typing = None
            return
        offer = (
            next((o for o in self.view.offers if o.kind == play_pb2.Offer.KIND_PICK), None)
            if self.view
            else None
        )
        offer_id = offer.offer_id if offer else ""
        self._answer(
            make_action(respond_offer=K.RespondOfferAction(offer_id=offer_id, accept=True, pick=tile))
        )

    def _use_item(self, text: str) -> None:
        if text not in self.items():
            self.note = f"{text!r} is not an item choice now"
            self.typing = None
            return
        if ">" in text:
            given, target = text.split(">")
            use = K.UseItemAction(item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, tiles=given, target=target)
        else:
            use = K.UseItemAction(item=rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS, tiles=text)
        self._answer(make_action(use_item=use))
