// Package sqlitestore is Veena's embedded store: one SQLite file in WAL
// mode, through the pure-Go modernc.org/sqlite driver.
//
// All writes go through one writer goroutine holding the only writing
// connection, so commands never meet SQLITE_BUSY. The writer commits
// concurrent Updates together (group commit): it opens one transaction,
// runs the Updates in it and commits them with one sync; an Update that
// fails leaves nothing behind (see runBatch). The writer runs its statements
// prepared, on the driver connection directly, and leaves checkpoints to a
// connection of their own in the background. Reads use a pool of
// read-only connections and see committed data only.
package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
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
	"github.com/veena-wf/veena/store/sqlitestore/internal/walbuf"
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
	// PageSize is the page size of a new database file (default 4096; an
	// existing file keeps its own). Every page a command changes is
	// written to the WAL whole, so small pages write fewer bytes per
	// command; but a row of a WITHOUT ROWID table (processes, events)
	// larger than about a quarter of a page spills into overflow pages,
	// each another page written.
	PageSize int
	// PlainWAL writes the WAL through SQLite's own VFS, two write calls
	// per page, instead of one call per commit (see package walbuf); for
	// comparison.
	PlainWAL bool
}

// defaultPageSize is Options.PageSize's default, SQLite's own. With 2048
// the rows of a ten-branch split (a process snapshot of a few hundred
// bytes) and of a ten-node automatic process (an event record of 450
// bytes) overflow: veena bench measured split10 at 0.32-0.39 of the raw
// commit rate with 2048 and 0.51-0.68 with 4096 (SQLite NORMAL, no group
// commit), auto10 at 0.25-0.27 and 0.27-0.32, and wait alike.
const defaultPageSize = 4096

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
	rstmts sync.Map // read statements prepared on rdb, by SQL (work.go)

	// The writer goroutine's own state. dc is conn's driver connection:
	// the commands' statements run on it directly, prepared once, without
	// database/sql's per-call work (the writer holds conn for the store's
	// lifetime, so nothing else uses dc).
	dc     driver.Conn
	dstmts map[string]*dstmt
	args   []driver.NamedValue // reused argument list
	// stmtFailed records that a statement failed since runOne last reset it.
	stmtFailed bool
	status     sqlite.DBStatus // dc's counters

	// Checkpoints run on a connection of their own, in the background, so
	// that the writer never waits for the checkpoint's copying and syncs:
	// the writer counts the WAL frames it commits and asks for one every
	// checkpointFrames frames. A checkpoint that runs beside the writer
	// cannot catch up with it, and SQLite only restarts the WAL from its
	// beginning once everything in it is checkpointed, so when the WAL has
	// grown past walRestartFrames the writer checkpoints the rest itself
	// (a few frames) between two transactions; and whatever the background
	// checkpoints do, it does so after walMaxFrames frames of its own.
	cdb          *sql.DB
	ckptReq      chan struct{}
	ckptDone     chan struct{}
	ckptFinish   atomic.Bool
	walFrames    int // frames committed since the last checkpoint request
	sinceRestart int // frames committed since the writer last checkpointed

	updates, commits atomic.Int64
	// statements counts the statements the writer ran.
	statements atomic.Int64
	frames     atomic.Int64 // WAL frames the writer has committed
	restarts   atomic.Int64 // checkpoints of the writer that let the WAL start over
	busy       atomic.Int64 // nanoseconds the writer spent on batches
	fallbacks  atomic.Int64 // batches run again with a savepoint per request
}

const (
	checkpointFrames = 1000 // SQLite's own wal_autocheckpoint default
	walRestartFrames = 4 * checkpointFrames
	walMaxFrames     = 8 * checkpointFrames
)

// Stats reports how many Updates committed and in how many transactions.
func (s *Store) Stats() (updates, commits int64) { return s.updates.Load(), s.commits.Load() }

// Statements reports how many statements the writer has run (each BEGIN
// and COMMIT included): divided by the Updates, what a command costs in
// statements.
func (s *Store) Statements() int64 { return s.statements.Load() }

// traceStatement, if set (by tests), is called with every statement the
// writer runs.
var traceStatement func(q string)

// ran counts a statement the writer runs.
func (s *Store) ran(q string) {
	s.statements.Add(1)
	if traceStatement != nil {
		traceStatement(q)
	}
}

// Frames reports how many WAL frames (database pages) the writer's
// commits have written: divided by the Updates, what a command costs in
// writing, the store's main cost.
func (s *Store) Frames() int64 { return s.frames.Load() }

// WriterBusy reports how long the writer goroutine has spent running
// batches, from their first statement to their commit (or rollback): the
// share of a period it takes tells how near the single writer is to being
// what limits the store's throughput.
func (s *Store) WriterBusy() time.Duration { return time.Duration(s.busy.Load()) }

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
	if opts.PageSize == 0 {
		opts.PageSize = defaultPageSize
	}
	if opts.PageSize < 512 || opts.PageSize > 65536 || opts.PageSize&(opts.PageSize-1) != 0 {
		return nil, fmt.Errorf("sqlitestore: page size %d is not a power of two from 512 to 65536", opts.PageSize)
	}
	q, rq := url.Values{}, url.Values{}
	if !opts.PlainWAL {
		if err := walbuf.Register(); err != nil {
			return nil, fmt.Errorf("sqlitestore: %w", err)
		}
		q.Set("vfs", walbuf.Name)
		rq.Set("vfs", walbuf.Name)
	}
	q.Set("_busy_timeout", "30000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", strings.ToUpper(opts.Synchronous))
	q.Add("_pragma", "foreign_keys(off)")
	// Only takes effect while the file is new (before the first table).
	q.Add("_pragma", fmt.Sprintf("page_size(%d)", opts.PageSize))
	// The checkpoint connection runs on the same settings: its syncs are
	// the checkpoint's.
	cq := url.Values{}
	for k, v := range q {
		cq[k] = slices.Clone(v)
	}
	if opts.MaxPageCount > 0 {
		q.Add("_pragma", fmt.Sprintf("max_page_count(%d)", opts.MaxPageCount))
	}
	q.Add("_pragma", "wal_autocheckpoint(0)") // the checkpointer does it
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
	cdb, err := sql.Open("sqlite", "file:"+path+"?"+cq.Encode())
	if err != nil {
		conn.Close()
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	cdb.SetMaxOpenConns(1)
	cdb.SetMaxIdleConns(1)
	cdb.SetConnMaxLifetime(0)
	cdb.SetConnMaxIdleTime(0)
	s := &Store{
		opts: opts, wdb: wdb, rdb: rdb, conn: conn, cdb: cdb,
		reqs:     make(chan *request, 1024),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		stmts:    map[string]*sql.Stmt{},
		dstmts:   map[string]*dstmt{},
		ckptReq:  make(chan struct{}, 1),
		ckptDone: make(chan struct{}),
	}
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("driver connection %T", dc)
		}
		if s.status, ok = dc.(sqlite.DBStatus); !ok {
			return fmt.Errorf("driver connection %T has no status counters", dc)
		}
		s.dc = c
		return nil
	}); err != nil {
		conn.Close()
		wdb.Close()
		rdb.Close()
		cdb.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	go s.writer()
	go s.checkpointer()
	return s, nil
}

// Close stops the writer and closes the database.
func (s *Store) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.quit)
		<-s.done
		<-s.ckptDone
		for _, st := range s.stmts {
			st.Close()
		}
		for _, st := range s.dstmts {
			st.s.Close()
		}
		s.conn.Close()
		err = errors.Join(s.cdb.Close(), s.wdb.Close(), s.rdb.Close())
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
					r.done <- errClosed
				default:
					return
				}
			}
		}
		if s.ckptFinish.Load() || s.sinceRestart >= walMaxFrames {
			s.ckptFinish.Store(false)
			s.checkpoint()
		}
		batch = s.gather(append(batch[:0], first))
		t0 := time.Now()
		s.runBatch(ctx, batch)
		s.busy.Add(int64(time.Since(t0)))
	}
}

// runBatch runs a batch of requests in one transaction. A request that
// fails leaves nothing behind, and the others commit.
//
// Savepoints would isolate each request, but they cost every request
// statements of their own and copies of the pages it changes, and
// requests rarely fail once they have written: most refusals (a stale or
// busy tree, an unknown process, a command that changes nothing) come
// before the first write. So the batch first runs without savepoints; only
// if a request fails after writing does the writer undo the whole
// transaction and run the batch again, a savepoint for each request.
// Requests are functions of what is stored, so the second run fails the
// same ones.
func (s *Store) runBatch(ctx context.Context, batch []*request) {
	var errs1 [1]error
	errs := errs1[:]
	if len(batch) > 1 {
		errs = make([]error, len(batch))
	}
	finish := func(commitErr error) {
		for i, r := range batch {
			if commitErr != nil && errs[i] == nil {
				errs[i] = commitErr
			}
			r.done <- errs[i]
		}
	}
	if _, err := s.run(qBegin); err != nil {
		finish(err)
		return
	}
	anyOK, undo := false, false
	for i := 0; ; i++ {
		if i == len(batch) {
			// Requests that arrived while the batch ran join it, up to
			// MaxBatch: its commit is not paid yet.
			if batch = s.gather(batch); i == len(batch) {
				break
			}
			errs = append(errs, make([]error, len(batch)-len(errs))...)
		}
		var wrote bool
		errs[i], wrote = s.runOne(ctx, batch[i])
		if errs[i] == nil {
			anyOK = true
		} else if wrote {
			// A lone request is simply rolled back below; in a batch
			// the others must be run again without it.
			undo = len(batch) > 1
			break
		}
	}
	if undo {
		s.fallbacks.Add(1)
		s.rollback()
		if _, err := s.run(qBegin); err != nil {
			finish(err)
			return
		}
		var err error
		if anyOK, err = s.runIsolated(ctx, batch, errs); err != nil {
			// The transaction is unusable: give up the whole batch.
			s.rollback()
			finish(err)
			return
		}
	}
	if !anyOK {
		// A lone request that failed may have written: keep nothing.
		s.rollback()
		finish(nil)
		return
	}
	if _, err := s.run(qCommit); err != nil {
		s.rollback()
		finish(err)
		return
	}
	s.commits.Add(1)
	s.countFrames()
	for i, r := range batch {
		if errs[i] == nil && r.fn != nil {
			s.updates.Add(1)
		}
	}
	finish(nil)
}

// gather appends to batch the requests waiting now, up to MaxBatch.
func (s *Store) gather(batch []*request) []*request {
	for len(batch) < s.opts.MaxBatch {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// runOne runs one request in the open transaction and tells whether it
// may have written anything. A raw request that fails counts as written:
// what it did is not known.
func (s *Store) runOne(ctx context.Context, r *request) (err error, wrote bool) {
	if err := r.ctx.Err(); err != nil {
		return err, false
	}
	if r.raw != nil {
		err := r.raw(ctx, s.conn)
		return err, err != nil
	}
	// The statements run to their end: a cancelled caller must not
	// interrupt a transaction that other requests share.
	t := &tx{s: s}
	s.stmtFailed = false
	err = r.fn(context.WithoutCancel(r.ctx), t)
	if err == nil {
		err = t.checkExpected()
	}
	// A statement that failed may have ended the whole transaction (SQLite
	// rolls it back on a full disk or an I/O error): that counts as a write.
	return err, t.wrote || s.stmtFailed
}

// runIsolated runs each request of batch in a savepoint of its own,
// rolling back to it if the request fails; errs gets each request's
// error. A failing savepoint statement is returned: the transaction can no
// longer be trusted.
func (s *Store) runIsolated(ctx context.Context, batch []*request, errs []error) (anyOK bool, err error) {
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := s.run(qSavepoint); err != nil {
			return false, err
		}
		errs[i], _ = s.runOne(ctx, r)
		if errs[i] != nil {
			if _, err := s.run(qRollbackTo); err != nil {
				return false, err
			}
		} else {
			anyOK = true
		}
		if _, err := s.run(qRelease); err != nil {
			return false, err
		}
	}
	return anyOK, nil
}

// countFrames adds the WAL frames the writer wrote since it last counted
// and asks for a checkpoint when they make checkpointFrames.
func (s *Store) countFrames() {
	n, _, err := s.status.Status(sqlite.DBStatusCacheWrite, true)
	if err != nil {
		n = checkpointFrames // unknown: ask, a checkpoint with nothing to do is cheap
	} else {
		s.frames.Add(int64(n))
	}
	s.walFrames += n
	s.sinceRestart += n
	if s.walFrames >= checkpointFrames {
		s.walFrames = 0
		select {
		case s.ckptReq <- struct{}{}:
		default: // one is pending already
		}
	}
}

// checkpointer runs the checkpoints the writer asks for.
func (s *Store) checkpointer() {
	defer close(s.ckptDone)
	for {
		select {
		case <-s.ckptReq:
		case <-s.quit:
			return
		}
		var busy, log, done int
		err := s.cdb.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
		if err == nil && log >= walRestartFrames {
			s.ckptFinish.Store(true)
		}
		// An error (a full disk, a lock) leaves the WAL as it is: the next
		// request tries again, and the data is safe in the WAL meanwhile.
	}
}

// checkpoint checkpoints what the background checkpoints left, on the
// writer's connection between two transactions, so that the next
// transaction starts the WAL over. If the background checkpoint holds the
// checkpoint lock just then, nothing is done and the writer asks again
// before its next transaction.
func (s *Store) checkpoint() {
	var row [3]driver.Value
	ok, err := s.queryRow("PRAGMA wal_checkpoint(PASSIVE)", row[:]) // as in checkpointer, errors only wait
	s.status.Status(sqlite.DBStatusCacheWrite, true)                // checkpoint writes are not WAL frames
	if busy, _ := row[0].(int64); ok && err == nil && busy == 0 {
		s.sinceRestart = 0
		s.restarts.Add(1)
	} else {
		s.ckptFinish.Store(true)
	}
}

// The writer's transaction control statements.
const (
	qBegin      = "BEGIN IMMEDIATE"
	qCommit     = "COMMIT"
	qRollback   = "ROLLBACK"
	qSavepoint  = "SAVEPOINT cmd"
	qRollbackTo = "ROLLBACK TO cmd"
	qRelease    = "RELEASE cmd"
)

// rollback ends the writer's transaction, if it is still open, keeping
// nothing of it.
func (s *Store) rollback() {
	// An error means no transaction was left: SQLite rolled it back itself.
	s.run(qRollback)
}

// errClosed answers calls made after Close.
var errClosed = store.Unavailable("sqlitestore", errors.New("store closed"))

func (s *Store) submit(ctx context.Context, r *request) error {
	r.ctx = ctx
	r.done = make(chan error, 1)
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
	s.ran(q)
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

// dstmt is a statement prepared on the writer's driver connection.
type dstmt struct {
	s  driver.Stmt
	ex driver.StmtExecContext
	q  driver.StmtQueryContext
}

// prepared returns the driver-level prepared statement for q; only the
// writer goroutine calls it.
func (s *Store) prepared(q string) (*dstmt, error) {
	if st, ok := s.dstmts[q]; ok {
		return st, nil
	}
	ds, err := s.dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), q)
	if err != nil {
		return nil, classify(err)
	}
	st := &dstmt{s: ds}
	var ok1, ok2 bool
	st.ex, ok1 = ds.(driver.StmtExecContext)
	st.q, ok2 = ds.(driver.StmtQueryContext)
	if !ok1 || !ok2 {
		ds.Close()
		return nil, fmt.Errorf("sqlitestore: driver statement %T cannot run with a context", ds)
	}
	s.dstmts[q] = st
	return st, nil
}

// bind sets the reused argument list to args, which must be driver values
// (int64, float64, bool, []byte, string, nil).
func (s *Store) bind(args []any) []driver.NamedValue {
	nv := s.args[:0]
	for i, a := range args {
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	s.args = nv
	return nv
}

// run executes q on the writer connection; only the writer goroutine
// calls it. The statement runs to its end: SQLite statements here are
// short, and an interrupted one could abort the whole shared transaction.
func (s *Store) run(q string, args ...any) (driver.Result, error) {
	s.ran(q)
	st, err := s.prepared(q)
	if err != nil {
		return nil, err
	}
	res, err := st.ex.ExecContext(context.Background(), s.bind(args))
	clear(s.args)
	if err != nil {
		s.stmtFailed = true
		return nil, classify(err)
	}
	return res, nil
}

// queryRow runs q on the writer connection and reads its first row into
// dest (which must have one value per column); false if there is none.
func (s *Store) queryRow(q string, dest []driver.Value, args ...any) (bool, error) {
	s.ran(q)
	st, err := s.prepared(q)
	if err != nil {
		return false, err
	}
	rows, err := st.q.QueryContext(context.Background(), s.bind(args))
	clear(s.args)
	if err != nil {
		s.stmtFailed = true
		return false, classify(err)
	}
	err = rows.Next(dest)
	if cerr := rows.Close(); err == nil || err == io.EOF {
		if cerr != nil {
			s.stmtFailed = true
			return false, classify(cerr)
		}
	}
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		s.stmtFailed = true
		return false, classify(err)
	}
	return true, nil
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
	v, latest, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	return store.CheckSchemaVersion(v, latest, false)
}

// SchemaVersion reads the schema version of the database and the latest
// this Veena knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int, err error) {
	migs, err := store.Migrations(migrationFS, "migrations")
	if err != nil {
		return 0, 0, err
	}
	return sqlstore.SchemaVersion("sqlitestore", len(migs),
		func() (ok bool, err error) {
			err = s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version')`).Scan(&ok)
			return ok, err
		},
		func() (v int, err error) {
			if err = s.rdb.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&v); errors.Is(err, sql.ErrNoRows) {
				err = nil
			}
			return v, err
		})
}

var _ store.SchemaVersioner = (*Store)(nil)

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

// tx is the inside of an Update: one request's view of the writer's
// transaction.
type tx struct {
	s *Store
	// wrote records that the request ran a write statement.
	wrote bool
	// An ExpectTree check not made yet: it rides on the request's UPDATE
	// of the root row, or runs when the request ends (checkExpected).
	expecting     bool
	expectRoot    string
	expectVersion int64
}

func (t *tx) Key(ctx context.Context, key string) ([]byte, bool, error) {
	var row [1]driver.Value
	found, err := t.s.queryRow(`SELECT result FROM idempotency WHERE key = ?`, row[:], key)
	if err != nil || !found {
		return nil, false, err
	}
	res, _ := row[0].([]byte)
	return res, true, nil
}

func (t *tx) PutKey(ctx context.Context, key string, result []byte, at time.Time) error {
	t.wrote = true
	_, err := t.s.run(`INSERT INTO idempotency (key, result, created_at) VALUES (?, ?, ?)`, key, result, at.UnixNano())
	return err
}

func (t *tx) LockTree(ctx context.Context, root string) (int64, error) {
	var row [1]driver.Value
	found, err := t.s.queryRow(`SELECT tree_version FROM processes WHERE id = ? AND root_id = id`, row[:], root)
	return treeVersion(root, row[0], found, err)
}

// treeVersion is the tree version a query of root's row read (found
// false: there is no such tree).
func treeVersion(root string, v driver.Value, found bool, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("process %s: tree version %T", root, v)
	}
	return n, nil
}

func (t *tx) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	ps, err := t.tree(ctx, root)
	if err != nil {
		t.s.stmtFailed = true
	}
	return ps, err
}

func (t *tx) tree(ctx context.Context, root string) ([]*store.Process, error) {
	st, err := t.s.stmt(ctx, treeQuery)
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

// treeQuery reads the rows of a tree: its root, then its nested processes
// (through the partial index on the root of nested processes).
const treeQuery = `SELECT ` + sqlstore.ProcessColumns + ` FROM processes WHERE id = ?1 AND root_id = ?1
	UNION ALL SELECT ` + sqlstore.ProcessColumns + ` FROM processes WHERE root_id = ?1 AND parent_id <> '' AND id <> ?1`

const (
	qUpsertProcess = `INSERT INTO processes (` + sqlstore.ProcessColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, env = excluded.env, snapshot = excluded.snapshot,
		event_seq = excluded.event_seq, updated_at = excluded.updated_at, tree_version = excluded.tree_version, context = excluded.context,
		waits = excluded.waits, stalled = excluded.stalled`
	// A new row with the event record of the command creating it.
	qInsertProcessFirstEvents = `INSERT INTO processes (` + sqlstore.ProcessColumns + `, first_events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	// A row whose state changes: the state index entry moves.
	qUpdateProcess = `UPDATE processes SET state = ?, env = ?, snapshot = ?, event_seq = ?, updated_at = ?, tree_version = ?, context = ?,
		waits = ?, stalled = ? WHERE id = ?`
	// A row whose state stays: no index changes.
	qUpdateProcessSameState = `UPDATE processes SET env = ?, snapshot = ?, event_seq = ?, updated_at = ?, tree_version = ?, context = ?,
		waits = ?, stalled = ? WHERE id = ? AND state = ?`

	// The same for the root of a tree the request expects at a version
	// (the last parameter) with no commands waiting in its inbox.
	qUpdateProcessChecked          = qUpdateProcess + " AND " + expectedRoot
	qUpdateProcessSameStateChecked = qUpdateProcessSameState + " AND " + expectedRoot
	qSetTreeVersionChecked         = `UPDATE processes SET tree_version = ? WHERE id = ? AND ` + expectedRoot
	expectedRoot                   = `root_id = id AND tree_version = ? AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.root_id = processes.id AND i.done = 0)`

	qInsertWait = `INSERT INTO waits (node, process_id) VALUES (?, ?) ON CONFLICT DO NOTHING`
	qDeleteWait = `DELETE FROM waits WHERE node = ? AND process_id = ?`
)

func (t *tx) PutProcess(ctx context.Context, p *store.Process) error {
	c, err := sqlstore.ContextJSON(p.Context)
	if err != nil {
		return err
	}
	var cv any
	if c != nil {
		cv = *c
	}
	s := t.s
	wrote := t.wrote
	t.wrote = true
	// A row the engine knows exists is updated in place, its changing
	// columns only, and without touching the state index when its state
	// stays. If the row turns out not to be as the engine knew it (another
	// writer), the upsert below does it. The UPDATE of an expected tree's
	// root carries the tree check.
	if p.StoredState != "" {
		checked := t.expecting && p.ID == t.expectRoot
		var res driver.Result
		waits, stalled := nullBytes(p.Waits), boolInt(p.Stalled)
		switch {
		case checked && p.StoredState == p.State:
			res, err = s.run(qUpdateProcessSameStateChecked, nullBytes(p.Env), nullBytes(p.Snapshot), p.EventSeq,
				p.UpdatedAt.UnixNano(), p.TreeVersion, cv, waits, stalled, p.ID, p.State, t.expectVersion)
		case checked:
			res, err = s.run(qUpdateProcessChecked, p.State, nullBytes(p.Env), nullBytes(p.Snapshot), p.EventSeq,
				p.UpdatedAt.UnixNano(), p.TreeVersion, cv, waits, stalled, p.ID, t.expectVersion)
		case p.StoredState == p.State:
			res, err = s.run(qUpdateProcessSameState, nullBytes(p.Env), nullBytes(p.Snapshot), p.EventSeq,
				p.UpdatedAt.UnixNano(), p.TreeVersion, cv, waits, stalled, p.ID, p.State)
		default:
			res, err = s.run(qUpdateProcess, p.State, nullBytes(p.Env), nullBytes(p.Snapshot), p.EventSeq,
				p.UpdatedAt.UnixNano(), p.TreeVersion, cv, waits, stalled, p.ID)
		}
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			if checked {
				t.expecting = false
			}
			if err := t.writeWaits(p); err != nil {
				return err
			}
			return t.appendFirstEvents(ctx, p)
		}
		if checked {
			// Not as expected: checkExpected says why, or it is the row
			// that is not as the engine knew it. The UPDATE changed
			// nothing, so a refused request has written no more than before.
			if err := t.checkExpected(); err != nil {
				t.wrote = wrote
				return err
			}
		}
	}
	// The columns of a whole row, in sqlstore.ProcessColumns order, and room
	// for first_events.
	row := make([]any, 0, 18)
	row = append(row, p.ID, p.Root, p.Parent, int64(p.ParentToken), int64(p.Position), p.Definition, int64(p.Version), p.State, cv,
		nullBytes(p.Env), nullBytes(p.Snapshot), p.EventSeq, p.CreatedAt.UnixNano(), p.UpdatedAt.UnixNano(), p.TreeVersion,
		nullBytes(p.Waits), boolInt(p.Stalled))
	if f := p.FirstEvents; f != nil && f.First == 1 && p.StoredState == "" {
		// A new row keeps the events of its first command: no events row.
		res, err := s.run(qInsertProcessFirstEvents, append(row, f.Data)...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return t.writeWaits(p)
		}
		// The row exists after all: rewrite it, and the events go to events.
	}
	_, err = s.run(qUpsertProcess, row...)
	if err != nil {
		return err
	}
	if err := t.writeWaits(p); err != nil {
		return err
	}
	return t.appendFirstEvents(ctx, p)
}

// writeWaits writes the change of a row's wait nodes to the waits table.
func (t *tx) writeWaits(p *store.Process) error {
	add, del := sqlstore.WaitChanges(p)
	for _, n := range del {
		if _, err := t.s.run(qDeleteWait, n, p.ID); err != nil {
			return err
		}
	}
	for _, n := range add {
		if _, err := t.s.run(qInsertWait, n, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// boolInt is b as SQLite stores it.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// appendFirstEvents stores the first events of a row that does not keep
// them, in events.
func (t *tx) appendFirstEvents(ctx context.Context, p *store.Process) error {
	if p.FirstEvents == nil {
		return nil
	}
	return t.AppendEvents(ctx, []store.EventRecord{*p.FirstEvents})
}

// nullBytes is b as a driver value: a nil slice is NULL, which the NOT NULL
// columns refuse, as they did through database/sql.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

func (t *tx) SetTreeVersion(ctx context.Context, root string, v int64) error {
	wrote := t.wrote
	t.wrote = true
	if t.expecting && root == t.expectRoot {
		res, err := t.s.run(qSetTreeVersionChecked, v, root, t.expectVersion)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			t.expecting = false
			return nil
		}
		// Not as expected: checkExpected says why (the UPDATE changed nothing).
		if err := t.checkExpected(); err != nil {
			t.wrote = wrote
			return err
		}
	}
	_, err := t.s.run(`UPDATE processes SET tree_version = ? WHERE id = ?`, v, root)
	return err
}

func (t *tx) AppendEvents(ctx context.Context, recs []store.EventRecord) error {
	t.wrote = true
	for _, r := range recs {
		q := qInsertEvents
		if r.First == 1 {
			// The first events may be in the process row (see PutProcess):
			// they are stored once.
			q = qInsertFirstEvents
		}
		res, err := t.s.run(q, r.Process, r.First, r.Last, r.Data)
		if err != nil {
			return fmt.Errorf("store events: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("store events: events %d..%d of process %s are stored already: %w", r.First, r.Last, r.Process, store.ErrConflict)
		}
	}
	return nil
}

const (
	qInsertEvents      = `INSERT INTO events (process_id, seq, last_seq, data) VALUES (?1, ?2, ?3, ?4)`
	qInsertFirstEvents = `INSERT INTO events (process_id, seq, last_seq, data) SELECT ?1, ?2, ?3, ?4
		WHERE NOT EXISTS (SELECT 1 FROM processes WHERE id = ?1 AND first_events IS NOT NULL)`
)

func (t *tx) ReplaceTimers(ctx context.Context, process string, timers []store.Timer) error {
	t.wrote = true
	if _, err := t.s.run(`DELETE FROM timers WHERE process_id = ?`, process); err != nil {
		return err
	}
	for _, tm := range timers {
		if _, err := t.s.run(`INSERT INTO timers (process_id, token, root_id, due_at) VALUES (?, ?, ?, ?)`,
			tm.Process, int64(tm.Token), tm.Root, tm.DueAt.UnixNano()); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutContext(ctx context.Context, process string, c map[string]string, unique []string) error {
	t.wrote = true
	if _, err := t.s.run(`DELETE FROM contexts WHERE process_id = ?`, process); err != nil {
		return err
	}
	for k, v := range c {
		u := int64(0) // SQLite has no boolean
		if slices.Contains(unique, k) {
			u = 1
		}
		if _, err := t.s.run(`INSERT INTO contexts (process_id, key, value, is_unique) VALUES (?, ?, ?, ?)`, process, k, v, u); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("context %s=%q is already used by an executing process: %w", k, v, store.ErrConflict)
			}
			return err
		}
	}
	return nil
}

func (t *tx) DropContext(ctx context.Context, process string) error {
	t.wrote = true
	_, err := t.s.run(`UPDATE contexts SET executing = 0 WHERE process_id = ?`, process)
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
	rows, err := s.rdb.QueryContext(ctx, treeQuery, root)
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

// dialect is SQLite's SQL for the listing queries.
var dialect = sqlstore.Dialect{Param: func(int) string { return "?" }, NoSnapshot: "x''", True: "1"}

// Processes lists process rows by ID.
func (s *Store) Processes(ctx context.Context, f store.Filter) ([]*store.Process, error) {
	q, args := sqlstore.ProcessesQuery(f, dialect)
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

// qEvents reads the event records of a process with events after a
// sequence number, in order: the first may be in the process row. Each
// part comes in seq order from its primary key, and SQLite merges the two
// without sorting, so that a long log read a page at a time is not read
// whole. It gives the data, then the seq it orders by.
const qEvents = `SELECT first_events, 1 FROM processes WHERE id = ?1 AND first_events IS NOT NULL
	UNION ALL SELECT data, seq FROM events WHERE process_id = ?1 AND last_seq > ?2
	ORDER BY 2`

// Events returns events of a process after a sequence number.
func (s *Store) Events(ctx context.Context, process string, after int64, limit int) ([]store.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, qEvents, process, after)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	return sqlstore.ScanEvents(dataThenSeq{rows}, process, after, limit, readErr)
}

// dataThenSeq reads the rows of qEvents as rows of their data alone.
type dataThenSeq struct{ *sql.Rows }

func (r dataThenSeq) Scan(dest ...any) error {
	var seq int64
	return r.Rows.Scan(append(dest, &seq)...)
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
	q := `SELECT process_id FROM contexts WHERE executing = 1 AND (` + strings.Join(conds, " OR ") +
		`) GROUP BY process_id HAVING count(*) = ` + strconv.Itoa(len(match)) + ` ORDER BY process_id`
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
