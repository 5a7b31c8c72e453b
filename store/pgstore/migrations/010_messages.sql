-- Veena schema 10 (PostgreSQL): tokens waiting for a message or a signal
-- (correlations, rewritten with their process like timers) and published
-- messages kept for their time to live. Times are Unix nanoseconds.
CREATE TABLE correlations (
    process_id TEXT    NOT NULL,
    token      INTEGER NOT NULL,
    root_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    PRIMARY KEY (process_id, token)
);
CREATE INDEX correlations_name ON correlations (kind, name, key);

CREATE TABLE messages (
    seq        BIGSERIAL PRIMARY KEY,
    name       TEXT   NOT NULL,
    key        TEXT   NOT NULL,
    message_id TEXT   NOT NULL,
    env        BYTEA,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX messages_name ON messages (name, key, seq);
CREATE INDEX messages_expiry ON messages (expires_at);
