-- Both seats' skill ratings moved by a hand (docs/scoring.md "The archive"): a hand's own transaction
-- keeps its RatingChange (wallet.proto) of SEAT_FIRST and SEAT_SECOND; empty when the hand moved no
-- rating.
ALTER TABLE archive.transactions ADD COLUMN ratings bytea[] NOT NULL DEFAULT '{}';
