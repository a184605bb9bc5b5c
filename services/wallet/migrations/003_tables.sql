-- Which pairing each table plays for (from TableOpened): an event of a table settles against the
-- holds of exactly that pairing — even after TableClosed released them, when the last hand's
-- settlement or an escape penalty arrives late, so the carries still bound it (H1, H3).
CREATE TABLE wallet.tables (
    table_id   text PRIMARY KEY,
    pairing_id text NOT NULL,
    opened_at  timestamptz NOT NULL DEFAULT now()
);
