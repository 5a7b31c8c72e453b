package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/veena-wf/veena/store"
)

// Correlations lists the tokens waiting for a message or a signal.
func (s *Store) Correlations(ctx context.Context, kind, name, key string, limit int) ([]store.Correlation, error) {
	if limit <= 0 {
		limit = -1
	}
	q := `SELECT process_id, root_id, token, kind, name, key FROM correlations WHERE kind = ? AND name = ? AND key = ? ORDER BY process_id, token LIMIT ?`
	args := []any{kind, name, key, limit}
	if kind == "signal" {
		q = `SELECT process_id, root_id, token, kind, name, key FROM correlations WHERE kind = ? AND name = ? ORDER BY process_id, token LIMIT ?`
		args = []any{kind, name, limit}
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []store.Correlation
	for rows.Next() {
		var c store.Correlation
		var tok int64
		if err := rows.Scan(&c.Process, &c.Root, &tok, &c.Kind, &c.Name, &c.Key); err != nil {
			return nil, readErr(err)
		}
		c.Token = int(tok)
		out = append(out, c)
	}
	return out, readErr(rows.Err())
}

// PurgeMessages deletes the expired buffered messages and message ids.
func (s *Store) PurgeMessages(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM messages WHERE expires_at <= ?`, now.UnixNano())
		if err != nil {
			return classify(err)
		}
		k, _ := res.RowsAffected()
		n = int(k)
		if _, err := c.ExecContext(ctx, `DELETE FROM message_ids WHERE expires_at <= ?`, now.UnixNano()); err != nil {
			return classify(err)
		}
		return nil
	})
	return n, err
}

const qOldestMessage = `SELECT seq, name, key, message_id, env, created_at, expires_at FROM messages
	WHERE name = ? AND key = ? AND expires_at > ? AND seq > ? ORDER BY seq LIMIT 1`

// OldestMessage returns the oldest unexpired message of a name and key.
func (s *Store) OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	rows, err := s.rdb.QueryContext(ctx, qOldestMessage, name, key, now.UnixNano(), after)
	if err != nil {
		return nil, readErr(err)
	}
	ms, err := scanMessages(rows)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	return &ms[0], nil
}

// BufferedMessages lists the unexpired messages of a name, oldest first.
func (s *Store) BufferedMessages(ctx context.Context, name string, now time.Time, limit int) ([]store.Message, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, name, key, message_id, env, created_at, expires_at FROM messages
		WHERE name = ? AND expires_at > ? ORDER BY seq LIMIT ?`, name, now.UnixNano(), limit)
	if err != nil {
		return nil, readErr(err)
	}
	return scanMessages(rows)
}

func scanMessages(rows *sql.Rows) ([]store.Message, error) {
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		var m store.Message
		var created, expires int64
		if err := rows.Scan(&m.Seq, &m.Name, &m.Key, &m.ID, &m.Env, &created, &expires); err != nil {
			return nil, readErr(err)
		}
		m.CreatedAt, m.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
		out = append(out, m)
	}
	return out, readErr(rows.Err())
}

func (t *tx) ReplaceCorrelations(ctx context.Context, process string, cs []store.Correlation) error {
	t.wrote = true
	if _, err := t.s.run(`DELETE FROM correlations WHERE process_id = ?`, process); err != nil {
		return err
	}
	for _, c := range cs {
		if _, err := t.s.run(`INSERT INTO correlations (process_id, token, root_id, kind, name, key) VALUES (?, ?, ?, ?, ?, ?)`,
			c.Process, int64(c.Token), c.Root, c.Kind, c.Name, c.Key); err != nil {
			return err
		}
	}
	return nil
}

// Waiting needs no lock of its own: the writer runs one transaction at a
// time.
func (t *tx) Waiting(ctx context.Context, name, key string) (bool, error) {
	dest := make([]driver.Value, 1)
	return t.s.queryRow(`SELECT 1 FROM correlations WHERE kind = 'message' AND name = ? AND key = ? LIMIT 1`, dest, name, key)
}

func (t *tx) BufferMessage(ctx context.Context, m *store.Message) error {
	t.wrote = true
	res, err := t.s.run(`INSERT INTO messages (name, key, message_id, env, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
		m.Name, m.Key, m.ID, m.Env, m.CreatedAt.UnixNano(), m.ExpiresAt.UnixNano())
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	m.Seq = id
	return nil
}

func (t *tx) OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	dest := make([]driver.Value, 7)
	found, err := t.s.queryRow(qOldestMessage, dest, name, key, now.UnixNano(), after)
	if err != nil || !found {
		return nil, err
	}
	m := &store.Message{Seq: dest[0].(int64)}
	m.Name, _ = dest[1].(string)
	m.Key, _ = dest[2].(string)
	m.ID, _ = dest[3].(string)
	switch v := dest[4].(type) {
	case []byte:
		m.Env = append([]byte(nil), v...)
	case string:
		m.Env = []byte(v)
	}
	m.CreatedAt = time.Unix(0, dest[5].(int64)).UTC()
	m.ExpiresAt = time.Unix(0, dest[6].(int64)).UTC()
	return m, nil
}

func (t *tx) DeleteMessage(ctx context.Context, name, key string, seq int64) error {
	t.wrote = true
	res, err := t.s.run(`DELETE FROM messages WHERE seq = ?`, seq)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("message %d is no longer buffered: %w", seq, store.ErrStale)
	}
	return nil
}

func (t *tx) RememberMessageID(ctx context.Context, name, key, id string, now, until time.Time) error {
	t.wrote = true
	res, err := t.s.run(`INSERT INTO message_ids (name, key, message_id, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name, key, message_id) DO UPDATE SET expires_at = excluded.expires_at WHERE message_ids.expires_at <= ?`,
		name, key, id, until.UnixNano(), now.UnixNano())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("message %q with id %q: %w", name, id, store.ErrConflict)
	}
	return nil
}
