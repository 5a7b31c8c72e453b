-- Veena schema 4 (SQLite): idempotency records carry the time they were
-- created (Unix nanoseconds, the engine's clock), so that they can be
-- purged once they expire. Records from before this version count as
-- created now, by the database's clock: they expire one lifetime after
-- the upgrade.
ALTER TABLE idempotency ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
UPDATE idempotency SET created_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000000000;
CREATE INDEX idempotency_created ON idempotency (created_at);
