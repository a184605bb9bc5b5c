-- Every ledger transaction at a table looks up its players' open holds: index them by player, so
-- the lookup stays a point read however many (released) holds the table accumulates.
CREATE INDEX holds_open_by_player ON wallet.holds (player_id) WHERE open;
