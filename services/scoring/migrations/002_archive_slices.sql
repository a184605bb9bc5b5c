-- Linear storage (docs/scoring.md "The archive"): a table's opening is kept once, with its pairing,
-- and each hand keeps only its own slice of the log; a replay joins the slices of the table's hands
-- up to the one asked for.

-- The table's log records before its first HandBegun (TableOpening, table_opened…), each element one
-- TableLogRecord at sequences 1, 2, 3….
ALTER TABLE archive.pairings ADD COLUMN opening bytea[] NOT NULL DEFAULT '{}';

-- records: the hand's slice of its table's log, at sequences first_sequence, first_sequence + 1…:
-- from the record after the previous hand's hand_ended event (the first hand: its HandBegun) through
-- the hand's end. A slice starting at 1 holds the opening too.
ALTER TABLE archive.hands ADD COLUMN first_sequence bigint NOT NULL DEFAULT 1;
ALTER TABLE archive.hands ALTER COLUMN first_sequence DROP DEFAULT;
-- A replay's chain: the slices of one table, in log order.
CREATE INDEX hands_by_table ON archive.hands (table_id, first_sequence);

