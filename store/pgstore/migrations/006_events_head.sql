-- Veena schema 6 (PostgreSQL): from this version on, event records may be
-- in the second compact form (see store/events.go: each event starts with
-- a head byte, and takes about half the bytes of the first form), which an
-- older Veena cannot read. The schema itself is unchanged.
SELECT 1;
