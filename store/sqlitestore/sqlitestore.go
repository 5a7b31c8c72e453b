// Package sqlitestore is Veena's embedded store: one SQLite file in WAL
// mode, through the pure-Go modernc.org/sqlite driver.
//
// All writes go through one writer goroutine holding the only writing
// connection, so commands never meet SQLITE_BUSY. The writer commits
// concurrent Updates together (group commit): it opens one transaction,
// runs each Update inside its own savepoint (a failed one is rolled back
// alone) and commits them with one sync. Reads use a pool of read-only
// connections and see committed data only.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options tune a Store.
type Options struct {
	// Synchronous is the PRAGMA synchronous level: "FULL" (default: every
	// commit reaches the disk) or "NORMAL" (in WAL mode, a power loss may
	// lose the last commits but never corrupts the file).
	Synchronous string
	// MaxBatch is how many concurrent Updates may share one commit (default
	// 64); 1 turns group commit off.
	MaxBatch int
	// Readers is the number of reading connections (default 4).
	Readers int
	// MaxPageCount, if set, caps the database file at that many pages
	// (PRAGMA max_page_count); writes beyond it fail as a full disk does.
	MaxPageCount int
}

// Store is a SQLite database.
type Store struct {
	opts   Options
	wdb    *sql.DB // exactly one connection, used by the writer goroutine only
	rdb    *sql.DB
	conn   *sql.Conn
	reqs   chan *request
	quit   chan struct{}
	done   chan struct{}
	closed sync.Once
	stmts  map[string]*sql.Stmt

	updates, commits atomic.Int64
}

// Stats reports how many Updates committed and in how many transactions.
func (s *Store) Stats() (updates, commits int64) { return s.updates.Load(), s.commits.Load() }

type request struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx store.Tx) error
	raw  func(ctx context.Context, c *sql.Conn) error // runs inside the batch transaction
	done chan error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite database at path. Call
// Migrate before use.
func Open(path string, opts Options) (*Store, error) {
	if opts.Synchronous == "" {
		opts.Synchronous = "FULL"
	}
	switch strings.ToUpper(opts.Synchronous) {
	case "FULL", "NORMAL", "EXTRA", "OFF":
	default:
		return nil, fmt.Errorf("sqlitestore: unknown synchronous level %q", opts.Synchronous)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", strings.ToUpper(opts.Synchronous))
	q.Add("_pragma", "foreign_keys(off)")
	if opts.MaxPageCount > 0 {
		q.Add("_pragma", fmt.Sprintf("max_page_count(%d)", opts.MaxPageCount))
	}
	wdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(context.Background())
	if err != nil {
		wdb.Close()
		return nil, store.Unavailable("sqlitestore: open "+path, classify(err))
	}
	// Make the file (and WAL mode) exist before readers open it.
	if _, err := conn.ExecContext(context.Background(), "PRAGMA user_version"); err != nil {
		conn.Close()
		wdb.Close()
		return nil, store.Unavailable("sqlitestore: open "+path, classify(err))
	}
	rq := url.Values{}
	rq.Set("_busy_timeout", "30000")
	rq.Set("_query_only", "1")
	rdb, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(opts.Readers)
	rdb.SetMaxIdleConns(opts.Readers)
	s := &Store{
		opts: opts, wdb: wdb, rdb: rdb, conn: conn,
		reqs:  make(chan *request, 1024),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
		stmts: map[string]*sql.Stmt{},
	}
	go s.writer()
	return s, nil
}

// Close stops the writer and closes the database.
func (s *Store) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.quit)
		<-s.done
		for _, st := range s.stmts {
			st.Close()
		}
		s.conn.Close()
		err = errors.Join(s.wdb.Close(), s.rdb.Close())
	})
	return err
}

// classify maps SQLite errors onto the store's errors.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT:
			if se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
				return fmt.Errorf("%w: %w", store.ErrConflict, err)
			}
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_PERM:
			return store.Unavailable("sqlite", err)
		}
	}
	return err
}

// writer runs every write, committing concurrent requests together.
func (s *Store) writer() {
	defer close(s.done)
	ctx := context.Background()
	batch := make([]*request, 0, s.opts.MaxBatch)
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.quit:
			// Refuse what is still queued.
			for {
				select {
				case r := <-s.reqs:
					r.done <- store.Unavailable("sqlitestore", errors.New("store closed"))
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.runBatch(ctx, batch)
	}
}

func (s *Store) runBatch(ctx context.Context, batch []*request) {
	errs := make([]error, len(batch))
	finish := func(commitErr error) {
		for i, r := range batch {
			if commitErr != nil && errs[i] == nil {
				errs[i] = commitErr
			}
			r.done <- errs[i]
		}
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		finish(classify(err))
		return
	}
	single := len(batch) == 1
	anyOK := false
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if !single {
			if _, err := s.exec(ctx, "SAVEPOINT cmd"); err != nil {
				errs[i] = classify(err)
				continue
			}
		}
		var err error
		if r.raw != nil {
			err = r.raw(ctx, s.conn)
		} else {
			err = r.fn(r.ctx, &tx{s: s})
		}
		errs[i] = err
		if single {
			anyOK = err == nil
			break
		}
		if err != nil {
			if _, rerr := s.exec(ctx, "ROLLBACK TO cmd"); rerr != nil {
				// The transaction is unusable: give up the whole batch.
				s.conn.ExecContext(ctx, "ROLLBACK")
				finish(classify(rerr))
				return
			}
		} else {
			anyOK = true
		}
		if _, err := s.exec(ctx, "RELEASE cmd"); err != nil {
			s.conn.ExecContext(ctx, "ROLLBACK")
			finish(classify(err))
			return
		}
	}
	if !anyOK {
		s.conn.ExecContext(ctx, "ROLLBACK")
		finish(nil)
		return
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		s.conn.ExecContext(ctx, "ROLLBACK")
		finish(classify(err))
		return
	}
	s.commits.Add(1)
	for i, r := range batch {
		if errs[i] == nil && r.fn != nil {
			s.updates.Add(1)
		}
	}
	finish(nil)
}

func (s *Store) submit(ctx context.Context, r *request) error {
	r.ctx = ctx
	r.done = make(chan error, 1)
	select {
	case s.reqs <- r:
	case <-s.quit:
		return store.Unavailable("sqlitestore", errors.New("store closed"))
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// Update runs fn in a transaction, possibly shared with other Updates.
func (s *Store) Update(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	return s.submit(ctx, &request{fn: fn})
}

func (s *Store) write(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return s.submit(ctx, &request{raw: fn})
}

// stmt returns a prepared statement on the writer connection; only the
// writer goroutine calls it.
func (s *Store) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	st, err := s.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, classify(err)
	}
	s.stmts[q] = st
	return st, nil
}

func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, args...)
	return res, classify(err)
}

// Migrate brings the schema up to date.
func (s *Store) Migrate(ctx context.Context, apply bool) error {
	migs, err := store.Migrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); err != nil {
			return classify(err)
		}
		var v int
		err := c.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := c.ExecContext(ctx, "INSERT INTO schema_version VALUES (0)"); err != nil {
				return classify(err)
			}
		} else if err != nil {
			return classify(err)
		}
		if err := store.CheckSchemaVersion(v, len(migs), apply); err != nil {
			return err
		}
		for i := v; i < len(migs); i++ {
			if _, err := c.ExecContext(ctx, migs[i]); err != nil {
				return fmt.Errorf("sqlitestore: migration %d: %w", i+1, classify(err))
			}
		}
		if _, err := c.ExecContext(ctx, "UPDATE schema_version SET version = ?", len(migs)); err != nil {
			return classify(err)
		}
		return nil
	})
}

// Ready checks that the database answers and the schema is current.
func (s *Store) Ready(ctx context.Context) error {
	migs, err := store.Migrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	var v int
	if err := s.rdb.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&v); err != nil {
		return store.Unavailable("sqlitestore: read schema version", err)
	}
	return store.CheckSchemaVersion(v, len(migs), false)
}

// AddDefinition stores a definition version.
func (s *Store) AddDefinition(ctx context.Context, d *store.Definition) error {
	return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		res, err := s.exec(ctx, `INSERT INTO definitions (name, version, format, hash, file, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			d.Name, d.Version, d.Format, d.Hash, d.File, d.Source, d.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("store definition %s version %d: %w", d.Name, d.Version, err)
		}
		d.Seq, err = res.LastInsertId()
		return err
	})
}

// Definitions returns definitions loaded after seq after.
func (s *Store) Definitions(ctx context.Context, after int64) ([]*store.Definition, error) {
	rows, err := s.rdb.QueryContext(ctx, sqlstore.DefinitionsQuery("?"), after)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanDefinitions(rows)
	return out, readErr(err)
}

func readErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if c := classify(err); c != err {
		return c
	}
	return store.Unavailable("sqlite read", err)
}

// tx is the inside of an Update, on the writer connection.
type tx struct{ s *Store }

func (t *tx) Key(ctx context.Context, key string) ([]byte, bool, error) {
	st, err := t.s.stmt(ctx, `SELECT result FROM idempotency WHERE key = ?`)
	if err != nil {
		return nil, false, err
	}
	var res []byte
	err = st.QueryRowContext(ctx, key).Scan(&res)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify(err)
	}
	return res, true, nil
}

func (t *tx) PutKey(ctx context.Context, key string, result []byte) error {
	_, err := t.s.exec(ctx, `INSERT INTO idempotency (key, result) VALUES (?, ?)`, key, result)
	return err
}

func (t *tx) LockTree(ctx context.Context, root string) (int64, error) {
	st, err := t.s.stmt(ctx, `SELECT tree_version FROM processes WHERE id = ? AND root_id = id`)
	if err != nil {
		return 0, err
	}
	var v int64
	err = st.QueryRowContext(ctx, root).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	}
	return v, classify(err)
}

func (t *tx) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	st, err := t.s.stmt(ctx, `SELECT `+sqlstore.ProcessColumns+` FROM processes WHERE root_id = ?`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, root)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	return sqlstore.ScanTree(rows, root)
}

func (t *tx) PutProcess(ctx context.Context, p *store.Process) error {
	c, err := sqlstore.ContextJSON(p.Context)
	if err != nil {
		return err
	}
	_, err = t.s.exec(ctx, `INSERT INTO processes (`+sqlstore.ProcessColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, env = excluded.env, snapshot = excluded.snapshot,
		event_seq = excluded.event_seq, updated_at = excluded.updated_at, tree_version = excluded.tree_version, context = excluded.context`,
		p.ID, p.Root, p.Parent, p.ParentToken, p.Position, p.Definition, p.Version, p.State, c, p.Env, p.Snapshot,
		p.EventSeq, p.CreatedAt.UnixNano(), p.UpdatedAt.UnixNano(), p.TreeVersion)
	return err
}

func (t *tx) SetTreeVersion(ctx context.Context, root string, v int64) error {
	_, err := t.s.exec(ctx, `UPDATE processes SET tree_version = ? WHERE id = ?`, v, root)
	return err
}

func (t *tx) AppendEvents(ctx context.Context, evs []store.Event) error {
	for _, group := range store.GroupEvents(evs) {
		data := store.EncodeEvents(group)
		if _, err := t.s.exec(ctx, `INSERT INTO events (process_id, seq, last_seq, data) VALUES (?, ?, ?, ?)`,
			group[0].Process, group[0].Seq, group[len(group)-1].Seq, data); err != nil {
			return fmt.Errorf("store events: %w", err)
		}
	}
	return nil
}

func (t *tx) ReplaceTimers(ctx context.Context, process string, timers []store.Timer) error {
	if _, err := t.s.exec(ctx, `DELETE FROM timers WHERE process_id = ?`, process); err != nil {
		return err
	}
	for _, tm := range timers {
		if _, err := t.s.exec(ctx, `INSERT INTO timers (process_id, token, root_id, due_at) VALUES (?, ?, ?, ?)`,
			tm.Process, tm.Token, tm.Root, tm.DueAt.UnixNano()); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutContext(ctx context.Context, process string, c map[string]string, unique []string) error {
	if err := t.DropContext(ctx, process); err != nil {
		return err
	}
	for k, v := range c {
		u := 0 // SQLite has no boolean
		if slices.Contains(unique, k) {
			u = 1
		}
		if _, err := t.s.exec(ctx, `INSERT INTO contexts (process_id, key, value, is_unique) VALUES (?, ?, ?, ?)`, process, k, v, u); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("context %s=%q is already used by an executing process: %w", k, v, store.ErrConflict)
			}
			return err
		}
	}
	return nil
}

func (t *tx) DropContext(ctx context.Context, process string) error {
	_, err := t.s.exec(ctx, `DELETE FROM contexts WHERE process_id = ?`, process)
	return err
}

// Process reads a process row.
func (s *Store) Process(ctx context.Context, id string) (*store.Process, error) {
	p, err := sqlstore.ScanProcess(s.rdb.QueryRowContext(ctx, `SELECT `+sqlstore.ProcessColumns+` FROM processes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("process %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, readErr(err)
	}
	return p, nil
}

// Tree reads the rows of a tree.
func (s *Store) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+sqlstore.ProcessColumns+` FROM processes WHERE root_id = ?`, root)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanTree(rows, root)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, readErr(err)
	}
	return out, err
}

// Processes lists process rows by ID.
func (s *Store) Processes(ctx context.Context, f store.Filter) ([]*store.Process, error) {
	q, args := sqlstore.ProcessesQuery(f, func(int) string { return "?" }, "x''")
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanProcesses(rows)
	if err != nil {
		return nil, readErr(err)
	}
	for _, p := range out {
		p.Snapshot = nil
	}
	return out, nil
}

// Events returns events of a process after a sequence number.
func (s *Store) Events(ctx context.Context, process string, after int64, limit int) ([]store.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT data FROM events WHERE process_id = ? AND last_seq > ? ORDER BY seq`, process, after)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() && (limit <= 0 || len(out) < limit) {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, readErr(err)
		}
		if out, err = store.AppendEventsAfter(out, process, data, after, limit); err != nil {
			return nil, err
		}
	}
	return out, readErr(rows.Err())
}

// FindByContext finds executing processes by context.
func (s *Store) FindByContext(ctx context.Context, match map[string]string, limit int) ([]string, error) {
	if len(match) == 0 {
		return nil, nil
	}
	var conds []string
	var args []any
	for k, v := range match {
		conds = append(conds, "(key = ? AND value = ?)")
		args = append(args, k, v)
	}
	q := `SELECT process_id FROM contexts WHERE ` + strings.Join(conds, " OR ") +
		` GROUP BY process_id HAVING count(*) = ` + strconv.Itoa(len(match)) + ` ORDER BY process_id`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, readErr(err)
		}
		out = append(out, id)
	}
	return out, readErr(rows.Err())
}

// ClaimTimers leases due timers.
func (s *Store) ClaimTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Timer, error) {
	var out []store.Timer
	err := s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		out = out[:0]
		rows, err := c.QueryContext(ctx, `UPDATE timers SET lease_until = ?
			WHERE (process_id, token) IN (SELECT process_id, token FROM timers WHERE due_at <= ? AND lease_until <= ? ORDER BY due_at LIMIT ?)
			RETURNING process_id, token, root_id, due_at`, now.Add(lease).UnixNano(), now.UnixNano(), now.UnixNano(), limit)
		if err != nil {
			return classify(err)
		}
		defer rows.Close()
		for rows.Next() {
			var t store.Timer
			var due int64
			if err := rows.Scan(&t.Process, &t.Token, &t.Root, &due); err != nil {
				return classify(err)
			}
			t.DueAt = time.Unix(0, due).UTC()
			out = append(out, t)
		}
		return classify(rows.Err())
	})
	sort.Slice(out, func(i, j int) bool { return out[i].DueAt.Before(out[j].DueAt) })
	return out, err
}

// NextTimer returns the earliest due time.
func (s *Store) NextTimer(ctx context.Context) (time.Time, error) {
	var due sql.NullInt64
	if err := s.rdb.QueryRowContext(ctx, `SELECT min(due_at) FROM timers`).Scan(&due); err != nil {
		return time.Time{}, readErr(err)
	}
	if !due.Valid {
		return time.Time{}, nil
	}
	return time.Unix(0, due.Int64).UTC(), nil
}
