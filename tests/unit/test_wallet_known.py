"""KnownRows, the wallet's memory of the rows a settlement is planned on (pure: no database).

The write statement checks every fact taken from here again (tests/integration/test_wallet_ledger.py);
these tests pin what is remembered, what counts as known, and what is forgotten.
"""

from __future__ import annotations

from services.wallet.commands import FEES, Charge, EscapePenalty, HandSettlement, PlaceHold
from services.wallet.known import KnownRows, Read
from services.wallet.ledger import AccountRef, AccountState, Draft, HoldState, House
from services.wallet.rating import Skill


def _hand(key: str = "hand:h1", table: str = "t1", stake: int = 300) -> HandSettlement:
    return HandSettlement(key, table_id=table, hand_id=key, payer="a", payee="b", stake=stake)


def _read_of(table_pairing: str = "p1") -> tuple[Draft, Read]:
    """What a snapshot read of a hand at t1 (pairing p1) returns: a holds 500 + 10 in p1, b holds
    nothing; and the house accounts a hand's transaction may move (its fees, its 猜大小)."""
    accounts = [
        AccountState(11, AccountRef.player("a"), 1000, 510, False),
        AccountState(12, AccountRef.player("b"), 800, 0, False),
        AccountState(2, FEES, 40, 0, False),
        AccountState(3, AccountRef.house(House.GUESS), 0, 0, True),
    ]
    holds = [HoldState("p1", "a", 500, 10)]
    read = Read(
        accounts={11: (1000, 510), 12: (800, 0), 2: (40, 0), 3: (0, 0)},
        holds={("p1", "a"): (500, 10, False)},
        versions={11: 7, 12: 3},
    )
    return Draft(accounts, holds, {}, at_table=True, table_pairing=table_pairing), read


def _same(left: Draft, right: Draft) -> bool:
    return (
        sorted(left.accounts.items()) == sorted(right.accounts.items())
        and sorted(left.holds, key=lambda h: (h.pairing_id, h.player_id))
        == sorted(right.holds, key=lambda h: (h.pairing_id, h.player_id))
        and left.table_pairing == right.table_pairing
        and left.at_table == right.at_table
    )


def test_what_a_read_returned_comes_back_as_the_same_draft() -> None:
    known = KnownRows()
    assert known.draft(_hand()) is None  # nothing known yet
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)
    remembered = known.draft(_hand("hand:h2"))
    assert remembered is not None
    draft, again = remembered
    assert _same(draft, _read_of()[0]) and again == read


def test_a_written_plan_is_what_is_known_next_one_version_on() -> None:
    known = KnownRows()
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)
    draft, read = known.draft(_hand()) or (None, None)
    assert draft is not None and read is not None
    _hand().apply(draft)  # a pays b 300 from the hold's carry
    known.written(draft, read)
    after = known.draft(_hand("hand:h2"))
    assert after is not None
    next_draft, next_read = after
    assert next_read.versions == {11: 8, 12: 4}
    assert next_read.accounts == {11: (700, 210), 12: (1100, 0), 2: (40, 0), 3: (0, 0)}
    assert next_read.holds == {("p1", "a"): (200, 10, False)}
    assert next_draft.plan.postings == []  # a fresh draft: the plan is not remembered


def test_anything_not_read_yet_is_not_known() -> None:
    known = KnownRows()
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)
    assert known.draft(_hand(table="t9")) is None  # another table: its pairing was never read
    other = HandSettlement("hand:x", table_id="t1", hand_id="x", payer="a", payee="c", stake=1)
    assert known.draft(other) is None  # c was never read
    hold = PlaceHold("hold:p2:a", pairing_id="p2", player="a", carry=10, fee=1)
    assert known.draft(hold) is None  # not snapshot-safe: always the locked way
    drawn = HandSettlement("hand:d", table_id="t1", hand_id="d")
    assert known.draft(drawn) is None  # on no account: nothing to remember it by


def test_a_pairing_whose_holds_were_not_read_is_not_known() -> None:
    """a and b were read at a table of p1; at a table of p2 their holds in p2 were never read."""
    known = KnownRows()
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)
    loaded_t2, read_t2 = _read_of(table_pairing="p2")
    loaded_t2.holds.clear()
    known.learn(_hand(table="t2"), loaded_t2, read_t2)  # t2 -> p2 now known, with what a read of it gave
    assert known.draft(_hand(table="t2")) is not None
    known._players["a"].in_pairing.pop("p2")  # as if a had been read at t1 only
    assert known.draft(_hand(table="t2")) is None


def test_house_accounts_are_remembered_with_what_they_may_do() -> None:
    known = KnownRows()
    without, read_without = _read_of()
    del without.accounts[FEES], read_without.accounts[2]
    escape = EscapePenalty("escape:h0", table_id="t1", hand_id="h0", escaper="a", opponent="b", penalty=5)
    known.learn(escape, without, read_without)  # an escape reads no house account
    assert known.draft(escape) is not None
    unread = Charge("fee:h0:a", table_id="t1", hand_id="h0", player="a", amount=5)
    assert known.draft(unread) is None  # the fee account was never read
    fee = Charge("fee:h1:a", table_id="t1", hand_id="h1", player="a", amount=5)
    loaded, read = _read_of()
    del loaded.accounts[AccountRef.player("b")]
    known.learn(fee, loaded, read)
    draft, _read = known.draft(fee) or (None, None)
    assert draft is not None and draft.accounts[FEES] == AccountState(2, FEES, 40, 0, False)


def test_forgetting_drops_the_players_and_the_table() -> None:
    known = KnownRows()
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)
    known.forget(_hand())
    assert known.draft(_hand()) is None and len(known) == 0


def test_the_least_recently_used_go_first() -> None:
    known = KnownRows(limit=2)
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)  # a, b
    single = AccountState(13, AccountRef.player("c"), 5, 0, False)
    draft_c = Draft([single], [], {}, at_table=True, table_pairing="p1")
    fee_c = Charge("fee:h1:c", table_id="t1", hand_id="h1", player="c", amount=1)
    known.learn(fee_c, draft_c, Read(accounts={13: (5, 0)}, holds={}, versions={13: 1}))
    assert len(known) == 2 and known.draft(_hand()) is None  # a went first


def _rated(key: str = "hand:r1", profile: str = "duel") -> HandSettlement:
    return HandSettlement(
        key, table_id="t1", hand_id=key, payer="a", payee="b", stake=10, seated=("a", "b"), profile=profile
    )


def test_a_rated_hand_is_planned_from_known_rows_only_once_its_profiles_ratings_are_known() -> None:
    known = KnownRows()
    loaded, read = _read_of()
    known.learn(_hand(), loaded, read)  # an unrated hand read the accounts, no ratings
    assert known.draft(_hand("hand:h2")) is not None
    assert known.draft(_rated()) is None  # the duel ratings were never read
    rated_read, read = _read_of()
    rated_read.skills = {"b": Skill(1600.0, 120.0, 9)}  # a has no row yet: the starting rating
    known.learn(_rated(), rated_read, read)
    remembered = known.draft(_rated())
    assert remembered is not None
    draft, read = remembered
    assert draft.skills == {"b": Skill(1600.0, 120.0, 9)}
    assert known.draft(_rated(profile="erren")) is None  # another profile: not known
    _rated().apply(draft)
    moved = {m.player_id: m.after for m in draft.plan.ratings}
    assert moved["a"].hands_rated == 1 and moved["b"].hands_rated == 10
    known.written(draft, read)
    after = known.draft(_rated("hand:r2"))
    assert after is not None and after[0].skills == moved  # the next hand starts where this one left
