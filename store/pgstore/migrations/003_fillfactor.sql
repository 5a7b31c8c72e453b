-- Veena schema 3 (PostgreSQL): leave room in the pages of processes so
-- that a command rewriting a process row without changing an indexed
-- column updates it in place (a heap-only tuple) and touches no index.
ALTER TABLE processes SET (fillfactor = 70);
