-- Veena schema 8 (PostgreSQL): where each process waits and whether it is
-- stalled (for listings that filter by node, and by stalled processes),
-- context pairs kept once their process ends (listings find it by them;
-- only executing processes receive events and hold unique values), and
-- the last failure of each timer.
ALTER TABLE processes ADD COLUMN waits BYTEA;
ALTER TABLE processes ADD COLUMN stalled BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX processes_stalled ON processes (id) WHERE stalled;
-- Rows written before this version, until the engine has rewritten them
-- with where they wait.
CREATE INDEX processes_unindexed ON processes (id) WHERE waits IS NULL;

-- One row per process and node it waits at.
CREATE TABLE waits (
    node       TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (node, process_id)
);

ALTER TABLE contexts ADD COLUMN executing BOOLEAN NOT NULL DEFAULT TRUE;
DROP INDEX contexts_unique;
CREATE UNIQUE INDEX contexts_unique ON contexts (key, value) WHERE is_unique AND executing;
CREATE INDEX contexts_value ON contexts (value);
INSERT INTO contexts (process_id, key, value, is_unique, executing)
    SELECT p.id, j.key, j.value, FALSE, FALSE FROM processes p, jsonb_each_text(p.context::jsonb) j
    WHERE p.context IS NOT NULL AND p.state <> 'executing'
    ON CONFLICT DO NOTHING;

ALTER TABLE timers ADD COLUMN error TEXT,
    ADD COLUMN failed_at BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
