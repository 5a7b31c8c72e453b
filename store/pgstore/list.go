package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// dialect is PostgreSQL's SQL for the listing queries.
var dialect = sqlstore.Dialect{
	Param:      func(n int) string { return "$" + strconv.Itoa(n) },
	NoSnapshot: "''::bytea",
	True:       "TRUE",
	// A column of its own, not waits IS NULL: a predicate on waits, which
	// changes at nearly every step, would keep every update of a process
	// row from being a heap-only tuple (migration 013).
	Unindexed: "unindexed",
}

// CountProcesses counts the processes f selects, up to limit.
func (s *Store) CountProcesses(ctx context.Context, f store.Filter, limit int) (int, error) {
	q, args := sqlstore.CountQuery(f, limit, dialect)
	var n int
	if err := s.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, classify(err)
	}
	return n, nil
}

// FailTimer records a failed firing on a timer still due at f.DueAt.
func (s *Store) FailTimer(ctx context.Context, f store.TimerFailure, retryAt time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE timers SET error = $1, failed_at = $2, attempts = attempts + 1, lease_until = $3
		WHERE process_id = $4 AND token = $5 AND due_at = $6`,
		f.Message, f.At.UnixNano(), retryAt.UnixNano(), f.Process, f.Token, f.DueAt.UnixNano())
	return classify(err)
}

// TimerFailures returns the failures recorded on timers.
func (s *Store) TimerFailures(ctx context.Context, process string, limit int) ([]store.TimerFailure, error) {
	q := `SELECT process_id, token, due_at, error, failed_at, attempts FROM timers WHERE error IS NOT NULL`
	var args []any
	if process != "" {
		q += ` AND process_id = $1 ORDER BY token`
		args = append(args, process)
	} else {
		q += ` ORDER BY failed_at`
	}
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	return sqlstore.ScanTimerFailures(rows, classify)
}
