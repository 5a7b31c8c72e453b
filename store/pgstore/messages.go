package pgstore

import (
	"context"
	"errors"
	"fmt"
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

// PurgeMessages deletes the expired buffered messages and message ids.
func (s *Store) PurgeMessages(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM messages WHERE expires_at <= $1`, now.UnixNano())
	if err != nil {
		return 0, classify(err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM message_ids WHERE expires_at <= $1`, now.UnixNano()); err != nil {
		return 0, classify(err)
	}
	return int(tag.RowsAffected()), nil
}

const qOldestMessage = `SELECT seq, name, key, message_id, env, created_at, expires_at FROM messages
	WHERE name = $1 AND key = $2 AND expires_at > $3 AND seq > $4 ORDER BY seq LIMIT 1`

// OldestMessage returns the oldest unexpired message of a name and key.
func (s *Store) OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	rows, err := s.pool.Query(ctx, qOldestMessage, name, key, now.UnixNano(), after)
	if err != nil {
		return nil, classify(err)
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
		limit = 1 << 30
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, name, key, message_id, env, created_at, expires_at FROM messages
		WHERE name = $1 AND expires_at > $2 ORDER BY seq LIMIT $3`, name, now.UnixNano(), limit)
	if err != nil {
		return nil, classify(err)
	}
	return scanMessages(rows)
}

func scanMessages(rows pgx.Rows) ([]store.Message, error) {
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, classify(rows.Err())
}

func scanMessage(row pgx.Row) (*store.Message, error) {
	var m store.Message
	var created, expires int64
	if err := row.Scan(&m.Seq, &m.Name, &m.Key, &m.ID, &m.Env, &created, &expires); err != nil {
		return nil, err
	}
	m.CreatedAt, m.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return &m, nil
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

// lockMessages serialises, until the transaction ends, the transactions
// that buffer or hand out messages of one name and key and those that
// ask whether a token waits for them (see store.MessageTx).
func (t *tx) lockMessages(name, key string) {
	t.queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "veena.message\x1f"+name+"\x1f"+key)
}

func (t *tx) Waiting(ctx context.Context, name, key string) (bool, error) {
	t.lockMessages(name, key)
	var found bool
	t.queue(`SELECT EXISTS (SELECT 1 FROM correlations WHERE kind = 'message' AND name = $1 AND key = $2)`, name, key)
	if err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&found) }); err != nil {
		return false, t.classify(err)
	}
	return found, nil
}

func (t *tx) BufferMessage(ctx context.Context, m *store.Message) error {
	t.lockMessages(m.Name, m.Key)
	t.queue(`INSERT INTO messages (name, key, message_id, env, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq`,
		m.Name, m.Key, m.ID, m.Env, m.CreatedAt.UnixNano(), m.ExpiresAt.UnixNano())
	return t.classify(t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&m.Seq) }))
}

func (t *tx) OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	t.lockMessages(name, key)
	t.queue(qOldestMessage, name, key, now.UnixNano(), after)
	var m *store.Message
	err := t.flush(ctx, func(br pgx.BatchResults) error {
		var err error
		m, err = scanMessage(br.QueryRow())
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, t.classify(err)
	}
	return m, nil
}

func (t *tx) DeleteMessage(ctx context.Context, name, key string, seq int64) error {
	t.lockMessages(name, key)
	// The check's division must fail this statement alone (ErrStale): it
	// goes as a statement of its own.
	t.seal()
	t.b.Queue(`WITH d AS (DELETE FROM messages WHERE seq = $1 RETURNING 1) SELECT 1 / count(*)::int FROM d`, seq)
	t.owners = append(t.owners, t.cur)
	return nil
}

func (t *tx) RememberMessageID(ctx context.Context, name, key, id string, now, until time.Time) error {
	t.queue(`INSERT INTO message_ids (name, key, message_id, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name, key, message_id) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE message_ids.expires_at <= $5
		RETURNING 1`, name, key, id, until.UnixNano(), now.UnixNano())
	var one int
	err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&one) })
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("message %q with id %q: %w", name, id, store.ErrConflict)
	}
	return t.classify(err)
}
