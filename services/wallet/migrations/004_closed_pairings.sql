-- Pairings whose table has closed (TableClosed): a hold for one of them is refused, so a hold that
-- arrives after the close (a retry racing it) cannot stay open with nothing left to release it.
CREATE TABLE wallet.closed_pairings (
    pairing_id text PRIMARY KEY,
    closed_at  timestamptz NOT NULL DEFAULT now()
);
