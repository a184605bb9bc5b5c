"""The wallet's SQL statements (schema: migrations/001_ledger.sql), kept apart from the logic."""

# The command's accounts locked first, in a statement of their own. In READ COMMITTED a statement that
# waits for a row lock gets the locked rows' new versions but reads every other table (the holds) as
# of its own start: a fee and a hand transfer of the same player settled concurrently would then write
# back a stale hold (a lost update; seen end to end as a negative `held` on release). So the load is a
# second statement, started after the locks are held, and sees everything committed before them.
# Both run inside wallet.lock_and_load (migrations/005_lock_and_load.sql), a VOLATILE function — a
# fresh snapshot per statement — so the two statements cost one round trip. The lock is in
# account-id order (a fixed order: concurrent transactions never deadlock); the load returns the
# accounts with each player's open hold (one at a time) and any hold of theirs in the command's
# pairing — given ($3), or the pairing of the command's table ($4) — released or not, and whether
# that pairing has closed.
LOCK_AND_LOAD = "SELECT * FROM wallet.lock_and_load($1::text[], $2::text[], $3::text, $4::text)"
# The settlement workers' connections run the same few statements thousands of times with only
# ids changing: plan them once (generic plans) instead of re-planning each execution — measured
# 430 → 180 µs for the load on 20,000 accounts, and the planner's CPU is the database's.
SETTLEMENT_SESSION = "SET plan_cache_mode = force_generic_plan"
PAIRING_PLAYERS = "SELECT player_id FROM wallet.holds WHERE pairing_id = $1 AND open ORDER BY player_id"
INVENTORY = "SELECT item, quantity FROM wallet.inventory WHERE player_id = $1"
# The transaction row (its unique key makes a repeat a no-op), the new balances and the entries in
# one statement: if the key exists, t is empty and nothing else is written. One round trip.
WRITE_TRANSACTION = """
WITH t AS (
    INSERT INTO wallet.transactions
        (idempotency_key, kind, status, reason, actor, pairing_id, table_id, hand_id, balances)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)
    ON CONFLICT (idempotency_key) DO NOTHING RETURNING id
), balances AS (
    UPDATE wallet.accounts AS a SET balance = v.balance, held = v.held
    FROM unnest($10::bigint[], $11::bigint[], $12::bigint[]) AS v(id, balance, held)
    WHERE a.id = v.id AND EXISTS (SELECT 1 FROM t)
), entries AS (
    INSERT INTO wallet.entries (transaction_id, account_id, amount, purpose, balance_after)
    SELECT t.id, e.account_id, e.amount, e.purpose, e.balance_after
    FROM t, unnest($13::bigint[], $14::bigint[], $15::text[], $16::bigint[])
        AS e(account_id, amount, purpose, balance_after)
)
SELECT id FROM t
"""
RECORDED = """
SELECT id, kind, status, reason, table_id, hand_id, balances
FROM wallet.transactions WHERE idempotency_key = $1
"""
INSERT_HOLD = """
INSERT INTO wallet.holds (pairing_id, player_id, carry, fee_reserve) VALUES ($1, $2, $3, $4)
"""
UPDATE_HOLD = """
UPDATE wallet.holds SET carry = $3, fee_reserve = $4, open = $5,
    released_at = CASE WHEN $5 THEN NULL ELSE now() END
WHERE pairing_id = $1 AND player_id = $2
"""
SET_INVENTORY = """
INSERT INTO wallet.inventory (player_id, item, quantity) VALUES ($1, $2, $3)
ON CONFLICT (player_id, item) DO UPDATE SET quantity = EXCLUDED.quantity
"""
RECORD_CLOSED_PAIRING = """
INSERT INTO wallet.closed_pairings (pairing_id) VALUES ($1) ON CONFLICT (pairing_id) DO NOTHING
"""
RECORD_TABLE = """
INSERT INTO wallet.tables (table_id, pairing_id) VALUES ($1, $2) ON CONFLICT (table_id) DO NOTHING
"""
INSERT_ITEM_MOVEMENT = """
INSERT INTO wallet.item_movements (transaction_id, player_id, item, delta) VALUES ($1, $2, $3, $4)
"""
AUDIT_REPLAY = """
SELECT a.id, a.balance, coalesce(sum(e.amount), 0) AS replayed
FROM wallet.accounts a LEFT JOIN wallet.entries e ON e.account_id = a.id
GROUP BY a.id HAVING a.balance <> coalesce(sum(e.amount), 0)
"""
AUDIT_UNBALANCED = """
SELECT transaction_id, sum(amount) AS total FROM wallet.entries
GROUP BY transaction_id HAVING sum(amount) <> 0
"""
AUDIT_HELD = """
SELECT a.id, a.held, coalesce(sum(h.carry + h.fee_reserve) FILTER (WHERE h.open), 0) AS in_holds
FROM wallet.accounts a LEFT JOIN wallet.holds h ON h.player_id = a.player_id
WHERE a.player_id IS NOT NULL
GROUP BY a.id HAVING a.held <> coalesce(sum(h.carry + h.fee_reserve) FILTER (WHERE h.open), 0)
"""
# The ledger's balance per holder for the metrics: every player together, each house account.
LEDGER_TOTALS = """
SELECT coalesce(house, 'players') AS holder, sum(balance)::bigint AS balance
FROM wallet.accounts GROUP BY 1
"""
