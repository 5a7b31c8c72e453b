package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// Enqueue appends a command to its tree's inbox.
func (s *Store) Enqueue(ctx context.Context, c *store.Command) error {
	err := s.pool.QueryRow(ctx, `INSERT INTO inbox (root_id, key, payload, enqueued_at)
		SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM processes WHERE id = $1 AND root_id = id)
		RETURNING seq`, c.Root, c.Key, c.Payload, c.EnqueuedAt.UnixNano()).Scan(&c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("process %s: %w", c.Root, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("enqueue a command for %s: %w", c.Root, classify(err))
	}
	return nil
}

// Command reads an inbox command.
func (s *Store) Command(ctx context.Context, seq int64) (*store.Command, error) {
	c, err := sqlstore.ScanCommand(s.pool.QueryRow(ctx, `SELECT `+sqlstore.CommandColumns+` FROM inbox WHERE seq = $1`, seq))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("command %d: %w", seq, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(err)
	}
	return c, nil
}

// InboxRoots returns trees with commands waiting since before.
func (s *Store) InboxRoots(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT root_id FROM inbox WHERE NOT done AND enqueued_at <= $1 LIMIT $2`,
		before.UnixNano(), max(limit, 1))
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, classify(err)
}

// PurgeCommands deletes done commands finished before before.
func (s *Store) PurgeCommands(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM inbox WHERE done AND done_at < $1`, before.UnixNano())
	if err != nil {
		return 0, classify(err)
	}
	return int(tag.RowsAffected()), nil
}

// WaitingCommands counts the commands not done (through the inbox_pending
// index).
func (s *Store) WaitingCommands(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE NOT done`).Scan(&n); err != nil {
		return 0, classify(err)
	}
	return n, nil
}

// PurgeKeys deletes the idempotency records created before before. A
// retry of a key being deleted waits for the deletion and then runs again.
func (s *Store) PurgeKeys(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency WHERE created_at < $1`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("purge idempotency records: %w", classify(err))
	}
	return int(tag.RowsAffected()), nil
}

// TryLockTree locks the root row without waiting (NOWAIT) and checks the
// inbox in the same statement.
func (t *tx) TryLockTree(ctx context.Context, root string) (int64, error) {
	t.queue(`SELECT p.tree_version, EXISTS (SELECT 1 FROM inbox i WHERE i.root_id = p.id AND NOT i.done)
		FROM processes p WHERE p.id = $1 AND p.root_id = p.id FOR UPDATE OF p NOWAIT`, root)
	var v int64
	var busy bool
	err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&v, &busy) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	case err != nil:
		return 0, classify(err)
	case busy:
		return 0, fmt.Errorf("process %s: %w", root, store.ErrBusy)
	}
	return v, nil
}

// ExpectTree sends nothing yet: the check rides on the statement of the
// command's UPDATE of the root row (see statement.go), which locks the row
// without waiting (a held row: ErrBusy) if it is at version with an empty
// inbox, and divides by zero unless the UPDATE matched it (ErrStale); the
// error aborts all of the command's writes. Without such an UPDATE the
// check is a statement of its own, the same lock and division.
func (t *tx) ExpectTree(ctx context.Context, root string, version int64) error {
	t.expecting, t.expectRoot, t.expectVersion = true, root, version
	return nil
}

func (t *tx) NextCommand(ctx context.Context, root string) (*store.Command, error) {
	t.queue(`SELECT `+sqlstore.CommandColumns+` FROM inbox WHERE root_id = $1 AND NOT done ORDER BY seq LIMIT 1`, root)
	var c *store.Command
	err := t.flush(ctx, func(br pgx.BatchResults) error {
		var err error
		c, err = sqlstore.ScanCommand(br.QueryRow())
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return c, classify(err)
}

func (t *tx) FinishCommand(ctx context.Context, seq int64, outcome []byte, at time.Time) error {
	t.write(rowKey("inbox", strconv.FormatInt(seq, 10)), `UPDATE inbox SET done = TRUE, outcome = $1, done_at = $2 WHERE seq = $3 AND NOT done`, outcome, at.UnixNano(), seq)
	return nil
}
