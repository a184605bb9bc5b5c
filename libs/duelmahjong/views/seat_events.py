"""The events a seat is sent on its Play stream (``SeatEvent``): each engine event as that seat may
see it, in its typed message, and the table's own events (settlement, connections, the end).

The engine decides visibility (``Event.for_seat(seat)``); this module re-shapes what the seat may see
and adds what the table noted when the event was first shown (:class:`Narrator`), so a seat that
resumes is sent exactly the same event again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from duelmahjong import contract
from duelmahjong.engine.events import Event
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.state import DISCARD_DRAWN, TableState
from duelmahjong.rules.tiles import Tile, format_tiles, tile_name
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2
from duelmahjong.views import codec, items
from duelmahjong.views.codec import timestamp
from duelmahjong.views.seat_views import OUTCOMES, TableFacts, hand_task, meld, notation

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
        kind, seat = event.kind, event.seat
        if kind == "hand_started":
            self._new_hand()
        elif kind == "discarded":
            index = self._discards[seat]
            self._discards[seat] += 1
            self.offer_ids[seat] = ""  # an offer not taken is declined by the discard (T5)
            self._last_discard = tile_name((event.public or {})["tile"])
            marks = state.river_marks[seat]
            return Note(drawn=index < len(marks) and bool(marks[index][1] & DISCARD_DRAWN))
        elif kind == "claimed":
            return Note(claimed=self._last_discard)
        elif kind == "passed":
            self._declines[seat] += 1
            return Note(declines=self._declines[seat])
        elif kind == "offered":
            self.offer_ids[seat] = str(sequence)
            return Note(offer_id=str(sequence))
        elif kind == "swapped":
            offer_id, self.offer_ids[seat] = self.offer_ids[seat], ""
            if (event.public or {}).get("reason") in ("triplet", "rub"):
                return Note(offer_id=offer_id)
        return NO_NOTE


# Kinds whose seat copies differ even without a private part: a 搓牌 offer (T5) tells its own seat
# the offer's id and kind, and so does the swap that takes it.
_OWN_COPY_KINDS = frozenset({"offered", "swapped"})


def same_for_both(event: Event) -> bool:
    """Whether both seats' copies of ``event`` are one message (built once, sent to both)."""
    return not event.private and event.kind not in _OWN_COPY_KINDS


def is_shown(event: Event) -> bool:
    """Whether both seats are shown ``event``: not a seat-only pass (docs/engine.md "Claim windows"),
    not a T5 roll that offered nothing (a dice roll of the server's, not a fact of the table), not the
    engine's pairing_ended (the table's own TableEnded says it, last, after the hand's settlement)."""
    if event.kind == "pairing_ended" or not (event.visible_to(0) and event.visible_to(1)):
        return False
    return not (event.kind == "offered" and not (event.public or {}).get("offer"))


def seat_event_response(
    event: Event, seat: int, sequence: int, facts: TableFacts, note: Note = NO_NOTE, at: int = 0
) -> table_pb2.PlayResponse:
    """:func:`seat_event` as the ``PlayResponse`` a stream writes, built in place (no copy)."""
    response = table_pb2.PlayResponse()
    seat_event(event, seat, sequence, facts, note, at, into=response.event)
    return response


_WIND_BY_NUMBER = (rules_pb2.WIND_EAST, rules_pb2.WIND_SOUTH, rules_pb2.WIND_WEST, rules_pb2.WIND_NORTH)
_GUESSES = {"big": rules_pb2.GUESS_BIG, "small": rules_pb2.GUESS_SMALL}


def _seats(flags: Any) -> list[rules_pb2.Seat.ValueType]:
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
    seen = event.for_seat(seat)
    message = play_pb2.SeatEvent() if into is None else into
    message.sequence = sequence
    stamp = message.occurred_at  # timestamp()'s value, set in place
    stamp.seconds, stamp.nanos = divmod(at or time.time_ns(), 1_000_000_000)
    _typed(message, event.kind, event.seat == seat, codec.seat_enum(event.seat), seen, facts, note)
    return message


def _typed(  # one branch per engine event kind, in docs/engine.md's order
    message: play_pb2.SeatEvent,
    kind: str,
    own: bool,
    about: rules_pb2.Seat.ValueType,
    seen: dict[str, Any],
    facts: TableFacts,
    note: Note,
) -> None:
    """Fill the kind's message; ``own``: the event is about the receiving seat, ``about`` that seat."""
    if kind == "table_opened":
        opened = message.table_opened
        opened.table_id = facts.table_id
        if facts.rules is not None:
            opened.rules.CopyFrom(facts.rules)
        opened.negotiated = facts.negotiated
        for player in facts.players:
            opened.players.add(seat=player.seat, player_id=player.player_id, display_name=player.display_name)
    elif kind == "hand_started":
        started = message.hand_started
        started.hand_id = f"{facts.table_id}-h{seen['hand_number']}"
        started.hand_number = seen["hand_number"]
        started.dealer = codec.seat_enum(seen["dealer"])
        started.round_wind = _WIND_BY_NUMBER[seen["round_wind"]]
        started.multipliers.negotiated = facts.negotiated
        started.multipliers.progressive = seen["progressive"]
        started.multipliers.fan_rate = facts.fan_rate
        started.revealed_bonus_tiles = notation(tuple(seen.get("bonus", ())))
        started.wall_commitment = bytes.fromhex(seen.get("commitment", ""))
        task = hand_task(seen.get("task"))
        if task is not None:
            started.task.CopyFrom(task)
    elif kind == "doubling_chosen":
        message.doubling_chosen.seat = about
        message.doubling_chosen.start_doubled = bool(seen.get("double"))
    elif kind == "doubling_revealed":
        message.doubling_revealed.start_doubled.extend(_seats(seen["choices"]))
    elif kind == "dealt":
        dealt = message.tiles_dealt
        dealt.seat = about
        dealt.tiles = notation(tuple(seen.get("tiles", ())))
        dealt.count = int(seen.get("count", 0))
        dealt.flowers = notation(tuple(seen.get("flowers", ())))
    elif kind == "drew":
        tile = seen.get("tile") or ""
        if tile.endswith("f"):  # a flower is drawn face up and set aside at once (补花)
            message.flower_replaced.seat = about
            message.flower_replaced.flower = tile
        else:
            drawn = message.tile_drawn
            drawn.seat = about
            drawn.tile = tile
            drawn.source = DRAW_SOURCES.get(seen["source"], play_pb2.DRAW_SOURCE_UNSPECIFIED)
    elif kind == "exchanged":
        exchanged = message.tiles_exchanged
        exchanged.seat = about
        exchanged.count = int(seen.get("count", 0))
        exchanged.given = notation(tuple(seen.get("given", ())))
        exchanged.received = notation(tuple(seen.get("received", ())))
        exchanged.paid = int(seen.get("paid", 0))
    elif kind == "play_started":
        message.play_started.dealer = about
    elif kind == "discarded":
        discarded = message.tile_discarded
        discarded.seat = about
        discarded.tile = seen["tile"]
        discarded.declared_ready = bool(seen.get("ready"))
        discarded.first_turn = bool(seen.get("first_turn"))
        discarded.drawn_tile = note.drawn
    elif kind == "passed":  # only a 胡加倍 decline is shown (T8)
        message.win_declined.seat = about
        message.win_declined.win_declines = note.declines
    elif kind in ("claimed", "konged"):
        _meld_made(message.meld_made, about, seen, note)
    elif kind == "offered":
        made = message.offer_made
        made.seat = about
        if own:  # only the offered seat learns the offer itself
            tile = seen.get("tile", "")
            made.offer.offer_id = note.offer_id
            made.offer.kind = (
                play_pb2.Offer.KIND_TRIPLET if seen["offer"] == "triplet" else play_pb2.Offer.KIND_PICK
            )
            made.offer.tiles = tile * 3 if tile else ""
    elif kind == "swapped":
        given = notation(tuple(seen.get("given", ())))
        received = notation(tuple(seen.get("received", ())))
        if seen.get("reason") in items.KINDS:
            # T6 偷天换日 / 移花接木: the opponent learns the item was used; only the user what it traded.
            applied = message.item_applied
            applied.seat, applied.item = about, items.KINDS[seen["reason"]]
            applied.given, applied.received = given, received
        else:  # T5: an offer taken
            resolved = message.offer_resolved
            resolved.seat, resolved.accepted = about, True
            resolved.offer_id = note.offer_id if own else ""
            resolved.given, resolved.received = given, received
    elif kind == "exhausted":
        exhausted = message.exhausted
        exhausted.ready.extend(_seats(seen.get("ready", ())))
        exhausted.extra_draw_seat = codec.seat_enum(int(seen.get("extra_seat", -1)))
        exhausted.extra_draws = int(seen.get("extra_draws", 0))
    elif kind == "thrown_away":
        message.thrown_away.seat = about
        message.thrown_away.tile = seen["tile"]
    elif kind == "won":
        won = message.won
        won.seat = about
        won.win_tile = seen["tile"]
        won.self_drawn = bool(seen.get("self_drawn"))
        won.description.CopyFrom(contract.description_message(seen["description"]))
        won.evaluation.CopyFrom(_evaluation(seen["evaluation"]))
        won.task_completed = bool(seen.get("task_completed"))
        won.tiles = notation(tuple(seen.get("tiles", ())))
    elif kind == "guessed":
        guessed = message.guess_made
        guessed.seat = about
        guessed.skipped = seen["choice"] not in _GUESSES
        guessed.guess = _GUESSES.get(seen["choice"], rules_pb2.GUESS_UNSPECIFIED)
        guessed.dice.extend(int(d) for d in seen.get("dice", ()))
        guessed.won = bool(seen.get("right"))
        guessed.payout_multiplier = int(seen.get("factor", 0))
    elif kind == "escaped":
        message.escaped.seat = about
    elif kind == "hand_ended":
        message.hand_revealed.CopyFrom(hand_revealed(Outcome.from_json(seen["result"])))


def _meld_made(
    made: play_pb2.MeldMade, about: rules_pb2.Seat.ValueType, seen: dict[str, Any], note: Note
) -> None:
    """chi / pong / exposed kong (``claimed``) and concealed / added kongs (``konged``) as a meld."""
    kind, tile = seen["meld"], seen.get("tile")
    tiles = claimed = ""
    if tile:  # a concealed kong shows its tile to its own seat only
        first = Tile.parse(tile).kind
        run = [first, first + 1, first + 2] if kind == "chi" else [first] * (3 if kind == "pong" else 4)
        tiles = format_tiles(run)
        if kind == "added_kong":
            claimed = tile
        elif kind != "concealed_kong":
            claimed = note.claimed
    made.seat = about
    made.meld.CopyFrom(meld(kind, tiles, claimed))


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
