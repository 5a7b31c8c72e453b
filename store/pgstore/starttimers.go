package pgstore

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/veena-wf/veena/store"
)

// StartTimers lists the start timers of a definition ("": all).
func (s *Store) StartTimers(ctx context.Context, definition string) ([]store.StartTimer, error) {
	rows, err := s.pool.Query(ctx, `SELECT definition, node, version, due_at, fired FROM start_timers
		WHERE $1 = '' OR definition = $1 ORDER BY definition, node`, definition)
	if err != nil {
		return nil, classify(err)
	}
	return scanStartTimers(rows)
}

func scanStartTimers(rows pgx.Rows) ([]store.StartTimer, error) {
	defer rows.Close()
	var out []store.StartTimer
	for rows.Next() {
		var t store.StartTimer
		var due *int64
		var version, fired int32
		if err := rows.Scan(&t.Definition, &t.Node, &version, &due, &fired); err != nil {
			return nil, classify(err)
		}
		t.Version, t.Fired = int(version), int(fired)
		if due != nil {
			t.DueAt = time.Unix(0, *due).UTC()
		}
		out = append(out, t)
	}
	return out, classify(rows.Err())
}

// ClaimStartTimers leases due start timers.
func (s *Store) ClaimStartTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.StartTimer, error) {
	rows, err := s.pool.Query(ctx, `UPDATE start_timers SET lease_until = $1
		WHERE (definition, node) IN (
			SELECT definition, node FROM start_timers WHERE due_at IS NOT NULL AND due_at <= $2 AND lease_until <= $2
			ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING definition, node, version, due_at, fired`, now.Add(lease).UnixNano(), now.UnixNano(), limit)
	if err != nil {
		return nil, classify(err)
	}
	out, err := scanStartTimers(rows)
	sort.Slice(out, func(i, j int) bool { return out[i].DueAt.Before(out[j].DueAt) })
	return out, err
}

// NextStartTimer returns the earliest due time of a start timer.
func (s *Store) NextStartTimer(ctx context.Context) (time.Time, error) {
	var due *int64
	if err := s.pool.QueryRow(ctx, `SELECT min(due_at) FROM start_timers WHERE due_at IS NOT NULL`).Scan(&due); err != nil {
		return time.Time{}, classify(err)
	}
	if due == nil {
		return time.Time{}, nil
	}
	return time.Unix(0, *due).UTC(), nil
}

func (t *tx) ArmStartTimers(ctx context.Context, definition string, version int, timers []store.StartTimer) (bool, error) {
	t.queue(`INSERT INTO start_timer_versions (definition, version) VALUES ($1, $2)
		ON CONFLICT (definition) DO UPDATE SET version = EXCLUDED.version WHERE start_timer_versions.version < EXCLUDED.version
		RETURNING 1`, definition, version)
	var one int
	err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&one) })
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, t.classify(err)
	}
	t.queue(`DELETE FROM start_timers WHERE definition = $1`, definition)
	for _, x := range timers {
		var due *int64
		if !x.DueAt.IsZero() {
			n := x.DueAt.UnixNano()
			due = &n
		}
		t.queue(`INSERT INTO start_timers (definition, node, version, due_at, fired) VALUES ($1, $2, $3, $4, $5)`,
			definition, x.Node, version, due, x.Fired)
	}
	return true, nil
}

func (t *tx) FireStartTimer(ctx context.Context, x store.StartTimer, next time.Time) error {
	var due *int64
	if !next.IsZero() {
		n := next.UnixNano()
		due = &n
	}
	// No row at that due time divides by zero: ErrStale, for this
	// statement alone.
	t.seal()
	t.b.Queue(`WITH u AS (UPDATE start_timers SET due_at = $1, fired = fired + 1, lease_until = 0
		WHERE definition = $2 AND node = $3 AND version = $4 AND due_at = $5 RETURNING 1) SELECT 1 / count(*)::int FROM u`,
		due, x.Definition, x.Node, x.Version, x.DueAt.UnixNano())
	t.owners = append(t.owners, t.cur)
	return nil
}
