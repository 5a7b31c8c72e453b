-- Veena schema 5 (PostgreSQL): idempotency records carry the time they
-- were created (Unix nanoseconds, the engine's clock), so that they can be
-- purged once they expire. Records from before this version count as
-- created now, by the database's clock: they expire one lifetime after the
-- upgrade. (The default is evaluated once, here, and kept in the catalog:
-- the table is not rewritten. Rows inserted without a time, as the
-- reservation of a key is, get their transaction's time.)
ALTER TABLE idempotency ADD COLUMN created_at BIGINT NOT NULL
    DEFAULT (extract(epoch FROM now()) * 1000000000)::bigint;
CREATE INDEX idempotency_created ON idempotency (created_at);
