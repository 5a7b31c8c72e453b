package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
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

// PurgeMessages deletes the expired buffered messages.
func (s *Store) PurgeMessages(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM messages WHERE expires_at <= ?`, now.UnixNano())
		if err != nil {
			return classify(err)
		}
		k, _ := res.RowsAffected()
		n = int(k)
		return nil
	})
	return n, err
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

func (t *tx) BufferMessage(ctx context.Context, m *store.Message) error {
	t.wrote = true
	if m.ID != "" {
		dest := make([]driver.Value, 1)
		found, err := t.s.queryRow(`SELECT seq FROM messages WHERE name = ? AND key = ? AND message_id = ? AND expires_at > ? LIMIT 1`,
			dest, m.Name, m.Key, m.ID, m.CreatedAt.UnixNano())
		if err != nil {
			return err
		}
		if found {
			return store.ErrConflict
		}
	}
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

func (t *tx) TakeMessage(ctx context.Context, name, key string, now time.Time) (*store.Message, error) {
	dest := make([]driver.Value, 6)
	found, err := t.s.queryRow(`SELECT seq, message_id, env, created_at, expires_at, key FROM messages WHERE name = ? AND key = ? AND expires_at > ? ORDER BY seq LIMIT 1`,
		dest, name, key, now.UnixNano())
	if err != nil || !found {
		return nil, err
	}
	m := &store.Message{Name: name, Key: key, Seq: dest[0].(int64)}
	m.ID, _ = dest[1].(string)
	switch v := dest[2].(type) {
	case []byte:
		m.Env = append([]byte(nil), v...)
	case string:
		m.Env = []byte(v)
	}
	m.CreatedAt = time.Unix(0, dest[3].(int64)).UTC()
	m.ExpiresAt = time.Unix(0, dest[4].(int64)).UTC()
	t.wrote = true
	if _, err := t.s.run(`DELETE FROM messages WHERE seq = ?`, m.Seq); err != nil {
		return nil, err
	}
	return m, nil
}
