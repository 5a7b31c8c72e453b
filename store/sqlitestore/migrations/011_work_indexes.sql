-- Veena schema 11 (SQLite): fewer index pages per job and task. The rows of
-- a process's work are found by their ids, which start with the process id
-- (a range of the primary key), so the token indexes go; the jobs a worker
-- may lease (open, or leased with the lease run out) are one index, keyed
-- by when they become available (the due time of an open job, the end of
-- the lease of a leased one), so that leasing a job moves its entry within
-- that index instead of from one index to another.
DROP INDEX tasks_token;
DROP INDEX jobs_token;
DROP INDEX incidents_token;
DROP INDEX jobs_open;
DROP INDEX jobs_leased;
CREATE INDEX jobs_available ON jobs (type, (CASE WHEN state = 'open' THEN due_at ELSE locked_until END), id)
    WHERE state IN ('open', 'leased');
