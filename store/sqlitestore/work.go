package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// The work layer's rows (see store/work.go). Commands write them through
// the writer like everything else; ActivateJobs and ExpireLeases are
// writes of their own, so the single writer never leases a job twice.

func param(n int) string { return "?" + strconv.Itoa(n) }

var workDialect = sqlstore.WorkDialect{
	Param:     param,
	ByIDRange: true,
	Holds: func(col, p string) string {
		return "EXISTS (SELECT 1 FROM json_each(" + col + ") WHERE value = " + p + ")"
	},
	HoldsAny: func(col string, vals []string, arg func(v any) string) string {
		ps := make([]string, len(vals))
		for i, v := range vals {
			ps[i] = arg(v)
		}
		return "EXISTS (SELECT 1 FROM json_each(" + col + ") WHERE value IN (" + strings.Join(ps, ", ") + "))"
	},
}

// prepared returns a read statement prepared on the reading connections
// (database/sql prepares it on each connection it runs on, once).
func (s *Store) readStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.rstmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.rdb.PrepareContext(ctx, q)
	if err != nil {
		return nil, readErr(err)
	}
	if prev, loaded := s.rstmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *Store) readRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return s.rdb.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (s *Store) readRows(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func notFound(what, id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", what, id, store.ErrNotFound)
	}
	return readErr(err)
}

// Task reads a task.
func (s *Store) Task(ctx context.Context, id string) (*store.Task, error) {
	t, err := sqlstore.ScanTask(s.readRow(ctx, `SELECT `+sqlstore.TaskColumns+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return nil, notFound("task", id, err)
	}
	return t, nil
}

// Tasks lists tasks in inbox order.
func (s *Store) Tasks(ctx context.Context, f store.TaskFilter) ([]*store.Task, error) {
	q, args := sqlstore.TasksQuery(f, workDialect)
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []*store.Task
	for rows.Next() {
		t, err := sqlstore.ScanTask(rows)
		if err != nil {
			return nil, readErr(err)
		}
		out = append(out, t)
	}
	return out, readErr(rows.Err())
}

// Job reads a job.
func (s *Store) Job(ctx context.Context, id string) (*store.Job, error) {
	j, err := sqlstore.ScanJob(s.readRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, id))
	if err != nil {
		return nil, notFound("job", id, err)
	}
	return j, nil
}

func scanJobs(rows *sql.Rows) ([]*store.Job, error) {
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := sqlstore.ScanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Jobs lists jobs by ID.
func (s *Store) Jobs(ctx context.Context, f store.JobFilter) ([]*store.Job, error) {
	q, args := sqlstore.JobsQuery(f, workDialect)
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	out, err := scanJobs(rows)
	return out, readErr(err)
}

// qAvailable reads the available jobs of a type (open and due, or leased
// with the lease run out), soonest available first, at most %d of them,
// through the jobs_available index; activate then leases each by its id.
// Two statements rather than one UPDATE … WHERE id IN (SELECT …) RETURNING:
// SQLite builds a temporary table for the IN list and another for
// RETURNING, each with a B-tree and page cache of its own, which cost more
// than the second statement. The limit is written out: SQLite prepares a
// statement again whenever the value bound to a LIMIT parameter changes.
const qAvailable = `SELECT ` + sqlstore.JobColumns + ` FROM jobs
	WHERE type = ?1 AND state IN ('open', 'leased') AND ` + sqlstore.AvailableAt + ` <= ?2
	ORDER BY ` + sqlstore.AvailableAt + `, id LIMIT %d`

// qLease leases one job.
const qLease = `UPDATE jobs SET state = 'leased', worker = ?1, locked_until = ?2, rev = rev + 1 WHERE id = ?3`

// ActivateJobs leases available jobs.
func (s *Store) ActivateJobs(ctx context.Context, a store.Activation) ([]*store.Job, error) {
	if a.Max <= 0 {
		return nil, nil
	}
	var out []*store.Job
	err := s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		var err error
		out, err = s.activate(a)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// activate leases up to a.Max available jobs on the writer's driver
// connection, with statements prepared once (only the writer goroutine
// calls it). The writer runs one request at a time, so no other write
// comes between the read and the leases.
func (s *Store) activate(a store.Activation) ([]*store.Job, error) {
	q := fmt.Sprintf(qAvailable, a.Max)
	s.ran(q)
	st, err := s.prepared(q)
	if err != nil {
		return nil, err
	}
	rows, err := st.q.QueryContext(context.Background(), s.bind([]any{a.Type, a.Now.UnixNano()}))
	clear(s.args)
	if err != nil {
		return nil, classify(err)
	}
	var out []*store.Job
	vals := make([]driver.Value, len(rows.Columns()))
	for {
		err := rows.Next(vals)
		if err == io.EOF {
			break
		}
		if err == nil {
			var j *store.Job
			if j, err = sqlstore.ScanJob(valuesRow(vals)); err == nil {
				out = append(out, j)
				continue
			}
		}
		rows.Close()
		return nil, classify(err)
	}
	if err := rows.Close(); err != nil {
		return nil, classify(err)
	}
	until := a.Now.Add(a.LockFor).UnixNano()
	for _, j := range out {
		if _, err := s.run(qLease, a.Worker, until, j.ID); err != nil {
			return nil, err
		}
		j.State, j.Worker, j.LockedUntil, j.Rev = store.JobLeased, a.Worker, sqlstore.Time(until), j.Rev+1
	}
	return out, nil
}

// valuesRow scans a row of driver values into the destinations ScanJob and
// its kin use.
type valuesRow []driver.Value

func (r valuesRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("scan %d columns into %d values", len(r), len(dest))
	}
	for i, d := range dest {
		v := r[i]
		switch p := d.(type) {
		case *string:
			switch x := v.(type) {
			case string:
				*p = x
			case []byte:
				*p = string(x)
			case nil:
				*p = ""
			default:
				return fmt.Errorf("column %d: %T is not text", i, v)
			}
		case *[]byte:
			switch x := v.(type) {
			case []byte:
				*p = append([]byte(nil), x...)
			case string:
				*p = []byte(x)
			case nil:
				*p = nil
			default:
				return fmt.Errorf("column %d: %T is not a blob", i, v)
			}
		case *int64:
			x, ok := v.(int64)
			if !ok {
				return fmt.Errorf("column %d: %T is not an integer", i, v)
			}
			*p = x
		case *int:
			x, ok := v.(int64)
			if !ok {
				return fmt.Errorf("column %d: %T is not an integer", i, v)
			}
			*p = int(x)
		default:
			return fmt.Errorf("column %d: cannot scan into %T", i, d)
		}
	}
	return nil
}

// ExpireLeases opens the jobs whose lease ran out.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) ([]string, error) {
	var types []string
	err := s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `UPDATE jobs SET state = 'open', rev = rev + 1
			WHERE state IN ('open', 'leased') AND `+sqlstore.AvailableAt+` <= ? AND state = 'leased' RETURNING type`, now.UnixNano())
		if err != nil {
			return classify(err)
		}
		defer rows.Close()
		seen := map[string]bool{}
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				return err
			}
			if !seen[t] {
				seen[t] = true
				types = append(types, t)
			}
		}
		return classify(rows.Err())
	})
	sort.Strings(types)
	return types, err
}

// Incident reads an incident.
func (s *Store) Incident(ctx context.Context, id string) (*store.Incident, error) {
	i, err := sqlstore.ScanIncident(s.readRow(ctx, `SELECT `+sqlstore.IncidentColumns+` FROM incidents WHERE id = ?`, id))
	if err != nil {
		return nil, notFound("incident", id, err)
	}
	return i, nil
}

// Incidents lists incidents by ID.
func (s *Store) Incidents(ctx context.Context, f store.IncidentFilter) ([]*store.Incident, error) {
	q, args := sqlstore.IncidentsQuery(f, workDialect)
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []*store.Incident
	for rows.Next() {
		i, err := sqlstore.ScanIncident(rows)
		if err != nil {
			return nil, readErr(err)
		}
		out = append(out, i)
	}
	return out, readErr(rows.Err())
}

// AuditNotes returns notes of a process after a sequence number.
func (s *Store) AuditNotes(ctx context.Context, process string, after int64, limit int) ([]store.AuditNote, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, user, detail FROM audit_notes WHERE process_id = ? AND seq > ? ORDER BY seq LIMIT ?`, process, after, limit)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []store.AuditNote
	for rows.Next() {
		n := store.AuditNote{Process: process}
		if err := rows.Scan(&n.Seq, &n.User, &n.Detail); err != nil {
			return nil, readErr(err)
		}
		out = append(out, n)
	}
	return out, readErr(rows.Err())
}

// Attachments returns a process's attachments by name.
func (s *Store) Attachments(ctx context.Context, process string) ([]store.Attachment, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT name, uri, cardinality FROM attachments WHERE process_id = ? ORDER BY name`, process)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []store.Attachment
	for rows.Next() {
		a := store.Attachment{Process: process}
		if err := rows.Scan(&a.Name, &a.URI, &a.Cardinality); err != nil {
			return nil, readErr(err)
		}
		out = append(out, a)
	}
	return out, readErr(rows.Err())
}

// PutSubscription stores a new subscription.
func (s *Store) PutSubscription(ctx context.Context, sub *store.Subscription) error {
	return s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		_, err := s.exec(ctx, `INSERT INTO subscriptions (name, definition, version, match, created_at) VALUES (?, ?, ?, ?, ?)`,
			sub.Name, sub.Definition, sub.Version, sub.Match, sub.CreatedAt.UnixNano())
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("subscription %q exists: %w", sub.Name, err)
		}
		return err
	})
}

const subscriptionColumns = `name, definition, version, match, created_at`

func scanSubscription(r sqlstore.Row) (*store.Subscription, error) {
	var sub store.Subscription
	var at int64
	if err := r.Scan(&sub.Name, &sub.Definition, &sub.Version, &sub.Match, &at); err != nil {
		return nil, err
	}
	sub.CreatedAt = sqlstore.Time(at)
	return &sub, nil
}

// Subscription reads a subscription.
func (s *Store) Subscription(ctx context.Context, name string) (*store.Subscription, error) {
	sub, err := scanSubscription(s.rdb.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE name = ?`, name))
	if err != nil {
		return nil, notFound("subscription", name, err)
	}
	return sub, nil
}

// Subscriptions lists subscriptions by name.
func (s *Store) Subscriptions(ctx context.Context) ([]*store.Subscription, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions ORDER BY name`)
	if err != nil {
		return nil, readErr(err)
	}
	defer rows.Close()
	var out []*store.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, readErr(err)
		}
		out = append(out, sub)
	}
	return out, readErr(rows.Err())
}

// DeleteSubscription removes a subscription.
func (s *Store) DeleteSubscription(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		res, err := s.exec(ctx, `DELETE FROM subscriptions WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("subscription %q: %w", name, store.ErrNotFound)
		}
		return nil
	})
}

// WorkCounts counts the work waiting.
func (s *Store) WorkCounts(ctx context.Context) (*store.WorkCounts, error) {
	c := sqlstore.NewWorkCounts()
	for i, q := range sqlstore.WorkCountQueries {
		rows, err := s.rdb.QueryContext(ctx, q)
		if err != nil {
			return nil, readErr(err)
		}
		err = sqlstore.ScanWorkCounts(c, i, rows)
		rows.Close()
		if err != nil {
			return nil, readErr(err)
		}
	}
	return c, nil
}

// The writes of a command, on the writer's connection.

func (t *tx) queryOne(ctx context.Context, q string, scan func(sqlstore.Row) error, args ...any) error {
	st, err := t.s.stmt(ctx, q)
	if err != nil {
		t.s.stmtFailed = true
		return err
	}
	err = scan(st.QueryRowContext(ctx, args...))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.s.stmtFailed = true
		return classify(err)
	}
	return err
}

func (t *tx) Task(ctx context.Context, id string) (*store.Task, error) {
	var out *store.Task
	err := t.queryOne(ctx, `SELECT `+sqlstore.TaskColumns+` FROM tasks WHERE id = ?`, func(r sqlstore.Row) (err error) {
		out, err = sqlstore.ScanTask(r)
		return err
	}, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, store.ErrNotFound)
	}
	return out, err
}

func (t *tx) Job(ctx context.Context, id string) (*store.Job, error) {
	var out *store.Job
	err := t.queryOne(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = ?`, func(r sqlstore.Row) (err error) {
		out, err = sqlstore.ScanJob(r)
		return err
	}, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return out, err
}

func (t *tx) Incident(ctx context.Context, id string) (*store.Incident, error) {
	var out *store.Incident
	err := t.queryOne(ctx, `SELECT `+sqlstore.IncidentColumns+` FROM incidents WHERE id = ?`, func(r sqlstore.Row) (err error) {
		out, err = sqlstore.ScanIncident(r)
		return err
	}, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("incident %s: %w", id, store.ErrNotFound)
	}
	return out, err
}

var (
	qInsertTask     = `INSERT INTO tasks (` + sqlstore.TaskColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 22) + `)`
	qUpdateTask     = `UPDATE tasks SET ` + sqlstore.UpdateSet(sqlstore.TaskColumns, param) + ` WHERE id = ?1 AND rev = ?23`
	qInsertJob      = `INSERT INTO jobs (` + sqlstore.JobColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 16) + `)`
	qUpdateJob      = `UPDATE jobs SET ` + sqlstore.UpdateSet(sqlstore.JobColumns, param) + ` WHERE id = ?1 AND rev = ?17`
	qInsertIncident = `INSERT INTO incidents (` + sqlstore.IncidentColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 12) + `)`
	qUpdateIncident = `UPDATE incidents SET ` + sqlstore.UpdateSet(sqlstore.IncidentColumns, param) + ` WHERE id = ?1 AND rev = ?13`
)

// putRow inserts a row (rev 0) or updates it at revision rev.
func (t *tx) putRow(what, id string, rev int64, values []any, insert, update string) error {
	t.wrote = true
	if rev == 0 {
		if _, err := t.s.run(insert, values...); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("%s %s exists already: %w", what, id, err)
			}
			return err
		}
		return nil
	}
	// UPDATE … SET (every column but the id, ?2 on) WHERE id = ?1 AND rev = (the last)
	res, err := t.s.run(update, append(values, rev)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s %s is not at revision %d: %w", what, id, rev, store.ErrStale)
	}
	return nil
}

func (t *tx) PutTask(ctx context.Context, x *store.Task) error {
	if err := t.putRow("task", x.ID, x.Rev, sqlstore.TaskValues(x, x.Rev+1), qInsertTask, qUpdateTask); err != nil {
		return err
	}
	x.Rev++
	return nil
}

func (t *tx) PutJob(ctx context.Context, j *store.Job) error {
	if err := t.putRow("job", j.ID, j.Rev, sqlstore.JobValues(j, j.Rev+1), qInsertJob, qUpdateJob); err != nil {
		return err
	}
	j.Rev++
	return nil
}

func (t *tx) PutIncident(ctx context.Context, i *store.Incident) error {
	if err := t.putRow("incident", i.ID, i.Rev, sqlstore.IncidentValues(i, i.Rev+1), qInsertIncident, qUpdateIncident); err != nil {
		return err
	}
	i.Rev++
	return nil
}

func (t *tx) EndWork(ctx context.Context, process string, token int, completed bool, at time.Time) error {
	t.wrote = true
	taskState, jobState := store.TaskCanceled, store.JobCanceled
	if completed {
		taskState, jobState = store.TaskCompleted, store.JobCompleted
	}
	n := at.UnixNano()
	lo, hi := sqlstore.ProcessRange(process)
	if _, err := t.s.run(`UPDATE tasks SET state = ?1, completed_at = ?2, rev = rev + 1
		WHERE id >= ?3 AND id < ?4 AND token = ?5 AND process_id = ?6 AND state IN ('open', 'claimed')`,
		taskState, n, lo, hi, int64(token), process); err != nil {
		return err
	}
	if _, err := t.s.run(`UPDATE jobs SET state = ?1, rev = rev + 1
		WHERE id >= ?2 AND id < ?3 AND token = ?4 AND process_id = ?5 AND state IN ('open', 'leased', 'failed')`,
		jobState, lo, hi, int64(token), process); err != nil {
		return err
	}
	_, err := t.s.run(`UPDATE incidents SET state = 'resolved', resolved_at = ?1, rev = rev + 1
		WHERE id >= ?2 AND id < ?3 AND token = ?4 AND process_id = ?5 AND state = 'open'`,
		n, lo, hi, int64(token), process)
	return err
}

func (t *tx) PutAuditNotes(ctx context.Context, notes []store.AuditNote) error {
	t.wrote = true
	for _, n := range notes {
		if _, err := t.s.run(`INSERT INTO audit_notes (process_id, seq, user, detail) VALUES (?, ?, ?, ?)`, n.Process, n.Seq, n.User, n.Detail); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutAttachment(ctx context.Context, a *store.Attachment) error {
	t.wrote = true
	_, err := t.s.run(`INSERT INTO attachments (process_id, name, uri, cardinality) VALUES (?, ?, ?, ?)
		ON CONFLICT (process_id, name) DO UPDATE SET uri = excluded.uri, cardinality = excluded.cardinality`,
		a.Process, a.Name, a.URI, int64(a.Cardinality))
	return err
}
