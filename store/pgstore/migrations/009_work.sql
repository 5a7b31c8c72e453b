-- Veena schema 9 (PostgreSQL): the work layer's rows beside the processes —
-- human tasks, jobs for worker programs, incidents, audit notes,
-- attachments and subscriptions. Times are Unix nanoseconds, 0 for none;
-- candidate lists are JSON arrays. From this version on, event records may
-- hold the work layer's event types (see store/events.go).
CREATE TABLE tasks (
    id               TEXT    PRIMARY KEY,
    process_id       TEXT    NOT NULL,
    token            INTEGER NOT NULL,
    node             TEXT    NOT NULL,
    label            TEXT    NOT NULL,
    definition       TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    assignee         TEXT    NOT NULL DEFAULT '',
    candidate_users  JSONB   NOT NULL DEFAULT '[]',
    candidate_groups JSONB   NOT NULL DEFAULT '[]',
    queue            TEXT    NOT NULL DEFAULT '',
    claimed_by       TEXT    NOT NULL DEFAULT '',
    claimed_at       BIGINT  NOT NULL DEFAULT 0,
    priority         INTEGER NOT NULL,
    due_at           BIGINT  NOT NULL DEFAULT 0,
    follow_up_at     BIGINT  NOT NULL DEFAULT 0,
    data             BYTEA   NOT NULL,
    initial          BYTEA   NOT NULL,
    created_at       BIGINT  NOT NULL,
    completed_at     BIGINT  NOT NULL DEFAULT 0,
    completed_by     TEXT    NOT NULL DEFAULT '',
    rev              BIGINT  NOT NULL
);
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
    headers       BYTEA   NOT NULL,
    env           BYTEA   NOT NULL,
    worker        TEXT    NOT NULL DEFAULT '',
    locked_until  BIGINT  NOT NULL DEFAULT 0,
    due_at        BIGINT  NOT NULL,
    created_at    BIGINT  NOT NULL,
    error_message TEXT    NOT NULL DEFAULT '',
    rev           BIGINT  NOT NULL
);
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
    created_at  BIGINT  NOT NULL,
    resolved_at BIGINT  NOT NULL DEFAULT 0,
    rev         BIGINT  NOT NULL
);
CREATE INDEX incidents_open ON incidents (id) WHERE state = 'open';
CREATE INDEX incidents_token ON incidents (process_id, token);

-- Who caused an event of the event log, and a detail: the audit trail is
-- the event log read with these notes.
CREATE TABLE audit_notes (
    process_id TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    "user"     TEXT   NOT NULL,
    detail     TEXT   NOT NULL,
    PRIMARY KEY (process_id, seq)
);

CREATE TABLE attachments (
    process_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    uri         TEXT    NOT NULL,
    cardinality INTEGER NOT NULL,
    PRIMARY KEY (process_id, name)
);

CREATE TABLE subscriptions (
    name       TEXT    PRIMARY KEY,
    definition TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    match      TEXT    NOT NULL,
    created_at BIGINT  NOT NULL
);
