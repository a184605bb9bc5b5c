"""The commands play at a table causes: a table opened, a hand settled, an escape, a fee or 换牌, an item
used, a 猜大小 settled. They move prestige within the players' open holds.

Caps are applied here and nowhere else: H1 (a hand's transfer is bounded by both carries) and H3 (an
escape penalty by the escaper's carry), on the holds as they stand when the hand is applied. Scoring
sends the uncapped amounts; what the command moved is what the table shows the seats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from duelmahjong.rules.settlement import duel_transfer
from services.wallet.commands.base import Command, check_at_most, check_ids
from services.wallet.errors import InvalidAmountError
from services.wallet.ledger import AccountRef, Draft, House
from services.wallet.rating import DRAW, LOSS, PROFILES, WIN

FEES = AccountRef.house(House.FEES)

# The contract's bounds (rules.proto): a fee or a carry at most 10^12, an amount computed from them
# (an uncapped stake or penalty) at most 10^15; anything larger is a malformed event, refused.
MAX_FEE = 10**12
MAX_AMOUNT = 10**15


def carried_transfer(stake: int, winner_carry: int, loser_carry: int) -> int:
    """H1: the winner receives exactly what the loser pays, bounded by both carries.

    ``stake`` is already total fan x negotiated x progressive x N, so it goes through the rules'
    H1 function as fan at a rate of 1.

    >>> carried_transfer(150, 1000, 1000)  # the seed's example: 3 fan x 5 x 1 x 10
    150
    >>> carried_transfer(150, 100, 1000), carried_transfer(150, 1000, 40)
    (100, 40)
    """
    return duel_transfer(stake, fan_rate=1, winner_carry=winner_carry, loser_carry=loser_carry).amount


@dataclass(frozen=True, slots=True)
class TableCommand(Command):
    """A command caused by play at a table: it moves prestige within the players' open holds."""

    table_id: str = ""
    hand_id: str = ""
    at_table: ClassVar[bool] = True

    @property
    def hand(self) -> str:
        return self.hand_id

    @property
    def table(self) -> str:
        return self.table_id


@dataclass(frozen=True, slots=True)
class TableOpening(TableCommand):
    """A table opened for a pairing: remember which, so its events settle against that pairing's holds."""

    pairing_id: str = ""
    kind: ClassVar[str] = "table_open"

    def players(self) -> tuple[str, ...]:
        return ()

    def validate(self) -> None:
        Command.validate(self)
        check_ids(self.table_id, self.pairing_id)

    def apply(self, draft: Draft) -> None:
        draft.plan.table_opened = (self.table_id, self.pairing_id)


def check_profile(profile: str) -> None:
    if profile and profile not in PROFILES:
        raise InvalidAmountError(f"unknown profile {profile!r}: one of {', '.join(PROFILES)}")


def charge_fee(draft: Draft, player: str, fee: int) -> None:
    """H1: each finished hand costs the fee (to the house); a player who has less pays what they have.
    It comes out of the hold's fee reserve first, then its carry, then free prestige."""
    amount = min(fee, draft.payable(player))
    draft.move(AccountRef.player(player), FEES, amount, "fee", fee=True)


def check_guess(won: bool, multiplier: int) -> None:
    if won and not 2 <= multiplier <= 5:
        raise InvalidAmountError(f"a right guess pays 2-5 times, got {multiplier}")


def settle_guess(draft: Draft, player: str, stake: int, *, won: bool, multiplier: int) -> None:
    """T12 猜大小 on ``stake``, the winnings the player just received: right, the house's guess bank
    pays stake x multiplier (2-5); wrong, the winnings go to the bank (never more than the player has)."""
    bank, account = AccountRef.house(House.GUESS), AccountRef.player(player)
    if won:
        draft.move(bank, account, stake * multiplier, "guess")
    else:
        draft.move(account, bank, min(stake, draft.payable(player)), "guess")


@dataclass(frozen=True, slots=True)
class Guess:
    """A won hand's 猜大小 (T12), applied with the hand: right or wrong, and the payout multiplier."""

    won: bool
    multiplier: int = 0


@dataclass(frozen=True, slots=True)
class HandSettlement(TableCommand):
    """A scored hand, as one ledger transaction: each seated player pays the room fee, then the loser
    pays the winner, bounded by both carries as they stand after the fees (H1); with the winner's
    ``guess`` (T12 猜大小), staked on that capped transfer, in the same transaction.

    ``stake`` is the uncapped amount: total fan x negotiated x progressive x N. A drawn hand has no
    payer: only the fees move. ``seated`` are the hand's two players (who owe ``fee``), SEAT_FIRST's
    first. With a ``profile`` the hand also moves both seats' ratings in it: a win and a loss, or a
    draw for a drawn hand (docs/wallet.md "Skill rating").
    """

    payer: str = ""
    payee: str = ""
    stake: int = 0
    seated: tuple[str, ...] = ()
    fee: int = 0
    profile: str = ""
    guess: Guess | None = None
    kind: ClassVar[str] = "hand"
    snapshot_safe: ClassVar[bool] = True
    # Locked in this order by every command that names them: the guess bank with every hand, since
    # a hand may carry its guess.
    houses: ClassVar[tuple[House, ...]] = (House.FEES, House.GUESS)

    def players(self) -> tuple[str, ...]:
        named = (self.payer, self.payee) if self.payer else ()
        return tuple(dict.fromkeys((*named, *self.seated)))

    def validate(self) -> None:
        Command.validate(self)
        check_at_most(MAX_AMOUNT, stake=self.stake)
        check_at_most(MAX_FEE, fee=self.fee)
        if bool(self.payer) != bool(self.payee) or (self.payer and self.payer == self.payee):
            raise InvalidAmountError(
                f"a hand is paid by one player to another, got {self.payer!r} -> {self.payee!r}"
            )
        if len(set(self.seated)) != len(self.seated) or len(self.seated) > 2:
            raise InvalidAmountError(f"a hand has two players, got {list(self.seated)}")
        if self.seated and self.payer and {self.payer, self.payee} != set(self.seated):
            raise InvalidAmountError(f"the hand's payer and payee are not its players {list(self.seated)}")
        if self.fee and not self.seated:
            raise InvalidAmountError("a hand's fee needs the hand's players")
        if self.guess is not None:
            if not self.payer:
                raise InvalidAmountError("猜大小 is staked on a won hand's transfer: this hand has none")
            check_guess(self.guess.won, self.guess.multiplier)
        check_profile(self.profile)

    @property
    def rated_profile(self) -> str:
        return self.profile if len(self.seated) == 2 else ""

    def apply(self, draft: Draft) -> None:
        if self.fee:
            for player in self.seated:
                charge_fee(draft, player, self.fee)
        if self.payer:
            amount = carried_transfer(self.stake, draft.carry(self.payee), draft.carry(self.payer))
            draft.move(AccountRef.player(self.payer), AccountRef.player(self.payee), amount, "hand")
            if self.guess is not None:
                settle_guess(draft, self.payee, amount, won=self.guess.won, multiplier=self.guess.multiplier)
        if self.rated_profile:
            first, second = self.seated
            result = DRAW if not self.payer else (WIN if self.payee == first else LOSS)
            draft.rate(self.rated_profile, (first, second), result)


@dataclass(frozen=True, slots=True)
class EscapePenalty(TableCommand):
    """H3: the escaper pays the penalty (top fan x multipliers x N, uncapped as scored) to the
    opponent, capped here by the escaper's carry. No fee: the hand did not finish. With a ``profile``
    and the hand's ``seated`` players (SEAT_FIRST's first) it is a loss for the escaper's rating and a
    win for the opponent's."""

    escaper: str = ""
    opponent: str = ""
    penalty: int = 0
    seated: tuple[str, ...] = ()
    profile: str = ""
    kind: ClassVar[str] = "escape"
    snapshot_safe: ClassVar[bool] = True

    def players(self) -> tuple[str, ...]:
        return (self.escaper, self.opponent)

    def validate(self) -> None:
        Command.validate(self)
        check_at_most(MAX_AMOUNT, penalty=self.penalty)
        if self.escaper == self.opponent:
            raise InvalidAmountError("the escaper cannot be their own opponent")
        if self.seated and set(self.seated) != {self.escaper, self.opponent}:
            raise InvalidAmountError(
                f"the escaper and opponent are not the hand's players {list(self.seated)}"
            )
        check_profile(self.profile)

    @property
    def rated_profile(self) -> str:
        return self.profile if len(self.seated) == 2 else ""

    def apply(self, draft: Draft) -> None:
        amount = min(self.penalty, draft.carry(self.escaper))  # H3: capped by the escaper's carry
        draft.move(AccountRef.player(self.escaper), AccountRef.player(self.opponent), amount, "escape")
        if self.rated_profile:
            first, second = self.seated
            draft.rate(self.rated_profile, (first, second), LOSS if self.escaper == first else WIN)


@dataclass(frozen=True, slots=True)
class Charge(TableCommand):
    """A cost paid to the house: a finished hand's room fee (H1, drawn hands too) or a 换牌 (T4)."""

    player: str = ""
    amount: int = 0
    purpose: str = "fee"  # "fee" draws on the hold's fee reserve first; "exchange" on the carry
    kind: ClassVar[str] = "charge"
    snapshot_safe: ClassVar[bool] = True
    houses: ClassVar[tuple[House, ...]] = (House.FEES,)

    def players(self) -> tuple[str, ...]:
        return (self.player,)

    def validate(self) -> None:
        Command.validate(self)
        check_at_most(MAX_AMOUNT, amount=self.amount)
        if self.purpose not in ("fee", "exchange"):
            raise InvalidAmountError(f"unknown charge {self.purpose!r}")

    def apply(self, draft: Draft) -> None:
        if self.purpose == "fee":
            charge_fee(draft, self.player, self.amount)
        else:  # a 换牌 the player cannot pay is refused
            draft.move(AccountRef.player(self.player), FEES, self.amount, self.purpose)


@dataclass(frozen=True, slots=True)
class ItemUse(TableCommand):
    """T6: a special item is spent once."""

    player: str = ""
    item: str = ""
    kind: ClassVar[str] = "item_use"

    def players(self) -> tuple[str, ...]:
        return (self.player,)

    @property
    def item_owner(self) -> str | None:
        return self.player

    def validate(self) -> None:
        Command.validate(self)
        check_ids(self.item)

    def apply(self, draft: Draft) -> None:
        draft.change_item(self.player, self.item, -1)


@dataclass(frozen=True, slots=True)
class GuessSettlement(TableCommand):
    """T12 猜大小 on a hand's winnings (``stake``) resolved apart from the hand (``GuessResolved``, from
    tables that predate ``HandScored.guess``): right, the house bank pays stake x multiplier (2-5);
    wrong, the winnings go to the bank."""

    player: str = ""
    stake: int = 0
    won: bool = False
    multiplier: int = 0
    kind: ClassVar[str] = "guess"
    snapshot_safe: ClassVar[bool] = True
    houses: ClassVar[tuple[House, ...]] = (House.GUESS,)

    def players(self) -> tuple[str, ...]:
        return (self.player,)

    def validate(self) -> None:
        Command.validate(self)
        check_at_most(MAX_AMOUNT, stake=self.stake)  # x 5 at most: still within int64
        check_guess(self.won, self.multiplier)

    def apply(self, draft: Draft) -> None:
        settle_guess(draft, self.player, self.stake, won=self.won, multiplier=self.multiplier)
