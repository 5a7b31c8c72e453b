-- Veena schema 8 (SQLite): the work layer's rows beside the processes —
-- human tasks, jobs for worker programs, incidents, audit notes,
-- attachments and subscriptions. Times are Unix nanoseconds, 0 for none;
-- lists and objects are JSON text. From this version on, event records
-- may hold the work layer's event types (see store/events.go).
CREATE TABLE tasks (
    id               TEXT    PRIMARY KEY,
    process_id       TEXT    NOT NULL,
    token            INTEGER NOT NULL,
    node             TEXT    NOT NULL,
    label            TEXT    NOT NULL,
    definition       TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    assignee         TEXT    NOT NULL DEFAULT '',
    candidate_users  TEXT    NOT NULL DEFAULT '[]',
    candidate_groups TEXT    NOT NULL DEFAULT '[]',
    queue            TEXT    NOT NULL DEFAULT '',
    claimed_by       TEXT    NOT NULL DEFAULT '',
    claimed_at       INTEGER NOT NULL DEFAULT 0,
    priority         INTEGER NOT NULL,
    due_at           INTEGER NOT NULL DEFAULT 0,
    follow_up_at     INTEGER NOT NULL DEFAULT 0,
    data             BLOB    NOT NULL,
    initial          BLOB    NOT NULL,
    created_at       INTEGER NOT NULL,
    completed_at     INTEGER NOT NULL DEFAULT 0,
    completed_by     TEXT    NOT NULL DEFAULT '',
    rev              INTEGER NOT NULL
) WITHOUT ROWID;
-- The inbox: open and claimed tasks in the order inboxes show them.
CREATE INDEX tasks_inbox ON tasks (priority DESC, created_at, id) WHERE state IN ('open', 'claimed');
CREATE INDEX tasks_token ON tasks (process_id, token);

CREATE TABLE jobs (
    id            TEXT    PRIMARY KEY,
    process_id    TEXT    NOT NULL,
    token         INTEGER NOT NULL,
    node          TEXT    NOT NULL,
    definition    TEXT    NOT NULL,
    type          TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    retries       INTEGER NOT NULL,
    headers       BLOB    NOT NULL,
    env           BLOB    NOT NULL,
    worker        TEXT    NOT NULL DEFAULT '',
    locked_until  INTEGER NOT NULL DEFAULT 0,
    due_at        INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    error_message TEXT    NOT NULL DEFAULT '',
    rev           INTEGER NOT NULL
) WITHOUT ROWID;
-- Jobs a worker may lease: open ones by due time, leased ones by the end
-- of their lease.
CREATE INDEX jobs_open ON jobs (type, due_at, id) WHERE state = 'open';
CREATE INDEX jobs_leased ON jobs (type, locked_until) WHERE state = 'leased';
CREATE INDEX jobs_token ON jobs (process_id, token);

CREATE TABLE incidents (
    id          TEXT    PRIMARY KEY,
    process_id  TEXT    NOT NULL,
    token       INTEGER NOT NULL,
    node        TEXT    NOT NULL,
    definition  TEXT    NOT NULL,
    job         TEXT    NOT NULL DEFAULT '',
    kind        TEXT    NOT NULL,
    message     TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER NOT NULL DEFAULT 0,
    rev         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX incidents_open ON incidents (id) WHERE state = 'open';
CREATE INDEX incidents_token ON incidents (process_id, token);

-- Who caused an event of the event log, and a detail: the audit trail is
-- the event log read with these notes.
CREATE TABLE audit_notes (
    process_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    user       TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    PRIMARY KEY (process_id, seq)
) WITHOUT ROWID;

CREATE TABLE attachments (
    process_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    uri         TEXT    NOT NULL,
    cardinality INTEGER NOT NULL,
    PRIMARY KEY (process_id, name)
) WITHOUT ROWID;

CREATE TABLE subscriptions (
    name       TEXT    PRIMARY KEY,
    definition TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    match      TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
