package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// CountProcesses counts the processes f selects, up to limit.
func (s *Store) CountProcesses(ctx context.Context, f store.Filter, limit int) (int, error) {
	q, args := sqlstore.CountQuery(f, limit, dialect)
	var n int
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, readErr(err)
	}
	return n, nil
}

// FailTimer records a failed firing on a timer still due at f.DueAt.
func (s *Store) FailTimer(ctx context.Context, f store.TimerFailure, retryAt time.Time) error {
	return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `UPDATE timers SET error = ?, failed_at = ?, attempts = attempts + 1, lease_until = ?
			WHERE process_id = ? AND token = ? AND due_at = ?`,
			f.Message, f.At.UnixNano(), retryAt.UnixNano(), f.Process, int64(f.Token), f.DueAt.UnixNano())
		return classify(err)
	})
}

// TimerFailures returns the failures recorded on timers.
func (s *Store) TimerFailures(ctx context.Context, process string, limit int) ([]store.TimerFailure, error) {
	q := `SELECT process_id, token, due_at, error, failed_at, attempts FROM timers WHERE error IS NOT NULL`
	var args []any
	if process != "" {
		q += ` AND process_id = ? ORDER BY token`
		args = append(args, process)
	} else {
		q += ` ORDER BY failed_at`
	}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	return sqlstore.ScanTimerFailures(rows, readErr)
}
