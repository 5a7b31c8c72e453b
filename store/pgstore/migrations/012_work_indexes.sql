-- Veena schema 12 (PostgreSQL): the jobs a worker may lease (open, or
-- leased with the lease run out) are one index, keyed by when they become
-- available (the due time of an open job, the end of the lease of a leased
-- one), so that leasing a job moves its entry within that index instead of
-- from one index to another.
DROP INDEX jobs_open;
DROP INDEX jobs_leased;
CREATE INDEX jobs_available ON jobs (type, (CASE WHEN state = 'open' THEN due_at ELSE locked_until END), id)
    WHERE state IN ('open', 'leased');
