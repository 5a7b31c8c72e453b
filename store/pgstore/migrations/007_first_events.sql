-- Veena schema 7 (PostgreSQL): a process row may hold the event record of
-- the command that created the process (its events from sequence number 1),
-- which then has no row in events: starting a process inserts one row, not
-- two. Older rows keep all their records in events.
ALTER TABLE processes ADD COLUMN first_events BYTEA;
