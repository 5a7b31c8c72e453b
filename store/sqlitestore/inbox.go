package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// Enqueue appends a command to its tree's inbox, through the writer.
func (s *Store) Enqueue(ctx context.Context, c *store.Command) error {
	return s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		res, err := s.exec(ctx, `INSERT INTO inbox (root_id, key, payload, enqueued_at)
			SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM processes WHERE id = ?1 AND root_id = id)`,
			c.Root, c.Key, c.Payload, c.EnqueuedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("enqueue a command for %s: %w", c.Root, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("process %s: %w", c.Root, store.ErrNotFound)
		}
		c.Seq, err = res.LastInsertId()
		return err
	})
}

// Command reads an inbox command.
func (s *Store) Command(ctx context.Context, seq int64) (*store.Command, error) {
	c, err := sqlstore.ScanCommand(s.rdb.QueryRowContext(ctx, `SELECT `+sqlstore.CommandColumns+` FROM inbox WHERE seq = ?`, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("command %d: %w", seq, store.ErrNotFound)
	}
	if err != nil {
		return nil, readErr(err)
	}
	return c, nil
}

// InboxRoots returns trees with commands waiting since before.
func (s *Store) InboxRoots(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT DISTINCT root_id FROM inbox WHERE done = 0 AND enqueued_at <= ? LIMIT ?`,
		before.UnixNano(), max(limit, 1))
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, readErr(err)
		}
		out = append(out, r)
	}
	return out, readErr(rows.Err())
}

// PurgeCommands deletes done commands finished before before.
func (s *Store) PurgeCommands(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		res, err := s.exec(ctx, `DELETE FROM inbox WHERE done = 1 AND done_at < ?`, before.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// WaitingCommands counts the commands not done (through the inbox_pending
// index).
func (s *Store) WaitingCommands(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE done = 0`).Scan(&n); err != nil {
		return 0, readErr(err)
	}
	return n, nil
}

// purgeBatch is how many idempotency records PurgeKeys deletes in one
// transaction: the writer runs no command while it deletes, and after an
// upgrade every older record expires at the same time.
const purgeBatch = 1000

// PurgeKeys deletes the idempotency records created before before, a batch
// per transaction, so that commands go on between the batches.
func (s *Store) PurgeKeys(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
			res, err := s.exec(ctx, `DELETE FROM idempotency WHERE key IN
				(SELECT key FROM idempotency WHERE created_at < ? LIMIT ?)`, before.UnixNano(), purgeBatch)
			if err != nil {
				return fmt.Errorf("purge idempotency records: %w", err)
			}
			n, err = res.RowsAffected()
			return err
		})
		total += int(n)
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
}

// TryLockTree: the writer already holds every tree, so only the inbox can
// make the tree busy. One statement reads the version and the inbox.
func (t *tx) TryLockTree(ctx context.Context, root string) (int64, error) {
	var row [2]driver.Value
	found, err := t.s.queryRow(qTreeVersion, row[:], root)
	v, err := treeVersion(root, row[0], found, err)
	if err != nil {
		return 0, err
	}
	if busy, _ := row[1].(int64); busy != 0 {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrBusy)
	}
	return v, nil
}

// qTreeVersion reads a tree's version and whether commands wait for it.
const qTreeVersion = `SELECT p.tree_version, EXISTS (SELECT 1 FROM inbox i WHERE i.root_id = p.id AND i.done = 0)
	FROM processes p WHERE p.id = ? AND p.root_id = p.id`

// ExpectTree reads nothing yet: the check rides on the request's UPDATE of
// the root row (PutProcess, SetTreeVersion), which matches only a root at
// version with an empty inbox. A request that does not update the root
// row is checked when it ends (checkExpected).
func (t *tx) ExpectTree(ctx context.Context, root string, version int64) error {
	t.expecting, t.expectRoot, t.expectVersion = true, root, version
	return nil
}

// checkExpected makes ExpectTree's check if no UPDATE has made it.
func (t *tx) checkExpected() error {
	if !t.expecting {
		return nil
	}
	t.expecting = false
	v, err := t.TryLockTree(context.Background(), t.expectRoot)
	if err != nil {
		return err
	}
	return store.CheckVersion(t.expectRoot, v, t.expectVersion)
}

func (t *tx) NextCommand(ctx context.Context, root string) (*store.Command, error) {
	st, err := t.s.stmt(ctx, `SELECT `+sqlstore.CommandColumns+` FROM inbox WHERE root_id = ? AND done = 0 ORDER BY seq LIMIT 1`)
	if err != nil {
		t.s.stmtFailed = true
		return nil, err
	}
	c, err := sqlstore.ScanCommand(st.QueryRowContext(ctx, root))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		t.s.stmtFailed = true
	}
	return c, classify(err)
}

func (t *tx) FinishCommand(ctx context.Context, seq int64, outcome []byte, at time.Time) error {
	t.wrote = true
	res, err := t.s.exec(ctx, `UPDATE inbox SET done = 1, outcome = ?, done_at = ? WHERE seq = ? AND done = 0`, outcome, at.UnixNano(), seq)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("command %d is not waiting: %w", seq, store.ErrNotFound)
	}
	return nil
}
