-- House bot players (matchmaking's bot fill, BotLogin): a stable player per bot id instead of a new
-- guest per fill. They play and settle through the ledger like anyone, but are no competitors: the
-- leaderboards leave them out.
ALTER TABLE wallet.players ADD COLUMN is_bot boolean NOT NULL DEFAULT false;
