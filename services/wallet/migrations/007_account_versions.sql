-- Settlement on a snapshot (store.py, docs/wallet.md): a ledger transaction may be planned on a plain
-- read and written by one statement that locks its accounts in id order and checks that none of its
-- players changed since. `version` is what it checks: every written transaction bumps the version of
-- each player account it locked, and a player's holds change only in a transaction that locks them.
ALTER TABLE wallet.accounts ADD COLUMN version bigint NOT NULL DEFAULT 0;

-- The lock and the load are separate statements again (sql.py): the snapshot path needs only the
-- load, and the locked path, now taken only by commands that record more than balances and holds,
-- can afford the round trip a statement of its own costs.
DROP FUNCTION wallet.lock_and_load(text[], text[], text, text);
