package sqlstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/store"
)

// The work layer's rows as both SQL backends keep them: times as Unix
// nanoseconds (0 for none), candidate lists as JSON arrays.

// TaskColumns are the columns of a task row, in the order ScanTask reads them.
const TaskColumns = `id, process_id, token, node, label, definition, state, assignee, candidate_users, candidate_groups, queue,
	claimed_by, claimed_at, priority, due_at, follow_up_at, data, initial, created_at, completed_at, completed_by, rev`

// JobColumns are the columns of a job row, in the order ScanJob reads them.
const JobColumns = `id, process_id, token, node, definition, type, state, retries, headers, env, worker, locked_until,
	due_at, created_at, error_message, rev`

// IncidentColumns are the columns of an incident row, in the order
// ScanIncident reads them.
const IncidentColumns = `id, process_id, token, node, definition, job, kind, message, state, created_at, resolved_at, rev`

// Nanos is a time as a column holds it: Unix nanoseconds, 0 for none.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time reads what Nanos wrote.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// List is a string list as a column holds it: a JSON array.
func List(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func parseList(s string) ([]string, error) {
	if s == "" || s == "[]" {
		return nil, nil
	}
	var l []string
	err := json.Unmarshal([]byte(s), &l)
	return l, err
}

// ScanTask reads a row of TaskColumns.
func ScanTask(r Row) (*store.Task, error) {
	var t store.Task
	var users, groups string
	var claimed, due, follow, created, completed int64
	if err := r.Scan(&t.ID, &t.Process, &t.Token, &t.Node, &t.Label, &t.Definition, &t.State, &t.Assignee, &users, &groups,
		&t.Queue, &t.ClaimedBy, &claimed, &t.Priority, &due, &follow, &t.Data, &t.Initial, &created, &completed,
		&t.CompletedBy, &t.Rev); err != nil {
		return nil, err
	}
	var err error
	if t.CandidateUsers, err = parseList(users); err != nil {
		return nil, fmt.Errorf("task %s: candidate users: %w", t.ID, err)
	}
	if t.CandidateGroups, err = parseList(groups); err != nil {
		return nil, fmt.Errorf("task %s: candidate groups: %w", t.ID, err)
	}
	t.ClaimedAt, t.DueAt, t.FollowUpAt, t.CreatedAt, t.CompletedAt = Time(claimed), Time(due), Time(follow), Time(created), Time(completed)
	return &t, nil
}

// TaskValues are a task's column values in TaskColumns order, the
// revision given.
func TaskValues(t *store.Task, rev int64) []any {
	return []any{t.ID, t.Process, int64(t.Token), t.Node, t.Label, t.Definition, t.State, t.Assignee, List(t.CandidateUsers),
		List(t.CandidateGroups), t.Queue, t.ClaimedBy, Nanos(t.ClaimedAt), int64(t.Priority), Nanos(t.DueAt),
		Nanos(t.FollowUpAt), object(t.Data), object(t.Initial), Nanos(t.CreatedAt), Nanos(t.CompletedAt), t.CompletedBy, rev}
}

// ScanJob reads a row of JobColumns.
func ScanJob(r Row) (*store.Job, error) {
	var j store.Job
	var locked, due, created int64
	if err := r.Scan(&j.ID, &j.Process, &j.Token, &j.Node, &j.Definition, &j.Type, &j.State, &j.Retries, &j.Headers, &j.Env,
		&j.Worker, &locked, &due, &created, &j.ErrorMessage, &j.Rev); err != nil {
		return nil, err
	}
	j.LockedUntil, j.DueAt, j.CreatedAt = Time(locked), Time(due), Time(created)
	return &j, nil
}

// JobValues are a job's column values in JobColumns order.
func JobValues(j *store.Job, rev int64) []any {
	return []any{j.ID, j.Process, int64(j.Token), j.Node, j.Definition, j.Type, j.State, int64(j.Retries), object(j.Headers),
		object(j.Env), j.Worker, Nanos(j.LockedUntil), Nanos(j.DueAt), Nanos(j.CreatedAt), j.ErrorMessage, rev}
}

// ScanIncident reads a row of IncidentColumns.
func ScanIncident(r Row) (*store.Incident, error) {
	var i store.Incident
	var created, resolved int64
	if err := r.Scan(&i.ID, &i.Process, &i.Token, &i.Node, &i.Definition, &i.Job, &i.Kind, &i.Message, &i.State,
		&created, &resolved, &i.Rev); err != nil {
		return nil, err
	}
	i.CreatedAt, i.ResolvedAt = Time(created), Time(resolved)
	return &i, nil
}

// IncidentValues are an incident's column values in IncidentColumns order.
func IncidentValues(i *store.Incident, rev int64) []any {
	return []any{i.ID, i.Process, int64(i.Token), i.Node, i.Definition, i.Job, i.Kind, i.Message, i.State,
		Nanos(i.CreatedAt), Nanos(i.ResolvedAt), rev}
}

// object is a JSON object column's value: an empty object for none.
func object(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// Placeholders lists n placeholders from first on ("?" for SQLite, "$n"
// for PostgreSQL), joined by commas.
func Placeholders(param func(n int) string, first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = param(first + i)
	}
	return strings.Join(ps, ", ")
}

// UpdateSet is "c1 = p1, c2 = p2, …" for the columns of a column list
// (the first, the id, left out), placeholders numbered from 2.
func UpdateSet(columns string, param func(n int) string) string {
	cols := strings.Split(columns, ",")
	var b strings.Builder
	for i, c := range cols[1:] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimSpace(c))
		b.WriteString(" = ")
		b.WriteString(param(i + 2))
	}
	return b.String()
}

// WorkDialect says how a backend writes what the work queries need.
type WorkDialect struct {
	// Param is the placeholder of the nth argument.
	Param func(n int) string
	// Holds is the condition that the JSON array column col holds the
	// text of placeholder p.
	Holds func(col, p string) string
	// HoldsAny is the condition that col holds any of vals; arg adds an
	// argument and returns its placeholder.
	HoldsAny func(col string, vals []string, arg func(v any) string) string
}

// limit is a LIMIT clause with the number written out: SQLite prepares a
// statement again whenever the value bound to a LIMIT parameter changes,
// so a literal keeps the statement prepared (there are few distinct limits).
func limit(n int) string {
	if n <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(n)
}

// TasksQuery is the query of Store.Tasks.
func TasksQuery(f store.TaskFilter, d WorkDialect) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	var where []string
	if len(f.States) > 0 {
		ps := make([]string, len(f.States))
		for i, s := range f.States {
			ps[i] = arg(s)
		}
		where = append(where, "state IN ("+strings.Join(ps, ", ")+")")
	}
	eq := func(col, v string) {
		if v != "" {
			where = append(where, col+" = "+arg(v))
		}
	}
	eq("assignee", f.Assignee)
	eq("queue", f.Queue)
	eq("process_id", f.Process)
	eq("definition", f.Definition)
	if f.CandidateUser != "" {
		where = append(where, d.Holds("candidate_users", arg(f.CandidateUser)))
	}
	if f.CandidateGroup != "" {
		where = append(where, d.Holds("candidate_groups", arg(f.CandidateGroup)))
	}
	if f.Mine {
		var or []string
		if f.User != "" {
			u := arg(f.User)
			or = append(or, "assignee = "+u, "claimed_by = "+u, d.Holds("candidate_users", u))
		}
		if len(f.Groups) > 0 {
			or = append(or, d.HoldsAny("candidate_groups", f.Groups, arg))
		}
		if len(or) == 0 {
			or = []string{"1 = 0"}
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if c := f.After; c != nil {
		p, at, id := arg(int64(c.Priority)), arg(c.CreatedAt.UnixNano()), arg(c.ID)
		where = append(where, fmt.Sprintf("(priority < %s OR (priority = %s AND (created_at > %s OR (created_at = %s AND id > %s))))", p, p, at, at, id))
	}
	q := "SELECT " + TaskColumns + " FROM tasks"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY priority DESC, created_at, id"
	q += limit(f.Limit)
	return q, args
}

// JobsQuery is the query of Store.Jobs.
func JobsQuery(f store.JobFilter, param func(n int) string) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return param(len(args))
	}
	in := func(col string, vals []string) string {
		ps := make([]string, len(vals))
		for i, v := range vals {
			ps[i] = arg(v)
		}
		return col + " IN (" + strings.Join(ps, ", ") + ")"
	}
	where := []string{"id > " + arg(f.After)}
	if len(f.Types) > 0 {
		where = append(where, in("type", f.Types))
	}
	if len(f.States) > 0 {
		where = append(where, in("state", f.States))
	}
	if f.Process != "" {
		where = append(where, "process_id = "+arg(f.Process))
	}
	q := "SELECT " + JobColumns + " FROM jobs WHERE " + strings.Join(where, " AND ") + " ORDER BY id" + limit(f.Limit)
	return q, args
}

// IncidentsQuery is the query of Store.Incidents.
func IncidentsQuery(f store.IncidentFilter, param func(n int) string) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return param(len(args))
	}
	where := []string{"id > " + arg(f.After)}
	if len(f.States) > 0 {
		ps := make([]string, len(f.States))
		for i, s := range f.States {
			ps[i] = arg(s)
		}
		where = append(where, "state IN ("+strings.Join(ps, ", ")+")")
	}
	if f.Process != "" {
		where = append(where, "process_id = "+arg(f.Process))
	}
	q := "SELECT " + IncidentColumns + " FROM incidents WHERE " + strings.Join(where, " AND ") + " ORDER BY id" + limit(f.Limit)
	return q, args
}

// WorkCountQueries count open tasks by state, waiting jobs by type and
// state, and open incidents by kind.
const (
	CountTasks     = `SELECT state, count(*) FROM tasks WHERE state IN ('open', 'claimed') GROUP BY state`
	CountJobs      = `SELECT type, state, count(*) FROM jobs WHERE state IN ('open', 'leased', 'failed') GROUP BY type, state`
	CountIncidents = `SELECT kind, count(*) FROM incidents WHERE state = 'open' GROUP BY kind`
)

// NewWorkCounts returns empty counts.
func NewWorkCounts() *store.WorkCounts {
	return &store.WorkCounts{Tasks: map[string]int{}, Jobs: map[store.JobKey]int{}, Incidents: map[string]int{}}
}

// ScanWorkCounts reads the rows of count query i (0: CountTasks, 1:
// CountJobs, 2: CountIncidents) into c.
func ScanWorkCounts(c *store.WorkCounts, i int, rows Rows) error {
	for rows.Next() {
		var k store.JobKey
		var n int
		var err error
		switch i {
		case 0:
			err = rows.Scan(&k.State, &n)
			c.Tasks[k.State] = n
		case 1:
			err = rows.Scan(&k.Type, &k.State, &n)
			c.Jobs[k] = n
		default:
			err = rows.Scan(&k.Type, &n)
			c.Incidents[k.Type] = n
		}
		if err != nil {
			return err
		}
	}
	return rows.Err()
}

// WorkCountQueries are CountTasks, CountJobs and CountIncidents in the
// order ScanWorkCounts numbers them.
var WorkCountQueries = []string{CountTasks, CountJobs, CountIncidents}
