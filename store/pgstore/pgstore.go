// Package pgstore is Veena's PostgreSQL store (pgx), for several engine
// processes sharing one database.
//
// A command locks its tree's root row (SELECT … FOR UPDATE): commands to
// one tree queue behind that lock in arrival order, commands to different
// trees run in parallel. Idempotency keys are reserved with an INSERT …
// ON CONFLICT DO NOTHING, which makes a concurrent retry wait for the first
// attempt and then see its result. Due timers are leased with FOR UPDATE
// SKIP LOCKED so that engines share them without a leader.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options tune a Store.
type Options struct {
	// Schema, if set, is the PostgreSQL schema (search_path) to use; Open
	// creates it if it does not exist.
	Schema string
	// MaxConns bounds the connection pool (default: pgxpool's).
	MaxConns int32
	// GroupCommit, if above 1, lets up to that many concurrent Updates
	// share one transaction and commit (each in its own savepoint, so that
	// each still succeeds or fails alone). 0 or 1: every Update commits alone.
	GroupCommit int
	// ApplicationName, if set, names the store's connections on the
	// server (pg_stat_activity.application_name).
	ApplicationName string
	// Committers is the number of connections committing groups at once
	// (default 2: one group in flight while the next gathers); only with GroupCommit.
	Committers int
}

// Store is a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool

	updates, commits atomic.Int64

	group   int
	reqs    chan *request
	quit    chan struct{}
	stopped sync.WaitGroup
	done    chan struct{} // closed once the committers have stopped
	closed  sync.Once

	notices *notices    // job notices to other engines (notices.go)
	act     activations // activations sharing statements (work.go)
}

type request struct {
	ctx  context.Context
	fn   func(context.Context, store.Tx) error
	done chan error
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a PostgreSQL connection URL or
// keyword/value string). Call Migrate before use.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, store.Unavailable("pgstore: connect", err)
	}
	s := &Store{pool: pool, group: opts.GroupCommit, notices: newNotices(opts.Schema)}
	if opts.Schema != "" {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{opts.Schema}.Sanitize()); err != nil {
			pool.Close()
			return nil, classify(err)
		}
	}
	if s.group > 1 {
		n := opts.Committers
		if n <= 0 {
			n = 2
		}
		s.reqs = make(chan *request, 1024)
		s.quit = make(chan struct{})
		s.done = make(chan struct{})
		for range n {
			s.stopped.Add(1)
			go s.committer()
		}
	}
	return s, nil
}

// Stats reports how many Updates committed and in how many transactions.
func (s *Store) Stats() (updates, commits int64) { return s.updates.Load(), s.commits.Load() }

// Pool is the connection pool, for tests and tools.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() error {
	s.closed.Do(func() {
		s.stopNotices()
		if s.quit != nil {
			close(s.quit)
			s.stopped.Wait()
			close(s.done)
		}
		s.pool.Close()
	})
	return nil
}

// classify maps PostgreSQL and network errors onto the store's errors.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case pe.Code == "22012": // ExpectTree's division by zero
			return fmt.Errorf("%w: %w", store.ErrStale, err)
		case pe.Code == "55P03": // lock_not_available: a NOWAIT lock was held
			return fmt.Errorf("%w: %w", store.ErrBusy, err)
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "57P"),
			pe.Code == "25006", pe.Code == "58030":
			return store.Unavailable("postgresql", err)
		}
		return err
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ne) || errors.As(err, &ce) || pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return store.Unavailable("postgresql", err)
	}
	if strings.Contains(err.Error(), "closed pool") || strings.Contains(err.Error(), "conn closed") {
		return store.Unavailable("postgresql", err)
	}
	return err
}

// migrationLock is the advisory lock key that serialises migrations of
// engines starting together.
const migrationLock = 0x7665656e61 // "veena"

// Migrate brings the schema up to date, one engine at a time.
func (s *Store) Migrate(ctx context.Context, apply bool) error {
	migs, err := store.Migrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); err != nil {
			return err
		}
		var v int
		err := tx.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := tx.Exec(ctx, "INSERT INTO schema_version VALUES (0)"); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if err := store.CheckSchemaVersion(v, len(migs), apply); err != nil {
			return err
		}
		for i := v; i < len(migs); i++ {
			if _, err := tx.Exec(ctx, migs[i]); err != nil {
				return fmt.Errorf("pgstore: migration %d: %w", i+1, err)
			}
		}
		_, err = tx.Exec(ctx, "UPDATE schema_version SET version = $1", len(migs))
		return err
	})
}

// Ready checks that the database answers and the schema is current.
func (s *Store) Ready(ctx context.Context) error {
	v, latest, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	return store.CheckSchemaVersion(v, latest, false)
}

// SchemaVersion reads the schema version of the database (in the schema
// the connection's search path names first) and the latest this Veena
// knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int, err error) {
	migs, err := store.Migrations(migrationFS, "migrations")
	if err != nil {
		return 0, 0, err
	}
	return sqlstore.SchemaVersion("pgstore", len(migs),
		func() (ok bool, err error) {
			err = s.pool.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&ok)
			return ok, err
		},
		func() (v int, err error) {
			if err = s.pool.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&v); errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			return v, err
		})
}

var _ store.SchemaVersioner = (*Store)(nil)

func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback(context.Background())
	if err := fn(tx); err != nil {
		return classify(err)
	}
	return classify(tx.Commit(ctx))
}

// Update runs fn in one transaction. Writes are pipelined: they are sent
// together with the COMMIT, and reads send what is pending first, so a
// command costs two round trips (lock and read, then write and commit). A
// deadlock or serialisation failure runs fn again.
func (s *Store) Update(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	for attempt := 0; ; attempt++ {
		var err error
		if s.group > 1 {
			err = s.submit(ctx, fn)
		} else {
			err = s.update(ctx, fn)
		}
		var pe *pgconn.PgError
		if attempt < 3 && errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
			continue
		}
		return err
	}
}

func (s *Store) update(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Release()
	t := newTx(conn)
	t.queue("BEGIN")
	if err := fn(ctx, t); err != nil {
		t.rollback()
		return t.classify(err)
	}
	t.end()
	if t.sent {
		t.queue("COMMIT")
	} else {
		// Nothing was sent yet: the statements go in one pipeline, which
		// the server runs as one implicit transaction, all or nothing.
		t.b.QueuedQueries = t.b.QueuedQueries[1:]
		t.owners = t.owners[1:]
	}
	if err := t.flush(ctx, nil); err != nil {
		t.rollback()
		return t.classify(err)
	}
	s.updates.Add(1)
	s.commits.Add(1)
	return nil
}

// AddDefinition stores a definition version.
func (s *Store) AddDefinition(ctx context.Context, d *store.Definition) error {
	err := s.pool.QueryRow(ctx, `INSERT INTO definitions (name, version, format, hash, file, source, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq`,
		d.Name, d.Version, d.Format, d.Hash, d.File, d.Source, d.CreatedAt.UnixNano()).Scan(&d.Seq)
	if err != nil {
		return fmt.Errorf("store definition %s version %d: %w", d.Name, d.Version, classify(err))
	}
	return nil
}

// Definitions returns definitions loaded after seq after.
func (s *Store) Definitions(ctx context.Context, after int64) ([]*store.Definition, error) {
	rows, err := s.pool.Query(ctx, sqlstore.DefinitionsQuery("$1"), after)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanDefinitions(rows)
	return out, classify(err)
}

// errClosed answers calls made after Close.
var errClosed = store.Unavailable("pgstore", errors.New("store closed"))

// submit hands an Update to the committers and waits for its outcome.
func (s *Store) submit(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	r := &request{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case <-s.quit:
		return errClosed
	default:
	}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return sqlstore.Await(r.done, s.done, errClosed)
}

// committer runs groups of waiting Updates in one transaction each.
func (s *Store) committer() {
	defer s.stopped.Done()
	batch := make([]*request, 0, s.group)
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.quit:
			for {
				select {
				case r := <-s.reqs:
					r.done <- errClosed
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.group {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.runGroup(batch)
	}
}

// runGroup runs a group of Updates in one transaction, sent in as few
// pipelines as they allow: an Update that only writes (its tree checked
// with ExpectTree) adds its statements to the pipeline that ends with
// COMMIT, so a group of them costs one round trip. An Update that has to
// read gets a savepoint before its first read, so that it can fail alone.
// If a statement of an Update without a savepoint fails, the transaction
// is lost: that Update gets the error and the others run again alone.
func (s *Store) runGroup(batch []*request) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	answered := make([]bool, len(batch)) // failed for good; the others commit with the group or run again
	finish := func() {
		for i, r := range batch {
			r.done <- errs[i]
		}
	}
	// lost ends a group whose transaction is lost: every Update not yet
	// answered runs again, in a transaction of its own.
	lost := func() {
		for i, r := range batch {
			if !answered[i] {
				if errs[i] = r.ctx.Err(); errs[i] == nil {
					errs[i] = s.update(r.ctx, r.fn)
				}
			}
		}
		finish()
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for i := range errs {
			errs[i] = classify(err)
		}
		finish()
		return
	}
	defer conn.Release()
	t := newTx(conn)
	t.queue("BEGIN")
	ok := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i], answered[i] = err, true
			continue
		}
		t.begin(i)
		err := r.fn(r.ctx, t)
		if err == nil {
			t.end()
			if t.savepoint {
				t.queue("RELEASE cmd")
			}
			ok++
			continue
		}
		if t.failed != nil && (t.failedOwner != i || !t.savepoint) {
			// A statement of an Update without a savepoint (this one or
			// an earlier one) failed: the transaction is lost.
			t.rollback()
			if j := t.failedOwner; j >= 0 {
				errs[j], answered[j] = t.classify(t.failed), true
			}
			lost()
			return
		}
		// The Update failed alone: undo what it sent, drop what it queued.
		errs[i], answered[i] = t.classify(err), true
		t.drop()
		t.b.QueuedQueries = t.b.QueuedQueries[:t.start]
		t.owners = t.owners[:t.start]
		if t.savepoint {
			_, rerr := conn.Exec(ctx, "ROLLBACK TO cmd", pgx.QueryExecModeSimpleProtocol)
			if rerr == nil {
				_, rerr = conn.Exec(ctx, "RELEASE cmd", pgx.QueryExecModeSimpleProtocol)
			}
			if rerr != nil {
				t.rollback()
				lost()
				return
			}
		}
	}
	t.begin(-1)
	if ok == 0 {
		t.rollback()
		finish()
		return
	}
	if t.sent {
		t.queue("COMMIT")
	} else {
		// One pipeline holds the whole group: an implicit transaction.
		t.b.QueuedQueries = t.b.QueuedQueries[1:]
		t.owners = t.owners[1:]
	}
	if err := t.flush(ctx, nil); err != nil {
		t.rollback()
		if j := t.failedOwner; j >= 0 {
			// One Update's write failed: it gets the error, the others
			// run again.
			errs[j], answered[j] = t.classify(err), true
			lost()
			return
		}
		for i := range batch {
			if !answered[i] {
				errs[i] = t.classify(err)
			}
		}
		finish()
		return
	}
	s.updates.Add(int64(ok))
	s.commits.Add(1)
	finish()
}

// tx queues statements and sends them in one pipeline when a result is
// needed or the transaction commits. In a group it remembers which Update
// queued each statement, to know whose statement failed.
type tx struct {
	conn   *pgxpool.Conn
	b      *pgx.Batch
	owners []int // the Update (index in the group) that queued each statement; -1: the group's own
	sent   bool  // BEGIN has reached the server

	group     bool
	cur       int  // the Update running (group), -1 between them
	start     int  // where its statements start in b
	savepoint bool // it has a savepoint

	failed      error // the first statement that failed, and whose it was
	failedOwner int

	// The running Update's writes not yet in b, and the tree check they
	// are to carry (see statement.go).
	pending       []piece
	params        int
	expecting     bool
	expectRoot    string
	expectVersion int64
}

func newTx(conn *pgxpool.Conn) *tx {
	return &tx{conn: conn, b: &pgx.Batch{}, cur: -1, failedOwner: -1}
}

// begin marks the start of Update i of a group (-1: the group's own
// statements).
func (t *tx) begin(i int) {
	t.seal()
	t.expecting = false
	t.group = true
	t.cur, t.start, t.savepoint = i, t.b.Len(), false
	t.failed, t.failedOwner = nil, -1
}

func (t *tx) queue(sql string, args ...any) {
	t.seal()
	t.b.Queue(sql, args...)
	t.owners = append(t.owners, t.cur)
}

// flush sends the queued statements. If last is set, it reads the result
// of the last one; the others must succeed. In a group, an Update's first
// flush puts a savepoint before its statements.
func (t *tx) flush(ctx context.Context, last func(pgx.BatchResults) error) error {
	t.seal()
	n := t.b.Len()
	if n == 0 {
		return nil
	}
	if t.group && t.cur >= 0 && !t.savepoint {
		t.savepoint = true
		sp := &pgx.QueuedQuery{SQL: "SAVEPOINT cmd"}
		t.b.QueuedQueries = slices.Insert(t.b.QueuedQueries, t.start, sp)
		t.owners = slices.Insert(t.owners, t.start, t.cur)
		n++
	}
	owners := t.owners
	br := t.conn.SendBatch(ctx, t.b)
	t.b, t.owners, t.start = &pgx.Batch{}, nil, 0
	t.sent = true
	fail := func(k int, err error) error {
		br.Close()
		if !errors.Is(err, pgx.ErrNoRows) && t.failed == nil {
			t.failed, t.failedOwner = err, owners[k]
		}
		return err
	}
	plain := n
	if last != nil {
		plain--
	}
	for k := range plain {
		if _, err := br.Exec(); err != nil {
			return fail(k, err)
		}
	}
	if last != nil {
		if err := last(br); err != nil {
			return fail(n-1, err)
		}
	}
	if err := br.Close(); err != nil {
		return fail(n-1, err)
	}
	return nil
}

// classify also treats any failure that closed the connection as the
// database being unavailable.
func (t *tx) classify(err error) error {
	err = classify(err)
	if !errors.Is(err, store.ErrUnavailable) && t.conn.Conn().IsClosed() && ctxErr(err) == nil {
		return store.Unavailable("postgresql", err)
	}
	return err
}

func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func (t *tx) rollback() {
	if t.sent {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
			// The connection is in an unknown state: do not reuse it.
			t.conn.Conn().Close(ctx)
		}
	}
}

func (t *tx) Key(ctx context.Context, key string) ([]byte, bool, error) {
	t.queue(`INSERT INTO idempotency (key) VALUES ($1) ON CONFLICT DO NOTHING`, key)
	var inserted int64
	err := t.flush(ctx, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		inserted = tag.RowsAffected()
		return err
	})
	if err != nil {
		return nil, false, classify(err)
	}
	if inserted == 1 {
		return nil, false, nil
	}
	var res []byte
	if err := t.conn.QueryRow(ctx, `SELECT result FROM idempotency WHERE key = $1`, key).Scan(&res); err != nil {
		return nil, false, classify(err)
	}
	return res, true, nil
}

func (t *tx) PutKey(ctx context.Context, key string, result []byte, at time.Time) error {
	t.write(rowKey("idempotency", key), `INSERT INTO idempotency (key, result, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET result = excluded.result, created_at = excluded.created_at`, key, result, at.UnixNano())
	return nil
}

func (t *tx) LockTree(ctx context.Context, root string) (int64, error) {
	t.queue(`SELECT tree_version FROM processes WHERE id = $1 AND root_id = id FOR UPDATE`, root)
	var v int64
	err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&v) })
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	}
	return v, classify(err)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readTree(ctx context.Context, q querier, root string) ([]*store.Process, error) {
	rows, err := q.Query(ctx, `SELECT `+sqlstore.ProcessColumns+` FROM processes WHERE root_id = $1`, root)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanTree(rows, root)
	return out, classify(err)
}

func (t *tx) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	if err := t.flush(ctx, nil); err != nil {
		return nil, classify(err)
	}
	return readTree(ctx, t.conn, root)
}

func (t *tx) PutProcess(ctx context.Context, p *store.Process) error {
	c, err := sqlstore.ContextJSON(p.Context)
	if err != nil {
		return err
	}
	switch f := p.FirstEvents; {
	case p.StoredState != "":
		t.writeRoot(p.ID, `UPDATE processes SET state = $2, env = $3, snapshot = $4, event_seq = $5, updated_at = $6,
			tree_version = $7, context = $8, waits = $9, stalled = $10, unindexed = $11 WHERE id = $1`,
			p.ID, p.State, p.Env, p.Snapshot, p.EventSeq, p.UpdatedAt.UnixNano(), p.TreeVersion, c, p.Waits, p.Stalled, p.Waits == nil)
	case f != nil && f.First == 1:
		// A new row keeps the events of its first command: one row
		// inserted, not two. The engine sends them only with a row it
		// creates, so a row that exists already is a conflict.
		t.write(rowKey("processes", p.ID), `INSERT INTO processes (`+sqlstore.ProcessColumns+`, unindexed, first_events)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
			p.ID, p.Root, p.Parent, p.ParentToken, p.Position, p.Definition, p.Version, p.State, c, p.Env, p.Snapshot,
			p.EventSeq, p.CreatedAt.UnixNano(), p.UpdatedAt.UnixNano(), p.TreeVersion, p.Waits, p.Stalled, p.Waits == nil, f.Data)
		t.writeWaits(p)
		return nil
	default:
		t.write(rowKey("processes", p.ID), `INSERT INTO processes (`+sqlstore.ProcessColumns+`, unindexed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, env = excluded.env, snapshot = excluded.snapshot,
		event_seq = excluded.event_seq, updated_at = excluded.updated_at, tree_version = excluded.tree_version, context = excluded.context,
		waits = excluded.waits, stalled = excluded.stalled, unindexed = excluded.unindexed`,
			p.ID, p.Root, p.Parent, p.ParentToken, p.Position, p.Definition, p.Version, p.State, c, p.Env, p.Snapshot,
			p.EventSeq, p.CreatedAt.UnixNano(), p.UpdatedAt.UnixNano(), p.TreeVersion, p.Waits, p.Stalled, p.Waits == nil)
	}
	t.writeWaits(p)
	if p.FirstEvents != nil {
		return t.AppendEvents(ctx, []store.EventRecord{*p.FirstEvents})
	}
	return nil
}

// writeWaits writes the change of a row's wait nodes to the waits table.
func (t *tx) writeWaits(p *store.Process) {
	add, del := sqlstore.WaitChanges(p)
	for _, n := range del {
		t.write(rowKey("waits", n, p.ID), `DELETE FROM waits WHERE node = $1 AND process_id = $2`, n, p.ID)
	}
	for _, n := range add {
		t.write(rowKey("waits", n, p.ID), `INSERT INTO waits (node, process_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, n, p.ID)
	}
}

func (t *tx) SetTreeVersion(ctx context.Context, root string, v int64) error {
	t.writeRoot(root, `UPDATE processes SET tree_version = $2 WHERE id = $1`, root, v)
	return nil
}

func (t *tx) AppendEvents(ctx context.Context, recs []store.EventRecord) error {
	for _, r := range recs {
		if r.First == 1 {
			// The events from 1 may be in the process row already; the
			// primary key of events cannot see them there.
			t.queue(`SELECT EXISTS (SELECT 1 FROM processes WHERE id = $1 AND first_events IS NOT NULL)`, r.Process)
			var held bool
			if err := t.flush(ctx, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&held) }); err != nil {
				return classify(err)
			}
			if held {
				return fmt.Errorf("events of process %s from 1: %w", r.Process, store.ErrConflict)
			}
		}
		t.write("", `INSERT INTO events (process_id, seq, last_seq, data) VALUES ($1, $2, $3, $4)`,
			r.Process, r.First, r.Last, r.Data)
	}
	return nil
}

func (t *tx) ReplaceTimers(ctx context.Context, process string, timers []store.Timer) error {
	t.write(rowKey("timers", process), `DELETE FROM timers WHERE process_id = $1`, process)
	for _, tm := range timers {
		t.write(rowKey("timers", process, strconv.Itoa(tm.Token)), `INSERT INTO timers (process_id, token, root_id, due_at) VALUES ($1, $2, $3, $4)`,
			tm.Process, tm.Token, tm.Root, tm.DueAt.UnixNano())
	}
	return nil
}

func (t *tx) PutContext(ctx context.Context, process string, c map[string]string, unique []string) error {
	t.write(rowKey("contexts", process), `DELETE FROM contexts WHERE process_id = $1`, process)
	for k, v := range c {
		t.write(rowKey("contexts", process, k), `INSERT INTO contexts (process_id, key, value, is_unique) VALUES ($1, $2, $3, $4)`, process, k, v, slices.Contains(unique, k))
	}
	// A unique value already taken must fail here, where the caller can
	// tell what went wrong, not at commit.
	if err := t.flush(ctx, nil); err != nil {
		err = classify(err)
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("a unique context value of process %s is already used by an executing process: %w", process, err)
		}
		return err
	}
	return nil
}

func (t *tx) DropContext(ctx context.Context, process string) error {
	t.write(rowKey("contexts", process), `UPDATE contexts SET executing = FALSE WHERE process_id = $1`, process)
	return nil
}

// Process reads a process row.
func (s *Store) Process(ctx context.Context, id string) (*store.Process, error) {
	p, err := sqlstore.ScanProcess(s.pool.QueryRow(ctx, `SELECT `+sqlstore.ProcessColumns+` FROM processes WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("process %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(err)
	}
	return p, nil
}

// Tree reads the rows of a tree.
func (s *Store) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	return readTree(ctx, s.pool, root)
}

// Processes lists process rows by ID.
func (s *Store) Processes(ctx context.Context, f store.Filter) ([]*store.Process, error) {
	q, args := sqlstore.ProcessesQuery(f, dialect)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out, err := sqlstore.ScanProcesses(rows)
	if err != nil {
		return nil, classify(err)
	}
	for _, p := range out {
		p.Snapshot = nil
	}
	return out, nil
}

// Events returns events of a process after a sequence number. The record
// its row may hold (the first) and the rows of events come from two
// queries sent together, each read in key order, so that a page of a long
// log is neither sorted nor read whole. Each has its own snapshot, which is
// safe: a row gets its record when it is created, never later, and events
// rows are only appended.
func (s *Store) Events(ctx context.Context, process string, after int64, limit int) ([]store.Event, error) {
	var most any // no LIMIT
	if limit > 0 {
		// Every record holds at least one event after after.
		most = int64(limit)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT first_events FROM processes WHERE id = $1 AND first_events IS NOT NULL`, process)
	b.Queue(`SELECT data FROM events WHERE process_id = $1 AND last_seq > $2 ORDER BY seq LIMIT $3`, process, after, most)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var first []byte
	if err := br.QueryRow().Scan(&first); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, classify(err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	return sqlstore.ScanEvents(&firstThen{first: first, Rows: rows}, process, after, limit, classify)
}

// firstThen reads a record held apart, if there is one, before rows.
type firstThen struct {
	first []byte
	onIt  bool // the current row is first
	pgx.Rows
}

func (r *firstThen) Next() bool {
	if r.first != nil && !r.onIt {
		r.onIt = true
		return true
	}
	r.first, r.onIt = nil, false
	return r.Rows.Next()
}

func (r *firstThen) Scan(dest ...any) error {
	if r.onIt {
		*dest[0].(*[]byte) = r.first
		return nil
	}
	return r.Rows.Scan(dest...)
}

// FindByContext finds executing processes by context.
func (s *Store) FindByContext(ctx context.Context, match map[string]string, limit int) ([]string, error) {
	if len(match) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(match))
	vals := make([]string, 0, len(match))
	for k, v := range match {
		keys, vals = append(keys, k), append(vals, v)
	}
	q := `SELECT c.process_id FROM contexts c JOIN unnest($1::text[], $2::text[]) AS m(key, value)
		ON c.key = m.key AND c.value = m.value
		WHERE c.executing
		GROUP BY c.process_id HAVING count(*) = $3 ORDER BY c.process_id`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, q, keys, vals, len(match))
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, classify(err)
		}
		out = append(out, id)
	}
	return out, classify(rows.Err())
}

// ClaimTimers leases due timers no other engine holds.
func (s *Store) ClaimTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Timer, error) {
	rows, err := s.pool.Query(ctx, `UPDATE timers SET lease_until = $1
		WHERE (process_id, token) IN (
			SELECT process_id, token FROM timers WHERE due_at <= $2 AND lease_until <= $2
			ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING process_id, token, root_id, due_at`, now.Add(lease).UnixNano(), now.UnixNano(), limit)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.Timer
	for rows.Next() {
		var t store.Timer
		var due int64
		var token int32
		if err := rows.Scan(&t.Process, &token, &t.Root, &due); err != nil {
			return nil, classify(err)
		}
		t.Token = int(token)
		t.DueAt = time.Unix(0, due).UTC()
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DueAt.Before(out[j].DueAt) })
	return out, classify(rows.Err())
}

// NextTimer returns the earliest due time.
func (s *Store) NextTimer(ctx context.Context) (time.Time, error) {
	var due *int64
	if err := s.pool.QueryRow(ctx, `SELECT min(due_at) FROM timers`).Scan(&due); err != nil {
		return time.Time{}, classify(err)
	}
	if due == nil {
		return time.Time{}, nil
	}
	return time.Unix(0, *due).UTC(), nil
}
