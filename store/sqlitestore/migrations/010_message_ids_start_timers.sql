-- Veena schema 10 (SQLite): message ids remembered for their time to live
-- (a message published again with the same name, key and id is refused),
-- and the timer start events of definitions (one row per event of the
-- armed version; due_at NULL once it fired its last time). Times are Unix
-- nanoseconds.
CREATE TABLE message_ids (
    name       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (name, key, message_id)
) WITHOUT ROWID;
CREATE INDEX message_ids_expiry ON message_ids (expires_at);

CREATE TABLE start_timer_versions (
    definition TEXT    NOT NULL PRIMARY KEY,
    version    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE start_timers (
    definition  TEXT    NOT NULL,
    node        TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    due_at      INTEGER,
    fired       INTEGER NOT NULL DEFAULT 0,
    lease_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (definition, node)
) WITHOUT ROWID;
CREATE INDEX start_timers_due ON start_timers (due_at) WHERE due_at IS NOT NULL;
