-- Veena schema 6 (SQLite): a process row may hold the event record of the
-- command that created the process (its events from sequence number 1),
-- which then has no row in events: starting a process writes one b-tree
-- fewer. Older rows keep all their records in events.
ALTER TABLE processes ADD COLUMN first_events BLOB;
