-- Veena schema 2 (PostgreSQL): the durable inbox of commands waiting for a
-- busy process tree, applied in seq order.
CREATE TABLE inbox (
    seq         BIGSERIAL PRIMARY KEY,
    root_id     TEXT    NOT NULL,
    key         TEXT    NOT NULL DEFAULT '',
    payload     BYTEA   NOT NULL,
    enqueued_at BIGINT  NOT NULL,
    done        BOOLEAN NOT NULL DEFAULT FALSE,
    outcome     BYTEA,
    done_at     BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX inbox_pending ON inbox (root_id, seq) WHERE NOT done;
CREATE INDEX inbox_done ON inbox (done_at) WHERE done;
