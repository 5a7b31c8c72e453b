-- Veena schema 1 (PostgreSQL). Times are Unix nanoseconds.
CREATE TABLE definitions (
    seq        BIGSERIAL PRIMARY KEY,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    format     TEXT    NOT NULL,
    hash       TEXT    NOT NULL,
    file       TEXT    NOT NULL,
    source     BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL,
    UNIQUE (name, version)
);

CREATE TABLE processes (
    id           TEXT    PRIMARY KEY,
    root_id      TEXT    NOT NULL,
    parent_id    TEXT    NOT NULL DEFAULT '',
    parent_token INTEGER NOT NULL DEFAULT -1,
    position     INTEGER NOT NULL DEFAULT 0,
    definition   TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    state        TEXT    NOT NULL,
    context      TEXT,
    env          BYTEA   NOT NULL,
    snapshot     BYTEA   NOT NULL,
    event_seq    BIGINT  NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    tree_version BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX processes_root ON processes (root_id);
CREATE INDEX processes_definition ON processes (definition, id);
CREATE INDEX processes_state ON processes (state, id);
CREATE INDEX processes_parent ON processes (parent_id, parent_token) WHERE parent_id <> '';

-- The event log: the events one command fired in one process form one row,
-- seq and last_seq being the first and last sequence numbers in it.
CREATE TABLE events (
    process_id TEXT    NOT NULL,
    seq        BIGINT  NOT NULL,
    last_seq   BIGINT  NOT NULL,
    data       BYTEA   NOT NULL,
    PRIMARY KEY (process_id, seq)
);

CREATE TABLE timers (
    process_id  TEXT    NOT NULL,
    token       INTEGER NOT NULL,
    root_id     TEXT    NOT NULL,
    due_at      BIGINT  NOT NULL,
    lease_until BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (process_id, token)
);
CREATE INDEX timers_due ON timers (due_at);

CREATE TABLE contexts (
    process_id TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    is_unique  BOOLEAN NOT NULL,
    PRIMARY KEY (process_id, key)
);
CREATE INDEX contexts_pair ON contexts (key, value);
CREATE UNIQUE INDEX contexts_unique ON contexts (key, value) WHERE is_unique;

CREATE TABLE idempotency (
    key    TEXT PRIMARY KEY,
    result BYTEA
);
