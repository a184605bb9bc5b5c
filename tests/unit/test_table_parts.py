"""The table service's pure parts: tickets, seat clocks (T11), the engine ↔ contract codec, results."""

from __future__ import annotations

import asyncio
import random
from typing import Any, cast

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine.bot import choose
from duelmahjong.engine.events import Exchanged
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.platform import subjects
from duelmahjong.platform.auth import TokenKeys, key_id
from duelmahjong.rules.tiles import parse_tiles
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, tiles_pb2, wallet_pb2
from duelmahjong.views import codec, seat_events, seat_views
from services.table import results
from services.table.ports import OpenRequest
from services.table.publishers import NatsTableEvents, Producer
from services.table.seats import SeatState
from services.table.tickets import InvalidTicket, SeatTicket, TicketBook, _ticket_key

PLAYERS = (
    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a"),
    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b"),
)


def test_a_ticket_names_its_table_seat_and_player_and_cannot_be_altered() -> None:
    book = TicketBook("k" * 32)
    ticket = book.issue("t-1", 1, "p-7")
    assert (book.verify(ticket).table_id, book.verify(ticket).seat, book.verify(ticket).player_id) == (
        "t-1",
        1,
        "p-7",
    )
    for forged in (ticket.replace(".1.", ".0."), ticket.replace("t-1", "t-2"), ticket + "x", "junk"):
        with pytest.raises(InvalidTicket):
            book.verify(forged)
    # Another server's key: nothing to check it with, so it is not trusted (the seat check decides).
    assert TicketBook("other" * 8).verify(ticket).key == "retired"


def test_a_ticket_is_checked_with_the_key_it_names_and_a_retired_key_is_not_trusted() -> None:
    old, new = "k" * 32, "n" * 32
    ticket = TicketBook(old).issue("t-1", 0, "p-7.x")
    assert ticket.startswith(f"t2.{key_id(old)}.t-1.0.p-7.x.")
    staged, switched = TicketBook(TokenKeys(old, accepted=new)), TicketBook(TokenKeys(new, accepted=old))
    assert staged.issue("t-1", 0, "p-7.x") == ticket  # staging changes nothing issued
    fresh = switched.issue("t-1", 0, "p-7.x")
    assert fresh.startswith(f"t2.{key_id(new)}.")
    assert [book.verify(ticket).key for book in (staged, switched)] == ["signing", "accepted"]
    assert [book.verify(fresh).key for book in (staged, switched)] == ["accepted", "signing"]
    assert switched.verify(ticket) == SeatTicket("t-1", 0, "p-7.x")
    assert TicketBook(new).verify(ticket).key == "retired"
    for altered in (ticket.replace("p-7", "p-8"), ticket.replace(".0.", ".1."), ticket[:-2] + "xx"):
        with pytest.raises(InvalidTicket, match="does not verify"):
            switched.verify(altered)  # a key it accepts: the signature must hold


def test_a_ticket_without_a_key_id_is_checked_with_each_accepted_key() -> None:
    old, new = "k" * 32, "n" * 32
    body = "t1.t-1.1.p-7"
    unnamed = f"{body}.{TicketBook._sign(_ticket_key(old), body)}"  # as tickets were before key ids
    assert TicketBook(TokenKeys(new, accepted=old)).verify(unnamed) == SeatTicket("t-1", 1, "p-7")
    with pytest.raises(InvalidTicket, match="does not verify"):
        TicketBook(new).verify(unnamed)  # it names no key, so an unknown one is a forgery
    for malformed in ("t2.abc.t-1.0.p-7", "t2..t-1.2.p.sig", "t3.t-1.0.p.sig", "t1.t-1.0.sig"):
        with pytest.raises(InvalidTicket, match="malformed"):
            TicketBook(new).verify(malformed)


def test_t11_the_bank_pays_for_time_over_the_decision_allowance() -> None:
    seat = SeatState(player=None)
    seat.new_hand(bank=30.0)
    assert seat.offer(now=0.0, sequence=3) and not seat.offer(now=1.0, sequence=4)  # still the same decision
    assert seat.deadline(15.0) == 45.0 and seat.decision_sequence == 3
    seat.spend(now=10.0, decision_seconds=15.0)  # within the allowance: the bank is untouched
    assert seat.bank == 30.0 and seat.deadline(15.0) is None
    seat.offer(now=100.0, sequence=9)
    seat.spend(now=140.0, decision_seconds=15.0)  # 25 s over
    assert seat.bank == 5.0
    seat.offer(now=200.0, sequence=12)
    seat.spend(now=260.0, decision_seconds=15.0)  # more than the bank: it runs out, never negative
    assert seat.bank == 0.0


def _played(profile: str, seed: int) -> Table:
    table = Table(RoomSettings(profile=profile))
    table.start_hand(seed=seed)
    return table


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_every_legal_action_survives_the_contract_and_back(profile: str) -> None:
    rng = random.Random(7)
    checked = 0
    for seed in range(6):
        table = _played(profile, seed)
        while table.phase not in ("over", "closed"):
            seat = next(s for s in (0, 1) if any(a.kind != A.LEAVE for a in table.legal_actions(s)))
            legal = table.legal_actions(seat)
            for action in legal:
                assert codec.decode_action(codec.encode_action(action), seat, legal) == action
                checked += 1
            encoded = codec.encode_legal(
                legal, table.settings.effective_exchange_limit, table.state.hand_size(seat)
            )
            assert {entry.kind for entry in encoded} == {codec.ACTION_KINDS[a.kind] for a in legal}
            pick = choose(table.state, seat, legal) if rng.random() < 0.8 else rng.choice(legal)
            if pick.kind == A.LEAVE:
                pick = choose(table.state, seat, legal)
            table.apply(pick)
    assert checked > 500


def test_a_bad_tile_is_invalid_argument_and_a_draw_is_refused() -> None:
    table = _played("duel", 1)
    legal = table.legal_actions(0)
    with pytest.raises(codec.InvalidArgument):
        codec.decode_action(play_pb2.Action(discard=play_pb2.DiscardAction(tile="0m")), 0, legal)
    with pytest.raises(codec.IllegalActionError):
        codec.decode_action(play_pb2.Action(draw=play_pb2.DrawAction()), 0, legal)


def test_the_seats_are_shown_the_settlement_the_wallet_applied() -> None:
    players = (
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b"),
    )
    moved = rules_pb2.Settlement(
        fan_amount=160,
        capped_by_carry=True,
        transfer=rules_pb2.Transfer(from_player_id="b", to_player_id="a", amount=40),
        postings=[
            rules_pb2.Posting(account="player:a", amount=40, reason=rules_pb2.POSTING_REASON_HAND_TRANSFER),
            rules_pb2.Posting(account="player:b", amount=-40, reason=rules_pb2.POSTING_REASON_HAND_TRANSFER),
        ],
    )
    applied = events_pb2.SettlementApplied(
        settlement=moved,
        balances=[
            rules_pb2.AccountBalance(account="player:a", balance=1040, player_id="a"),
            rules_pb2.AccountBalance(account="player:b", balance=960, player_id="b"),
            rules_pb2.AccountBalance(account="house:fees", balance=7),  # not a seat's
        ],
        ratings=[
            wallet_pb2.RatingChange(
                seat=rules_pb2.SEAT_FIRST,
                player_id=player,
                before=wallet_pb2.SkillRating(profile=rules_pb2.PROFILE_DUEL, rating=1500, deviation=350),
                after=wallet_pb2.SkillRating(profile=rules_pb2.PROFILE_DUEL, rating=rating, deviation=337),
            )
            for player, rating in (("a", 1617.0), ("b", 1383.0))
        ],
    )
    shown = seat_events.hand_settled(applied, players, 9).hand_settled
    assert shown.settlement == moved
    assert [(b.seat, b.balance) for b in shown.balances] == [
        (rules_pb2.SEAT_FIRST, 1040),
        (rules_pb2.SEAT_SECOND, 960),
    ]
    # Both seats' ratings, each under the seat the table gave its player.
    assert [(r.seat, r.player_id, r.after.rating) for r in shown.ratings] == [
        (rules_pb2.SEAT_FIRST, "a", 1617.0),
        (rules_pb2.SEAT_SECOND, "b", 1383.0),
    ]
    late = seat_events.hand_settled(None, players, 9).hand_settled  # the wallet did not answer in time
    assert not late.HasField("settlement") and not late.balances and not late.ratings


def test_t4_only_the_paid_part_of_an_exchange_is_charged() -> None:
    free = results.exchange_charged(
        Exchanged(seat=0, count=1, paid=0, given=(0,), received=(1,)),
        table_id="t",
        hand_id="h",
        sequence=5,
        player_id="a",
        fee=7,
    )
    assert free is None
    paid = results.exchange_charged(
        Exchanged(seat=0, count=4, paid=3, given=(0, 1, 2, 3), received=(4, 5, 6, 7)),
        table_id="t",
        hand_id="h",
        sequence=5,
        player_id="a",
        fee=7,
    )
    assert paid is not None and (paid.amount, paid.exchange_number, paid.sequence) == (21, 4, 5)


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_every_shown_engine_event_is_a_typed_seat_event_consistent_with_the_view(profile: str) -> None:
    """Random bot hands: each event both seats are shown becomes a typed message for both (never
    detail_json); wins carry their description and evaluation; a claim names the discard it took, and
    the view's river keeps that discard, marked claimed."""
    facts = seat_views.TableFacts(
        table_id="t", hand_id="t-h1", players=PLAYERS, connected=(True, True), fan_rate=10, sequence=0
    )
    seen_kinds: set[str] = set()
    claims = wins = 0
    for seed in range(30):
        table = Table(RoomSettings(profile=profile))
        narrator = seat_events.Narrator()
        start = 0
        table.start_hand(seed=seed)
        sequence = 0
        while True:
            for event in table.events[start:]:
                if not seat_events.is_shown(event):
                    continue
                sequence += 1
                note = narrator.note(event, sequence, table.state)
                for seat in (0, 1):
                    message = seat_events.seat_event(event, seat, sequence, facts, note)
                    kind = message.WhichOneof("kind")
                    assert kind is not None and not message.detail_json, event.kind
                    seen_kinds.add(event.kind)
                    if kind == "meld_made" and message.meld_made.meld.kind in (
                        tiles_pb2.MELD_KIND_CHI,
                        tiles_pb2.MELD_KIND_PONG,
                        tiles_pb2.MELD_KIND_EXPOSED_KONG,
                    ):
                        claims += 1
                        taken = message.meld_made.meld.claimed_tile
                        shown = seat_views.seat_view(table, seat, facts, None)
                        river = shown.table.seats[1 - event.seat].discards
                        assert taken and any(d.tile == taken and d.claimed for d in river)
                    if (
                        kind == "hand_revealed"
                        and message.hand_revealed.outcome == rules_pb2.HAND_OUTCOME_WIN
                    ):
                        wins += 1
                        revealed = message.hand_revealed
                        assert revealed.description.win_tile and revealed.evaluation.total_fan > 0
                        assert revealed.evaluation.patterns and len(revealed.hands) == 2
            start = len(table.events)
            if table.phase in ("over", "closed"):
                break
            seat = next(s for s in (0, 1) if any(a.kind != A.LEAVE for a in table.legal_actions(s)))
            table.apply(choose(table.state, seat, table.legal_actions(seat)))
    assert claims > 0 and wins > 0
    assert {"hand_started", "dealt", "drew", "discarded", "hand_ended"} <= seen_kinds


def test_a_refusal_speaks_the_contract_not_the_engine_notation() -> None:
    table = _played("duel", 1)
    for seat in (0, 1):
        default = table.default_action(seat)
        assert default is not None
        table.apply(default)
    seat = table.to_move
    legal = table.legal_actions(seat)
    held = {a.tile for a in legal if a.kind == A.DISCARD}
    missing = next(tile for tile in ("7z", "6z", "5z", "1z", "9m", "1p") if parse_tiles(tile)[0] not in held)
    wrong = play_pb2.Action(discard=play_pb2.DiscardAction(tile=missing))
    with pytest.raises(codec.IllegalActionError) as refused:
        table.check(codec.decode_action(wrong, seat, legal))
    engine_reason = str(refused.value)
    assert engine_reason[0].isdigit()  # the engine speaks its notation ("0 discard 7z is not legal…")
    reason = codec.refusal(wrong, legal, engine_reason)
    assert not reason[0].isdigit() and "it is not in your hand" in reason
    assert codec.refusal(play_pb2.Action(pong=play_pb2.PongAction()), legal, "x").startswith(
        "you cannot pong now"
    )


def test_a_table_adoption_is_published_under_its_table_and_adopting_process() -> None:
    class Bus:
        def __init__(self) -> None:
            self.published: list[tuple[str, Any]] = []

        async def publish_event(self, subject: str, event: Any) -> None:
            self.published.append((subject, event))

    bus = Bus()
    players = (rules_pb2.SeatPlayer(player_id="a"), rules_pb2.SeatPlayer(player_id="b"))
    request = OpenRequest("t-1", "p-1", "r", rules_pb2.RoomRules(), players, 1)
    events = NatsTableEvents(cast(Any, bus), Producer("table/s-2"))
    asyncio.run(
        events.table_adopted(
            request, events_pb2.ADOPTION_KIND_ORPHAN, server_id="s-2", address="h:2", incarnation="i2"
        )
    )
    ((subject, event),) = bus.published
    assert subject == subjects.TABLE_ADOPTED == subjects.SUBJECT_OF_EVENT["TableAdopted"]
    assert event.envelope.event_id == "adopted:t-1:i2" and event.envelope.producer == "table/s-2"
    assert (event.table_id, event.pairing_id, event.server_id, event.address, event.incarnation) == (
        "t-1",
        "p-1",
        "s-2",
        "h:2",
        "i2",
    )
    assert event.how == events_pb2.ADOPTION_KIND_ORPHAN
