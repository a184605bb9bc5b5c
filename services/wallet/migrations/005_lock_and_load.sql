-- The start of every ledger transaction in one round trip: lock the command's accounts in account-id
-- order (a fixed order, so concurrent settlements never deadlock), then load them with the players'
-- holds, the table's pairing and whether it has closed. Two statements, as before (sql.py explains
-- why the load must be a statement of its own): in READ COMMITTED a VOLATILE function takes a fresh
-- snapshot for each statement it runs, so the load sees everything committed before the locks were
-- granted — the same guarantee as two round trips, for the price of one.
CREATE FUNCTION wallet.lock_and_load(players text[], houses text[], command_pairing text, command_table text)
RETURNS TABLE (
    id bigint, player_id text, house text, balance bigint, held bigint, overdraft_allowed boolean,
    pairing_id text, carry bigint, fee_reserve bigint, open boolean, pairing text, closed boolean
)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM wallet.accounts a
    WHERE a.player_id = ANY(players) OR a.house = ANY(houses)
    ORDER BY a.id FOR UPDATE;
    RETURN QUERY
    WITH p AS (
        SELECT coalesce(
            nullif(command_pairing, ''),
            (SELECT t.pairing_id FROM wallet.tables t WHERE t.table_id = command_table),
            ''
        ) AS id
    )
    SELECT a.id, a.player_id, a.house, a.balance, a.held, a.overdraft_allowed,
           h.pairing_id, h.carry, h.fee_reserve, h.open, (SELECT p.id FROM p),
           EXISTS (SELECT 1 FROM wallet.closed_pairings c WHERE c.pairing_id = (SELECT p.id FROM p))
    FROM wallet.accounts a
    LEFT JOIN LATERAL (
        SELECT o.pairing_id, o.carry, o.fee_reserve, o.open FROM wallet.holds o
        WHERE o.player_id = a.player_id AND o.open  -- holds_open_by_player
        UNION
        SELECT o.pairing_id, o.carry, o.fee_reserve, o.open FROM wallet.holds o
        WHERE o.pairing_id = (SELECT p.id FROM p) AND o.player_id = a.player_id
    ) h ON true
    WHERE a.player_id = ANY(players) OR a.house = ANY(houses)
    ORDER BY a.id;
END
$$;
