-- Veena schema 2 (SQLite): the durable inbox of commands waiting for a
-- busy process tree, applied in seq order.
CREATE TABLE inbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id     TEXT    NOT NULL,
    key         TEXT    NOT NULL DEFAULT '',
    payload     BLOB    NOT NULL,
    enqueued_at INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    outcome     BLOB,
    done_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX inbox_pending ON inbox (root_id, seq) WHERE done = 0;
CREATE INDEX inbox_done ON inbox (done_at) WHERE done = 1;
