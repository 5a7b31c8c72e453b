package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/internal/sqlstore"
)

// The work layer's rows (see store/work.go). A command reads the rows it
// changes with FOR UPDATE, so that a job activation (FOR UPDATE SKIP
// LOCKED) passes over a job while a command decides about it; its writes
// join the command's pipeline. A write at a revision checks it in the same
// statement: no row at that revision divides by zero, which fails the
// command with ErrStale.

func param(n int) string { return "$" + strconv.Itoa(n) }

var workDialect = sqlstore.WorkDialect{
	Param: param,
	Holds: func(col, p string) string { return col + " ? " + p },
	HoldsAny: func(col string, vals []string, arg func(v any) string) string {
		return col + " ?| " + arg(vals) + "::text[]"
	},
}

func pgNotFound(what, id string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", what, id, store.ErrNotFound)
	}
	return classify(err)
}

// Task reads a task.
func (s *Store) Task(ctx context.Context, id string) (*store.Task, error) {
	t, err := sqlstore.ScanTask(s.pool.QueryRow(ctx, `SELECT `+sqlstore.TaskColumns+` FROM tasks WHERE id = $1`, id))
	if err != nil {
		return nil, pgNotFound("task", id, err)
	}
	return t, nil
}

// Tasks lists tasks in inbox order.
func (s *Store) Tasks(ctx context.Context, f store.TaskFilter) ([]*store.Task, error) {
	q, args := sqlstore.TasksQuery(f, workDialect)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []*store.Task
	for rows.Next() {
		t, err := sqlstore.ScanTask(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, t)
	}
	return out, classify(rows.Err())
}

// Job reads a job.
func (s *Store) Job(ctx context.Context, id string) (*store.Job, error) {
	j, err := sqlstore.ScanJob(s.pool.QueryRow(ctx, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1`, id))
	if err != nil {
		return nil, pgNotFound("job", id, err)
	}
	return j, nil
}

func scanJobs(rows pgx.Rows) ([]*store.Job, error) {
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
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	out, err := scanJobs(rows)
	return out, classify(err)
}

// qActivate leases available jobs of type $3 at $4 (open and due, or
// leased with the lease run out), soonest available first, at most $5,
// through the jobs_available index, passing over the rows a command or
// another activation holds (SKIP LOCKED: the lock re-checks the condition
// on the row as it is then).
var qActivate = `WITH c AS (
		SELECT id FROM jobs WHERE type = $3 AND state IN ('open', 'leased') AND ` + sqlstore.AvailableAt + ` <= $4
		ORDER BY ` + sqlstore.AvailableAt + `, id LIMIT $5 FOR UPDATE SKIP LOCKED)
	UPDATE jobs j SET state = 'leased', worker = $1, locked_until = $2, rev = j.rev + 1
	FROM c WHERE j.id = c.id
	RETURNING ` + qualified("j", sqlstore.JobColumns)

// qualified prefixes each column of a column list with a table alias.
func qualified(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// qActivateMany is qActivate for several activations of one type at
// once: slot k of the arrays $1 (workers) and $2 (lease ends) gets the
// k-th job in order, and each row returned says its slot (n).
var qActivateMany = `WITH slot AS (
		SELECT worker, until, n FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS s(worker, until, n)),
	c AS (
		SELECT id, row_number() OVER (ORDER BY avail, id) AS n FROM (
			SELECT id, ` + sqlstore.AvailableAt + ` AS avail FROM jobs
			WHERE type = $3 AND state IN ('open', 'leased') AND ` + sqlstore.AvailableAt + ` <= $4
			ORDER BY ` + sqlstore.AvailableAt + `, id LIMIT $5 FOR UPDATE SKIP LOCKED) x)
	UPDATE jobs j SET state = 'leased', worker = slot.worker, locked_until = slot.until, rev = j.rev + 1
	FROM c JOIN slot ON slot.n = c.n WHERE j.id = c.id
	RETURNING c.n, ` + qualified("j", sqlstore.JobColumns)

// activations gathers the activations waiting for a statement, by job
// type: while the statements of a type run (at most activationRounds),
// the activations of that type that arrive meanwhile wait and then share
// the next one, so that many
// workers polling at once cost one round trip and one commit, not one
// each.
type activations struct {
	mu      sync.Mutex
	waiting map[string][]*activation
	running map[string]int // rounds running, by type
}

// activationRounds is how many statements of one type may run at once:
// with two, the activations arriving while one runs wait for at most the
// end of the other.
const activationRounds = 2

// activation is one ActivateJobs call waiting for its statement.
type activation struct {
	a    store.Activation
	done chan activated // buffered
}

type activated struct {
	jobs []*store.Job
	err  error
}

// activateTimeout bounds one activation statement. The statement does not
// stop when a caller goes away: the jobs it leases are handed to that
// caller, which offers them again (see veena's ActivateJobs).
const activateTimeout = 30 * time.Second

// ActivateJobs leases available jobs.
func (s *Store) ActivateJobs(ctx context.Context, a store.Activation) ([]*store.Job, error) {
	if a.Max <= 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &activation{a: a, done: make(chan activated, 1)}
	act := &s.act
	act.mu.Lock()
	if act.waiting == nil {
		act.waiting, act.running = map[string][]*activation{}, map[string]int{}
	}
	act.waiting[a.Type] = append(act.waiting[a.Type], r)
	lead := act.running[a.Type] < activationRounds
	if lead {
		act.running[a.Type]++
	}
	act.mu.Unlock()
	if lead {
		go s.activateRounds(a.Type)
	}
	res := <-r.done
	return res.jobs, res.err
}

// activateRounds runs statements for the activations of a type until
// none waits.
func (s *Store) activateRounds(typ string) {
	act := &s.act
	for {
		act.mu.Lock()
		batch := act.waiting[typ]
		delete(act.waiting, typ)
		if len(batch) == 0 {
			if act.running[typ]--; act.running[typ] == 0 {
				delete(act.running, typ)
			}
			act.mu.Unlock()
			return
		}
		act.mu.Unlock()
		s.activateRound(batch)
	}
}

// activateRound leases jobs for a batch of activations of one type in one
// statement: the earlier activations get the earlier jobs.
func (s *Store) activateRound(batch []*activation) {
	ctx, cancel := context.WithTimeout(context.Background(), activateTimeout)
	defer cancel()
	fail := func(err error) {
		for _, r := range batch {
			r.done <- activated{err: classify(err)}
		}
	}
	if len(batch) == 1 {
		a := batch[0].a
		rows, err := s.pool.Query(ctx, qActivate, a.Worker, a.Now.Add(a.LockFor).UnixNano(), a.Type, a.Now.UnixNano(), int64(a.Max))
		if err != nil {
			fail(err)
			return
		}
		out, err := scanJobs(rows)
		if err != nil {
			fail(err)
			return
		}
		sortJobs(out)
		batch[0].done <- activated{jobs: out}
		return
	}
	var workers []string
	var untils []int64
	var owners []int // the activation of each slot
	now := batch[0].a.Now
	for i, r := range batch {
		if r.a.Now.After(now) {
			now = r.a.Now
		}
		for range r.a.Max {
			workers = append(workers, r.a.Worker)
			untils = append(untils, r.a.Now.Add(r.a.LockFor).UnixNano())
			owners = append(owners, i)
		}
	}
	rows, err := s.pool.Query(ctx, qActivateMany, workers, untils, batch[0].a.Type, now.UnixNano(), int64(len(owners)))
	if err != nil {
		fail(err)
		return
	}
	out := make([][]*store.Job, len(batch))
	for rows.Next() {
		var n int64
		j, err := sqlstore.ScanJob(slotRow{rows, &n})
		if err != nil {
			rows.Close()
			fail(err)
			return
		}
		if n < 1 || int(n) > len(owners) {
			rows.Close()
			fail(fmt.Errorf("activation slot %d of %d", n, len(owners)))
			return
		}
		i := owners[n-1]
		out[i] = append(out[i], j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		fail(err)
		return
	}
	for i, r := range batch {
		sortJobs(out[i])
		r.done <- activated{jobs: out[i]}
	}
}

// slotRow scans a row of qActivateMany: the slot, then the job.
type slotRow struct {
	rows pgx.Rows
	n    *int64
}

func (r slotRow) Scan(dest ...any) error { return r.rows.Scan(append([]any{r.n}, dest...)...) }

// sortJobs orders leased jobs as ActivateJobs returns them.
func sortJobs(out []*store.Job) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].DueAt.Equal(out[j].DueAt) {
			return out[i].DueAt.Before(out[j].DueAt)
		}
		return out[i].ID < out[j].ID
	})
}

// ExpireLeases opens the jobs whose lease ran out.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE jobs SET state = 'open', rev = rev + 1
		WHERE id IN (SELECT id FROM jobs WHERE state IN ('open', 'leased') AND `+sqlstore.AvailableAt+` <= $1 AND state = 'leased'
			FOR UPDATE SKIP LOCKED)
		RETURNING type`, now.UnixNano())
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	var types []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, classify(err)
		}
		if !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	sort.Strings(types)
	return types, classify(rows.Err())
}

// Incident reads an incident.
func (s *Store) Incident(ctx context.Context, id string) (*store.Incident, error) {
	i, err := sqlstore.ScanIncident(s.pool.QueryRow(ctx, `SELECT `+sqlstore.IncidentColumns+` FROM incidents WHERE id = $1`, id))
	if err != nil {
		return nil, pgNotFound("incident", id, err)
	}
	return i, nil
}

// Incidents lists incidents by ID.
func (s *Store) Incidents(ctx context.Context, f store.IncidentFilter) ([]*store.Incident, error) {
	q, args := sqlstore.IncidentsQuery(f, workDialect)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []*store.Incident
	for rows.Next() {
		i, err := sqlstore.ScanIncident(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, i)
	}
	return out, classify(rows.Err())
}

// AuditNotes returns notes of a process after a sequence number.
func (s *Store) AuditNotes(ctx context.Context, process string, after int64, limit int) ([]store.AuditNote, error) {
	var most any
	if limit > 0 {
		most = int64(limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, "user", detail FROM audit_notes WHERE process_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, process, after, most)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.AuditNote
	for rows.Next() {
		n := store.AuditNote{Process: process}
		if err := rows.Scan(&n.Seq, &n.User, &n.Detail); err != nil {
			return nil, classify(err)
		}
		out = append(out, n)
	}
	return out, classify(rows.Err())
}

// Attachments returns a process's attachments by name.
func (s *Store) Attachments(ctx context.Context, process string) ([]store.Attachment, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, uri, cardinality FROM attachments WHERE process_id = $1 ORDER BY name`, process)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.Attachment
	for rows.Next() {
		a := store.Attachment{Process: process}
		if err := rows.Scan(&a.Name, &a.URI, &a.Cardinality); err != nil {
			return nil, classify(err)
		}
		out = append(out, a)
	}
	return out, classify(rows.Err())
}

// PutSubscription stores a new subscription.
func (s *Store) PutSubscription(ctx context.Context, sub *store.Subscription) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO subscriptions (name, definition, version, match, created_at) VALUES ($1, $2, $3, $4, $5)`,
		sub.Name, sub.Definition, sub.Version, sub.Match, sub.CreatedAt.UnixNano())
	if err = classify(err); errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("subscription %q exists: %w", sub.Name, err)
	}
	return err
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
	sub, err := scanSubscription(s.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE name = $1`, name))
	if err != nil {
		return nil, pgNotFound("subscription", name, err)
	}
	return sub, nil
}

// Subscriptions lists subscriptions by name.
func (s *Store) Subscriptions(ctx context.Context) ([]*store.Subscription, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions ORDER BY name`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []*store.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, sub)
	}
	return out, classify(rows.Err())
}

// DeleteSubscription removes a subscription.
func (s *Store) DeleteSubscription(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM subscriptions WHERE name = $1`, name)
	if err != nil {
		return classify(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("subscription %q: %w", name, store.ErrNotFound)
	}
	return nil
}

// WorkCounts counts the work waiting.
func (s *Store) WorkCounts(ctx context.Context) (*store.WorkCounts, error) {
	c := sqlstore.NewWorkCounts()
	for i, q := range sqlstore.WorkCountQueries {
		rows, err := s.pool.Query(ctx, q)
		if err != nil {
			return nil, classify(err)
		}
		err = sqlstore.ScanWorkCounts(c, i, rows)
		rows.Close()
		if err != nil {
			return nil, classify(err)
		}
	}
	return c, nil
}

// The reads and writes of a command.

// readRow reads one row for the command, locking it.
func (t *tx) readRow(ctx context.Context, what, id, q string, scan func(pgx.Row) error) error {
	t.queue(q, id)
	err := t.flush(ctx, func(br pgx.BatchResults) error { return scan(br.QueryRow()) })
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", what, id, store.ErrNotFound)
	}
	return classify(err)
}

func (t *tx) Task(ctx context.Context, id string) (out *store.Task, err error) {
	err = t.readRow(ctx, "task", id, `SELECT `+sqlstore.TaskColumns+` FROM tasks WHERE id = $1 FOR UPDATE`, func(r pgx.Row) (err error) {
		out, err = sqlstore.ScanTask(r)
		return err
	})
	return out, err
}

func (t *tx) Job(ctx context.Context, id string) (out *store.Job, err error) {
	err = t.readRow(ctx, "job", id, `SELECT `+sqlstore.JobColumns+` FROM jobs WHERE id = $1 FOR UPDATE`, func(r pgx.Row) (err error) {
		out, err = sqlstore.ScanJob(r)
		return err
	})
	return out, err
}

func (t *tx) Incident(ctx context.Context, id string) (out *store.Incident, err error) {
	err = t.readRow(ctx, "incident", id, `SELECT `+sqlstore.IncidentColumns+` FROM incidents WHERE id = $1 FOR UPDATE`, func(r pgx.Row) (err error) {
		out, err = sqlstore.ScanIncident(r)
		return err
	})
	return out, err
}

var (
	qInsertTask     = `INSERT INTO tasks (` + sqlstore.TaskColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 22) + `)`
	qUpdateTask     = checkedUpdate("tasks", sqlstore.TaskColumns, 22)
	qInsertJob      = `INSERT INTO jobs (` + sqlstore.JobColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 16) + `)`
	qUpdateJob      = checkedUpdate("jobs", sqlstore.JobColumns, 16)
	qInsertIncident = `INSERT INTO incidents (` + sqlstore.IncidentColumns + `) VALUES (` + sqlstore.Placeholders(param, 1, 12) + `)`
	qUpdateIncident = checkedUpdate("incidents", sqlstore.IncidentColumns, 12)
)

// checkedUpdate updates the row $1 of a table at revision $(n+1) and
// divides by zero if there is none (ErrStale).
func checkedUpdate(table, columns string, n int) string {
	return `WITH u AS (UPDATE ` + table + ` SET ` + sqlstore.UpdateSet(columns, param) + ` WHERE id = $1 AND rev = ` +
		param(n+1) + ` RETURNING 1) SELECT 1 / count(*)::int FROM u`
}

// putRow inserts a row (rev 0) or updates it at revision rev, in the
// command's pipeline.
func (t *tx) putRow(table, id string, rev int64, values []any, insert, update string) {
	if rev == 0 {
		t.write(rowKey(table, id), insert, values...)
		return
	}
	// The check's division must fail this statement alone: it goes as a
	// statement of its own.
	t.seal()
	t.b.Queue(update, append(values, rev)...)
	t.owners = append(t.owners, t.cur)
}

func (t *tx) PutTask(ctx context.Context, x *store.Task) error {
	t.putRow("tasks", x.ID, x.Rev, sqlstore.TaskValues(x, x.Rev+1), qInsertTask, qUpdateTask)
	x.Rev++
	return nil
}

func (t *tx) PutJob(ctx context.Context, j *store.Job) error {
	t.putRow("jobs", j.ID, j.Rev, sqlstore.JobValues(j, j.Rev+1), qInsertJob, qUpdateJob)
	j.Rev++
	return nil
}

func (t *tx) PutIncident(ctx context.Context, i *store.Incident) error {
	t.putRow("incidents", i.ID, i.Rev, sqlstore.IncidentValues(i, i.Rev+1), qInsertIncident, qUpdateIncident)
	i.Rev++
	return nil
}

func (t *tx) EndWork(ctx context.Context, process string, token int, completed bool, at time.Time) error {
	taskState, jobState := store.TaskCanceled, store.JobCanceled
	if completed {
		taskState, jobState = store.TaskCompleted, store.JobCompleted
	}
	n := at.UnixNano()
	tok := strconv.Itoa(token)
	// After the command's earlier writes, which may have inserted the
	// work that ends now: one statement does not see its own inserts.
	t.seal()
	t.write(rowKey("tasks", process, tok), `UPDATE tasks SET state = $1, completed_at = $2, rev = rev + 1
		WHERE process_id = $3 AND token = $4 AND state IN ('open', 'claimed')`, taskState, n, process, token)
	t.write(rowKey("jobs", process, tok), `UPDATE jobs SET state = $1, rev = rev + 1
		WHERE process_id = $2 AND token = $3 AND state IN ('open', 'leased', 'failed')`, jobState, process, token)
	t.write(rowKey("incidents", process, tok), `UPDATE incidents SET state = 'resolved', resolved_at = $1, rev = rev + 1
		WHERE process_id = $2 AND token = $3 AND state = 'open'`, n, process, token)
	return nil
}

func (t *tx) PutAuditNotes(ctx context.Context, notes []store.AuditNote) error {
	for _, n := range notes {
		t.write(rowKey("audit_notes", n.Process, strconv.FormatInt(n.Seq, 10)),
			`INSERT INTO audit_notes (process_id, seq, "user", detail) VALUES ($1, $2, $3, $4)`, n.Process, n.Seq, n.User, n.Detail)
	}
	return nil
}

func (t *tx) PutAttachment(ctx context.Context, a *store.Attachment) error {
	t.write(rowKey("attachments", a.Process, a.Name), `INSERT INTO attachments (process_id, name, uri, cardinality) VALUES ($1, $2, $3, $4)
		ON CONFLICT (process_id, name) DO UPDATE SET uri = excluded.uri, cardinality = excluded.cardinality`,
		a.Process, a.Name, a.URI, a.Cardinality)
	return nil
}
