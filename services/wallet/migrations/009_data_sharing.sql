-- Players' consent to share their hands for research (issue 30; docs/wallet.md "Sharing hands for
-- research"). Append-only: every change is a row, so the table is its own audit trail (who changed it
-- and when); a player's setting is their latest row, and a player without one has not consented (the
-- default is not shared). Only the player themself writes rows (SetDataSharing), so `changed_by` is
-- the player's id today; it is kept apart so an audit never has to assume it.
CREATE TABLE wallet.data_sharing (
    id          bigserial PRIMARY KEY,
    player_id   text NOT NULL REFERENCES wallet.players (id),
    share_hands boolean NOT NULL,
    changed_by  text NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);
-- A player's latest row (their setting now), and the exporter's "who shares" in player order.
CREATE INDEX data_sharing_latest ON wallet.data_sharing (player_id, id DESC);
