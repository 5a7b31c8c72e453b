-- Veena schema 7 (SQLite): where each process waits and whether it is
-- stalled (for listings that filter by node, and by stalled processes),
-- context pairs kept once their process ends (listings find it by them;
-- only executing processes receive events and hold unique values), and
-- the last failure of each timer.
ALTER TABLE processes ADD COLUMN waits BLOB;
ALTER TABLE processes ADD COLUMN stalled INTEGER NOT NULL DEFAULT 0;
CREATE INDEX processes_stalled ON processes (id) WHERE stalled = 1;
-- Rows written before this version, until the engine has rewritten them
-- with where they wait.
CREATE INDEX processes_unindexed ON processes (id) WHERE waits IS NULL;

-- One row per process and node it waits at.
CREATE TABLE waits (
    node       TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (node, process_id)
) WITHOUT ROWID;

ALTER TABLE contexts ADD COLUMN executing INTEGER NOT NULL DEFAULT 1;
DROP INDEX contexts_unique;
CREATE UNIQUE INDEX contexts_unique ON contexts (key, value) WHERE is_unique = 1 AND executing = 1;
CREATE INDEX contexts_value ON contexts (value);
INSERT INTO contexts (process_id, key, value, is_unique, executing)
    SELECT p.id, j.key, j.value, 0, 0 FROM processes p, json_each(p.context) j
    WHERE p.context IS NOT NULL AND p.state <> 'executing'
    ON CONFLICT DO NOTHING;

ALTER TABLE timers ADD COLUMN error TEXT;
ALTER TABLE timers ADD COLUMN failed_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
