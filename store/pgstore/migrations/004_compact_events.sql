-- Veena schema 4 (PostgreSQL): from this version on, event records may be
-- in the compact binary form (see store/internal/sqlstore), which an older
-- Veena cannot read. The schema itself is unchanged.
SELECT 1;
