"""``duel play``'s parts without a terminal: tiles, the keys of a decision, the screens' lines (every
one within 80 columns, the table within 24 rows), the settlement's breakdown and the guest file."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from wcwidth import wcswidth

from duelmahjong.tui.board import Board
from duelmahjong.tui.choices import numbered_choices
from duelmahjong.tui.guest import Guest, GuestStore, default_path
from duelmahjong.tui.screens import QueueScreen, RoomsScreen, room_lines
from duelmahjong.tui.seat import PersonSeat
from duelmahjong.tui.settlement import SettlementView
from duelmahjong.tui.tiles import TileStyle, can_show_unicode
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2, tiles_pb2, wallet_pb2

K = play_pb2
UNICODE, ASCII = TileStyle(unicode=True), TileStyle(unicode=False)


def _legal(*actions: play_pb2.LegalAction, sequence: int = 9) -> play_pb2.LegalActions:
    return play_pb2.LegalActions(
        sequence=sequence,
        actions=[*actions, K.LegalAction(kind=K.ACTION_KIND_LEAVE)],
        decision_millis_remaining=15000,
        time_bank_millis_remaining=30000,
    )


def _view(legal: play_pb2.LegalActions | None = None, drawn: str = "7z") -> play_pb2.SeatView:
    river = [play_pb2.Discard(tile=t) for t in ["1m", "9p", "5z", "3s"] * 9]
    seats = [
        play_pb2.PublicSeatState(
            seat=rules_pb2.SEAT_FIRST,
            player_id="me",
            display_name="Ana",
            seat_wind=rules_pb2.WIND_EAST,
            dealer=True,
            concealed_count=10,
            holding_drawn_tile=True,
            melds=[tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_PONG, tiles="777z")],
            discards=river,
        ),
        play_pb2.PublicSeatState(
            seat=rules_pb2.SEAT_SECOND,
            player_id="bot-1",
            display_name="房间里最长的机器人名字 Bot",
            seat_wind=rules_pb2.WIND_SOUTH,
            concealed_count=7,
            melds=[
                tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_CHI, tiles="345m"),
                tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_CONCEALED_KONG),
            ],
            discards=river,
            declared_ready=True,
        ),
    ]
    table = play_pb2.PublicTableState(
        hand_number=3,
        phase=K.HAND_PHASE_PLAY,
        wall_remaining=17,
        revealed_bonus_tiles="1m9s",
        multipliers=rules_pb2.Multipliers(negotiated=10, progressive=4, fan_rate=1000000),
        seats=seats,
        turn=rules_pb2.SEAT_FIRST,
    )
    view = play_pb2.SeatView(
        seat=rules_pb2.SEAT_FIRST, table=table, concealed="123m456p78s9s", drawn_tile=drawn
    )
    if legal is not None:
        view.legal_actions.CopyFrom(legal)
    return view


def _columns(fragments: list[tuple[str, str]]) -> int:
    return wcswidth("".join(text for _, text in fragments))


def test_tiles_take_two_columns_each_in_both_styles() -> None:
    for style in (UNICODE, ASCII):
        for tile in ("1m", "9p", "5s", "1z", "7z", "8f"):
            assert wcswidth(style.tile(tile)) == 2, (style, tile)
    assert UNICODE.tile("7z") == "🀄" and UNICODE.tile("5z") == "🀆 " and ASCII.tile("1z") == "Ea"
    assert not can_show_unicode(io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert can_show_unicode(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))


def test_numbered_keys_list_the_winning_and_claiming_actions_first() -> None:
    legal = _legal(
        K.LegalAction(kind=K.ACTION_KIND_PASS),
        K.LegalAction(kind=K.ACTION_KIND_CHI, choices=["345m", "456m"]),
        K.LegalAction(kind=K.ACTION_KIND_PONG),
        K.LegalAction(kind=K.ACTION_KIND_WIN),
    )
    choices = numbered_choices(legal)
    assert [(c.key, c.label) for c in choices] == [
        ("1", "胡 win"),
        ("2", "碰 pong"),
        ("3", "吃 chi 345m"),
        ("4", "吃 chi 456m"),
        ("5", "pass"),
    ]
    assert choices[3].action.chi.tiles == "456m"
    guess = numbered_choices(
        _legal(K.LegalAction(kind=K.ACTION_KIND_GUESS, choices=["big", "small", "collect"]))
    )
    assert [c.label for c in guess] == ["猜大小 big", "猜大小 small", "keep the winnings"]
    assert guess[2].action.guess.skip


async def _deciding(
    legal: play_pb2.LegalActions, drawn: str = "7z"
) -> tuple[PersonSeat, asyncio.Future[K.Action]]:
    seat = PersonSeat("me")
    view = _view(legal, drawn)
    seat(table_pb2.PlayResponse(view=view))
    return seat, seat.decide(view, legal)


def test_keys_pick_a_tile_and_discard_it_and_declare_ready_with_it() -> None:
    async def main() -> None:
        discard = K.LegalAction(kind=K.ACTION_KIND_DISCARD, choices=["1m", "2m", "8s", "7z"])
        ready = K.LegalAction(kind=K.ACTION_KIND_DECLARE_READY, choices=["8s"])
        seat, answer = await _deciding(_legal(discard, ready))
        assert seat.hand()[seat.cursor] == "7z"  # the drawn tile first: the default discard
        seat.press("enter")
        assert (await answer).discard.tile == "7z"

        seat, answer = await _deciding(_legal(discard, ready))
        seat.press("left")
        seat.press("left")
        assert seat.hand()[seat.cursor] == "8s"
        seat.press("r")
        assert (await answer).declare_ready.discard == "8s"

        seat, answer = await _deciding(_legal(discard))
        seat.press("right")  # wraps to the first tile
        seat.press("r")  # not offered: a note, no answer
        assert not answer.done() and "报听" in seat.note
        seat.press("enter")
        assert (await answer).discard.tile == "1m"

    asyncio.run(main())


def test_escape_asks_twice_and_between_hands_c_continues() -> None:
    async def main() -> None:
        seat, answer = await _deciding(_legal(K.LegalAction(kind=K.ACTION_KIND_PASS)))
        seat.press("x")
        assert not answer.done() and "escape" in seat.note
        seat.press("left")  # any other key keeps playing
        seat.press("x")
        assert not answer.done()
        seat.press("x")
        assert (await answer).HasField("leave")

        between = play_pb2.LegalActions(
            sequence=70,
            actions=[K.LegalAction(kind=K.ACTION_KIND_CONTINUE), K.LegalAction(kind=K.ACTION_KIND_LEAVE)],
        )
        seat, answer = await _deciding(between)
        assert seat.between_hands()
        seat.press("g")  # no 乾坤大挪移 held: nothing
        assert not answer.done()
        seat.press("c")
        assert (await answer).HasField("continue_playing")

    asyncio.run(main())


def test_exchange_marks_tiles_and_items_are_typed() -> None:
    async def main() -> None:
        exchange = K.LegalAction(kind=K.ACTION_KIND_EXCHANGE, choices=["1m", "2m", "7z"], max_tiles=2)
        seat, answer = await _deciding(_legal(exchange), drawn="")
        for key in ("space", "right", "space", "right", "space"):
            seat.press(key)
        seat.press("enter")  # three marked, two allowed
        assert not answer.done() and "at most 2" in seat.note
        seat.press("space")
        seat.press("enter")
        assert (await answer).exchange.tiles == "1m2m"

        item = K.LegalAction(kind=K.ACTION_KIND_USE_ITEM, choices=["1m>7z", "123m"])
        seat, answer = await _deciding(
            _legal(K.LegalAction(kind=K.ACTION_KIND_DISCARD, choices=["1m"]), item)
        )
        for key in ("i", "1", "m", ">", "7", "z", "enter"):
            seat.press(key)
        used = (await answer).use_item
        assert (used.item, used.tiles, used.target) == (rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, "1m", "7z")

    asyncio.run(main())


def test_a_decision_the_server_moved_past_is_dropped() -> None:
    async def main() -> None:
        seat, answer = await _deciding(_legal(K.LegalAction(kind=K.ACTION_KIND_PASS)))
        seat(table_pb2.PlayResponse(view=_view()))  # a view without legal actions: timed out
        assert answer.cancelled() and not seat.deciding()
        seat.on_break("UNAVAILABLE: gone")
        assert seat.reconnecting and seat.reconnects == 1
        seat(table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=40)))
        assert not seat.reconnecting

    asyncio.run(main())


@pytest.mark.parametrize("style", [UNICODE, ASCII])
def test_the_table_fits_80_by_24(style: TileStyle) -> None:
    async def main() -> None:
        legal = _legal(
            K.LegalAction(kind=K.ACTION_KIND_DISCARD, choices=["1m", "7z"]),
            K.LegalAction(kind=K.ACTION_KIND_DECLARE_READY, choices=["7z"]),
            K.LegalAction(kind=K.ACTION_KIND_KONG, choices=["7z"]),
            K.LegalAction(kind=K.ACTION_KIND_USE_ITEM, choices=["1m>7z"]),
        )
        seat, _ = await _deciding(legal)
        seat.note = "refused: " + "a very long reason " * 10
        lines = Board(seat, style, "决斗麻将 · 高手场 with a long name").lines(80)
        assert len(lines) <= 20
        for line in lines:
            assert _columns(line) <= 80, line
        text = "\n".join("".join(t for _, t in line) for line in lines)
        assert "wall 17" in text and "×10×4" in text and "8 concealed" not in text and "7 concealed" in text
        assert "Enter discard it" in text and "r 报听" in text and "1 杠 kong 7z" in text and "i item" in text
        assert "x escape" in text and "bank 30.0 s" in text

    asyncio.run(main())


def test_the_settlement_shows_its_breakdown_and_ratings() -> None:
    seat = PersonSeat("me")
    seat(table_pb2.PlayResponse(view=_view()))
    opened = play_pb2.TableInfo(
        players=[
            play_pb2.TablePlayer(seat=rules_pb2.SEAT_FIRST, player_id="me", display_name="Ana"),
            play_pb2.TablePlayer(seat=rules_pb2.SEAT_SECOND, player_id="bot-1", display_name="Bot 1"),
        ]
    )
    seat(table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=1, table_opened=opened)))
    evaluation = rules_pb2.Evaluation(
        total_fan=3,
        patterns=[rules_pb2.PatternScore(id=rules_pb2.PATTERN_ID_ALL_SIMPLES, name_zh="断幺九", fan=3)],
    )
    revealed = play_pb2.HandRevealed(
        outcome=rules_pb2.HAND_OUTCOME_WIN,
        winner=rules_pb2.SEAT_FIRST,
        self_drawn=True,
        description=rules_pb2.HandDescription(concealed="123m456p78s9s", win_tile="6s"),
        evaluation=evaluation,
        hands=[play_pb2.SeatHand(seat=rules_pb2.SEAT_FIRST, concealed="123m456p78s9s")],
    )
    seat(table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=50, hand_revealed=revealed)))
    settlement = rules_pb2.Settlement(
        hand_id="t-h3",
        total_fan=3,
        fan_amount=60,
        fee=2,
        multipliers=rules_pb2.Multipliers(negotiated=2, progressive=1, fan_rate=10),
        transfer=rules_pb2.Transfer(from_player_id="bot-1", to_player_id="me", amount=50),
        capped_by_carry=True,
        postings=[
            rules_pb2.Posting(account="player:me", amount=-2, reason=rules_pb2.POSTING_REASON_FEE),
            rules_pb2.Posting(account="player:bot-1", amount=-2, reason=rules_pb2.POSTING_REASON_FEE),
        ],
    )
    ratings = [
        wallet_pb2.RatingChange(
            seat=rules_pb2.SEAT_FIRST,
            before=wallet_pb2.SkillRating(rating=1500),
            after=wallet_pb2.SkillRating(rating=1512.4),
        )
    ]
    settled = play_pb2.HandSettled(
        settlement=settlement,
        balances=[play_pb2.SeatBalance(seat=rules_pb2.SEAT_FIRST, balance=1046)],
        ratings=ratings,
    )
    seat(table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=51, hand_settled=settled)))
    lines = SettlementView(seat, UNICODE).lines(80)
    for line in lines:
        assert _columns(line) <= 80, line
    text = "\n".join("".join(t for _, t in line) for line in lines)
    assert "胡 you win self-drawn (自摸) · 3 fan" in text
    assert "断幺九 all_simples 3" in text
    assert "3 fan × 2 negotiated × 1 progressive × 10 = 60" in text
    assert "Bot 1 → you 50 威望 (capped by a carry)" in text
    assert "fees       you 2, Bot 1 2" in text and "you 1046" in text
    assert "you 1500 → 1512 (+12)" in text


def test_rooms_show_their_rules_and_the_queue_its_negotiation() -> None:
    async def main() -> None:
        rules = rules_pb2.RoomRules(
            profile=rules_pb2.PROFILE_DUEL,
            fan_rate=10,
            fee=5,
            carry_min=100,
            carry_max=1000,
            claim_window_ms=1500,
        )
        room = mm.Room(room_id="duel-x", name="决斗", rules=rules, times=mm.RoomTimes(bot_fill_millis=30000))
        first, second = room_lines(room)
        assert first == "决斗  [duel-x] · duel"
        assert second == "1番=10 威望 · fee 5 · carry 100–1000 · claim window 1.5 s · bot after 30 s"
        rooms = RoomsScreen([room], "Ana", "威望 1000")
        for line in rooms.lines(80):
            assert _columns(line) <= 80, line
        rooms.press("o")
        assert await rooms.done == ("open", room)

        sent: list[tuple[str, int, bool]] = []
        queue = QueueScreen("duel-x", 500, 30000, lambda p, m, a: sent.append((p, m, a)))
        queue.update(mm.QueueUpdate(private_code=mm.PrivateCode(code="K7P2QX")))
        state = mm.NEGOTIATION_STATE_PROPOSED
        queue.update(
            mm.QueueUpdate(
                negotiation=mm.Negotiation(pairing_id="p1", state=state, multiplier=5, your_turn=True)
            )
        )
        text = "\n".join("".join(t for _, t in line) for line in queue.lines(80))
        assert "K7P2QX" in text and "y accept 5×" in text
        queue.press("n")
        assert sent == [("p1", 0, False)]

    asyncio.run(main())


def test_the_guest_file_keeps_one_guest_per_wallet(tmp_path: Path) -> None:
    store = GuestStore(tmp_path / "deep" / "guest.json")
    assert store.get("w:1") is None and store.remembered_name() == ""
    store.put("w:1", Guest("p1", "Ana", "r1"))
    store.put("w:2", Guest("p2", "Bo", "r2"))
    assert store.get("w:1") == Guest("p1", "Ana", "r1") and store.remembered_name() == "Bo"
    assert (store.path.stat().st_mode & 0o777) == 0o600
    assert default_path({"DUEL_PLAY_CONFIG": "/x/g.json", "XDG_CONFIG_HOME": "/c"}) == Path("/x/g.json")
    assert default_path({"XDG_CONFIG_HOME": "/c"}) == Path("/c/duelmahjong/guest.json")


def test_a_claim_points_at_the_opponents_last_discard() -> None:
    async def main() -> None:
        legal = _legal(K.LegalAction(kind=K.ACTION_KIND_PONG), K.LegalAction(kind=K.ACTION_KIND_PASS))
        seat, _ = await _deciding(legal, drawn="")
        rows = ["".join(t for _, t in line) for line in Board(seat, ASCII, "room").lines(80)]
        opponent_river = rows[5:7]
        assert opponent_river[-1].rstrip().endswith("3s ◀"), rows
        assert not any("◀" in row for row in rows[8:]), rows
        assert "1 碰 pong   2 pass" in "\n".join(rows)

    asyncio.run(main())


def test_the_guest_file_keeps_the_seat_of_an_open_table(tmp_path: Path) -> None:
    store = GuestStore(tmp_path / "guest.json")
    ready = mm.TableReady(
        table_id="t-1", address="127.0.0.1:1", table_ticket="ticket", seat=rules_pb2.SEAT_SECOND
    )
    store.put("w", Guest("p1", "Ana", "r1").at(ready))
    kept = store.get("w")
    assert kept is not None and kept.seat() == ready
    store.put("w", kept.at(None))
    left = store.get("w")
    assert left is not None and left.seat() is None and left.refresh_token == "r1"
    assert Guest("p", "n", "r", table="not base64!").seat() is None
