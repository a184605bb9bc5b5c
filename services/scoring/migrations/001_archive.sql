-- The archive of finished hands (docs/scoring.md "The archive"): kept forever, beyond the table log's
-- retention. Enum columns hold the contract's numbers (rules.proto Profile and Seat, archive.proto
-- ArchivedOutcome); message columns hold serialized protos (rules.proto Evaluation and Settlement,
-- server_state.proto TableLogRecord).
CREATE SCHEMA IF NOT EXISTS archive;

-- One row per pairing (one table), written with its first archived hand.
CREATE TABLE archive.pairings (
    pairing_id    text        PRIMARY KEY,
    table_id      text        NOT NULL UNIQUE,
    room_id       text        NOT NULL,
    profile       smallint    NOT NULL,
    private_table boolean     NOT NULL,
    started_at    timestamptz NOT NULL
);

CREATE TABLE archive.pairing_players (
    pairing_id   text     NOT NULL REFERENCES archive.pairings,
    seat         smallint NOT NULL,
    player_id    text     NOT NULL,
    display_name text     NOT NULL,
    is_bot       boolean  NOT NULL,
    PRIMARY KEY (pairing_id, seat)
);
-- ListMatches: a player's pairings.
CREATE INDEX pairing_players_by_player ON archive.pairing_players (player_id, pairing_id);

-- One row per hand, idempotent on hand_id. records: the table's log from its opening through the
-- hand's end (what a replay is built from), each element one TableLogRecord.
CREATE TABLE archive.hands (
    hand_id     text        PRIMARY KEY,
    pairing_id  text        NOT NULL REFERENCES archive.pairings,
    table_id    text        NOT NULL,
    hand_number integer     NOT NULL,
    outcome     smallint    NOT NULL,
    winner      smallint    NOT NULL,
    escaper     smallint    NOT NULL,
    evaluation  bytea,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    records     bytea[]     NOT NULL,
    archived_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hands_by_pairing ON archive.hands (pairing_id, hand_number);

-- What the ledger moved: one row per applied wallet transaction of a hand (its own, and those of
-- its exchanges, items and guesses), idempotent on the wallet's transaction id. No reference to
-- archive.hands: the wallet's answer may arrive before the hand is archived.
CREATE TABLE archive.transactions (
    transaction_id   text        PRIMARY KEY,
    hand_id          text        NOT NULL,
    table_id         text        NOT NULL,
    source_event_id  text        NOT NULL,
    hand_transaction boolean     NOT NULL,
    -- the hand's own transaction: the settlement as applied (rules.proto Settlement)
    settlement       bytea,
    received_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transactions_by_hand ON archive.transactions (hand_id);

CREATE TABLE archive.postings (
    transaction_id text     NOT NULL REFERENCES archive.transactions,
    position       integer  NOT NULL,
    account        text     NOT NULL,
    amount         bigint   NOT NULL,
    reason         smallint NOT NULL,
    PRIMARY KEY (transaction_id, position)
);
