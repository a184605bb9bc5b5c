"""Properties of the wallet's pure planner (no database): whatever sequence of play a table sends,
every plan balances, no balance goes below what is held or below zero, holds never go negative, and
no hand or escape moves more than the carries allow (H1, H3)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.wallet.commands import (
    Charge,
    Command,
    EscapePenalty,
    GuessSettlement,
    HandSettlement,
    ReleaseHolds,
)
from services.wallet.errors import WalletError
from services.wallet.ledger import AccountRef, AccountState, Draft, HoldState, House

PLAYERS = ("a", "b")


def fresh_draft(balances: tuple[int, int], carries: tuple[int, int], reserves: tuple[int, int]) -> Draft:
    accounts = [
        AccountState(n + 1, AccountRef.player(p), balances[n], carries[n] + reserves[n], False)
        for n, p in enumerate(PLAYERS)
    ]
    accounts += [
        AccountState(10, AccountRef.house(House.FEES), 0, 0, False),
        AccountState(11, AccountRef.house(House.GUESS), 0, 0, True),
    ]
    holds = [HoldState("p1", p, carries[n], reserves[n]) for n, p in enumerate(PLAYERS)]
    return Draft(accounts, holds, {}, at_table=True, table_pairing="p1")


amounts = st.integers(min_value=0, max_value=5_000)
payer_payee = st.permutations(PLAYERS).map(tuple)


@st.composite
def table_commands(draw: st.DrawFn) -> Command:
    n = draw(st.integers(min_value=0, max_value=10**6))
    payer, payee = draw(payer_payee)
    kind = draw(st.sampled_from(["hand", "escape", "fee", "exchange", "guess", "release"]))
    if kind == "hand":
        return HandSettlement(f"hand:{n}", table_id="t1", payer=payer, payee=payee, stake=draw(amounts))
    if kind == "escape":
        return EscapePenalty(
            f"escape:{n}", table_id="t1", escaper=payer, opponent=payee, penalty=draw(amounts)
        )
    if kind in ("fee", "exchange"):
        return Charge(f"{kind}:{n}", table_id="t1", player=payer, amount=draw(amounts) // 10, purpose=kind)
    if kind == "guess":
        won = draw(st.booleans())
        return GuessSettlement(
            f"guess:{n}",
            table_id="t1",
            player=payer,
            stake=draw(amounts),
            won=won,
            multiplier=3 if won else 0,
        )
    return ReleaseHolds(f"close:{n}", pairing_id="p1", seats=PLAYERS)


@settings(max_examples=200, deadline=None)
@given(
    balances=st.tuples(amounts, amounts),
    carry_share=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    reserves=st.tuples(st.integers(0, 20), st.integers(0, 20)),
    commands=st.lists(table_commands(), min_size=1, max_size=12),
)
def test_h1_h3_play_never_breaks_a_ledger_invariant(
    balances: tuple[int, int],
    carry_share: tuple[float, float],
    reserves: tuple[int, int],
    commands: list[Command],
) -> None:
    reserves = (min(reserves[0], balances[0]), min(reserves[1], balances[1]))
    carries = tuple(int((balances[n] - reserves[n]) * carry_share[n]) for n in range(2))
    draft = fresh_draft(balances, carries, reserves)  # type: ignore[arg-type]
    total = sum(state.balance for state in draft.accounts.values())
    for command in commands:
        before = {ref: (s.balance, s.held) for ref, s in draft.accounts.items()}
        held_before = [(h.carry, h.fee_reserve, h.released) for h in draft.holds]
        stakes = {p: draft.carry(p) for p in PLAYERS}
        draft.plan.postings.clear()
        try:
            command.validate()
            command.apply(draft)
        except WalletError:
            # A refused command is rolled back whole: restore the snapshot and go on.
            for ref, (balance, held) in before.items():
                draft.accounts[ref].balance, draft.accounts[ref].held = balance, held
            for hold, (carry, reserve, released) in zip(draft.holds, held_before, strict=True):
                hold.carry, hold.fee_reserve, hold.released = carry, reserve, released
            continue
        draft.plan.check_balanced()
        for posting in draft.plan.postings:
            if isinstance(command, HandSettlement | EscapePenalty) and posting.amount < 0:
                payer = posting.account.name
                other = next(p for p in PLAYERS if p != payer)
                assert -posting.amount <= stakes[payer]  # H1/H3: never more than the payer's carry
                if isinstance(command, HandSettlement):
                    assert -posting.amount <= stakes[other]  # H1: nor more than the winner's
        for ref, state in draft.accounts.items():
            if ref.kind == "player":
                assert 0 <= state.held <= state.balance, (ref, state)
        for hold in draft.holds:
            assert hold.carry >= 0 and hold.fee_reserve >= 0
            open_total = sum(h.total for h in draft.holds if h.player_id == hold.player_id and not h.released)
            assert draft.accounts[AccountRef.player(hold.player_id)].held == open_total
        assert sum(state.balance for state in draft.accounts.values()) == total
