package veena

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// The work layer of the engine: tasks for people, jobs for worker
// programs, incidents. What moves a token or changes a work row of a
// process — claiming, releasing, saving and completing a task; completing,
// failing a job or throwing an error from it; resolving an incident — is a
// command on the process tree like any other (op, serialised per tree,
// queued in its inbox when busy, with idempotency keys). The command reads
// the rows it decides on (in its transaction, locked on PostgreSQL) and
// writes them back at the revision it read. Only leasing jobs (ActivateJobs)
// changes rows outside a command: one activation serves many processes.

// Work item ids are the process id, a letter (t: task, j: job, i:
// incident) and the sequence number of the event that created the item.
func workID(process string, kind byte, seq int64) string {
	return process + "." + string(kind) + strconv.FormatInt(seq, 10)
}

// parseWorkID returns the process of a work item id of the kind.
func parseWorkID(id string, kind byte, what string) (string, error) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || i+2 > len(id) || id[i+1] != kind {
		return "", notFound("%s %q", what, id)
	}
	n, err := strconv.ParseInt(id[i+2:], 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != id[i+2:] {
		return "", notFound("%s %q", what, id)
	}
	return id[:i], nil
}

// workRows are where a command reads work rows: the store, or the
// transaction the command runs in.
type workRows interface {
	Task(ctx context.Context, id string) (*store.Task, error)
	Job(ctx context.Context, id string) (*store.Job, error)
	Incident(ctx context.Context, id string) (*store.Incident, error)
}

// cmd is what a command reads and writes besides its process tree.
type cmd struct {
	ctx    context.Context
	rows   workRows
	now    time.Time
	writes []func(ctx context.Context, tx store.Tx) error
	notes  []store.AuditNote
	wake   []string // job types to wake waiting activations for, after commit
	// tasks and jobs are the rows the command writes (at the revision
	// read), for the engine's row cache after commit.
	tasks []*store.Task
	jobs  []*store.Job
	// outside is set when the command read a work row outside its
	// transaction (from the engine's cache or the store): a refusal then
	// may come from a row that has changed since, and the command runs
	// again in its transaction instead of failing for good.
	outside bool
}

// task, job and incident read a work row for the command.
func (c *cmd) task(id string) (*store.Task, error) {
	c.noteOutside()
	return c.rows.Task(c.ctx, id)
}

func (c *cmd) job(id string) (*store.Job, error) {
	c.noteOutside()
	return c.rows.Job(c.ctx, id)
}

func (c *cmd) incident(id string) (*store.Incident, error) {
	c.noteOutside()
	return c.rows.Incident(c.ctx, id)
}

func (c *cmd) noteOutside() {
	if _, inTx := c.rows.(store.Tx); !inTx {
		c.outside = true
	}
}

// putTask writes a task row in the command's transaction. The command
// owns r from then on: the caller reads it no more than it changes it.
func (c *cmd) putTask(r *store.Task) {
	c.tasks = append(c.tasks, r)
	c.write(func(ctx context.Context, tx store.Tx) error {
		// The store sets the row's new revision: the row is put back as
		// read, so that the write can run again.
		rev := r.Rev
		err := tx.PutTask(ctx, r)
		r.Rev = rev
		return err
	})
}

// putJob writes a job row in the command's transaction (as putTask).
func (c *cmd) putJob(r *store.Job) {
	c.jobs = append(c.jobs, r)
	c.write(func(ctx context.Context, tx store.Tx) error {
		rev := r.Rev
		err := tx.PutJob(ctx, r)
		r.Rev = rev
		return err
	})
}

// write adds a write to the command's transaction. Writes must not change
// what they close over: a store may run them again.
func (c *cmd) write(fn func(ctx context.Context, tx store.Tx) error) { c.writes = append(c.writes, fn) }

// note adds an audit note for event seq of a process.
func (c *cmd) note(process string, seq int64, user, detail string) {
	if user == "" && detail == "" {
		return
	}
	c.notes = append(c.notes, store.AuditNote{Process: process, Seq: seq, User: user, Detail: detail})
}

// effects turns the effects the kernel left on q into writes.
func (c *cmd) effects(q *kernel.Process) {
	now := c.now
	for _, ef := range q.Effects {
		tok := ef.Token
		switch ef.Kind {
		case kernel.TaskOpened:
			spec := ef.Task
			data := jsonObject(spec.Data)
			row := store.Task{
				ID: workID(q.ID, 't', ef.Seq), Process: q.ID, Token: tok.ID, Node: tok.Node.Name, Label: spec.Label,
				Definition: q.Graph.Name, State: store.TaskOpen, Assignee: spec.Assignee,
				CandidateUsers: spec.CandidateUsers, CandidateGroups: spec.CandidateGroups, Queue: spec.Queue,
				Priority: spec.Priority, DueAt: spec.DueAt, FollowUpAt: spec.FollowUpAt, Data: data, Initial: data, CreatedAt: now,
			}
			c.putTask(&row)
		case kernel.JobOffered:
			spec := ef.Job
			headers, _ := json.Marshal(spec.Headers)
			if len(spec.Headers) == 0 {
				headers = []byte("{}")
			}
			row := store.Job{
				ID: workID(q.ID, 'j', ef.Seq), Process: q.ID, Token: tok.ID, Node: tok.Node.Name, Definition: q.Graph.Name,
				Type: spec.Type, State: store.JobOpen, Retries: spec.Retries, Headers: headers, Env: jsonObject(spec.Variables()),
				DueAt: now, CreatedAt: now,
			}
			c.putJob(&row)
			c.wake = append(c.wake, spec.Type)
		case kernel.IncidentRaised:
			spec := ef.Incident
			row := store.Incident{
				ID: workID(q.ID, 'i', ef.Seq), Process: q.ID, Token: tok.ID, Node: tok.Node.Name, Definition: q.Graph.Name,
				Job: spec.Job, Kind: spec.Kind, Message: spec.Message, State: store.IncidentOpen, CreatedAt: now,
			}
			c.write(func(ctx context.Context, tx store.Tx) error { r := row; return tx.PutIncident(ctx, &r) })
		case kernel.WorkEnded:
			process, token, completed := q.ID, tok.ID, ef.Completed
			c.write(func(ctx context.Context, tx store.Tx) error { return tx.EndWork(ctx, process, token, completed, now) })
		}
	}
}

// apply writes what the command wrote besides its tree, in order.
func (c *cmd) apply(ctx context.Context, tx store.Tx) error {
	for _, w := range c.writes {
		if err := w(ctx, tx); err != nil {
			return err
		}
	}
	if len(c.notes) > 0 {
		notes := c.notes
		if !slices.IsSortedFunc(notes, noteOrder) {
			// A copy: the write may run again, and c.notes keeps its order.
			notes = slices.Clone(notes)
			slices.SortStableFunc(notes, noteOrder)
		}
		if err := tx.PutAuditNotes(ctx, notes); err != nil {
			return err
		}
	}
	return nil
}

// noteOrder orders audit notes by process, then event.
func noteOrder(a, b store.AuditNote) int {
	return cmp.Or(strings.Compare(a.Process, b.Process), cmp.Compare(a.Seq, b.Seq))
}

// The ops of the work layer.
const (
	opTaskClaim       opKind = "task_claim"
	opTaskRelease     opKind = "task_release"
	opTaskSave        opKind = "task_save"
	opTaskComplete    opKind = "task_complete"
	opJobComplete     opKind = "job_complete"
	opJobFail         opKind = "job_fail"
	opJobError        opKind = "job_error"
	opIncidentResolve opKind = "incident_resolve"
	opIncidentOpen    opKind = "incident_open"
	opAttachment      opKind = "attachment"
)

func (k opKind) isWork() bool {
	switch k {
	case opTaskClaim, opTaskRelease, opTaskSave, opTaskComplete, opJobComplete, opJobFail, opJobError,
		opIncidentResolve, opIncidentOpen, opAttachment:
		return true
	}
	return false
}

// workArgs are the arguments of the work layer's ops (in op.Args).
type workArgs struct {
	Work     string            `json:"work,omitempty"` // the task, job or incident
	User     string            `json:"user,omitempty"`
	Groups   []string          `json:"groups,omitempty"`
	Admin    bool              `json:"admin,omitempty"`
	Data     map[string]*Value `json:"data,omitempty"`
	Release  bool              `json:"release,omitempty"`
	Outcome  string            `json:"outcome,omitempty"`
	Worker   string            `json:"worker,omitempty"`
	Result   string            `json:"result,omitempty"`
	Retries  *int              `json:"retries,omitempty"`
	RetryIn  time.Duration     `json:"retryIn,omitempty"`
	Message  string            `json:"message,omitempty"`
	Code     string            `json:"code,omitempty"`
	Incident string            `json:"incident,omitempty"` // kind of an incident to open
	Name     string            `json:"name,omitempty"`     // attachment
	URI      string            `json:"uri,omitempty"`
	Card     int               `json:"cardinality,omitempty"`
}

// work runs a work op on process p.
func (o *op) work(ke *kernel.Engine, p *kernel.Process, c *cmd, res *outcome) error {
	a := o.Args
	if a == nil {
		return invalid("command %s has no arguments", o.Kind)
	}
	switch o.Kind {
	case opTaskClaim, opTaskRelease, opTaskSave, opTaskComplete:
		return o.task(ke, p, c, res)
	case opJobComplete, opJobFail, opJobError:
		return o.job(ke, p, c, res)
	case opIncidentResolve:
		return o.resolve(ke, p, c, res)
	case opIncidentOpen:
		tok, err := activeToken(p, o.Token)
		if err != nil {
			return err
		}
		if err := ke.RaiseIncident(tok, kernel.IncidentSpec{Kind: a.Incident, Message: a.Message}); err != nil {
			return err
		}
		res.Incident = &Incident{ID: workID(p.ID, 'i', p.EventSeq), Process: p.ID, NodeToken: nodeTokenID(p.ID, tok.ID),
			Node: tok.Node.Name, Kind: a.Incident, Message: a.Message, State: store.IncidentOpen, CreatedAt: c.now}
		return nil
	case opAttachment:
		seq, err := ke.FireProcessEvent(p, kernel.AttachmentSet)
		if err != nil {
			return err
		}
		att := store.Attachment{Process: p.ID, Name: a.Name, URI: a.URI, Cardinality: a.Card}
		c.write(func(ctx context.Context, tx store.Tx) error { x := att; return tx.PutAttachment(ctx, &x) })
		c.note(p.ID, seq, a.User, a.Name+" = "+a.URI)
		res.Attachment = &Attachment{Name: a.Name, URI: a.URI, Cardinality: a.Card}
		return nil
	}
	return invalid("unknown command %q", o.Kind)
}

// activeToken returns the token at index i of p if it is active.
func activeToken(p *kernel.Process, i int) (*kernel.NodeToken, error) {
	if i < 0 || i >= len(p.NodeTokens) {
		return nil, notFound("node token %q", nodeTokenID(p.ID, i))
	}
	t := p.NodeTokens[i]
	if p.State != kernel.Executing {
		return nil, &kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not executing", p.ID, p.State)}
	}
	if t.Complete || !t.Active() {
		return nil, &kernel.Error{Code: kernel.ErrTokenComplete.Code, Msg: fmt.Sprintf("node token %s is already complete", nodeTokenID(p.ID, i))}
	}
	return t, nil
}

func taskClaimed(t *store.Task) error {
	return &kernel.Error{Code: ErrTaskClaimed.Code, Msg: fmt.Sprintf("task %s is claimed by %s", t.ID, t.ClaimedBy)}
}

func (o *op) task(ke *kernel.Engine, p *kernel.Process, c *cmd, res *outcome) error {
	a := o.Args
	row, err := c.task(a.Work)
	if err != nil {
		return storeError("read task", err)
	}
	if row.Process != p.ID {
		return notFound("task %q", a.Work)
	}
	if row.State != store.TaskOpen && row.State != store.TaskClaimed {
		return &kernel.Error{Code: ErrTaskNotOpen.Code, Msg: fmt.Sprintf("task %s is %s", row.ID, row.State)}
	}
	if a.User == "" {
		return invalid("name the user who acts on task %s", row.ID)
	}
	tok := p.NodeTokens[row.Token]
	fire := func(typ kernel.EventType, detail string) error {
		seq, err := ke.FireWorkEvent(tok, typ)
		c.note(p.ID, seq, a.User, detail)
		return err
	}
	holder := row.ClaimedBy
	claim := func() error {
		row.State, row.ClaimedBy, row.ClaimedAt = store.TaskClaimed, a.User, c.now
		return fire(kernel.TaskClaimed, "")
	}
	release := func(detail string) error {
		row.State, row.ClaimedBy, row.ClaimedAt = store.TaskOpen, "", time.Time{}
		return fire(kernel.TaskReleased, detail)
	}
	changed := false
	switch o.Kind {
	case opTaskClaim:
		switch {
		case holder == a.User:
		case holder != "":
			return taskClaimed(row)
		default:
			changed = true
			if err := claim(); err != nil {
				return err
			}
		}
	case opTaskRelease:
		switch {
		case holder == "":
		case holder != a.User && !a.Admin:
			return taskClaimed(row)
		default:
			changed = true
			detail := ""
			if holder != a.User {
				detail = "broke the lock of " + holder
			}
			if err := release(detail); err != nil {
				return err
			}
		}
	case opTaskSave:
		if holder != "" && holder != a.User {
			return taskClaimed(row)
		}
		changed = true
		if holder == "" {
			if err := claim(); err != nil {
				return err
			}
		}
		if err := mergeTaskData(row, a.Data); err != nil {
			return err
		}
		if err := fire(kernel.TaskSaved, keyList(a.Data)); err != nil {
			return err
		}
		if a.Release {
			if err := release(""); err != nil {
				return err
			}
		}
	case opTaskComplete:
		if holder != "" && holder != a.User {
			return taskClaimed(row)
		}
		if !tok.Holds(kernel.HoldsTask) || !tok.Active() {
			return &kernel.Error{Code: ErrTaskNotOpen.Code, Msg: fmt.Sprintf("task %s: its token %s no longer waits for it", row.ID, nodeTokenID(p.ID, tok.ID))}
		}
		changed = true
		if err := mergeTaskData(row, a.Data); err != nil {
			return err
		}
		diff, err := taskChanges(row)
		if err != nil {
			return err
		}
		row.State, row.CompletedAt, row.CompletedBy = store.TaskCompleted, c.now, a.User
		seq := p.EventSeq + 1 // TASK_COMPLETED comes first
		if err := ke.CompleteTask(tok, kernel.WorkResult{Env: diff, Outcome: a.Outcome, User: a.User}); err != nil {
			return err
		}
		detail := ""
		if a.Outcome != "" {
			detail = "outcome " + a.Outcome
		}
		c.note(p.ID, seq, a.User, detail)
	}
	if changed {
		c.putTask(row)
	}
	t, err := taskOf(row)
	if err != nil {
		return err
	}
	res.Task = t
	return nil
}

// mergeTaskData merges attributes into a task's data (nil removes one).
func mergeTaskData(row *store.Task, data map[string]*Value) error {
	if len(data) == 0 {
		return nil
	}
	m, err := valuesFrom(row.Data)
	if err != nil {
		return fmt.Errorf("task %s: data: %w", row.ID, err)
	}
	for k, v := range data {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = *v
		}
	}
	row.Data = jsonObject(m)
	return nil
}

// taskChanges is what the task's data changed since the task was created:
// attributes added or given another value.
func taskChanges(row *store.Task) (map[string]Value, error) {
	now, err := valuesFrom(row.Data)
	if err != nil {
		return nil, fmt.Errorf("task %s: data: %w", row.ID, err)
	}
	was, err := valuesFrom(row.Initial)
	if err != nil {
		return nil, fmt.Errorf("task %s: initial data: %w", row.ID, err)
	}
	out := map[string]Value{}
	for k, v := range now {
		if old, ok := was[k]; !ok || old != v {
			out[k] = v
		}
	}
	return out, nil
}

func keyList(m map[string]*Value) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// leasedBy reports whether the worker holds the job's lease: it leased it
// last and nobody took it over (a lease that ran out still counts until
// another worker leases the job).
func leasedBy(j *store.Job, worker string) bool {
	return j.Worker == worker && (j.State == store.JobLeased || (j.State == store.JobOpen && !j.LockedUntil.IsZero()))
}

func (o *op) job(ke *kernel.Engine, p *kernel.Process, c *cmd, res *outcome) error {
	a := o.Args
	row, err := c.job(a.Work)
	if err != nil {
		return storeError("read job", err)
	}
	if row.Process != p.ID {
		return notFound("job %q", a.Work)
	}
	if a.Worker == "" {
		return invalid("name the worker (worker)")
	}
	if !leasedBy(row, a.Worker) {
		msg := fmt.Sprintf("job %s is %s", row.ID, row.State)
		switch {
		case row.State == store.JobLeased:
			msg = fmt.Sprintf("job %s is leased to %s, not %s", row.ID, row.Worker, a.Worker)
		case row.State == store.JobOpen:
			msg = fmt.Sprintf("job %s is open: %s holds no lease on it", row.ID, a.Worker)
		}
		return &kernel.Error{Code: ErrJobNotLeased.Code, Msg: msg}
	}
	tok, err := activeToken(p, row.Token)
	if err != nil {
		return err
	}
	env := map[string]Value{}
	for k, v := range a.Data {
		if v != nil {
			env[k] = *v
		}
	}
	seq := p.EventSeq + 1 // the job's event comes first
	switch o.Kind {
	case opJobComplete:
		row.State, row.LockedUntil = store.JobCompleted, time.Time{}
		if err := ke.CompleteJob(tok, kernel.WorkResult{Env: env, Result: a.Result}); err != nil {
			return err
		}
		detail := ""
		if a.Result != "" {
			detail = "result " + a.Result
		}
		c.note(p.ID, seq, a.Worker, detail)
	case opJobFail:
		n := row.Retries - 1
		if a.Retries != nil {
			n = *a.Retries
		}
		if n < 0 {
			return invalid("retries %d: want 0 or more", n)
		}
		row.Retries, row.ErrorMessage, row.LockedUntil = n, a.Message, time.Time{}
		if n > 0 {
			row.State, row.Worker, row.DueAt = store.JobOpen, "", c.now.Add(a.RetryIn)
			c.wake = append(c.wake, row.Type)
		} else {
			row.State = store.JobFailed
		}
		if err := ke.FailJob(tok, n, a.Message, row.ID); err != nil {
			return err
		}
		row.Env = jsonObject(tok.FullEnv().Copy().Map())
		c.note(p.ID, seq, a.Worker, fmt.Sprintf("%d retries left: %s", n, a.Message))
		j, err := jobOf(row)
		if err != nil {
			return err
		}
		res.Job = j
	case opJobError:
		if a.Code == "" {
			return invalid("an error needs a code")
		}
		row.State, row.LockedUntil, row.ErrorMessage = store.JobErrorThrown, time.Time{}, a.Code
		if a.Message != "" {
			row.ErrorMessage += ": " + a.Message
		}
		if _, err := ke.ThrowError(tok, a.Code, a.Message, env, row.ID); err != nil {
			return err
		}
		c.note(p.ID, seq, a.Worker, row.ErrorMessage)
	}
	c.putJob(row)
	return nil
}

func (o *op) resolve(ke *kernel.Engine, p *kernel.Process, c *cmd, res *outcome) error {
	a := o.Args
	row, err := c.incident(a.Work)
	if err != nil {
		return storeError("read incident", err)
	}
	if row.Process != p.ID {
		return notFound("incident %q", a.Work)
	}
	if row.State != store.IncidentOpen {
		return &kernel.Error{Code: ErrConflict.Code, Msg: fmt.Sprintf("incident %s is resolved already", row.ID)}
	}
	tok, err := activeToken(p, row.Token)
	if err != nil {
		return err
	}
	seq := p.EventSeq + 1
	if row.Kind == "job_failed" && row.Job != "" {
		n := 1
		if a.Retries != nil {
			n = *a.Retries
		}
		if n < 1 {
			return invalid("retries %d: a job made available again needs at least 1", n)
		}
		job, err := c.job(row.Job)
		if err != nil {
			return storeError("read the incident's job", err)
		}
		if err := ke.ResolveIncident(tok, row.Kind, false); err != nil {
			return err
		}
		job.State, job.Retries, job.DueAt, job.Worker, job.LockedUntil = store.JobOpen, n, c.now, "", time.Time{}
		job.Env = jsonObject(tok.FullEnv().Copy().Map())
		c.putJob(job)
		c.wake = append(c.wake, job.Type)
	} else if err := ke.ResolveIncident(tok, row.Kind, true); err != nil {
		return err
	}
	row.State, row.ResolvedAt = store.IncidentResolved, c.now
	r := *row
	c.write(func(ctx context.Context, tx store.Tx) error { x := r; return tx.PutIncident(ctx, &x) })
	c.note(p.ID, seq, a.User, "")
	res.Incident = incidentOf(row)
	return nil
}

// Rendering rows for the API.

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func taskOf(r *store.Task) (*Task, error) {
	data, err := valuesFrom(r.Data)
	if err != nil {
		return nil, fmt.Errorf("task %s: data: %w", r.ID, err)
	}
	t := &Task{ID: r.ID, Process: r.Process, NodeToken: nodeTokenID(r.Process, r.Token), Node: r.Node, Label: r.Label,
		Definition: r.Definition, State: r.State, Assignee: optString(r.Assignee), CandidateUsers: r.CandidateUsers,
		CandidateGroups: r.CandidateGroups, Queue: optString(r.Queue), ClaimedBy: optString(r.ClaimedBy),
		ClaimedAt: optTime(r.ClaimedAt), Priority: r.Priority, DueAt: optTime(r.DueAt), FollowUpAt: optTime(r.FollowUpAt),
		Data: data, CreatedAt: r.CreatedAt, CompletedAt: optTime(r.CompletedAt), CompletedBy: optString(r.CompletedBy)}
	if t.CandidateUsers == nil {
		t.CandidateUsers = []string{}
	}
	if t.CandidateGroups == nil {
		t.CandidateGroups = []string{}
	}
	return t, nil
}

func jobOf(r *store.Job) (*Job, error) {
	j, err := jobValue(r)
	if err != nil {
		return nil, err
	}
	return &j, nil
}

func jobValue(r *store.Job) (Job, error) {
	env, err := valuesFrom(r.Env)
	if err != nil {
		return Job{}, fmt.Errorf("job %s: env: %w", r.ID, err)
	}
	headers := map[string]string{}
	if len(r.Headers) > 0 && string(r.Headers) != "{}" {
		if err := json.Unmarshal(r.Headers, &headers); err != nil {
			return Job{}, fmt.Errorf("job %s: headers: %w", r.ID, err)
		}
	}
	return Job{ID: r.ID, Type: r.Type, Process: r.Process, NodeToken: nodeTokenID(r.Process, r.Token), Node: r.Node,
		State: r.State, Retries: r.Retries, Headers: headers, Env: env, Worker: optString(r.Worker),
		LockedUntil: optTime(r.LockedUntil), DueAt: r.DueAt, CreatedAt: r.CreatedAt, ErrorMessage: optString(r.ErrorMessage)}, nil
}

func incidentOf(r *store.Incident) *Incident {
	return &Incident{ID: r.ID, Process: r.Process, NodeToken: nodeTokenID(r.Process, r.Token), Node: r.Node,
		Job: optString(r.Job), Kind: r.Kind, Message: r.Message, State: r.State, CreatedAt: r.CreatedAt, ResolvedAt: optTime(r.ResolvedAt)}
}

// The Go API.

// Task returns a task.
func (e *Engine) Task(ctx context.Context, id string) (*Task, error) {
	r, err := e.store.Task(ctx, id)
	if err != nil {
		return nil, storeError("read task", err)
	}
	return taskOf(r)
}

var taskStates = []string{store.TaskOpen, store.TaskClaimed, store.TaskCompleted, store.TaskCanceled}

// Tasks lists tasks, highest priority first, then oldest.
func (e *Engine) Tasks(ctx context.Context, f TaskFilter) (*TaskPage, error) {
	limit := pageLimit(f.Limit)
	sf := store.TaskFilter{States: f.States, Assignee: f.Assignee, CandidateUser: f.CandidateUser,
		CandidateGroup: f.CandidateGroup, Queue: f.Queue, Process: f.Process, Definition: f.Definition, Limit: limit + 1}
	if len(sf.States) == 0 {
		sf.States = []string{store.TaskOpen, store.TaskClaimed}
	}
	for _, s := range sf.States {
		if !contains(taskStates, s) {
			return nil, invalid("unknown task state %q (want open, claimed, completed or canceled)", s)
		}
	}
	if f.Mine {
		if f.Actor.User == "" && len(f.Actor.Groups) == 0 {
			return nil, invalid("mine: name the user")
		}
		sf.Mine, sf.User, sf.Groups = true, f.Actor.User, f.Actor.Groups
	}
	if f.After != "" {
		c, err := decodeTaskCursor(f.After)
		if err != nil {
			return nil, err
		}
		sf.After = c
	}
	rows, err := e.store.Tasks(ctx, sf)
	if err != nil {
		return nil, storeError("list tasks", err)
	}
	page := &TaskPage{Items: make([]Task, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			last := rows[i-1]
			page.Next = encodeTaskCursor(&store.TaskCursor{Priority: last.Priority, CreatedAt: last.CreatedAt, ID: last.ID})
			break
		}
		t, err := taskOf(r)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, *t)
	}
	return page, nil
}

func pageLimit(n int) int {
	if n <= 0 {
		return 100
	}
	return min(n, 1000)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func encodeTaskCursor(c *store.TaskCursor) string {
	s := fmt.Sprintf("%d:%d:%s", c.Priority, c.CreatedAt.UnixNano(), c.ID)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeTaskCursor(s string) (*store.TaskCursor, error) {
	bad := invalid("after %q is not a cursor of this list", s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	parts := strings.SplitN(string(b), ":", 3)
	if len(parts) != 3 {
		return nil, bad
	}
	p, err1 := strconv.Atoi(parts[0])
	at, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	return &store.TaskCursor{Priority: p, CreatedAt: time.Unix(0, at).UTC(), ID: parts[2]}, nil
}

// taskOp runs a task op for an actor.
func (e *Engine) taskOp(ctx context.Context, kind opKind, id string, a Actor, args workArgs, key string) (*outcome, error) {
	pid, err := parseWorkID(id, 't', "task")
	if err != nil {
		return nil, err
	}
	if a.User == "" {
		return nil, invalid("name the user who acts on the task")
	}
	args.Work, args.User, args.Groups, args.Admin = id, a.User, a.Groups, a.Admin
	out, err := e.submit(ctx, &op{Kind: kind, Process: pid, Args: &args}, key)
	if err != nil {
		return nil, err
	}
	return out, out.err()
}

func taskResult(out *outcome, err error) (*Task, error) {
	if err != nil {
		return nil, err
	}
	if out.Task == nil {
		return nil, errors.New("task command had no result")
	}
	return out.Task, nil
}

// ClaimTask locks a task for the actor. Claiming one's own task changes
// nothing; a task another user holds is refused (ErrTaskClaimed).
func (e *Engine) ClaimTask(ctx context.Context, id string, a Actor, idempotencyKey string) (*Task, error) {
	return taskResult(e.taskOp(ctx, opTaskClaim, id, a, workArgs{}, idempotencyKey))
}

// ReleaseTask unlocks a task the actor holds (an admin may release any).
// Releasing a free task changes nothing.
func (e *Engine) ReleaseTask(ctx context.Context, id string, a Actor, idempotencyKey string) (*Task, error) {
	return taskResult(e.taskOp(ctx, opTaskRelease, id, a, workArgs{}, idempotencyKey))
}

// SaveTaskRequest saves a task for later: Data is merged into the task's
// data (nil values remove); the actor keeps the lock (claiming a free
// task) unless Release.
type SaveTaskRequest struct {
	Actor          Actor
	Data           map[string]any
	Release        bool
	IdempotencyKey string
}

// SaveTask saves a task's data for later.
func (e *Engine) SaveTask(ctx context.Context, id string, req SaveTaskRequest) (*Task, error) {
	data, err := valuesOf(req.Data)
	if err != nil {
		return nil, err
	}
	return taskResult(e.taskOp(ctx, opTaskSave, id, req.Actor, workArgs{Data: data, Release: req.Release}, req.IdempotencyKey))
}

// CompleteTaskRequest completes a task: Data is merged into its data
// first; what changed in the data since the task was created is merged
// into the process environment; Outcome names the arc to take (default
// arcs when empty).
type CompleteTaskRequest struct {
	Actor          Actor
	Data           map[string]any
	Outcome        string
	IdempotencyKey string
}

// CompleteTask completes a task and runs its process on until every token
// waits; it returns the process.
func (e *Engine) CompleteTask(ctx context.Context, id string, req CompleteTaskRequest) (*Process, error) {
	data, err := valuesOf(req.Data)
	if err != nil {
		return nil, err
	}
	out, err := e.taskOp(ctx, opTaskComplete, id, req.Actor, workArgs{Data: data, Outcome: req.Outcome}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, errors.New("task completion had no result")
	}
	return out.Process, nil
}

// Job returns a job.
func (e *Engine) Job(ctx context.Context, id string) (*Job, error) {
	r, err := e.store.Job(ctx, id)
	if err != nil {
		return nil, storeError("read job", err)
	}
	return jobOf(r)
}

var jobStates = []string{store.JobOpen, store.JobLeased, store.JobCompleted, store.JobFailed, store.JobErrorThrown, store.JobCanceled}

// Jobs lists jobs by ID.
func (e *Engine) Jobs(ctx context.Context, f JobFilter) (*JobPage, error) {
	limit := pageLimit(f.Limit)
	for _, s := range f.States {
		if !contains(jobStates, s) {
			return nil, invalid("unknown job state %q (want %s)", s, strings.Join(jobStates, ", "))
		}
	}
	rows, err := e.store.Jobs(ctx, store.JobFilter{Types: f.Types, States: f.States, Process: f.Process, After: f.After, Limit: limit + 1})
	if err != nil {
		return nil, storeError("list jobs", err)
	}
	page := &JobPage{Items: make([]Job, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.Next = rows[i-1].ID
			break
		}
		j, err := jobOf(r)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, *j)
	}
	return page, nil
}

// DefaultJobLock is how long an activation leases jobs unless it says.
const DefaultJobLock = 5 * time.Minute

// MaxActivateWait bounds how long an activation may wait for a job.
const MaxActivateWait = 5 * time.Minute

// jobPoll is how often a waiting activation looks for jobs it was not
// told of (jobs due after a back-off, jobs offered by other engines).
const jobPoll = 500 * time.Millisecond

// ActivateJobs leases up to MaxJobs jobs of a type to a worker. With Wait
// it waits until at least one is available or Wait has passed (then it
// returns none).
func (e *Engine) ActivateJobs(ctx context.Context, req ActivateRequest) ([]Job, error) {
	switch {
	case req.Type == "":
		return nil, invalid("name the job type")
	case req.Worker == "":
		return nil, invalid("name the worker")
	case req.LockFor < 0 || req.Wait < 0:
		return nil, invalid("lockFor and wait must not be negative")
	case req.Wait > MaxActivateWait:
		return nil, invalid("wait %s is longer than the limit of %s", req.Wait, MaxActivateWait)
	}
	if req.MaxJobs <= 0 {
		req.MaxJobs = 1
	}
	req.MaxJobs = min(req.MaxJobs, 1000)
	if req.LockFor == 0 {
		req.LockFor = DefaultJobLock
	}
	deadline := time.Now().Add(req.Wait)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var w *jobWaiter
		if req.Wait > 0 {
			// Wait in line before looking, so that a job offered after the
			// look still wakes this activation.
			w = e.waitForJobs(req.Type)
		}
		rows, err := e.store.ActivateJobs(ctx, store.Activation{Type: req.Type, Worker: req.Worker, Max: req.MaxJobs, Now: e.clock().UTC(), LockFor: req.LockFor})
		if err != nil {
			e.stopWaiting(req.Type, w)
			return nil, storeError("activate jobs", err)
		}
		if len(rows) > 0 && ctx.Err() != nil {
			// The caller went away while the jobs were leased (a worker
			// stopping, a long poll whose client hung up): nobody will run
			// them, so they are offered again rather than held to the end
			// of the lease.
			e.stopWaiting(req.Type, w)
			e.yieldJobs(rows)
			return nil, ctx.Err()
		}
		if len(rows) > 0 || req.Wait == 0 {
			e.stopWaiting(req.Type, w)
			out := make([]Job, 0, len(rows))
			for _, r := range rows {
				e.rows.putJob(r)
				j, err := jobValue(r)
				if err != nil {
					return nil, err
				}
				out = append(out, j)
			}
			return out, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			e.stopWaiting(req.Type, w)
			return []Job{}, nil
		}
		poll := e.jobPoll + time.Duration(rand.Int64N(int64(e.jobPoll)/5))
		timer := time.NewTimer(min(left, poll))
		select {
		case <-w.ch:
			if ctx.Err() != nil {
				timer.Stop()
				e.wakeJobs([]string{req.Type}) // to the next in line
				return nil, ctx.Err()
			}
		case <-timer.C:
			e.stopWaiting(req.Type, w)
		case <-ctx.Done():
			timer.Stop()
			if !e.stopWaiting(req.Type, w) {
				// Woken as the caller went away: the wake-up goes to the
				// next in line.
				e.wakeJobs([]string{req.Type})
			}
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

// yieldJobs offers again jobs an activation leased for nobody: each is
// open again (at the revision leased; a job a command changed since is
// left alone) and wakes a waiting activation.
func (e *Engine) yieldJobs(rows []*store.Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var types []string
	for _, r := range rows {
		open := *r
		open.State, open.LockedUntil = store.JobOpen, time.Time{}
		err := e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error { return tx.PutJob(ctx, &open) })
		if err != nil {
			if !errors.Is(err, store.ErrStale) {
				e.log.Warn("veena: offer a job again", "job", r.ID, "err", err)
			}
			continue
		}
		e.rows.putJob(&open)
		types = append(types, r.Type)
	}
	e.offerJobs(types)
}

// jobWaiter is an activation waiting for jobs of a type in this engine.
type jobWaiter struct{ ch chan struct{} }

// waitForJobs puts an activation in line for jobs of a type.
func (e *Engine) waitForJobs(typ string) *jobWaiter {
	e.listenOnce.Do(e.listenForJobs)
	w := &jobWaiter{ch: make(chan struct{})}
	e.jobMu.Lock()
	defer e.jobMu.Unlock()
	if e.jobWait == nil {
		e.jobWait = map[string][]*jobWaiter{}
	}
	e.jobWait[typ] = append(e.jobWait[typ], w)
	return w
}

// stopWaiting takes a waiter out of line, reporting whether it was still
// in it (false: it was woken).
func (e *Engine) stopWaiting(typ string, w *jobWaiter) bool {
	if w == nil {
		return true
	}
	e.jobMu.Lock()
	defer e.jobMu.Unlock()
	l := e.jobWait[typ]
	found := false
	for i, x := range l {
		if x == w {
			e.jobWait[typ] = append(l[:i], l[i+1:]...)
			found = true
			break
		}
	}
	if len(e.jobWait[typ]) == 0 {
		delete(e.jobWait, typ)
	}
	return found
}

// listenForJobs starts listening for the jobs other engines on the same
// store announce, if the store has such notices: each wakes a waiting
// activation here.
func (e *Engine) listenForJobs() {
	n, ok := e.store.(store.JobNotices)
	if !ok || e.life.Err() != nil {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer e.listening.Store(false)
		err := n.ListenJobs(e.life, func() { e.listening.Store(true) }, func(types []string) { e.wakeJobs(types) })
		if err != nil && e.life.Err() == nil {
			e.log.Warn("veena: listen for jobs of other engines", "err", err)
		}
	}()
}

// offerJobs wakes the activations waiting here for the jobs offered, one
// per job (a type listed n times wakes n), and tells the other engines
// on the store of the jobs no activation here waited for.
func (e *Engine) offerJobs(types []string) {
	if left := e.wakeJobs(types); len(left) > 0 {
		if n, ok := e.store.(store.JobNotices); ok {
			n.AnnounceJobs(left)
		}
	}
}

// wakeJobs wakes the waiting activations, first in line first, one for
// each job offered (a type listed n times wakes n), and returns the
// types of the jobs for which none waited.
func (e *Engine) wakeJobs(types []string) (left []string) {
	if len(types) == 0 {
		return nil
	}
	e.jobMu.Lock()
	defer e.jobMu.Unlock()
	for _, t := range types {
		l := e.jobWait[t]
		if len(l) == 0 {
			left = append(left, t)
			continue
		}
		close(l[0].ch)
		e.jobWait[t] = l[1:]
		if len(e.jobWait[t]) == 0 {
			delete(e.jobWait, t)
		}
	}
	return left
}

// expireLeases makes the jobs whose lease ran out available again.
func (e *Engine) expireLeases(ctx context.Context) {
	types, err := e.store.ExpireLeases(ctx, e.clock().UTC())
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("veena: expire job leases", "err", err)
		}
		return
	}
	e.offerJobs(types)
}

// jobOp runs a job op.
func (e *Engine) jobOp(ctx context.Context, kind opKind, id string, args workArgs, key string) (*outcome, error) {
	pid, err := parseWorkID(id, 'j', "job")
	if err != nil {
		return nil, err
	}
	if args.Worker == "" {
		return nil, invalid("name the worker (worker)")
	}
	args.Work = id
	out, err := e.submit(ctx, &op{Kind: kind, Process: pid, Args: &args}, key)
	if err != nil {
		return nil, err
	}
	return out, out.err()
}

// CompleteJobRequest completes a job: Env is merged into the process
// environment (a node type with output mappings decides instead); Result
// is a result code choosing arcs.
type CompleteJobRequest struct {
	Worker         string
	Env            map[string]any
	Result         string
	IdempotencyKey string
}

// CompleteJob completes a job the worker holds and runs its process on
// until every token waits; a worker whose lease another took over is
// refused (ErrJobNotLeased).
func (e *Engine) CompleteJob(ctx context.Context, id string, req CompleteJobRequest) (*Process, error) {
	env, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	out, err := e.jobOp(ctx, opJobComplete, id, workArgs{Worker: req.Worker, Data: env, Result: req.Result}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, errors.New("job completion had no result")
	}
	return out.Process, nil
}

// FailJobRequest reports a failed attempt: Retries is how many are left
// (nil: one less than before); with some left the job is offered again
// after RetryIn, with none it fails and an incident opens.
type FailJobRequest struct {
	Worker         string
	Retries        *int
	RetryIn        time.Duration
	Message        string
	IdempotencyKey string
}

// FailJob reports a failed attempt at a job.
func (e *Engine) FailJob(ctx context.Context, id string, req FailJobRequest) (*Job, error) {
	if req.RetryIn < 0 {
		return nil, invalid("retryIn must not be negative")
	}
	out, err := e.jobOp(ctx, opJobFail, id, workArgs{Worker: req.Worker, Retries: req.Retries, RetryIn: req.RetryIn, Message: req.Message}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Job == nil {
		return nil, errors.New("job failure had no result")
	}
	return out.Job, nil
}

// JobErrorRequest throws a business error at a job's node: a node type
// that catches it (a BPMN error boundary) moves on with Env merged;
// uncaught, an incident opens.
type JobErrorRequest struct {
	Worker         string
	Code           string
	Message        string
	Env            map[string]any
	IdempotencyKey string
}

// ThrowJobError throws a business error from a job.
func (e *Engine) ThrowJobError(ctx context.Context, id string, req JobErrorRequest) (*Process, error) {
	env, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	out, err := e.jobOp(ctx, opJobError, id, workArgs{Worker: req.Worker, Code: req.Code, Message: req.Message, Data: env}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, errors.New("job error had no result")
	}
	return out.Process, nil
}

// Incident returns an incident.
func (e *Engine) Incident(ctx context.Context, id string) (*Incident, error) {
	r, err := e.store.Incident(ctx, id)
	if err != nil {
		return nil, storeError("read incident", err)
	}
	return incidentOf(r), nil
}

// Incidents lists incidents by ID; States defaults to open.
func (e *Engine) Incidents(ctx context.Context, f IncidentFilter) (*IncidentPage, error) {
	limit := pageLimit(f.Limit)
	states := f.States
	if len(states) == 0 {
		states = []string{store.IncidentOpen}
	}
	for _, s := range states {
		if s != store.IncidentOpen && s != store.IncidentResolved {
			return nil, invalid("unknown incident state %q (want open or resolved)", s)
		}
	}
	rows, err := e.store.Incidents(ctx, store.IncidentFilter{Process: f.Process, States: states, After: f.After, Limit: limit + 1})
	if err != nil {
		return nil, storeError("list incidents", err)
	}
	page := &IncidentPage{Items: make([]Incident, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.Next = rows[i-1].ID
			break
		}
		page.Items = append(page.Items, *incidentOf(r))
	}
	return page, nil
}

// ResolveIncidentRequest resolves an incident: a failed job is offered
// again with Retries retries (nil: 1); any other incident runs the step
// that failed again.
type ResolveIncidentRequest struct {
	Actor          Actor
	Retries        *int
	IdempotencyKey string
}

// ResolveIncident resolves an open incident; a resolved one is refused
// (ErrConflict). If the step fails again, nothing changes and the error
// says why.
func (e *Engine) ResolveIncident(ctx context.Context, id string, req ResolveIncidentRequest) (*Incident, error) {
	pid, err := parseWorkID(id, 'i', "incident")
	if err != nil {
		return nil, err
	}
	args := &workArgs{Work: id, User: req.Actor.User, Retries: req.Retries}
	out, err := e.submit(ctx, &op{Kind: opIncidentResolve, Process: pid, Args: args}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	if out.Incident == nil {
		return nil, errors.New("incident resolution had no result")
	}
	return out.Incident, nil
}

// OpenIncident opens an incident of a kind on an active node token, for
// problems found outside the kernel (a delayed token whose guard failed
// when its time came: kind timer_failed). The token stays where it is;
// resolving the incident runs its step again.
func (e *Engine) OpenIncident(ctx context.Context, nodeToken, kind, message string) (*Incident, error) {
	if kind == "" {
		return nil, invalid("name the incident's kind")
	}
	o, err := tokenOp(opIncidentOpen, nodeToken)
	if err != nil {
		return nil, err
	}
	o.Args = &workArgs{Incident: kind, Message: message}
	out, err := e.submit(ctx, o, "")
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	return out.Incident, nil
}

// WorkCounts is the work waiting: open and claimed tasks, open, leased and
// failed jobs by type, open incidents by kind.
type WorkCounts struct {
	Tasks     map[string]int
	Jobs      []JobCount
	Incidents map[string]int
}

// JobCount is how many jobs of a type are in a state.
type JobCount struct {
	Type, State string
	Count       int
}

// WorkCounts counts the work waiting, in the store (every engine sharing
// a database counts the same).
func (e *Engine) WorkCounts(ctx context.Context) (*WorkCounts, error) {
	c, err := e.store.WorkCounts(ctx)
	if err != nil {
		return nil, storeError("count work", err)
	}
	out := &WorkCounts{Tasks: c.Tasks, Incidents: c.Incidents}
	for k, n := range c.Jobs {
		out.Jobs = append(out.Jobs, JobCount{Type: k.Type, State: k.State, Count: n})
	}
	sort.Slice(out.Jobs, func(i, j int) bool {
		if out.Jobs[i].Type != out.Jobs[j].Type {
			return out.Jobs[i].Type < out.Jobs[j].Type
		}
		return out.Jobs[i].State < out.Jobs[j].State
	})
	return out, nil
}

// rowCache keeps the task and job rows this engine last read or wrote, so
// that a command on a work item (a claim, a job's completion) runs before
// its transaction without reading the row first. A cached row may be out
// of date (another engine changed it, a lease ran out, its token ended):
// the command writes the row at the revision it read, which then fails,
// and the command runs again in its transaction on what is stored.
type rowCache struct {
	mu    sync.Mutex
	tasks map[string]*store.Task
	jobs  map[string]*store.Job
}

// rowCacheSize bounds each map; a full map starts over.
const rowCacheSize = 1 << 15

// putTask caches a row unless a newer revision of it is cached (a row
// written by a command may arrive after a newer one read meanwhile). The
// cache keeps t itself: nobody changes it after (readers get copies).
func (c *rowCache) putTask(t *store.Task) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tasks == nil || len(c.tasks) >= rowCacheSize {
		c.tasks = map[string]*store.Task{}
	}
	if old, ok := c.tasks[t.ID]; !ok || old.Rev <= t.Rev {
		c.tasks[t.ID] = t
	}
}

// putJob caches a row unless a newer revision of it is cached (as putTask).
func (c *rowCache) putJob(j *store.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs == nil || len(c.jobs) >= rowCacheSize {
		c.jobs = map[string]*store.Job{}
	}
	if old, ok := c.jobs[j.ID]; !ok || old.Rev <= j.Rev {
		c.jobs[j.ID] = j
	}
}

// cachedRows reads work rows from the cache, else from the store.
type cachedRows struct {
	c  *rowCache
	st store.Store
}

func (r cachedRows) Task(ctx context.Context, id string) (*store.Task, error) {
	r.c.mu.Lock()
	cached, ok := r.c.tasks[id]
	r.c.mu.Unlock()
	if ok {
		t := *cached
		t.CandidateUsers = slices.Clone(t.CandidateUsers)
		t.CandidateGroups = slices.Clone(t.CandidateGroups)
		return &t, nil
	}
	return r.st.Task(ctx, id)
}

func (r cachedRows) Job(ctx context.Context, id string) (*store.Job, error) {
	r.c.mu.Lock()
	cached, ok := r.c.jobs[id]
	r.c.mu.Unlock()
	if ok {
		j := *cached
		return &j, nil
	}
	return r.st.Job(ctx, id)
}

func (r cachedRows) Incident(ctx context.Context, id string) (*store.Incident, error) {
	return r.st.Incident(ctx, id)
}

// remember caches the rows a committed command wrote, at their new
// revisions (the command's rows themselves: it is over). A row that reached its end (a completed or canceled task or
// job, a job that threw an error) no command changes any more: it leaves
// the cache instead of crowding it (a command that asks for it again
// reads it from the store).
func (c *rowCache) remember(cm *cmd) {
	for _, t := range cm.tasks {
		t.Rev++
		if t.State == store.TaskCompleted || t.State == store.TaskCanceled {
			c.forgetTask(t.ID, t.Rev)
		} else {
			c.putTask(t)
		}
	}
	for _, j := range cm.jobs {
		j.Rev++
		if j.State == store.JobCompleted || j.State == store.JobCanceled || j.State == store.JobErrorThrown {
			c.forgetJob(j.ID, j.Rev)
		} else {
			c.putJob(j)
		}
	}
}

// forgetTask and forgetJob drop a cached row unless a newer revision of
// it is cached.
func (c *rowCache) forgetTask(id string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.tasks[id]; ok && old.Rev <= rev {
		delete(c.tasks, id)
	}
}

func (c *rowCache) forgetJob(id string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.jobs[id]; ok && old.Rev <= rev {
		delete(c.jobs, id)
	}
}
