"""The events a seat is sent on its Play stream (``SeatEvent``): each engine event as that seat may
see it, in its typed message, and the table's own events (settlement, connections, the end).

The engine decides visibility (``Event.seen_by(seat)``); this module re-shapes what the seat may see
and adds what the table noted when the event was first shown (:class:`Narrator`), so a seat that
resumes is sent exactly the same event again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from duelmahjong import contract
from duelmahjong.engine import events as E
from duelmahjong.engine.events import Event
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.state import DISCARD_DRAWN, TableState
from duelmahjong.rules.tiles import format_tiles, tile_name
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2
from duelmahjong.views import codec, items
from duelmahjong.views.codec import timestamp
from duelmahjong.views.seat_views import OUTCOMES, TableFacts, hand_task, meld

DRAW_SOURCES = {
    "wall": play_pb2.DRAW_SOURCE_WALL,
    "kong": play_pb2.DRAW_SOURCE_REPLACEMENT,
    "flower": play_pb2.DRAW_SOURCE_REPLACEMENT,
    "extra": play_pb2.DRAW_SOURCE_UNUSED_POOL,
}


@dataclass(frozen=True, slots=True)
class Note:
    """What showing an engine event needs beside the event: facts of the moment it was shown, kept with
    it so a resume shows it again exactly (``Narrator`` takes them)."""

    drawn: bool = False  # a discard of the tile just drawn
    claimed: str = ""  # a chi / pong / exposed kong: the discard it took
    declines: int = 0  # a 胡加倍 pass: the seat's declines so far this hand
    offer_id: str = ""  # an offer, or the swap that accepted it


NO_NOTE = Note()


class Narrator:
    """Follows the events a table shows, in order, and notes what each needs beside itself."""

    def __init__(self) -> None:
        self.offer_ids = ["", ""]
        self._new_hand()

    def _new_hand(self) -> None:
        self._discards = [0, 0]
        self._declines = [0, 0]
        self._last_discard = ""
        self.offer_ids = ["", ""]

    def note(self, event: Event, sequence: int, state: TableState) -> Note:
        seat = event.seat
        match event:
            case E.HandStarted():
                self._new_hand()
            case E.Discarded():
                index = self._discards[seat]
                self._discards[seat] += 1
                self.offer_ids[seat] = ""  # an offer not taken is declined by the discard (T5)
                self._last_discard = tile_name(event.tile)
                marks = state.river_marks[seat]
                return Note(drawn=index < len(marks) and bool(marks[index][1] & DISCARD_DRAWN))
            case E.Claimed():
                return Note(claimed=self._last_discard)
            case E.Passed():
                self._declines[seat] += 1
                return Note(declines=self._declines[seat])
            case E.Offered():
                self.offer_ids[seat] = str(sequence)
                return Note(offer_id=str(sequence))
            case E.Swapped():
                offer_id, self.offer_ids[seat] = self.offer_ids[seat], ""
                if event.reason in OFFER_REASONS:
                    return Note(offer_id=offer_id)
        return NO_NOTE


OFFER_REASONS = ("triplet", "rub")  # a swap that takes a T5 offer; the others use T6 items


def same_for_both(event: Event) -> bool:
    """Whether both seats' copies of ``event`` are one message (built once, sent to both): no seat
    field, and not an offer or a swap (a 搓牌 offer (T5) tells its own seat the offer's id and kind, and
    so does the swap that takes it)."""
    return not event.row.hidden and not isinstance(event, E.Offered | E.Swapped)


def is_shown(event: Event) -> bool:
    """Whether both seats are shown ``event``: not a seat-only pass (docs/engine.md "Claim windows"),
    not a T5 roll that offered nothing (a dice roll of the server's, not a fact of the table), not the
    engine's pairing_ended (the table's own TableEnded says it, last, after the hand's settlement)."""
    if isinstance(event, E.PairingEnded) or not (event.visible_to(0) and event.visible_to(1)):
        return False
    return not (isinstance(event, E.Offered) and not event.offer)


def seat_event_response(
    event: Event, seat: int, sequence: int, facts: TableFacts, note: Note = NO_NOTE, at: int = 0
) -> table_pb2.PlayResponse:
    """:func:`seat_event` as the ``PlayResponse`` a stream writes, built in place (no copy)."""
    response = table_pb2.PlayResponse()
    seat_event(event, seat, sequence, facts, note, at, into=response.event)
    return response


Seat: TypeAlias = rules_pb2.Seat.ValueType
_WIND_BY_NUMBER = (rules_pb2.WIND_EAST, rules_pb2.WIND_SOUTH, rules_pb2.WIND_WEST, rules_pb2.WIND_NORTH)
_GUESSES = {"big": rules_pb2.GUESS_BIG, "small": rules_pb2.GUESS_SMALL}


def _seats(flags: Iterable[bool]) -> list[rules_pb2.Seat.ValueType]:
    """The contract seats whose flag is set in a (seat 0, seat 1) pair."""
    return [codec.seat_enum(seat) for seat, flag in enumerate(flags) if flag]


def seat_event(
    event: Event,
    seat: int,
    sequence: int,
    facts: TableFacts,
    note: Note = NO_NOTE,
    at: int = 0,
    into: play_pb2.SeatEvent | None = None,
) -> play_pb2.SeatEvent:
    """One engine event as ``seat`` may see it, as its typed message (every kind has one). ``at`` is when
    it was first shown (nanoseconds since the epoch; now when 0). Filled into ``into`` when given."""
    message = play_pb2.SeatEvent() if into is None else into
    message.sequence = sequence
    stamp = message.occurred_at  # timestamp()'s value, set in place
    stamp.seconds, stamp.nanos = divmod(at or time.time_ns(), 1_000_000_000)
    own = seat == event.seat
    shown = event if own or not event.row.hidden else event.seen_by(seat)
    _FILL[type(event)](message, shown, own, codec.seat_enum(event.seat), facts, note)
    return message


def _table_opened(
    message: play_pb2.SeatEvent, event: E.TableOpened, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    opened = message.table_opened
    opened.table_id = facts.table_id
    if facts.rules is not None:
        opened.rules.CopyFrom(facts.rules)
    opened.negotiated = facts.negotiated
    for player in facts.players:
        opened.players.add(seat=player.seat, player_id=player.player_id, display_name=player.display_name)


def _hand_started(
    message: play_pb2.SeatEvent, event: E.HandStarted, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    started = message.hand_started
    started.hand_id = f"{facts.table_id}-h{event.hand_number}"
    started.hand_number = event.hand_number
    started.dealer = codec.seat_enum(event.dealer)
    started.round_wind = _WIND_BY_NUMBER[event.round_wind]
    started.multipliers.negotiated = facts.negotiated
    started.multipliers.progressive = event.progressive
    started.multipliers.fan_rate = facts.fan_rate
    started.revealed_bonus_tiles = format_tiles(event.bonus)
    started.wall_commitment = bytes.fromhex(event.commitment or "")
    task = hand_task(event.task)
    if task is not None:
        started.task.CopyFrom(task)


def _doubling_chosen(
    message: play_pb2.SeatEvent,
    event: E.DoublingChosen,
    own: bool,
    about: Seat,
    facts: TableFacts,
    note: Note,
) -> None:
    message.doubling_chosen.seat = about
    message.doubling_chosen.start_doubled = event.double


def _doubling_revealed(
    message: play_pb2.SeatEvent,
    event: E.DoublingRevealed,
    own: bool,
    about: Seat,
    facts: TableFacts,
    note: Note,
) -> None:
    message.doubling_revealed.start_doubled.extend(_seats(event.choices))


def _dealt(
    message: play_pb2.SeatEvent, event: E.Dealt, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    dealt = message.tiles_dealt
    dealt.seat = about
    dealt.tiles = format_tiles(event.tiles)
    dealt.count = event.count
    dealt.flowers = format_tiles(event.flowers)


def _drew(
    message: play_pb2.SeatEvent, event: E.Drew, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    if event.flower:  # a flower is drawn face up and set aside at once (补花)
        message.flower_replaced.seat = about
        message.flower_replaced.flower = tile_name(event.tile)
    else:
        drawn = message.tile_drawn
        drawn.seat = about
        drawn.tile = tile_name(event.tile) if event.tile != E.NO_TILE else ""
        drawn.source = DRAW_SOURCES.get(event.source, play_pb2.DRAW_SOURCE_UNSPECIFIED)


def _exchanged(
    message: play_pb2.SeatEvent, event: E.Exchanged, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    exchanged = message.tiles_exchanged
    exchanged.seat = about
    exchanged.count = event.count
    exchanged.given = format_tiles(event.given)
    exchanged.received = format_tiles(event.received)
    exchanged.paid = event.paid


def _play_started(
    message: play_pb2.SeatEvent, event: E.PlayStarted, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    message.play_started.dealer = about


def _discarded(
    message: play_pb2.SeatEvent, event: E.Discarded, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    discarded = message.tile_discarded
    discarded.seat = about
    discarded.tile = tile_name(event.tile)
    discarded.declared_ready = event.ready
    discarded.first_turn = event.first_turn
    discarded.drawn_tile = note.drawn


def _passed(
    message: play_pb2.SeatEvent, event: E.Passed, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:  # only a 胡加倍 decline is shown (T8)
    message.win_declined.seat = about
    message.win_declined.win_declines = note.declines


def _meld_made(
    message: play_pb2.SeatEvent,
    event: E.Claimed | E.Konged,
    own: bool,
    about: Seat,
    facts: TableFacts,
    note: Note,
) -> None:
    """chi / pong / exposed kong (``claimed``) and concealed / added kongs (``konged``) as a meld."""
    kind, tile = event.meld, event.tile
    tiles = claimed = ""
    if tile != E.NO_TILE:  # a concealed kong shows its tile to its own seat only
        run = [tile, tile + 1, tile + 2] if kind == "chi" else [tile] * (3 if kind == "pong" else 4)
        tiles = format_tiles(run)
        if kind == "added_kong":
            claimed = tile_name(tile)
        elif kind != "concealed_kong":
            claimed = note.claimed
    made = message.meld_made
    made.seat = about
    made.meld.CopyFrom(meld(kind, tiles, claimed))


def _offered(
    message: play_pb2.SeatEvent, event: E.Offered, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    made = message.offer_made
    made.seat = about
    if own:  # only the offered seat learns the offer itself
        made.offer.offer_id = note.offer_id
        made.offer.kind = (
            play_pb2.Offer.KIND_TRIPLET if event.offer == "triplet" else play_pb2.Offer.KIND_PICK
        )
        made.offer.tiles = tile_name(event.tile) * 3 if event.tile is not None else ""


def _swapped(
    message: play_pb2.SeatEvent, event: E.Swapped, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    given = format_tiles(event.given)
    received = format_tiles(event.received)
    if event.reason in items.KINDS:
        # T6 偷天换日 / 移花接木: the opponent learns the item was used; only the user what it traded.
        applied = message.item_applied
        applied.seat, applied.item = about, items.KINDS[event.reason]
        applied.given, applied.received = given, received
    else:  # T5: an offer taken
        resolved = message.offer_resolved
        resolved.seat, resolved.accepted = about, True
        resolved.offer_id = note.offer_id if own else ""
        resolved.given, resolved.received = given, received


def _exhausted(
    message: play_pb2.SeatEvent, event: E.Exhausted, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    exhausted = message.exhausted
    exhausted.ready.extend(_seats(event.ready))
    exhausted.extra_draw_seat = codec.seat_enum(-1 if event.extra_seat is None else event.extra_seat)
    exhausted.extra_draws = event.extra_draws or 0


def _thrown_away(
    message: play_pb2.SeatEvent, event: E.ThrownAway, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    message.thrown_away.seat = about
    message.thrown_away.tile = tile_name(event.tile)


def _won(
    message: play_pb2.SeatEvent, event: E.Won, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    won = message.won
    won.seat = about
    won.win_tile = tile_name(event.tile)
    won.self_drawn = event.self_drawn
    won.description.CopyFrom(contract.description_message(event.description))
    won.evaluation.CopyFrom(_evaluation(event.evaluation))
    won.task_completed = event.task_completed
    won.tiles = format_tiles(event.tiles)


def _guessed(
    message: play_pb2.SeatEvent, event: E.Guessed, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    guessed = message.guess_made
    guessed.seat = about
    guessed.skipped = event.choice not in _GUESSES
    guessed.guess = _GUESSES.get(event.choice, rules_pb2.GUESS_UNSPECIFIED)
    guessed.dice.extend(event.dice or ())
    guessed.won = bool(event.right)
    guessed.payout_multiplier = event.factor or 0


def _escaped(
    message: play_pb2.SeatEvent, event: E.Escaped, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    message.escaped.seat = about


def _hand_ended(
    message: play_pb2.SeatEvent, event: E.HandEnded, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    message.hand_revealed.CopyFrom(hand_revealed(event.outcome))


def _pairing_ended(
    message: play_pb2.SeatEvent, event: E.PairingEnded, own: bool, about: Seat, facts: TableFacts, note: Note
) -> None:
    """Never shown (:func:`is_shown`): the table's own ``TableEnded`` says it."""


# Each kind's message, one filler per kind (docs/engine.md's order).
_FILL: dict[type[Event], Callable[[play_pb2.SeatEvent, Any, bool, Seat, TableFacts, Note], None]] = {
    E.TableOpened: _table_opened,
    E.HandStarted: _hand_started,
    E.DoublingChosen: _doubling_chosen,
    E.DoublingRevealed: _doubling_revealed,
    E.Dealt: _dealt,
    E.Drew: _drew,
    E.Exchanged: _exchanged,
    E.PlayStarted: _play_started,
    E.Discarded: _discarded,
    E.Passed: _passed,
    E.Claimed: _meld_made,
    E.Konged: _meld_made,
    E.Offered: _offered,
    E.Swapped: _swapped,
    E.Exhausted: _exhausted,
    E.ThrownAway: _thrown_away,
    E.Won: _won,
    E.Guessed: _guessed,
    E.Escaped: _escaped,
    E.HandEnded: _hand_ended,
    E.PairingEnded: _pairing_ended,
}


def _evaluation(evaluation: dict[str, Any]) -> rules_pb2.Evaluation:
    """A win's evaluation: a win the engine allowed reaches the room's minimum (E16)."""
    message = contract.evaluation_message(evaluation)
    message.meets_minimum = True
    return message


def hand_revealed(outcome: Outcome) -> play_pb2.HandRevealed:
    """The hand's outcome (``hand_ended``) as both seats are shown it, hands face up."""
    win = outcome.win
    revealed = play_pb2.HandRevealed(
        outcome=OUTCOMES[outcome.termination],
        winner=codec.seat_enum(outcome.winner),
        escaper=codec.seat_enum(outcome.escaper),
        self_drawn=win is not None and win.self_drawn,
    )
    for number, concealed in enumerate(outcome.hands):
        revealed.hands.add(seat=codec.seat_enum(number), concealed=concealed)
    if win is not None:
        revealed.description.CopyFrom(contract.description_message(win.description))
        revealed.evaluation.CopyFrom(_evaluation(win.evaluation))
    erren = outcome.erren
    if erren is not None:
        task = hand_task(erren.task, erren.task_completed)
        if task is not None:
            revealed.task.CopyFrom(task)
        revealed.doubling.start_doubled.extend(_seats(erren.doubling))
        revealed.doubling.win_declines = erren.win_doublings
    return revealed


def hand_settled(
    applied: events_pb2.SettlementApplied | None,
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer],
    sequence: int,
) -> play_pb2.SeatEvent:
    """The settlement both seats are shown: exactly what the wallet applied for the hand — its
    settlement as applied (scoring's breakdown, the transfer it capped and moved, every posting, fees
    included), both players' balances after it and both ratings it moved; scoring's own (uncapped)
    figure is never shown.
    Empty if the wallet's answer did not come in time (nothing is guessed). The table's own event,
    numbered ``sequence`` after the hand's last event."""
    settled = play_pb2.HandSettled()
    if applied is not None and applied.HasField("settlement"):
        settled.settlement.CopyFrom(applied.settlement)
    seat_of = {player.player_id: seat for seat, player in enumerate(players)}
    for balance in applied.balances if applied is not None else ():
        if balance.player_id in seat_of:  # a house account has none
            settled.balances.append(
                play_pb2.SeatBalance(
                    seat=codec.seat_enum(seat_of[balance.player_id]), balance=balance.balance
                )
            )
    # Both seats' ratings before and after the hand, as the wallet moved them in its transaction.
    for change in applied.ratings if applied is not None else ():
        if change.player_id in seat_of:
            shown = settled.ratings.add()
            shown.CopyFrom(change)
            shown.seat = codec.seat_enum(seat_of[change.player_id])
    return play_pb2.SeatEvent(sequence=sequence, occurred_at=timestamp(), hand_settled=settled)


def seat_connection(seat: int, connected: bool, auto_play: bool, sequence: int) -> play_pb2.SeatEvent:
    """T10: a seat's stream went away or came back, or its 托管 began (the table's own event)."""
    return play_pb2.SeatEvent(
        sequence=sequence,
        occurred_at=timestamp(),
        seat_connection=play_pb2.SeatConnection(
            seat=codec.seat_enum(seat), connected=connected, auto_play=auto_play
        ),
    )


def table_ended(reason: str, sequence: int) -> play_pb2.SeatEvent:
    """The table closed (the table's own event, when the engine's pairing_ended did not say so)."""
    return play_pb2.SeatEvent(
        sequence=sequence, occurred_at=timestamp(), table_ended=play_pb2.TableEnded(reason=reason)
    )
