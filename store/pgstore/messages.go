package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/veena-wf/veena/store"
)

// Correlations lists the tokens waiting for a message or a signal.
func (s *Store) Correlations(ctx context.Context, kind, name, key string, limit int) ([]store.Correlation, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	q := `SELECT process_id, root_id, token, kind, name, key FROM correlations WHERE kind = $1 AND name = $2 AND key = $3 ORDER BY process_id, token LIMIT $4`
	args := []any{kind, name, key, limit}
	if kind == "signal" {
		q = `SELECT process_id, root_id, token, kind, name, key FROM correlations WHERE kind = $1 AND name = $2 ORDER BY process_id, token LIMIT $3`
		args = []any{kind, name, limit}
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.Correlation
	for rows.Next() {
		var c store.Correlation
		if err := rows.Scan(&c.Process, &c.Root, &c.Token, &c.Kind, &c.Name, &c.Key); err != nil {
			return nil, classify(err)
		}
		out = append(out, c)
	}
	return out, classify(rows.Err())
}

// PurgeMessages deletes the expired buffered messages.
func (s *Store) PurgeMessages(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM messages WHERE expires_at <= $1`, now.UnixNano())
	if err != nil {
		return 0, classify(err)
	}
	return int(tag.RowsAffected()), nil
}

func (t *tx) ReplaceCorrelations(ctx context.Context, process string, cs []store.Correlation) error {
	t.write(rowKey("correlations", process), `DELETE FROM correlations WHERE process_id = $1`, process)
	for _, c := range cs {
		t.write(rowKey("correlations", process, strconv.Itoa(c.Token)),
			`INSERT INTO correlations (process_id, token, root_id, kind, name, key) VALUES ($1, $2, $3, $4, $5, $6)`,
			c.Process, c.Token, c.Root, c.Kind, c.Name, c.Key)
	}
	return nil
}

func (t *tx) BufferMessage(ctx context.Context, m *store.Message) error {
	if m.ID != "" {
		// Publishers of one id are serialised by the advisory lock of its
		// name, key and id, so two cannot both find it absent.
		t.queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, m.Name+"\x1f"+m.Key+"\x1f"+m.ID)
		var found bool
		t.queue(`SELECT EXISTS (SELECT 1 FROM messages WHERE name = $1 AND key = $2 AND message_id = $3 AND expires_at > $4)`,
			m.Name, m.Key, m.ID, m.CreatedAt.UnixNano())
		if err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&found) }); err != nil {
			return t.classify(err)
		}
		if found {
			return store.ErrConflict
		}
	}
	t.queue(`INSERT INTO messages (name, key, message_id, env, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq`,
		m.Name, m.Key, m.ID, m.Env, m.CreatedAt.UnixNano(), m.ExpiresAt.UnixNano())
	return t.classify(t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&m.Seq) }))
}

func (t *tx) TakeMessage(ctx context.Context, name, key string, now time.Time) (*store.Message, error) {
	m := &store.Message{Name: name, Key: key}
	var created, expires int64
	t.queue(`DELETE FROM messages WHERE seq = (SELECT seq FROM messages WHERE name = $1 AND key = $2 AND expires_at > $3
		ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING seq, message_id, env, created_at, expires_at`, name, key, now.UnixNano())
	err := t.flush(ctx, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&m.Seq, &m.ID, &m.Env, &created, &expires)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, t.classify(err)
	}
	m.CreatedAt = time.Unix(0, created).UTC()
	m.ExpiresAt = time.Unix(0, expires).UTC()
	return m, nil
}
