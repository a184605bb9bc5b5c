-- Wallet: players, prestige (威望) accounts, a double-entry ledger, holds and item inventory.
-- Invariants (docs/wallet.md): every transaction's entries sum to zero, so the sum of all balances
-- is always 0 — the grants account (the mint) is the only one that goes below zero, and its negative balance
-- is exactly the prestige in circulation. Player balances never go negative and never below what is held.

CREATE SCHEMA IF NOT EXISTS wallet;

CREATE TABLE wallet.players (
    id           text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
    display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 32),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A login session: the refresh token is stored only as its SHA-256 and is used once (rotated).
CREATE TABLE wallet.sessions (
    id                 text PRIMARY KEY,
    player_id          text NOT NULL REFERENCES wallet.players (id),
    refresh_hash       bytea NOT NULL UNIQUE,
    refresh_expires_at timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    refreshed_at       timestamptz
);

CREATE TABLE wallet.accounts (
    id                bigserial PRIMARY KEY,
    player_id         text UNIQUE REFERENCES wallet.players (id),
    -- house accounts: fees (hand fees, 换牌 costs, item prices), guess (猜大小 bank),
    -- grants (the mint: grants leave it, burns return to it). Escape penalties go to the opponent (H3).
    house             text UNIQUE CHECK (house IN ('fees', 'guess', 'grants')),
    balance           bigint NOT NULL DEFAULT 0,
    held              bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
    -- only the grants account (the mint) and the 猜大小 bank may be overdrawn
    overdraft_allowed boolean NOT NULL DEFAULT false,
    CHECK ((player_id IS NULL) <> (house IS NULL)),
    CHECK (overdraft_allowed OR balance >= 0),
    CHECK (held = 0 OR held <= balance)
);

-- the leaderboard reads players by prestige, highest first, ties by account id
CREATE INDEX accounts_leaderboard ON wallet.accounts (balance DESC, id) WHERE player_id IS NOT NULL;

INSERT INTO wallet.accounts (house, overdraft_allowed) VALUES
    ('grants', true), ('fees', false), ('guess', true);

-- One row per ledger transaction AND per processed external input: the idempotency key is unique,
-- so a redelivered event finds its row and its recorded outcome instead of being applied again.
CREATE TABLE wallet.transactions (
    id              bigserial PRIMARY KEY,
    idempotency_key text NOT NULL UNIQUE,
    kind            text NOT NULL,
    status          text NOT NULL CHECK (status IN ('applied', 'rejected')),
    reason          text NOT NULL DEFAULT '',
    actor           text NOT NULL DEFAULT '',
    pairing_id      text NOT NULL DEFAULT '',
    table_id        text NOT NULL DEFAULT '',
    hand_id         text NOT NULL DEFAULT '',
    -- player id -> balance after this transaction, kept so a redelivery republishes the same result
    balances        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE wallet.entries (
    id             bigserial PRIMARY KEY,
    transaction_id bigint NOT NULL REFERENCES wallet.transactions (id),
    account_id     bigint NOT NULL REFERENCES wallet.accounts (id),
    amount         bigint NOT NULL CHECK (amount <> 0),
    purpose        text NOT NULL,
    balance_after  bigint NOT NULL
);

CREATE INDEX entries_by_account ON wallet.entries (account_id, id DESC);
CREATE INDEX entries_by_transaction ON wallet.entries (transaction_id);

-- A hold reserves a player's carry (携带威望) plus the first hand's fee for one pairing.
-- accounts.held = sum over open holds of carry + fee_reserve.
CREATE TABLE wallet.holds (
    id          bigserial PRIMARY KEY,
    pairing_id  text NOT NULL,
    player_id   text NOT NULL REFERENCES wallet.players (id),
    carry       bigint NOT NULL CHECK (carry >= 0),
    fee_reserve bigint NOT NULL CHECK (fee_reserve >= 0),
    open        boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    UNIQUE (pairing_id, player_id)
);

CREATE INDEX holds_open_by_pairing ON wallet.holds (pairing_id) WHERE open;

-- Duel special items (T6): counted here, spent once.
CREATE TABLE wallet.inventory (
    player_id text NOT NULL REFERENCES wallet.players (id),
    item      text NOT NULL,
    quantity  integer NOT NULL CHECK (quantity >= 0),
    PRIMARY KEY (player_id, item)
);

CREATE TABLE wallet.item_movements (
    id             bigserial PRIMARY KEY,
    transaction_id bigint NOT NULL REFERENCES wallet.transactions (id),
    player_id      text NOT NULL REFERENCES wallet.players (id),
    item           text NOT NULL,
    delta          integer NOT NULL CHECK (delta <> 0)
);
