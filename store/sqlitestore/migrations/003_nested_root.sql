-- Veena schema 3 (SQLite): only nested processes are indexed by their
-- root (a tree is read as its root row by id plus this index), so starting
-- a top-level process writes one index page fewer. From this version on,
-- event records may be in the compact binary form (see
-- store/internal/sqlstore), which an older Veena cannot read.
DROP INDEX processes_root;
CREATE INDEX processes_nested_root ON processes (root_id) WHERE parent_id <> '';
