"""What this process last knew of the rows a settlement is planned on, so a warm settlement goes
straight to its version-checked write: one round trip instead of two (ledger_store.py, docs/wallet.md).

Nothing here is trusted on its own. Every fact a snapshot-safe command is planned on is checked by the
write statement: each player's account and holds by the account's ``version`` (every written ledger
transaction bumps the version of each player account it locks, and holds change only in such
transactions), and the table's pairing by looking it up again. House balances need no check: the
write moves them by the planned amount and counts ``balance_after`` from the locked row. A check that
fails writes nothing; the ledger store then forgets those players (and the table) and reads them afresh.

What is kept, per player: the account row, the open hold (a player holds for one pairing at a time)
and, per pairing a command's table was in, the player's hold in it (released or not, or none), all
as of the version kept, and its rating in each profile a command of theirs was rated in (none: the
starting rating) — a rating changes only in a hand's transaction, which bumps the version. Per table:
its pairing ("" while none was recorded). Per house account: its
id and whether it may go negative. Bounded: the least recently used entries go first.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from services.wallet.commands import Command
from services.wallet.ledger import AccountRef, AccountState, Draft, HoldState
from services.wallet.rating import Skill

DEFAULT_LIMIT = 20_000  # players (and tables) kept: a few hundred bytes each, ~10 MB at most


@dataclass(frozen=True, slots=True)
class Read:
    """What a command was planned on: each account's (balance, held), each hold's (carry, fee
    reserve, released), and each player account's version."""

    accounts: dict[int, tuple[int, int]]
    holds: dict[tuple[str, str], tuple[int, int, bool]]
    versions: dict[int, int]

    @classmethod
    def of(
        cls, accounts: Iterable[AccountState], holds: Iterable[HoldState], versions: dict[int, int]
    ) -> Read:
        """The read of these rows, before anything is planned on them."""
        return cls(
            accounts={a.account_id: (a.balance, a.held) for a in accounts},
            holds={(h.pairing_id, h.player_id): (h.carry, h.fee_reserve, h.released) for h in holds},
            versions=versions,
        )


@dataclass(slots=True)
class _Player:
    account_id: int
    balance: int
    held: int
    overdraft_allowed: bool
    version: int
    open_hold: HoldState | None
    in_pairing: dict[str, HoldState | None] = field(default_factory=dict)
    skills: dict[str, Skill | None] = field(default_factory=dict)  # profile -> rating (None: the start)


@dataclass(frozen=True, slots=True)
class _House:
    account_id: int
    overdraft_allowed: bool
    balance: int  # as last seen: only ever a starting point for the planner, never written back


def _copy(hold: HoldState) -> HoldState:
    return dataclasses.replace(hold, is_new=False)


class KnownRows:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._players: OrderedDict[str, _Player] = OrderedDict()
        self._tables: OrderedDict[str, str] = OrderedDict()
        self._houses: dict[str, _House] = {}

    def __len__(self) -> int:
        return len(self._players)

    def draft(self, command: Command) -> tuple[Draft, Read] | None:
        """The draft a snapshot read would give ``command``, from what is known; None if anything
        it needs is not known."""
        players = sorted(set(command.players()))
        if not command.snapshot_safe or not players:
            return None
        pairing = ""
        if command.at_table and command.table:
            known_pairing = self._tables.get(command.table)
            if known_pairing is None:
                return None
            pairing = known_pairing
            self._tables.move_to_end(command.table)
        profile = command.rated_profile
        known: list[tuple[str, _Player]] = []
        for player_id in players:
            player = self._players.get(player_id)
            if player is None or (pairing and pairing not in player.in_pairing):
                return None
            if profile and profile not in player.skills:
                return None
            known.append((player_id, player))
        houses = [self._houses.get(house.value) for house in command.houses]
        if any(house is None for house in houses):
            return None
        accounts: list[AccountState] = []
        holds: list[HoldState] = []
        versions: dict[int, int] = {}
        skills: dict[str, Skill] = {}
        for player_id, player in known:
            self._players.move_to_end(player_id)
            skill = player.skills.get(profile) if profile else None
            if skill is not None:
                skills[player_id] = skill
            accounts.append(
                AccountState(
                    player.account_id,
                    AccountRef.player(player_id),
                    player.balance,
                    player.held,
                    player.overdraft_allowed,
                )
            )
            versions[player.account_id] = player.version
            held = [player.open_hold, player.in_pairing.get(pairing) if pairing else None]
            seen: set[str] = set()
            for hold in held:
                if hold is not None and hold.pairing_id not in seen:
                    seen.add(hold.pairing_id)
                    holds.append(_copy(hold))
        for command_house, house in zip(command.houses, houses, strict=True):
            assert house is not None
            accounts.append(
                AccountState(
                    house.account_id,
                    AccountRef.house(command_house),
                    house.balance,
                    0,
                    house.overdraft_allowed,
                )
            )
        accounts.sort(key=lambda account: account.account_id)  # as the read orders them
        read = Read.of(accounts, holds, versions)
        draft = Draft(accounts, holds, {}, at_table=command.at_table, table_pairing=pairing, skills=skills)
        return draft, read

    def learn(self, command: Command, draft: Draft, read: Read) -> None:
        """Keep what a snapshot read of ``command`` returned (``draft`` not yet planned on)."""
        if not command.snapshot_safe or not draft.accounts:
            return  # no rows: the read said nothing about the table either
        pairing = draft.table_pairing if command.at_table else ""
        if command.at_table and command.table:
            self._tables[command.table] = pairing
            self._tables.move_to_end(command.table)
        for ref, state in draft.accounts.items():
            if ref.kind != "player":
                self._houses[ref.name] = _House(state.account_id, state.overdraft_allowed, state.balance)
                continue
            mine = [h for h in draft.holds if h.player_id == ref.name]
            player = _Player(
                state.account_id,
                state.balance,
                state.held,
                state.overdraft_allowed,
                read.versions[state.account_id],
                next((_copy(h) for h in mine if not h.released), None),
            )
            if pairing:
                player.in_pairing[pairing] = next((_copy(h) for h in mine if h.pairing_id == pairing), None)
            if command.rated_profile:
                player.skills[command.rated_profile] = draft.skills.get(ref.name)
            self._players[ref.name] = player
            self._players.move_to_end(ref.name)
        self._evict()

    def written(self, draft: Draft, read: Read) -> None:
        """The planned ``draft`` was written and its versions checked: it is the players' state now,
        one version on."""
        for ref, state in draft.accounts.items():
            player = self._players.get(ref.name) if ref.kind == "player" else None
            if player is None or player.account_id != state.account_id:
                continue
            player.balance, player.held = state.balance, state.held
            player.version = read.versions[state.account_id] + 1
            for hold in draft.holds:
                if hold.player_id != ref.name:
                    continue
                if not hold.released:
                    player.open_hold = _copy(hold)
                if hold.pairing_id in player.in_pairing:
                    player.in_pairing[hold.pairing_id] = _copy(hold)
            for move in draft.plan.ratings:
                if move.player_id == ref.name:
                    player.skills[move.profile] = move.after

    def forget(self, command: Command) -> None:
        """A check failed, or the command went the locked way: read these afresh next time."""
        for player_id in command.players():
            self._players.pop(player_id, None)
        if command.at_table and command.table:
            self._tables.pop(command.table, None)

    def _evict(self) -> None:
        while len(self._players) > self._limit:
            self._players.popitem(last=False)
        while len(self._tables) > self._limit:
            self._tables.popitem(last=False)
