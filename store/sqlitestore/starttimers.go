package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/veena-wf/veena/store"
)

// StartTimers lists the start timers of a definition ("": all).
func (s *Store) StartTimers(ctx context.Context, definition string) ([]store.StartTimer, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT definition, node, version, due_at, fired FROM start_timers
		WHERE ? = '' OR definition = ? ORDER BY definition, node`, definition, definition)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []store.StartTimer
	for rows.Next() {
		var t store.StartTimer
		var due sql.NullInt64
		if err := rows.Scan(&t.Definition, &t.Node, &t.Version, &due, &t.Fired); err != nil {
			return nil, readErr(err)
		}
		if due.Valid {
			t.DueAt = time.Unix(0, due.Int64).UTC()
		}
		out = append(out, t)
	}
	return out, readErr(rows.Err())
}

// ClaimStartTimers leases due start timers.
func (s *Store) ClaimStartTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.StartTimer, error) {
	var out []store.StartTimer
	err := s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		out = out[:0]
		rows, err := c.QueryContext(ctx, `UPDATE start_timers SET lease_until = ?
			WHERE (definition, node) IN (SELECT definition, node FROM start_timers
				WHERE due_at IS NOT NULL AND due_at <= ? AND lease_until <= ? ORDER BY due_at LIMIT ?)
			RETURNING definition, node, version, due_at, fired`, now.Add(lease).UnixNano(), now.UnixNano(), now.UnixNano(), limit)
		if err != nil {
			return classify(err)
		}
		defer rows.Close()
		for rows.Next() {
			var t store.StartTimer
			var due int64
			if err := rows.Scan(&t.Definition, &t.Node, &t.Version, &due, &t.Fired); err != nil {
				return classify(err)
			}
			t.DueAt = time.Unix(0, due).UTC()
			out = append(out, t)
		}
		return classify(rows.Err())
	})
	sortStartTimers(out)
	return out, err
}

// sortStartTimers orders claimed start timers earliest first.
func sortStartTimers(ts []store.StartTimer) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].DueAt.Before(ts[j-1].DueAt); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// NextStartTimer returns the earliest due time of a start timer.
func (s *Store) NextStartTimer(ctx context.Context) (time.Time, error) {
	var due sql.NullInt64
	if err := s.rdb.QueryRowContext(ctx, `SELECT min(due_at) FROM start_timers WHERE due_at IS NOT NULL`).Scan(&due); err != nil {
		return time.Time{}, readErr(err)
	}
	if !due.Valid {
		return time.Time{}, nil
	}
	return time.Unix(0, due.Int64).UTC(), nil
}

func (t *tx) ArmStartTimers(ctx context.Context, definition string, version int, timers []store.StartTimer) (bool, error) {
	dest := make([]driver.Value, 1)
	found, err := t.s.queryRow(`SELECT version FROM start_timer_versions WHERE definition = ?`, dest, definition)
	if err != nil {
		return false, err
	}
	if found && dest[0].(int64) >= int64(version) {
		return false, nil
	}
	t.wrote = true
	if _, err := t.s.run(`INSERT INTO start_timer_versions (definition, version) VALUES (?, ?)
		ON CONFLICT (definition) DO UPDATE SET version = excluded.version`, definition, int64(version)); err != nil {
		return false, err
	}
	if _, err := t.s.run(`DELETE FROM start_timers WHERE definition = ?`, definition); err != nil {
		return false, err
	}
	for _, x := range timers {
		var due any
		if !x.DueAt.IsZero() {
			due = x.DueAt.UnixNano()
		}
		if _, err := t.s.run(`INSERT INTO start_timers (definition, node, version, due_at, fired) VALUES (?, ?, ?, ?, ?)`,
			definition, x.Node, int64(version), due, int64(x.Fired)); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (t *tx) FireStartTimer(ctx context.Context, x store.StartTimer, next time.Time) error {
	t.wrote = true
	var due any
	if !next.IsZero() {
		due = next.UnixNano()
	}
	res, err := t.s.run(`UPDATE start_timers SET due_at = ?, fired = fired + 1, lease_until = 0
		WHERE definition = ? AND node = ? AND version = ? AND due_at = ?`,
		due, x.Definition, x.Node, int64(x.Version), x.DueAt.UnixNano())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("start timer %s/%s due at %s: %w", x.Definition, x.Node, x.DueAt.Format(time.RFC3339Nano), store.ErrStale)
	}
	return nil
}
