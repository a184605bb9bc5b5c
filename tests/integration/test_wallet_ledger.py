"""The prestige ledger on real Postgres: caps (H1), escape (H3), fees, holds, items (T6), 猜大小 (T12).

Every test ends with the ledger's audit: balances replay from their entries, every transaction sums
to zero, the grand total is zero, held prestige equals the open holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from duelmahjong.rules.settlement import duel_transfer
from services.wallet.commands import (
    Charge,
    Command,
    EscapePenalty,
    Guess,
    GuessSettlement,
    HandSettlement,
    ItemUse,
    PlaceHold,
    ReleaseHolds,
    TableOpening,
    carried_transfer,
)
from services.wallet.commands import Grant as GrantCommand
from services.wallet.errors import (
    HoldError,
    InsufficientPrestigeError,
    InvalidAmountError,
    UnknownPlayerError,
)
from services.wallet.ledger import Status
from services.wallet.ledger_store import LedgerStore
from services.wallet.levels import DEFAULT_LEVELS, LevelTable
from services.wallet.players import PlayerStore

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger(wallet_ledger: LedgerStore) -> LedgerStore:
    return wallet_ledger


async def player(ledger: LedgerStore, player_id: str, prestige: int) -> str:
    await PlayerStore(ledger.pool, ledger).create_player(player_id, player_id.upper())
    grant = GrantCommand(f"start:{player_id}", player=player_id, amount=prestige, grant_reason="test")
    await ledger.execute(grant, record_rejection=False)
    return player_id


async def hold(ledger: LedgerStore, pairing: str, player_id: str, carry: int, fee: int = 0) -> None:
    command = PlaceHold(
        f"hold:{pairing}:{player_id}", pairing_id=pairing, player=player_id, carry=carry, fee=fee
    )
    await ledger.execute(command, record_rejection=False)


async def hand(ledger: LedgerStore, hand_id: str, payer: str, payee: str, stake: int) -> None:
    command = HandSettlement(
        f"hand:{hand_id}", table_id="t1", hand_id=hand_id, payer=payer, payee=payee, stake=stake
    )
    outcome = await ledger.execute(command, record_rejection=True)
    assert outcome.status is Status.APPLIED, outcome.reason


@pytest.mark.asyncio
async def test_h1_the_seeds_150_example(ledger: LedgerStore) -> None:
    # 002: a 1番=10威望 room, negotiated 5x, progressive 1x, 3 fan -> 3*5*1*10 = 150.
    stake = duel_transfer(
        3, fan_rate=10, negotiated=5, progressive=1, winner_carry=1000, loser_carry=1000
    ).fan_amount
    assert stake == 150 and carried_transfer(stake, 1000, 1000) == 150
    await player(ledger, "a", 2000)
    await player(ledger, "b", 2000)
    await hold(ledger, "p1", "a", 1000)
    await hold(ledger, "p1", "b", 1000)
    await hand(ledger, "h1", "b", "a", stake)
    assert await ledger.balance("a") == (2150, 1150)  # the win stays at the table: carry 1150
    assert await ledger.balance("b") == (1850, 850)


@pytest.mark.asyncio
async def test_h1_winner_carry_caps_the_transfer(ledger: LedgerStore) -> None:
    # 002: "玩家A身上携带1000威望进入游戏，则在本盘游戏中他所能赢取的威望不超过1000"
    await player(ledger, "a", 5000)
    await player(ledger, "b", 5000)
    await hold(ledger, "p1", "a", 100)
    await hold(ledger, "p1", "b", 1000)
    await hand(ledger, "h1", "b", "a", 640)
    assert (await ledger.balance("a"))[0] == 5100
    assert (await ledger.balance("b"))[0] == 4900


@pytest.mark.asyncio
async def test_h1_loser_carry_caps_the_transfer_and_is_used_up(ledger: LedgerStore) -> None:
    # 002: the loser pays at most their carry, "直到扣到0为止"; the winner gets only that.
    await player(ledger, "a", 5000)
    await player(ledger, "b", 5000)
    await hold(ledger, "p1", "a", 1000)
    await hold(ledger, "p1", "b", 40, fee=10)
    await hand(ledger, "h1", "b", "a", 640)
    assert await ledger.balance("b") == (4960, 10)  # carry gone, the fee reserve is left
    await hand(ledger, "h2", "b", "a", 640)  # nothing left to lose in this pairing
    assert (await ledger.balance("b"))[0] == 4960
    assert (await ledger.balance("a"))[0] == 5040


@pytest.mark.asyncio
async def test_h3_escape_penalty_is_capped_by_the_escapers_carry(ledger: LedgerStore) -> None:
    await player(ledger, "esc", 3000)
    await player(ledger, "opp", 3000)
    await hold(ledger, "p1", "esc", 1000)
    await hold(ledger, "p1", "opp", 1000)
    penalty = 64 * 5 * 2 * 10  # duel top fan x negotiated x progressive x N = 6400
    command = EscapePenalty(
        "escape:h9", table_id="t1", hand_id="h9", escaper="esc", opponent="opp", penalty=penalty
    )
    await ledger.execute(command, record_rejection=True)
    assert (await ledger.balance("esc"))[0] == 2000
    assert (await ledger.balance("opp"))[0] == 4000


@pytest.mark.asyncio
async def test_h3_uncapped_escape_penalty_paid_in_full(ledger: LedgerStore) -> None:
    await player(ledger, "esc", 3000)
    await player(ledger, "opp", 3000)
    await hold(ledger, "p1", "esc", 1000)
    command = EscapePenalty(
        "escape:h9", table_id="t1", hand_id="h9", escaper="esc", opponent="opp", penalty=640
    )
    await ledger.execute(command, record_rejection=True)
    assert (await ledger.balance("esc"))[0] == 2360
    assert (await ledger.balance("opp"))[0] == 3640


@pytest.mark.asyncio
async def test_h1_h3_events_after_the_table_closed_are_still_bounded_by_its_carries(
    ledger: LedgerStore,
) -> None:
    await player(ledger, "a", 5000)
    await player(ledger, "b", 5000)
    opened = TableOpening("open:t1", table_id="t1", pairing_id="p1")
    await ledger.execute(opened, record_rejection=True)
    await hold(ledger, "p1", "a", 300)
    await hold(ledger, "p1", "b", 1000)
    await ledger.execute(ReleaseHolds("close:t1", pairing_id="p1", table_id="t1"), record_rejection=True)
    await hold(ledger, "p2", "a", 2000)  # a's next pairing must not lend its carry to table t1
    # The last hand's settlement and an escape penalty arrive after the close (another stream).
    await hand(ledger, "h9", "b", "a", 640)  # H1: a's carry at t1 was 300
    assert (await ledger.balance("a"))[0] == 5300 and (await ledger.balance("b"))[0] == 4700
    late = EscapePenalty("escape:h10", table_id="t1", hand_id="h10", escaper="a", opponent="b", penalty=6400)
    await ledger.execute(late, record_rejection=True)  # H3: a's carry at t1 is now 600
    assert await ledger.balance("a") == (4700, 2000)
    assert (await ledger.balance("b"))[0] == 5300


@pytest.mark.asyncio
async def test_h1_fee_on_a_drawn_hand(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hold(ledger, "p1", "a", 500, fee=10)
    await hold(ledger, "p1", "b", 500, fee=10)
    drawn = HandSettlement("hand:h1", table_id="t1", hand_id="h1")  # no payer: a drawn hand moves nothing
    assert (await ledger.execute(drawn, record_rejection=True)).status is Status.APPLIED
    for seat in ("a", "b"):
        fee = Charge(f"fee:h1:{seat}", table_id="t1", hand_id="h1", player=seat, amount=10, purpose="fee")
        await ledger.execute(fee, record_rejection=True)
    assert await ledger.balance("a") == (990, 500)  # the fee came out of the reserve, the carry is whole
    assert await ledger.balance("b") == (990, 500)
    await ledger.execute(ReleaseHolds("close:t1", pairing_id="p1"), record_rejection=True)
    assert await ledger.balance("a") == (990, 0)


@pytest.mark.asyncio
async def test_h1_a_drawn_hands_fees_are_its_own_transaction_with_both_balances(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hold(ledger, "p1", "a", 500, fee=10)
    await hold(ledger, "p1", "b", 500, fee=10)
    drawn = HandSettlement("hand:h1", table_id="t1", hand_id="h1", seated=("a", "b"), fee=10)
    outcome = await ledger.execute(drawn, record_rejection=True)
    assert outcome.balances == {"a": (990, 500), "b": (990, 500)}  # the reserves paid, carries whole
    assert sorted(outcome.postings) == [
        ("house:fees", 10, "fee"),
        ("house:fees", 10, "fee"),
        ("player:a", -10, "fee"),
        ("player:b", -10, "fee"),
    ]


@pytest.mark.asyncio
async def test_h1_fees_come_first_then_the_transfer_capped_by_what_the_carries_have_left(
    ledger: LedgerStore,
) -> None:
    """One transaction per hand: both fees (reserve first, then the carry), then the transfer capped
    by the carries as they stand after them; a repeat reports the same entries from the ledger."""
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hold(ledger, "p1", "a", 100, fee=5)
    await hold(ledger, "p1", "b", 50)  # no fee reserve: b's fee comes out of the carry
    won = HandSettlement(
        "hand:h1", table_id="t1", hand_id="h1", payer="b", payee="a", stake=640, seated=("a", "b"), fee=5
    )
    outcome = await ledger.execute(won, record_rejection=True)
    assert ("player:a", 45, "hand") in outcome.postings  # b's carry after its fee: 50 - 5
    assert sorted(outcome.postings) == [
        ("house:fees", 5, "fee"),
        ("house:fees", 5, "fee"),
        ("player:a", -5, "fee"),
        ("player:a", 45, "hand"),
        ("player:b", -45, "hand"),
        ("player:b", -5, "fee"),
    ]
    assert outcome.balances == {"a": (1040, 145), "b": (950, 0)}
    # Numbered in the plan's order, so each account's balance_after runs on in id order (the audit).
    entries = await ledger.pool.fetch(
        "SELECT purpose, balance_after FROM wallet.entries WHERE transaction_id = $1 ORDER BY id",
        outcome.transaction_id,
    )
    assert [(e["purpose"], e["balance_after"]) for e in entries] == [
        ("fee", 995),
        ("fee", 5),
        ("fee", 995),
        ("fee", 10),
        ("hand", 950),
        ("hand", 1040),
    ]
    again = await ledger.execute(won, record_rejection=True)
    assert again.duplicate and sorted(again.postings) == sorted(outcome.postings)
    assert again.balances == outcome.balances and again.transaction_id == outcome.transaction_id


@pytest.mark.asyncio
async def test_a_hand_names_its_two_players_and_every_amount_is_bounded(ledger: LedgerStore) -> None:
    for broken in (
        HandSettlement("hand:x", table_id="t1", hand_id="x", payer="a", payee="b", seated=("a", "c")),
        HandSettlement("hand:x", table_id="t1", hand_id="x", fee=5),
        HandSettlement("hand:x", table_id="t1", hand_id="x", payer="a", payee="b", stake=10**15 + 1),
        HandSettlement("hand:x", table_id="t1", hand_id="x", seated=("a", "b"), fee=10**12 + 1),
        EscapePenalty("escape:x", table_id="t1", hand_id="x", escaper="a", opponent="b", penalty=10**16),
        Charge("exchange:t1:9", table_id="t1", hand_id="x", player="a", amount=10**16, purpose="exchange"),
        GuessSettlement(
            "guess:x", table_id="t1", hand_id="x", player="a", stake=2**62, won=True, multiplier=5
        ),
    ):
        with pytest.raises(InvalidAmountError):
            await ledger.execute(broken, record_rejection=True)


@pytest.mark.asyncio
async def test_a_redelivered_command_is_applied_once(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    command = HandSettlement("hand:h1", table_id="t1", hand_id="h1", payer="a", payee="b", stake=300)
    first = await ledger.execute(command, record_rejection=True)
    again = await ledger.execute(command, record_rejection=True)
    assert not first.duplicate and again.duplicate
    assert again.transaction_id == first.transaction_id and again.balances == first.balances
    assert (await ledger.balance("a"))[0] == 700


async def _planned_on_a_snapshot(ledger: LedgerStore, conn: Any, command: Command) -> tuple[Any, Any]:
    """The snapshot path's first half: the read and the plan, with nothing written yet."""
    draft, read = await ledger._load(conn, command, lock=False)
    command.apply(draft)
    return draft, read


@pytest.mark.asyncio
async def test_a_plan_whose_player_changed_after_the_read_writes_nothing_and_goes_the_locked_way(
    ledger: LedgerStore,
) -> None:
    """Another replica (no in-process lock shared) settles for the same player between the read and
    the write: the version check refuses the write whole; the locked path then applies the command
    on the current balances."""
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hold(ledger, "p1", "a", 500, fee=10)
    await ledger.execute(TableOpening("open:t1", table_id="t1", pairing_id="p1"), record_rejection=False)
    late = HandSettlement("hand:h1", table_id="t1", hand_id="h1", payer="a", payee="b", stake=400)
    async with ledger.pool.acquire() as conn:
        draft, read = await _planned_on_a_snapshot(ledger, conn, late)
        other = HandSettlement("hand:h0", table_id="t1", hand_id="h0", payer="a", payee="b", stake=300)
        assert (await ledger.execute(other, record_rejection=True)).status is Status.APPLIED
        transaction_id, fresh = await ledger._write(conn, late, draft, read, check=True)
    assert transaction_id is None and not fresh
    assert (
        await ledger.pool.fetchval(
            "SELECT count(*) FROM wallet.transactions WHERE idempotency_key = $1", late.key
        )
        == 0
    )
    assert await ledger.balance("a") == (700, 210)  # untouched by the stale plan (carry 500 - 300 + fee 10)
    outcome = await ledger.execute(late, record_rejection=True)  # planned again on what is there now
    assert outcome.status is Status.APPLIED
    assert outcome.balances["a"] == (500, 10)  # H1: the carry left (200) capped the 400
    assert ledger.paths["snapshot"] >= 1


@pytest.mark.asyncio
async def test_a_house_account_that_moved_after_the_read_is_no_conflict(ledger: LedgerStore) -> None:
    """House accounts are not version-checked (any number of fees land on one): the write moves them
    by the planned amount, and each entry's balance_after counts from the locked balance."""
    await player(ledger, "a", 1000)
    await player(ledger, "c", 1000)
    fee = Charge("fee:h1:a", table_id="t1", hand_id="h1", player="a", amount=10)
    async with ledger.pool.acquire() as conn:
        draft, read = await _planned_on_a_snapshot(ledger, conn, fee)
        other = Charge("fee:h1:c", table_id="t1", hand_id="h1", player="c", amount=20)
        await ledger.execute(other, record_rejection=True)
        transaction_id, fresh = await ledger._write(conn, fee, draft, read, check=True)
    assert fresh and transaction_id is not None
    fees = await ledger.pool.fetch(
        "SELECT e.amount, e.balance_after FROM wallet.entries e "
        "JOIN wallet.accounts a ON a.id = e.account_id WHERE a.house = 'fees' ORDER BY e.id"
    )
    assert [(r["amount"], r["balance_after"]) for r in fees] == [(20, 20), (10, 30)]


@pytest.mark.asyncio
async def test_what_this_process_knew_is_checked_again_when_another_replica_moved_it(
    ledger: LedgerStore,
) -> None:
    """The second hand is planned on what the first one left (one round trip); another replica then
    settles for the same players, so the third plan's versions are old: the write refuses it whole,
    the rows are read afresh, and it is applied on the balances that are there now."""
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hand(ledger, "h1", "a", "b", 100)
    await hand(ledger, "h2", "a", "b", 100)
    assert ledger.paths["known"] == 1
    replica = LedgerStore(ledger.pool)
    await hand(replica, "h3", "b", "a", 50)
    await hand(ledger, "h4", "a", "b", 100)
    assert ledger.paths["known_stale"] == 1 and ledger.paths["snapshot"] == 2
    assert await ledger.balance("a") == (1000 - 100 - 100 + 50 - 100, 0)
    assert await ledger.balance("b") == (1000 + 100 + 100 - 50 + 100, 0)


@pytest.mark.asyncio
async def test_a_table_whose_pairing_was_recorded_after_it_was_known_is_read_again(
    ledger: LedgerStore,
) -> None:
    """A hand at t2 before the wallet heard of t2's pairing: known as "no pairing". TableOpening
    changes no player's version, so the write itself looks the table up again and refuses the plan
    that assumed none."""
    await player(ledger, "a", 1000)
    await player(ledger, "b", 1000)
    await hold(ledger, "p9", "a", 100)
    first = HandSettlement("hand:e1", table_id="t2", hand_id="e1", payer="a", payee="b", stake=10)
    await ledger.execute(first, record_rejection=True)
    replica = LedgerStore(ledger.pool)  # another replica records the opening
    await replica.execute(TableOpening("open:t2", table_id="t2", pairing_id="p9"), record_rejection=False)
    late = HandSettlement("hand:e2", table_id="t2", hand_id="e2", payer="a", payee="b", stake=500)
    outcome = await ledger.execute(late, record_rejection=True)
    assert ledger.paths["known_stale"] == 1
    assert outcome.status is Status.APPLIED and outcome.balances["a"] == (1000 - 10 - 90, 0)  # H1: p9's carry


@pytest.mark.asyncio
async def test_holds_reserve_prestige_and_release_it(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    with pytest.raises(InsufficientPrestigeError):
        await hold(ledger, "p1", "a", 995, fee=10)
    await hold(ledger, "p1", "a", 900, fee=10)
    with pytest.raises(HoldError, match="already holding"):
        await hold(ledger, "p2", "a", 50)
    burn = GrantCommand("burn:1", player="a", amount=-100, grant_reason="test burn")
    with pytest.raises(InsufficientPrestigeError):  # only free prestige can be burnt
        await ledger.execute(burn, record_rejection=False)
    await ledger.execute(ReleaseHolds("close:p1", pairing_id="p1", seats=("a",)), record_rejection=False)
    assert await ledger.balance("a") == (1000, 0)
    again = PlaceHold("hold:p1:a", pairing_id="p1", player="a", carry=900, fee=10)
    assert (await ledger.execute(again, record_rejection=False)).duplicate  # a retried request: no new hold
    assert await ledger.balance("a") == (1000, 0)
    other_key = PlaceHold("hold:p1:a:2", pairing_id="p1", player="a", carry=50)
    with pytest.raises(HoldError, match="already had"):  # a closed pairing takes no new hold
        await ledger.execute(other_key, record_rejection=False)


@pytest.mark.asyncio
async def test_a_closed_pairing_takes_no_new_hold(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    await player(ledger, "late", 1000)
    await hold(ledger, "p1", "a", 500)
    closed = ReleaseHolds("close:t1", pairing_id="p1", table_id="t1")  # TableClosed
    await ledger.execute(closed, record_rejection=True)
    with pytest.raises(HoldError, match="closed"):  # a hold racing the close cannot stay open
        await hold(ledger, "p1", "late", 100)
    await hold(ledger, "p2", "late", 100)  # other pairings are not affected
    assert await ledger.balance("late") == (1000, 100)


@pytest.mark.asyncio
async def test_t4_exchange_cost_needs_the_prestige(ledger: LedgerStore) -> None:
    await player(ledger, "a", 30)
    ok = Charge("exchange:t1:5", table_id="t1", player="a", amount=20, purpose="exchange")
    assert (await ledger.execute(ok, record_rejection=True)).status is Status.APPLIED
    too_much = Charge("exchange:t1:6", table_id="t1", player="a", amount=20, purpose="exchange")
    refused = await ledger.execute(too_much, record_rejection=True)
    assert refused.status is Status.REJECTED and "available" in refused.reason
    assert (await ledger.execute(too_much, record_rejection=True)).duplicate  # the refusal is recorded too
    assert (await ledger.balance("a"))[0] == 10


@pytest.mark.asyncio
async def test_t6_items_are_granted_and_spent_once(ledger: LedgerStore) -> None:
    await player(ledger, "a", 100)
    grant = GrantCommand("grant:items", player="a", items=(("grand_shift", 2),), grant_reason="reward")
    await ledger.execute(grant, record_rejection=False)
    for sequence in (1, 2, 3):
        use = ItemUse(f"item:t1:{sequence}", table_id="t1", player="a", item="grand_shift")
        outcome = await ledger.execute(use, record_rejection=True)
        assert outcome.status is (Status.APPLIED if sequence < 3 else Status.REJECTED)
    await ledger.execute(
        ItemUse("item:t1:1", table_id="t1", player="a", item="grand_shift"), record_rejection=True
    )
    assert await PlayerStore(ledger.pool, ledger).inventory("a") == {}


@pytest.mark.asyncio
async def test_t12_guess_is_paid_by_the_house_bank_or_paid_to_it(ledger: LedgerStore) -> None:
    await player(ledger, "a", 1000)
    won = GuessSettlement(
        "guess:h1", table_id="t1", hand_id="h1", player="a", stake=150, won=True, multiplier=3
    )
    await ledger.execute(won, record_rejection=True)
    assert (await ledger.balance("a"))[0] == 1450
    lost = GuessSettlement("guess:h2", table_id="t1", hand_id="h2", player="a", stake=150, won=False)
    await ledger.execute(lost, record_rejection=True)
    assert (await ledger.balance("a"))[0] == 1300


@pytest.mark.asyncio
async def test_t12_a_hands_guess_is_staked_on_the_capped_transfer_in_the_hands_own_transaction(
    ledger: LedgerStore,
) -> None:
    await player(ledger, "a", 5000)
    await player(ledger, "b", 5000)
    await hold(ledger, "p1", "a", 100)
    await hold(ledger, "p1", "b", 1000)
    right = HandSettlement(
        "hand:h1", table_id="t1", hand_id="h1", payer="b", payee="a", stake=640, guess=Guess(True, 3)
    )
    outcome = await ledger.execute(right, record_rejection=True)
    assert outcome.status is Status.APPLIED, outcome.reason
    # H1 caps the transfer at the winner's carry (100); the guess is staked on what moved: 100 x 3.
    assert (await ledger.balance("a"))[0] == 5000 + 100 + 300
    assert (await ledger.balance("b"))[0] == 4900
    entries = await ledger.pool.fetch(
        "SELECT purpose, amount FROM wallet.entries WHERE transaction_id = $1 ORDER BY id",
        outcome.transaction_id,
    )
    assert [(e["purpose"], e["amount"]) for e in entries] == [
        ("hand", -100),
        ("hand", 100),
        ("guess", -300),
        ("guess", 300),
    ]
    assert (await ledger.execute(right, record_rejection=True)).duplicate  # redelivered: moves nothing
    assert (await ledger.balance("a"))[0] == 5400
    wrong = HandSettlement(
        "hand:h2", table_id="t1", hand_id="h2", payer="b", payee="a", stake=50, guess=Guess(False)
    )
    assert (await ledger.execute(wrong, record_rejection=True)).status is Status.APPLIED
    assert (await ledger.balance("a"))[0] == 5400  # the 50 won went to the guess bank
    assert (await ledger.balance("b"))[0] == 4850
    for malformed in (
        HandSettlement("hand:h3", table_id="t1", hand_id="h3", guess=Guess(True, 2)),  # a drawn hand
        HandSettlement("hand:h4", table_id="t1", hand_id="h4", payer="b", payee="a", guess=Guess(True, 9)),
    ):
        with pytest.raises(InvalidAmountError):
            await ledger.execute(malformed, record_rejection=True)


@pytest.mark.asyncio
async def test_unknown_players_and_bad_amounts(ledger: LedgerStore) -> None:
    await player(ledger, "a", 100)
    with pytest.raises(UnknownPlayerError):
        await ledger.balance("nobody")
    ghost = HandSettlement("hand:h1", table_id="t1", hand_id="h1", payer="a", payee="nobody", stake=10)
    refused = await ledger.execute(ghost, record_rejection=True)
    assert refused.status is Status.REJECTED and "nobody" in refused.reason
    with pytest.raises(InvalidAmountError):
        await ledger.execute(HandSettlement("hand:h2", payer="a", payee="a", stake=10), record_rejection=True)
    with pytest.raises(InvalidAmountError):
        await ledger.execute(
            GrantCommand("g", player="a", amount=5, grant_reason=" "), record_rejection=False
        )
    assert (await ledger.balance("a"))[0] == 100


def test_levels_table_from_config() -> None:
    table = LevelTable.parse(DEFAULT_LEVELS)
    assert table.level_of(0) == (1, "新手")
    assert table.level_of(999)[0] == 1 and table.level_of(1000)[0] == 2
    with pytest.raises(ValueError, match="ascend"):
        LevelTable.parse("0:a,10:b,5:c")
