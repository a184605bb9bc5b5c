"""The prestige (威望) ledger's domain model: pure, no I/O.

A wallet command (a hand's settlement, an escape, a fee, a hold, a grant…) is turned into a
:class:`Plan` — balanced postings plus hold and inventory changes — from a snapshot of the accounts
it touches, taken while those accounts are locked. ``ledger_store.py`` locks, lets the command apply
itself to a :class:`Draft`, and writes the plan in the same database transaction. Keeping the
arithmetic here means every cap (H1 carries, H3 escape) and every invariant check lives in one
readable place.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from services.wallet.errors import (
    HoldError,
    InsufficientPrestigeError,
    InvalidAmountError,
    NoItemError,
    UnbalancedTransactionError,
    UnknownPlayerError,
)
from services.wallet.rating import START, RatingMove, Skill, rate


class House(enum.StrEnum):
    """House accounts (migrations/001_ledger.sql)."""

    FEES = "fees"  # room fees (H1), 换牌 costs (T4)
    GUESS = "guess"  # the 猜大小 bank (T12); may be overdrawn
    GRANTS = "grants"  # the mint: grants leave it, burns return; -balance = all prestige in circulation


@dataclass(frozen=True, slots=True, order=True)
class AccountRef:
    """Names an account: a player's (``name`` = player id) or a house account."""

    kind: str  # "player" | "house"
    name: str

    @classmethod
    def player(cls, player_id: str) -> AccountRef:
        return cls("player", player_id)

    @classmethod
    def house(cls, house: House) -> AccountRef:
        return cls("house", house.value)

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(slots=True)
class AccountState:
    """A locked account row as the planner sees and changes it."""

    account_id: int
    ref: AccountRef
    balance: int
    held: int
    overdraft_allowed: bool

    @property
    def free(self) -> int:
        """Prestige not reserved by any hold."""
        return self.balance - self.held


@dataclass(slots=True)
class HoldState:
    """A player's hold for one pairing. A player holds for one pairing at a time."""

    pairing_id: str
    player_id: str
    carry: int  # 携带威望: what this player can still win or lose in the pairing (H1)
    fee_reserve: int  # reserved for the pairing's fees, which draw on it first
    released: bool = False
    is_new: bool = False

    @property
    def total(self) -> int:
        return self.carry + self.fee_reserve


@dataclass(frozen=True, slots=True)
class Posting:
    account: AccountRef
    amount: int  # > 0 credit, < 0 debit
    purpose: str
    balance_after: int


class Status(enum.StrEnum):
    APPLIED = "applied"
    REJECTED = "rejected"


@dataclass(slots=True)
class Plan:
    """What one command does to the ledger: written in one database transaction."""

    postings: list[Posting] = field(default_factory=list)
    item_deltas: list[tuple[str, str, int]] = field(default_factory=list)  # (player, item, delta)
    table_opened: tuple[str, str] | None = None  # (table id, pairing id) to remember
    pairing_closed: str = ""  # a pairing whose table closed: it takes no new hold
    ratings: list[RatingMove] = field(default_factory=list)  # a hand's: both seats, SEAT_FIRST first
    status: Status = Status.APPLIED
    reason: str = ""

    def check_balanced(self) -> None:
        """Double entry: every transaction's postings sum to zero."""
        total = sum(p.amount for p in self.postings)
        if total != 0:
            raise UnbalancedTransactionError(f"postings sum to {total}, not 0: {self.postings}")


class Draft:
    """A mutable working copy of the locked accounts and holds while a command is planned."""

    def __init__(
        self,
        accounts: Iterable[AccountState],
        holds: Iterable[HoldState],
        inventory: dict[str, int],
        *,
        at_table: bool,
        table_pairing: str = "",
        pairing_closed: bool = False,
        skills: dict[str, Skill] | None = None,
    ) -> None:
        self.accounts = {a.ref: a for a in accounts}
        # The players' ratings in the command's profile, as read with their accounts (a player
        # without a row has the starting rating).
        self.skills = dict(skills or {})
        self.holds = list(holds)
        self.inventory = dict(inventory)  # item -> quantity for the command's one player (items)
        self.at_table = at_table
        self.table_pairing = table_pairing  # the pairing of the command's table, once TableOpened told us
        self.pairing_closed = pairing_closed  # the command's pairing has closed (TableClosed)
        self.plan = Plan()

    def account(self, ref: AccountRef) -> AccountState:
        state = self.accounts.get(ref)
        if state is None:
            if ref.kind == "player":
                raise UnknownPlayerError(f"no player {ref.name!r}")
            raise LookupError(f"house account {ref.name!r} missing: migrations not applied?")
        return state

    def stake_hold(self, player_id: str) -> HoldState | None:
        """The hold play at a table draws on and pays into; none for commands outside play.

        It is the hold of the table's pairing — even released, for an event that arrives after the
        table closed, so its carry still bounds it (H1, H3) — or, while the table's pairing is not
        known yet, the player's open hold.
        """
        if not self.at_table:
            return None
        for hold in self.holds:
            if hold.player_id == player_id and (
                hold.pairing_id == self.table_pairing if self.table_pairing else not hold.released
            ):
                return hold
        return None

    def carry(self, player_id: str) -> int:
        """What a player stakes: their hold's carry (never more than they have), else their free prestige."""
        free = self.account(AccountRef.player(player_id)).free
        hold = self.stake_hold(player_id)
        if hold is None:
            return free
        return hold.carry if not hold.released else min(hold.carry, free)

    def payable(self, player_id: str) -> int:
        """The most a player can pay for a cost (fee, 换牌, item): open hold first, then free prestige."""
        hold = self.stake_hold(player_id)
        in_hold = hold.total if hold is not None and not hold.released else 0
        return in_hold + self.account(AccountRef.player(player_id)).free

    def _post(self, state: AccountState, amount: int, purpose: str) -> None:
        state.balance += amount
        if state.balance < 0 and not state.overdraft_allowed:
            raise InsufficientPrestigeError(f"{state.ref} would go to {state.balance}")
        self.plan.postings.append(Posting(state.ref, amount, purpose, state.balance))

    def _debit_player(self, player_id: str, amount: int, purpose: str, *, fee: bool) -> None:
        state = self.account(AccountRef.player(player_id))
        hold = self.stake_hold(player_id)
        from_hold = 0
        if hold is not None:
            # A fee comes out of the fee reserve first; a stake never touches it (H1 is about carries).
            if fee:
                from_reserve = min(amount, hold.fee_reserve)
                hold.fee_reserve -= from_reserve
                from_hold = from_reserve
            from_carry = min(amount - from_hold, hold.carry)
            hold.carry -= from_carry
            from_hold += from_carry
        if hold is not None and hold.released:
            from_hold = 0  # a released hold keeps counting the carry; the prestige itself is free again
        if amount - from_hold > state.free:
            raise InsufficientPrestigeError(
                f"player {player_id!r} has {state.free + from_hold} prestige available, needs {amount}"
            )
        state.held -= from_hold
        self._post(state, -amount, purpose)

    def _credit_player(self, player_id: str, amount: int, purpose: str) -> None:
        state = self.account(AccountRef.player(player_id))
        hold = self.stake_hold(player_id)
        if hold is not None:
            hold.carry += amount  # winnings stay at the table: the carry grows (docs/wallet.md)
            if not hold.released:
                state.held += amount
        self._post(state, amount, purpose)

    def move(
        self, debit: AccountRef, credit: AccountRef, amount: int, purpose: str, *, fee: bool = False
    ) -> None:
        """Move ``amount`` from one account to another: two postings that sum to zero."""
        if amount < 0:
            raise InvalidAmountError(f"{purpose}: negative amount {amount}")
        if amount == 0:
            return
        if debit == credit:
            raise InvalidAmountError(f"{purpose}: {debit} cannot pay itself")
        if debit.kind == "player":
            self._debit_player(debit.name, amount, purpose, fee=fee)
        else:
            self._post(self.account(debit), -amount, purpose)
        if credit.kind == "player":
            self._credit_player(credit.name, amount, purpose)
        else:
            self._post(self.account(credit), amount, purpose)

    def place_hold(self, pairing_id: str, player_id: str, carry: int, fee: int) -> None:
        if carry <= 0 or fee < 0:
            raise InvalidAmountError(f"a hold needs carry > 0 and fee >= 0, got {carry} and {fee}")
        state = self.account(AccountRef.player(player_id))
        for hold in self.holds:
            if hold.player_id == player_id and hold.pairing_id == pairing_id:
                raise HoldError(f"player {player_id!r} already had a hold in pairing {pairing_id!r}")
        if self.pairing_closed:
            raise HoldError(f"pairing {pairing_id!r} has closed")
        current = next((h for h in self.holds if h.player_id == player_id and not h.released), None)
        if current is not None:
            raise HoldError(f"player {player_id!r} is already holding for pairing {current.pairing_id!r}")
        if carry + fee > state.free:
            raise InsufficientPrestigeError(
                f"player {player_id!r} has {state.free} prestige free, the hold needs {carry + fee}"
            )
        state.held += carry + fee
        self.holds.append(HoldState(pairing_id, player_id, carry, fee, is_new=True))

    def release_holds(self, pairing_id: str, *, closing: bool = False) -> None:
        """Return what is left of the pairing's holds to their players' free prestige; ``closing``:
        the pairing is over and takes no new hold."""
        if closing:
            self.plan.pairing_closed = pairing_id
        for hold in self.holds:
            if hold.pairing_id == pairing_id and not hold.released:
                self.account(AccountRef.player(hold.player_id)).held -= hold.total
                hold.released = True

    def rate(self, profile: str, seated: tuple[str, str], result: float) -> None:
        """Move both seats' ratings in ``profile`` by one hand; ``result`` is the first seat's."""
        for player_id in seated:
            self.account(AccountRef.player(player_id))  # unknown player -> NOT_FOUND, not a FK error
        before = tuple(self.skills.get(player_id, START) for player_id in seated)
        after = rate(before[0], before[1], result)
        self.plan.ratings = [
            RatingMove(player_id, profile, seat, was, now)
            for seat, (player_id, was, now) in enumerate(zip(seated, before, after, strict=True), start=1)
        ]

    def change_item(self, player_id: str, item: str, delta: int) -> None:
        self.account(AccountRef.player(player_id))  # unknown player -> NOT_FOUND, not a FK error
        have = self.inventory.get(item, 0)
        if have + delta < 0:
            raise NoItemError(f"player {player_id!r} has {have} of item {item!r}, needs {-delta}")
        self.inventory[item] = have + delta
        self.plan.item_deltas.append((player_id, item, delta))
