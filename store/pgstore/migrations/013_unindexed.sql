-- Veena schema 13 (PostgreSQL): rows an older Veena wrote without where
-- they wait are marked by a column of their own, which the engine writes
-- as waits IS NULL. Schema 8 indexed them by the predicate waits IS NULL:
-- a column named in an index's predicate stops PostgreSQL from updating a
-- row in place (a heap-only tuple), and waits changes at nearly every
-- step, so every step wrote a new entry into each index of processes.
-- unindexed changes only when a row is first indexed.
ALTER TABLE processes ADD COLUMN unindexed BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE processes SET unindexed = TRUE WHERE waits IS NULL;
DROP INDEX processes_unindexed;
CREATE INDEX processes_unindexed ON processes (id) WHERE unindexed;
