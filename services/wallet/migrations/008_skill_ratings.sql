-- Skill ratings (docs/wallet.md "Skill rating"): one row per player and profile once the player has
-- played a rated hand of it (before that, the starting rating). Written only by a hand's ledger
-- transaction, in the statement that writes it, so a hand moves its players' ratings exactly once;
-- that statement holds the players' account locks, so a rating changes only with its account version.
CREATE TABLE wallet.ratings (
    player_id    text NOT NULL REFERENCES wallet.players (id),
    profile      text NOT NULL CHECK (profile IN ('duel', 'erren')),
    rating       double precision NOT NULL,
    deviation    double precision NOT NULL CHECK (deviation > 0),
    hands_rated  integer NOT NULL CHECK (hands_rated > 0),
    conservative double precision GENERATED ALWAYS AS (rating - 2 * deviation) STORED,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (player_id, profile)
);
-- The rating boards: by conservative estimate within a profile.
CREATE INDEX ratings_board ON wallet.ratings (profile, conservative DESC, player_id);

-- What a hand's transaction moved of both seats' ratings (before and after, JSON), kept on the
-- transaction row like its balances, so a redelivered hand answers the same RatingChange.
ALTER TABLE wallet.transactions ADD COLUMN ratings jsonb;
