"""The ledger's SQL path (asyncpg): balances, transactions, entries and holds, one database
transaction per ledger transaction.

:meth:`LedgerStore.execute` is the only way prestige moves. A command is planned (``ledger.py``) on
its accounts and holds and written with one statement that locks the accounts it changes in
account-id order (a fixed order, so concurrent settlements never deadlock), inserts the transaction
row whose unique idempotency key makes a second execution of the same key a no-op, and writes the
postings, balances and holds. Commands that only move prestige are planned on a snapshot read and
their write checks the players' account versions (two round trips, no BEGIN); everything else, and
any plan that went stale, is planned on rows locked ``FOR UPDATE`` inside a transaction. A
redelivered command returns the outcome recorded the first time. docs/wallet.md has the why.

Players and sessions (``players.py``), the leaderboard (``leaderboard.py``) and the invariant audit
(``audit.py``) read and write beside the ledger; none of them moves prestige."""

from __future__ import annotations

import collections
import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from duelmahjong.platform.db import Connection
from duelmahjong.platform.metrics import Children, ServiceMetrics
from services.wallet import sql
from services.wallet.commands import Command, ReleaseHolds
from services.wallet.errors import UnknownPlayerError, WalletError
from services.wallet.known import KnownRows, Read
from services.wallet.ledger import AccountRef, AccountState, Draft, HoldState, Status
from services.wallet.player_locks import PlayerLocks
from services.wallet.rating import RatingMove, Skill


@dataclass(frozen=True, slots=True)
class Outcome:
    """What executing a command did: recorded once, returned again for every redelivery."""

    key: str
    kind: str
    status: Status
    reason: str
    transaction_id: int
    table_id: str
    hand_id: str
    balances: dict[str, tuple[int, int]]  # player id -> (balance, held) after the transaction
    duplicate: bool = False
    # (posting purpose, amount) of every credit this execution wrote: what moved, for the metrics.
    moved: tuple[tuple[str, int], ...] = ()
    # Every entry of the transaction, in order: (account "player:<id>" / "house:<name>", amount,
    # purpose); read back from the ledger for a repeat, so a redelivery reports the same entries.
    postings: tuple[tuple[str, int, str], ...] = ()
    # A hand's: both seats' ratings before and after it, SEAT_FIRST first (recorded on the row, so a
    # redelivery reports the same moves).
    ratings: tuple[RatingMove, ...] = ()


@dataclass(frozen=True, slots=True)
class HistoryRow:
    entry_id: int
    transaction_id: int
    purpose: str
    amount: int
    balance_after: int
    occurred_at: datetime
    reference: str


def _balances_json(draft: Draft) -> str:
    return json.dumps(
        {ref.name: [s.balance, s.held] for ref, s in sorted(draft.accounts.items()) if ref.kind == "player"}
    )


def _ratings_json(moves: list[RatingMove]) -> str | None:
    return json.dumps([move.as_json() for move in moves]) if moves else None


class LedgerStore:
    def __init__(self, pool: asyncpg.Pool, metrics: ServiceMetrics | None = None) -> None:
        self._pool = pool
        # How commands were written: "known" (planned on what this process knew: one round trip),
        # "known_stale" / "known_refused" (then read afresh), "snapshot" (two round trips),
        # "snapshot_stale" / "snapshot_refused" (then taken the locked way), "locked".
        self.paths: collections.Counter[str] = collections.Counter()
        self._paths = (
            Children(
                metrics.counter(
                    "ledger_paths",
                    "total",
                    "ledger commands by path: known, snapshot, locked, and the attempts that fell back",
                    ["path"],
                )
            )
            if metrics is not None
            else None
        )
        self._player_locks = PlayerLocks()  # this process's commands on a player, one at a time
        self._known = KnownRows()

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def execute(
        self, command: Command, *, record_rejection: bool, conn: Connection | None = None
    ) -> Outcome:
        """Apply ``command`` at most once. A rejected command raises its :class:`WalletError`, or,
        with ``record_rejection`` (events, which must not be redelivered forever), is recorded as
        rejected under its key and returned. ``conn``: a connection the caller holds (the settlement
        workers keep one each), else one from the pool."""
        command.validate()
        if conn is None:
            async with self._pool.acquire() as acquired:
                return await self._execute(acquired, command, record_rejection)
        return await self._execute(conn, command, record_rejection)

    async def _execute(self, conn: Connection, command: Command, record_rejection: bool) -> Outcome:
        if command.snapshot_safe:
            async with self._player_locks.held(command.players()):
                outcome = await self._execute_on_snapshot(conn, command)
            if outcome is not None:
                return outcome
        self._took("locked")
        self._known.forget(command)  # its players (or its table) change here: read them afresh next time
        async with conn.transaction():
            if isinstance(command, ReleaseHolds) and not command.seats:
                seats = tuple(
                    r["player_id"] for r in await conn.fetch(sql.PAIRING_PLAYERS, command.pairing_id)
                )
                command = dataclasses.replace(command, seats=seats)
            draft, originals = await self._load(conn, command, lock=True)
            try:
                command.apply(draft)
                draft.plan.check_balanced()
            except WalletError as err:
                recorded = await self._recorded(conn, command.key)
                if recorded is not None:
                    return recorded
                if not record_rejection:
                    raise
                draft, originals = await self._load(conn, command, lock=True)  # the untouched snapshot
                draft.plan.status, draft.plan.reason = Status.REJECTED, str(err)
            # The locks are held since the load: nothing to check.
            transaction_id, _fresh = await self._write(conn, command, draft, originals, check=False)
            if transaction_id is None:  # applied before under this key: nothing was written
                return await self._recorded_after_conflict(conn, command.key)
            return self._outcome(command, draft, transaction_id)

    def _took(self, path: str) -> None:
        self.paths[path] += 1
        if self._paths is not None:
            self._paths(path).inc()

    async def _execute_on_snapshot(self, conn: Connection, command: Command) -> Outcome | None:
        """The common case: plan on what this process knows of the rows (``known.py``: one round
        trip, the write) or on a snapshot read (two), then one statement that locks, checks that no
        player account planned on changed since and that the table's pairing is the one assumed, and
        writes (its own transaction). None — nothing written — when the check fails on a fresh read
        or the command is refused: the locked path then decides on the current state (and records a
        refusal)."""
        known = self._known.draft(command)
        if known is not None:
            outcome = await self._plan_and_write(conn, command, *known)
            if isinstance(outcome, Outcome):
                self._took("known")
                return outcome
            self._took(f"known_{outcome}")  # stale or refused on old rows: read afresh (learn replaces them)
        draft, read = await self._load(conn, command, lock=False)
        self._known.learn(command, draft, read)
        outcome = await self._plan_and_write(conn, command, draft, read)
        if isinstance(outcome, Outcome):
            self._took("snapshot")
            return outcome
        self._took(f"snapshot_{outcome}")  # the locked path forgets what this command read
        return None

    async def _plan_and_write(
        self, conn: Connection, command: Command, draft: Draft, read: Read
    ) -> Outcome | str:
        """The outcome, or why nothing was written: "refused" or "stale"."""
        try:
            command.apply(draft)
            draft.plan.check_balanced()
        except WalletError:
            return "refused"
        plan = draft.plan
        if plan.item_deltas or plan.table_opened or plan.pairing_closed or any(h.is_new for h in draft.holds):
            raise RuntimeError(f"{type(command).__name__} is marked snapshot_safe but writes beyond it")
        try:
            transaction_id, fresh = await self._write(conn, command, draft, read, check=True)
        except asyncpg.CheckViolationError:
            # A house account without overdraft moved under the plan and would go below zero: the
            # statement wrote nothing; the locked way plans on its current balance and refuses.
            return "refused"
        except BaseException:
            self._known.forget(command)  # written or not, we cannot tell: read afresh next time
            raise
        if not fresh:
            return "stale"
        if transaction_id is None:
            return await self._recorded_after_conflict(conn, command.key)
        self._known.written(draft, read)
        return self._outcome(command, draft, transaction_id)

    @staticmethod
    def _outcome(command: Command, draft: Draft, transaction_id: int) -> Outcome:
        players = (item for item in draft.accounts.items() if item[0].kind == "player")
        balances = {ref.name: (s.balance, s.held) for ref, s in players}
        return Outcome(
            command.key,
            command.kind,
            draft.plan.status,
            draft.plan.reason,
            transaction_id,
            command.table,
            command.hand,
            balances,
            moved=tuple((p.purpose, p.amount) for p in draft.plan.postings if p.amount > 0)
            if draft.plan.status is Status.APPLIED
            else (),
            postings=tuple((str(p.account), p.amount, p.purpose) for p in draft.plan.postings)
            if draft.plan.status is Status.APPLIED
            else (),
            ratings=tuple(draft.plan.ratings) if draft.plan.status is Status.APPLIED else (),
        )

    async def _recorded_after_conflict(self, conn: Connection, key: str) -> Outcome:
        recorded = await self._recorded(conn, key)
        if recorded is None:  # the conflicting row is committed once ON CONFLICT waited on it
            raise RuntimeError(f"transaction {key!r} conflicted but is not visible")
        return recorded

    async def _load(self, conn: Connection, command: Command, *, lock: bool) -> tuple[Draft, Read]:
        players = sorted(set(command.players()))
        houses = [h.value for h in command.houses]
        if lock:  # then the load as a statement of its own (sql.py says why)
            await conn.execute(sql.LOCK_ACCOUNTS, players, houses)
        rows = await conn.fetch(
            sql.LOAD_COMMAND, players, houses, command.pairing, command.table, command.rated_profile
        )
        accounts: dict[int, AccountState] = {}
        versions: dict[int, int] = {}
        holds: list[HoldState] = []
        skills: dict[str, Skill] = {}
        for row in rows:
            if row["id"] not in accounts:
                player_id = row["player_id"]
                if player_id and row["rating"] is not None:
                    skills[player_id] = Skill(row["rating"], row["deviation"], row["hands_rated"])
                ref = AccountRef.player(player_id) if player_id else AccountRef("house", row["house"])
                accounts[row["id"]] = AccountState(
                    row["id"], ref, row["balance"], row["held"], row["overdraft_allowed"]
                )
                if player_id:
                    versions[row["id"]] = row["version"]
            if row["pairing_id"] is not None:
                holds.append(
                    HoldState(
                        row["pairing_id"], row["player_id"], row["carry"], row["fee_reserve"], not row["open"]
                    )
                )
        inventory: dict[str, int] = {}
        if command.item_owner is not None:
            inventory = {
                row["item"]: row["quantity"] for row in await conn.fetch(sql.INVENTORY, command.item_owner)
            }
        read = Read.of(accounts.values(), holds, versions)
        table_pairing = rows[0]["pairing"] if rows and command.at_table else ""
        draft = Draft(
            accounts.values(),
            holds,
            inventory,
            at_table=command.at_table,
            table_pairing=table_pairing,
            pairing_closed=bool(rows) and rows[0]["closed"],
            skills=skills,
        )
        return draft, read

    async def _write(
        self, conn: Connection, command: Command, draft: Draft, read: Read, *, check: bool
    ) -> tuple[int | None, bool]:
        """Write the plan: the transaction id, or None (nothing written) if the key was recorded
        meanwhile or — with ``check`` — a player account changed since ``read``; and whether that
        check held. Every player account of an applied transaction gets a new version, changed or
        not: its holds may have changed."""
        applied = draft.plan.status is Status.APPLIED
        postings = draft.plan.postings if applied else []
        ratings = draft.plan.ratings if applied else []
        posted = {p.account for p in postings}  # locked below: an entry joins its account's locked row
        moved = [
            s
            for s in draft.accounts.values()
            if applied
            and (
                s.ref.kind == "player"
                or s.ref in posted
                or read.accounts[s.account_id] != (s.balance, s.held)
            )
        ]
        changed_holds = [
            h
            for h in draft.holds
            if applied
            and not h.is_new
            and read.holds[(h.pairing_id, h.player_id)] != (h.carry, h.fee_reserve, h.released)
        ]
        checked = [a for a in moved if a.ref.kind == "player"] if check else []
        row = await conn.fetchrow(
            sql.WRITE_TRANSACTION,
            command.key,
            command.kind,
            draft.plan.status.value,
            draft.plan.reason or command.reason,
            command.actor,
            command.pairing,
            command.table,
            command.hand,
            _balances_json(draft),
            [s.account_id for s in moved],
            [s.balance - read.accounts[s.account_id][0] for s in moved],
            [s.held - read.accounts[s.account_id][1] for s in moved],
            [draft.accounts[p.account].account_id for p in postings],
            [p.amount for p in postings],
            [p.purpose for p in postings],
            [p.balance_after - read.accounts[draft.accounts[p.account].account_id][0] for p in postings],
            [a.account_id for a in checked],
            [read.versions[a.account_id] for a in checked],
            [1 if s.ref.kind == "player" else 0 for s in moved],
            [h.pairing_id for h in changed_holds],
            [h.player_id for h in changed_holds],
            [h.carry for h in changed_holds],
            [h.fee_reserve for h in changed_holds],
            [not h.released for h in changed_holds],
            # The table's pairing the plan assumed, checked again (a command on no account plans on none).
            command.table if check and command.at_table and command.table and draft.accounts else None,
            draft.table_pairing,
            _ratings_json(ratings),
            command.rated_profile,
            [m.player_id for m in ratings],
            [m.after.rating for m in ratings],
            [m.after.deviation for m in ratings],
            [m.after.hands_rated for m in ratings],
        )
        if row is None:  # the statement answers one row, always
            raise RuntimeError("the ledger write answered no row")
        transaction_id, fresh = row["id"], row["fresh"]
        if transaction_id is None or not applied:
            return transaction_id, fresh
        for hold in draft.holds:
            if hold.is_new:
                await conn.execute(
                    sql.INSERT_HOLD, hold.pairing_id, hold.player_id, hold.carry, hold.fee_reserve
                )
        if draft.plan.pairing_closed:
            await conn.execute(sql.RECORD_CLOSED_PAIRING, draft.plan.pairing_closed)
        if draft.plan.table_opened is not None:
            await conn.execute(sql.RECORD_TABLE, *draft.plan.table_opened)
        for player_id, item, delta in draft.plan.item_deltas:
            await conn.execute(sql.SET_INVENTORY, player_id, item, draft.inventory[item])
            await conn.execute(sql.INSERT_ITEM_MOVEMENT, transaction_id, player_id, item, delta)
        return transaction_id, fresh

    @staticmethod
    async def _recorded(conn: Connection, key: str) -> Outcome | None:
        row = await conn.fetchrow(sql.RECORDED, key)
        if row is None:
            return None
        balances = {player: (pair[0], pair[1]) for player, pair in json.loads(row["balances"]).items()}
        postings: tuple[tuple[str, int, str], ...] = ()
        if row["status"] == Status.APPLIED.value:
            postings = tuple(
                (entry["account"], entry["amount"], entry["purpose"])
                for entry in await conn.fetch(sql.TRANSACTION_ENTRIES, row["id"])
            )
        return Outcome(
            key,
            row["kind"],
            Status(row["status"]),
            row["reason"],
            row["id"],
            row["table_id"],
            row["hand_id"],
            balances,
            duplicate=True,
            postings=postings,
            ratings=tuple(RatingMove.from_json(move) for move in json.loads(row["ratings"] or "[]")),
        )

    # -- reads ------------------------------------------------------------------------------------

    async def balance(self, player_id: str) -> tuple[int, int]:
        row = await self._pool.fetchrow(
            "SELECT balance, held FROM wallet.accounts WHERE player_id = $1", player_id
        )
        if row is None:
            raise UnknownPlayerError(f"no player {player_id!r}")
        return row["balance"], row["held"]

    async def history(self, player_id: str, before_entry: int | None, limit: int) -> list[HistoryRow]:
        """A player's postings, newest first, strictly older than ``before_entry`` (keyset paging)."""
        await self.balance(player_id)  # NOT_FOUND for an unknown player rather than an empty page
        rows = await self._pool.fetch(
            """SELECT e.id, e.transaction_id, e.purpose, e.amount, e.balance_after, t.created_at,
                      t.idempotency_key
               FROM wallet.entries e
               JOIN wallet.accounts a ON a.id = e.account_id
               JOIN wallet.transactions t ON t.id = e.transaction_id
               WHERE a.player_id = $1 AND ($2::bigint IS NULL OR e.id < $2)
               ORDER BY e.id DESC LIMIT $3""",
            player_id,
            before_entry,
            limit,
        )
        return [HistoryRow(*row.values()) for row in rows]
