"""The wallet's SQL statements (schema: migrations/001_ledger.sql), kept apart from the logic."""

# A locked ledger transaction locks the command's accounts first, in account-id order (a fixed
# order: concurrent transactions never deadlock), in a statement of its own. In READ COMMITTED a
# statement that waits for a row lock gets the locked rows' new versions but reads every other table
# (the holds) as of its own start: a fee and a hand transfer of the same player settled concurrently
# would then write back a stale hold (a lost update; seen end to end as a negative `held` on release).
# So the load is a second statement, started after the locks are held, and sees everything committed
# before them. On the snapshot path the load runs alone: one statement, one consistent snapshot.
LOCK_ACCOUNTS = """
SELECT 1 FROM wallet.accounts WHERE player_id = ANY($1::text[]) OR house = ANY($2::text[])
ORDER BY id FOR UPDATE
"""
# The command's accounts (with their versions), each player's open hold (one at a time) and any hold
# of theirs in the command's pairing — given ($3), or the pairing of the command's table ($4) —
# released or not, and whether that pairing has closed; with a profile ($5), each player's rating in it
# (none: the starting rating).
LOAD_COMMAND = """
WITH p AS (
    SELECT coalesce(
        nullif($3::text, ''),
        (SELECT t.pairing_id FROM wallet.tables t WHERE t.table_id = $4::text),
        ''
    ) AS id
)
SELECT a.id, a.player_id, a.house, a.balance, a.held, a.overdraft_allowed, a.version,
       h.pairing_id, h.carry, h.fee_reserve, h.open, (SELECT p.id FROM p) AS pairing,
       EXISTS (SELECT 1 FROM wallet.closed_pairings c WHERE c.pairing_id = (SELECT p.id FROM p)) AS closed,
       r.rating, r.deviation, r.hands_rated
FROM wallet.accounts a
LEFT JOIN wallet.ratings r ON r.player_id = a.player_id AND r.profile = $5::text
LEFT JOIN LATERAL (
    SELECT o.pairing_id, o.carry, o.fee_reserve, o.open FROM wallet.holds o
    WHERE o.player_id = a.player_id AND o.open  -- holds_open_by_player
    UNION
    SELECT o.pairing_id, o.carry, o.fee_reserve, o.open FROM wallet.holds o
    WHERE o.pairing_id = (SELECT p.id FROM p) AND o.player_id = a.player_id
) h ON true
WHERE a.player_id = ANY($1::text[]) OR a.house = ANY($2::text[])
ORDER BY a.id
"""
# The settlement workers' connections run the same few statements thousands of times with only
# ids changing: plan them once (generic plans) instead of re-planning each execution — measured
# 430 → 180 µs for the load on 20,000 accounts, and the planner's CPU is the database's.
SETTLEMENT_SESSION = "SET plan_cache_mode = force_generic_plan"
PAIRING_PLAYERS = "SELECT player_id FROM wallet.holds WHERE pairing_id = $1 AND open ORDER BY player_id"
INVENTORY = "SELECT item, quantity FROM wallet.inventory WHERE player_id = $1"
# The whole write of a ledger transaction, in one statement (so, on its own, one database
# transaction): lock the accounts it changes in id order; check that each player account it planned on
# still has the version it was read with ($17, $18) and that the command's table ($25) still has the
# pairing the plan assumed ($26) — nothing to check on a locked path, whose locks were held since the
# load; insert the transaction row (its unique key makes a repeat a no-op); move
# the balances by the planned amounts, bumping the players' versions; insert the entries in the
# plan's order (numbered in that order: an account with two entries in one transaction, a hand's fee
# and its transfer, keeps its running balance in id order), each balance_after counted from the
# locked balance (a house account, which nothing checks, may have moved since the read); write the
# changed holds; write a hand's ratings in its profile ($28: players $29, ratings $30, deviations $31,
# hands rated $32), which the row keeps too ($27), so the hand's key moves them once. If the check
# fails or the key exists, t is empty and nothing else is written.
# Returns the transaction id (or NULL) and whether the check held.
WRITE_TRANSACTION = """
WITH locked AS (
    SELECT id, balance, version FROM wallet.accounts
    WHERE id = ANY($10::bigint[]) ORDER BY id FOR UPDATE
), fresh AS (
    SELECT count(*) = cardinality($17::bigint[])
        AND ($25::text IS NULL OR $26::text = coalesce(
            (SELECT tb.pairing_id FROM wallet.tables tb WHERE tb.table_id = $25::text), ''
        )) AS ok
    FROM locked l JOIN unnest($17::bigint[], $18::bigint[]) AS c(id, version)
        ON c.id = l.id AND c.version = l.version
), t AS (
    INSERT INTO wallet.transactions
        (idempotency_key, kind, status, reason, actor, pairing_id, table_id, hand_id, balances, ratings)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $27::jsonb WHERE (SELECT ok FROM fresh)
    ON CONFLICT (idempotency_key) DO NOTHING RETURNING id
), balances AS (
    UPDATE wallet.accounts AS a
    SET balance = a.balance + v.balance_delta, held = a.held + v.held_delta, version = a.version + v.bump
    FROM unnest($10::bigint[], $11::bigint[], $12::bigint[], $19::integer[])
        AS v(id, balance_delta, held_delta, bump)
    WHERE a.id = v.id AND EXISTS (SELECT 1 FROM t)
), entries AS (
    INSERT INTO wallet.entries (transaction_id, account_id, amount, purpose, balance_after)
    SELECT t.id, e.account_id, e.amount, e.purpose, l.balance + e.since_read
    FROM t CROSS JOIN unnest($13::bigint[], $14::bigint[], $15::text[], $16::bigint[])
        WITH ORDINALITY AS e(account_id, amount, purpose, since_read, n)
    JOIN locked l ON l.id = e.account_id
    ORDER BY e.n
), holds AS (
    UPDATE wallet.holds AS h
    SET carry = v.carry, fee_reserve = v.fee_reserve, open = v.open,
        released_at = CASE WHEN v.open THEN NULL ELSE coalesce(h.released_at, now()) END
    FROM unnest($20::text[], $21::text[], $22::bigint[], $23::bigint[], $24::boolean[])
        AS v(pairing_id, player_id, carry, fee_reserve, open)
    WHERE h.pairing_id = v.pairing_id AND h.player_id = v.player_id AND EXISTS (SELECT 1 FROM t)
), ratings AS (
    INSERT INTO wallet.ratings (player_id, profile, rating, deviation, hands_rated)
    SELECT v.player_id, $28::text, v.rating, v.deviation, v.hands_rated
    FROM unnest($29::text[], $30::float8[], $31::float8[], $32::integer[])
        AS v(player_id, rating, deviation, hands_rated)
    WHERE EXISTS (SELECT 1 FROM t)
    ON CONFLICT (player_id, profile) DO UPDATE
    SET rating = EXCLUDED.rating, deviation = EXCLUDED.deviation, hands_rated = EXCLUDED.hands_rated,
        updated_at = now()
)
SELECT (SELECT id FROM t) AS id, (SELECT ok FROM fresh) AS fresh
"""
RECORDED = """
SELECT id, kind, status, reason, table_id, hand_id, balances, ratings
FROM wallet.transactions WHERE idempotency_key = $1
"""
# A recorded transaction's entries in the order they were written, named as the contract names
# accounts: what a redelivered hand reports it moved.
TRANSACTION_ENTRIES = """
SELECT CASE WHEN a.player_id IS NOT NULL THEN 'player:' || a.player_id ELSE 'house:' || a.house END
           AS account,
       e.amount, e.purpose
FROM wallet.entries e JOIN wallet.accounts a ON a.id = e.account_id
WHERE e.transaction_id = $1 ORDER BY e.id
"""
INSERT_HOLD = """
INSERT INTO wallet.holds (pairing_id, player_id, carry, fee_reserve) VALUES ($1, $2, $3, $4)
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
# Each entry's balance_after is its account's balance once that entry was written: the running sum
# of the account's entries in id order (entries are numbered while their accounts are locked, so id
# order is commit order per account). Checks the balance_after a snapshot-path write derives from the
# locked balance of a house account that moved since the read.
AUDIT_RUNNING = """
SELECT id, account_id, balance_after, running FROM (
    SELECT e.id, e.account_id, e.balance_after,
           sum(e.amount) OVER (PARTITION BY e.account_id ORDER BY e.id) AS running
    FROM wallet.entries e
) r WHERE balance_after <> running ORDER BY id LIMIT 20
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
