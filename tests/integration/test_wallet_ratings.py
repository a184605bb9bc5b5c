"""Skill ratings on real Postgres: a hand moves both seats' ratings in its own ledger transaction,
exactly once, whichever path writes it (known rows, snapshot, locked), and the rating boards leave the
house bots out.
"""

from __future__ import annotations

import asyncio

import pytest

from services.wallet.commands import EscapePenalty, Grant, HandSettlement, TableOpening
from services.wallet.ledger import Status
from services.wallet.ledger_store import LedgerStore
from services.wallet.players import PlayerStore
from services.wallet.rating import DRAW, LOSS, START, WIN, Skill, rate
from services.wallet.rating_board import RatingBoard

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger(wallet_ledger: LedgerStore) -> LedgerStore:
    return wallet_ledger


async def player(ledger: LedgerStore, player_id: str, prestige: int = 1000, *, bot: bool = False) -> str:
    players = PlayerStore(ledger.pool, ledger)
    if bot:  # the wallet's own way: its role may not update a player
        assert await players.ensure_bot(player_id, player_id.upper(), None)
    else:
        await players.create_player(player_id, player_id.upper())
    grant = Grant(f"start:{player_id}", player=player_id, amount=prestige, grant_reason="test")
    await ledger.execute(grant, record_rejection=False)
    return player_id


def won(hand_id: str, winner: str, loser: str, *, first: str, profile: str = "duel") -> HandSettlement:
    seated = (first, loser if first == winner else winner)
    return HandSettlement(
        f"hand:{hand_id}",
        table_id="t1",
        hand_id=hand_id,
        payer=loser,
        payee=winner,
        stake=10,
        seated=seated,
        fee=1,
        profile=profile,
    )


async def stored(ledger: LedgerStore, player_id: str, profile: str = "duel") -> Skill:
    return (await RatingBoard(ledger.pool).of(player_id))[profile]


@pytest.mark.asyncio
async def test_a_hand_moves_both_ratings_once_and_a_redelivery_answers_the_same_changes(
    ledger: LedgerStore,
) -> None:
    await player(ledger, "a")
    await player(ledger, "b")
    command = won("h1", "b", "a", first="a")
    first = await ledger.execute(command, record_rejection=True)
    assert first.status is Status.APPLIED
    a_after, b_after = rate(START, START, LOSS)
    assert [(m.player_id, m.seat, m.profile) for m in first.ratings] == [("a", 1, "duel"), ("b", 2, "duel")]
    assert [(m.before, m.after) for m in first.ratings] == [(START, a_after), (START, b_after)]
    assert b_after.rating > 1500 > a_after.rating and b_after.deviation < 350
    again = await ledger.execute(command, record_rejection=True)
    assert again.duplicate and again.ratings == first.ratings
    assert await stored(ledger, "a") == a_after and await stored(ledger, "b") == b_after
    assert (await stored(ledger, "a", "erren")) == START  # the other profile did not move


@pytest.mark.asyncio
async def test_concurrent_deliveries_of_one_hand_move_the_ratings_once(ledger: LedgerStore) -> None:
    """Two replicas (no process state shared) apply the same hand at once: one transaction, one move,
    and both answer the same rating changes."""
    await player(ledger, "a")
    await player(ledger, "b")
    command = won("h1", "a", "b", first="a")
    replicas = [LedgerStore(ledger.pool) for _ in range(3)]
    outcomes = await asyncio.gather(*(r.execute(command, record_rejection=True) for r in replicas))
    assert len({o.transaction_id for o in outcomes}) == 1 and sum(not o.duplicate for o in outcomes) == 1
    assert all(o.ratings == outcomes[0].ratings for o in outcomes)
    assert (await stored(ledger, "a")).hands_rated == 1


@pytest.mark.asyncio
async def test_every_write_path_rates_on_the_current_ratings(ledger: LedgerStore) -> None:
    """Hands alternate between two replicas, so their known rows and snapshots go stale: each hand
    is still rated on the ratings the previous one left, as a sequential replay computes them."""
    await player(ledger, "a")
    await player(ledger, "b")
    ours, theirs = ledger, LedgerStore(ledger.pool)
    expected = (START, START)
    for number, (store, result) in enumerate(
        [(ours, WIN), (ours, WIN), (theirs, LOSS), (ours, DRAW), (theirs, WIN), (theirs, LOSS)]
    ):
        if result == DRAW:
            command = HandSettlement(
                f"hand:h{number}", table_id="t1", hand_id=f"h{number}", seated=("a", "b"), profile="duel"
            )
        else:
            winner, loser = ("a", "b") if result == WIN else ("b", "a")
            command = won(f"h{number}", winner, loser, first="a")
        outcome = await store.execute(command, record_rejection=True)
        assert [m.before for m in outcome.ratings] == list(expected)
        expected = rate(expected[0], expected[1], result)
        assert [m.after for m in outcome.ratings] == list(expected)
    assert ours.paths["known"] >= 1 and ours.paths["known_stale"] >= 1
    assert (await stored(ledger, "a"), await stored(ledger, "b")) == expected
    assert expected[0].hands_rated == 6


@pytest.mark.asyncio
async def test_an_escape_is_a_loss_for_the_escaper_and_a_drawn_hand_a_draw(ledger: LedgerStore) -> None:
    await player(ledger, "a")
    await player(ledger, "b")
    await ledger.execute(TableOpening("open:t1", table_id="t1", pairing_id="p1"), record_rejection=False)
    escape = EscapePenalty(
        "escape:h1",
        table_id="t1",
        hand_id="h1",
        escaper="b",
        opponent="a",
        penalty=50,
        seated=("a", "b"),
        profile="erren",
    )
    outcome = await ledger.execute(escape, record_rejection=True)
    a_after, b_after = rate(START, START, WIN)
    assert [m.after for m in outcome.ratings] == [a_after, b_after]
    assert await stored(ledger, "b", "erren") == b_after and await stored(ledger, "b") == START
    drawn = HandSettlement("hand:h2", table_id="t1", hand_id="h2", seated=("a", "b"), fee=1, profile="erren")
    outcome = await ledger.execute(drawn, record_rejection=True)
    assert [m.after for m in outcome.ratings] == list(rate(a_after, b_after, DRAW))


@pytest.mark.asyncio
async def test_a_refused_or_unrated_hand_moves_no_rating(ledger: LedgerStore) -> None:
    await player(ledger, "a")
    refused = won("h1", "a", "ghost", first="a")
    outcome = await ledger.execute(refused, record_rejection=True)
    assert outcome.status is Status.REJECTED and outcome.ratings == ()
    await player(ledger, "b")
    unrated = HandSettlement("hand:h2", table_id="t1", hand_id="h2", payer="a", payee="b", stake=5)
    assert (await ledger.execute(unrated, record_rejection=True)).ratings == ()
    assert await ledger.pool.fetchval("SELECT count(*) FROM wallet.ratings") == 0


@pytest.mark.asyncio
async def test_rating_boards_rank_people_by_conservative_rating_and_leave_bots_out(
    ledger: LedgerStore,
) -> None:
    for name in ("ann", "bea", "cid"):
        await player(ledger, name)
    await player(ledger, "bot-1", bot=True)
    # The bot wins everything: rated (its rating moves) but never listed.
    hands = [
        ("bot-1", "ann"),
        ("bot-1", "bea"),
        ("ann", "bea"),
        ("ann", "cid"),
        ("bea", "cid"),
        ("bot-1", "cid"),
    ]
    for number, (winner, loser) in enumerate(hands):
        await ledger.execute(won(f"h{number}", winner, loser, first=winner), record_rejection=True)
    board = RatingBoard(ledger.pool)
    bot = await stored(ledger, "bot-1")
    assert bot.hands_rated == 3 and bot.rating > 1500
    top = await board.top("duel", 10)
    assert [p.player_id for p in top] == ["ann", "bea", "cid"]
    assert [p.rank for p in top] == [1, 2, 3]
    assert [p.skill for p in top] == [await stored(ledger, p.player_id) for p in top]
    conservative = [p.skill.conservative for p in top]
    assert conservative == sorted(conservative, reverse=True)
    around = await board.around("cid", "duel", 1)
    assert [p.player_id for p in around] == ["bea", "cid"]
    around_bot = await board.around("bot-1", "duel", 1)
    assert "bot-1" not in [p.player_id for p in around_bot] and around_bot[0].player_id == "ann"
    assert await board.top("erren", 10) == []
