"""The client's baseline bot decides from a seat's view only, and answers one of the legal actions."""

from __future__ import annotations

from duelmahjong.client.play import MatchPlan, _Seat, continue_action
from duelmahjong.client.policy import BaselineBot, seat_board
from duelmahjong.v1 import matchmaking_pb2, play_pb2, rules_pb2, table_pb2, tiles_pb2


def _view(concealed: str, drawn: str = "", profile: int = rules_pb2.PROFILE_DUEL) -> play_pb2.SeatView:
    table = play_pb2.PublicTableState(
        profile=profile,
        seats=[
            play_pb2.PublicSeatState(seat=rules_pb2.SEAT_FIRST, dealer=True),
            play_pb2.PublicSeatState(
                seat=rules_pb2.SEAT_SECOND,
                melds=[tiles_pb2.Meld(kind=tiles_pb2.MELD_KIND_PONG, tiles="999p")],
                discards=[play_pb2.Discard(tile="1z"), play_pb2.Discard(tile="5s")],
            ),
        ],
    )
    return play_pb2.SeatView(seat=rules_pb2.SEAT_FIRST, table=table, concealed=concealed, drawn_tile=drawn)


def _legal(*entries: tuple[int, list[str]], sequence: int = 7) -> play_pb2.LegalActions:
    return play_pb2.LegalActions(
        sequence=sequence, actions=[play_pb2.LegalAction(kind=k, choices=c) for k, c in entries]
    )


def test_the_board_holds_only_what_the_seat_may_see() -> None:
    board = seat_board(_view("123456789m1122z", drawn="3z"), 0)
    assert sum(board.hands[0]) == 14 and sum(board.hands[1]) == 0  # nothing of the opponent's hand
    assert board.melded_tiles(1) == [17, 17, 17]  # 999p
    assert board.last_discard == 22  # 5s, the opponent's last discard
    assert board.dealer == 0


def test_the_bot_wins_when_it_may() -> None:
    view = _view("123456789m1122z", drawn="2z")
    legal = _legal(
        (play_pb2.ACTION_KIND_WIN, []),
        (play_pb2.ACTION_KIND_DISCARD, ["1m", "2z"]),
    )
    assert BaselineBot().decide(view, legal).WhichOneof("kind") == "win"


def test_the_bot_discards_a_legal_tile_and_keeps_its_shape() -> None:
    view = _view("123456789m1127z", drawn="2z")
    choices = ["1m", "2m", "3m", "4m", "5m", "6m", "7m", "8m", "9m", "1z", "2z", "7z"]
    action = BaselineBot().decide(view, _legal((play_pb2.ACTION_KIND_DISCARD, choices)))
    assert action.WhichOneof("kind") == "discard"
    assert action.discard.tile in ("7z", "1z")  # an isolated honour, not a tile of the straight


def test_the_bot_claims_only_what_brings_it_closer() -> None:
    legal = _legal((play_pb2.ACTION_KIND_PONG, []), (play_pb2.ACTION_KIND_PASS, []))
    # The opponent's last discard is 5s.
    helps = _view("123456789m55s13z")
    assert BaselineBot().decide(helps, legal).WhichOneof("kind") == "pong"  # ready after its discard
    ready = _view("123456789m1155s")  # ready already: the pong's discard would leave it no closer
    assert BaselineBot().decide(ready, legal).WhichOneof("kind") == "pass"


def test_a_seat_answers_each_decision_once_and_leaves_after_its_hands() -> None:
    ready = matchmaking_pb2.TableReady(table_id="t-1", table_ticket="ticket", seat=rules_pb2.SEAT_FIRST)
    seat = _Seat(ready, BaselineBot(), MatchPlan(hands=1))
    view = _view("123456789m1127z", drawn="2z")
    view.legal_actions.CopyFrom(_legal((play_pb2.ACTION_KIND_DISCARD, ["7z"]), sequence=9))
    first = seat.take(table_pb2.PlayResponse(view=view))
    assert first is not None and first.last_seen_sequence == 9 and first.table_ticket == "ticket"
    assert seat.take(table_pb2.PlayResponse(view=view)) is None  # the same decision again: no answer

    settled = play_pb2.SeatEvent(sequence=10, hand_settled=play_pb2.HandSettled())
    assert seat.take(table_pb2.PlayResponse(event=settled)) is None
    between = _view("")
    between.legal_actions.CopyFrom(
        _legal((play_pb2.ACTION_KIND_CONTINUE, []), (play_pb2.ACTION_KIND_LEAVE, []), sequence=10)
    )
    answer = seat.take(table_pb2.PlayResponse(view=between))
    assert answer is not None and answer.action.WhichOneof("kind") == "leave"  # one hand was the plan
    assert continue_action() is not None


def test_after_a_reconnect_an_unacknowledged_answer_is_sent_again_unchanged_and_an_applied_one_not() -> None:
    ready = matchmaking_pb2.TableReady(table_id="t-1", table_ticket="ticket", seat=rules_pb2.SEAT_FIRST)
    seat = _Seat(ready, BaselineBot(), MatchPlan(hands=1))
    view = _view("123456789m1127z", drawn="2z")
    view.legal_actions.CopyFrom(_legal((play_pb2.ACTION_KIND_DISCARD, ["7z", "2z"]), sequence=9))
    sent = seat.take(table_pb2.PlayResponse(view=view))
    assert sent is not None and sent.client_action_id == 1

    seat.reconnected()  # the stream broke; the resumed view offers the same decision: never applied
    again = seat.take(table_pb2.PlayResponse(view=view))
    assert again is not None and again.SerializeToString() == sent.SerializeToString()
    assert (seat.outcome.reconnects, seat.outcome.resent_actions) == (1, 1)

    seat.reconnected()  # broke again; this time the discard was applied: the next decision is offered
    seat.take(
        table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=10, tile_discarded=play_pb2.TileDiscarded()))
    )
    later = _view("123456789m1127z", drawn="3z")
    later.legal_actions.CopyFrom(_legal((play_pb2.ACTION_KIND_DISCARD, ["7z", "3z"]), sequence=11))
    answer = seat.take(table_pb2.PlayResponse(view=later))
    assert answer is not None and answer.client_action_id == 2 and answer.last_seen_sequence == 11
    assert seat.outcome.resent_actions == 1

    # A refused answer is never sent again: its decision, offered anew, gets a fresh one.
    stale = table_pb2.ActionRejected(code=table_pb2.REJECTION_CODE_STALE, client_action_id=2, view=later)
    retry = seat.take(table_pb2.PlayResponse(rejected=stale))
    assert retry is not None and retry.client_action_id == 3 and seat.outcome.resent_actions == 1


def test_the_bot_uses_swap_sun_for_sky_only_when_it_lowers_shanten_t6() -> None:
    # Ready on 1z/2z with 3z drawn: turning the 3z into a 1z wins (111z + 22z); into 4z changes nothing.
    view = _view("123456789m1122z", drawn="3z")
    discards = (play_pb2.ACTION_KIND_DISCARD, ["1m", "3z"])
    swaps = (play_pb2.ACTION_KIND_USE_ITEM, ["3z>4z", "3z>1z", "123m"])
    action = BaselineBot().decide(view, _legal(swaps, discards))
    assert action.WhichOneof("kind") == "use_item"
    assert (action.use_item.item, action.use_item.tiles, action.use_item.target) == (
        rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY,
        "3z",
        "1z",
    )
    # A swap that does not bring the hand closer keeps the item; the bot plays on as before.
    useless = (play_pb2.ACTION_KIND_USE_ITEM, ["3z>4z"])
    assert BaselineBot().decide(view, _legal(useless, discards)).WhichOneof("kind") == "discard"


def test_the_board_shows_rivers_ready_declarations_and_bonus_tiles() -> None:
    view = _view("123456789m1122z", drawn="3z")
    view.table.revealed_bonus_tiles = "5m7z"
    view.table.wall_remaining = 30
    opponent = view.table.seats[1]
    opponent.declared_ready = True
    opponent.discards[0].declared_ready = True
    board = seat_board(view, 0)
    assert board.ready == [False, True] and board.bonus == (4, 33)
    assert board.rivers[1] == [27, 22] and board.river_marks[1] == [[27, 1], [22, 0]]
    assert board.wall_remaining == 30 and board.last_draw == 29
    assert board.keys[0] != [0, 0, 0, 0]  # the engine's suit keys follow the tiles (bots read them)


def test_the_strong_bot_plays_over_the_contract_as_it_plays_in_the_engine() -> None:
    from duelmahjong.engine import actions as A
    from duelmahjong.engine.bots import strong
    from duelmahjong.engine.settings import RoomSettings
    from duelmahjong.engine.table import Table
    from duelmahjong.evaluation.contract import contract_agent
    from duelmahjong.evaluation.runner import evaluate
    from duelmahjong.evaluation.visibility import seat_state

    agent = contract_agent("strong@contract")
    assert agent is not None and agent.name == "strong@contract"
    for seed in range(8):
        table = Table(RoomSettings(profile="duel"))
        agent.bind(table)
        table.start_hand(seed)
        while table.outcome is None:
            seat = next(s for s in (0, 1) if [a for a in table.legal_actions(s) if a.kind != A.LEAVE])
            legal = table.legal_actions(seat)
            direct = strong.choose(seat_state(table.state, seat), seat, legal)
            assert agent.decide(seat_state(table.state, seat), seat, legal) == direct
            table.apply(direct)
    for profile in ("duel", "erren"):  # as room bots play it: stronger than the house bot
        tally = evaluate(RoomSettings(profile=profile), "strong@contract", "house", hands=200, seed=4)
        mean, half = tally.per_hand()
        assert mean - half > 0, (profile, mean, half)
