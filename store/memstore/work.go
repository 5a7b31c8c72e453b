package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/veena-wf/veena/store"
)

// workRows are the work layer's rows.
type workRows struct {
	tasks     map[string]*store.Task
	jobs      map[string]*store.Job
	incidents map[string]*store.Incident
	notes     map[string][]store.AuditNote // by process, in Seq order
	attach    map[string]map[string]store.Attachment
	subs      map[string]*store.Subscription

	// avail holds, by job type, when each job open or leased may be
	// leased (see noteJob); leases when each leased job's lease runs out:
	// activating jobs and expiring leases take the jobs due from their
	// front instead of looking at every job.
	avail  map[string]*idQueue
	leases idQueue
	// byProcess indexes the ids of each process's tasks, jobs and
	// incidents, so that ending a token's work looks at its process's rows.
	byProcess map[string]*processRows
}

type processRows struct{ tasks, jobs, incidents []string }

func (w *workRows) process(id string) *processRows {
	r := w.byProcess[id]
	if r == nil {
		r = &processRows{}
		w.byProcess[id] = r
	}
	return r
}

func addID(l *[]string, id string) {
	if !slices.Contains(*l, id) {
		*l = append(*l, id)
	}
}

// indexJob brings the indexes up to date with the job row id (written,
// restored or gone).
func (w *workRows) indexJob(id string) {
	j := w.jobs[id]
	if j == nil {
		return // its queue entries are dropped when they come up
	}
	addID(&w.process(j.Process).jobs, id)
	w.noteJob(j)
}

// availTrue reports whether an entry at at of job type typ's queue is true
// of job j (nil if gone): j is open or leased and may be leased at at.
func availTrue(j *store.Job, typ string, at int64) bool {
	return j != nil && j.Type == typ && (j.State == store.JobOpen || j.State == store.JobLeased) && availableAt(j).UnixNano() == at
}

// leaseTrue reports whether an entry at at of the leases is true of job j
// (nil if gone): j is leased until at.
func leaseTrue(j *store.Job, at int64) bool {
	return j != nil && j.State == store.JobLeased && j.LockedUntil.UnixNano() == at
}

// availableAt is when an open or leased job may be leased: an open one's
// due time, a leased one's end of lease (the SQL stores' order too).
func availableAt(j *store.Job) time.Time {
	if j.State == store.JobOpen {
		return j.DueAt
	}
	return j.LockedUntil
}

// noteJob adds the entries of a job as it now is (or is again, when an
// Update is undone) to the queues: when it may be leased, if it is open
// or leased, and when its lease runs out, if it is leased.
func (w *workRows) noteJob(j *store.Job) {
	if j.State != store.JobOpen && j.State != store.JobLeased {
		return
	}
	if w.avail == nil {
		w.avail = map[string]*idQueue{}
	}
	q := w.avail[j.Type]
	if q == nil {
		q = &idQueue{}
		w.avail[j.Type] = q
	}
	q.add(idAt{availableAt(j).UnixNano(), j.ID}, func(e idAt) bool { return availTrue(w.jobs[e.id], j.Type, e.at) })
	if j.State == store.JobLeased {
		w.leases.add(idAt{j.LockedUntil.UnixNano(), j.ID}, func(e idAt) bool { return leaseTrue(w.jobs[e.id], e.at) })
	}
}

// rows returns the work rows, made on first use; the caller holds mu.
func (s *Store) rows() *workRows {
	w := &s.work
	if w.tasks == nil {
		w.tasks = map[string]*store.Task{}
		w.jobs = map[string]*store.Job{}
		w.incidents = map[string]*store.Incident{}
		w.notes = map[string][]store.AuditNote{}
		w.attach = map[string]map[string]store.Attachment{}
		w.subs = map[string]*store.Subscription{}
		w.byProcess = map[string]*processRows{}
	}
	return w
}

func copyTask(t *store.Task) *store.Task {
	c := *t
	c.CandidateUsers = slices.Clone(t.CandidateUsers)
	c.CandidateGroups = slices.Clone(t.CandidateGroups)
	c.Data = slices.Clone(t.Data)
	c.Initial = slices.Clone(t.Initial)
	return &c
}

func copyJob(j *store.Job) *store.Job {
	c := *j
	// One array for both (each capped at its length, so that appending to
	// one cannot write over the other).
	h, e := len(j.Headers), len(j.Env)
	b := append(append(make([]byte, 0, h+e), j.Headers...), j.Env...)
	c.Headers, c.Env = nil, nil
	if j.Headers != nil {
		c.Headers = b[:h:h]
	}
	if j.Env != nil {
		c.Env = b[h:]
	}
	return &c
}

func copyIncident(i *store.Incident) *store.Incident {
	c := *i
	return &c
}

// read runs fn under the read lock unless the store is closed.
func (s *Store) read(fn func(w *workRows) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return fn(s.rows0())
}

// rows0 is rows for readers: an empty set until the first write.
func (s *Store) rows0() *workRows {
	if s.work.tasks == nil {
		return &workRows{}
	}
	return &s.work
}

// Task reads a task.
func (s *Store) Task(_ context.Context, id string) (out *store.Task, err error) {
	err = s.read(func(w *workRows) error {
		t, ok := w.tasks[id]
		if !ok {
			return fmt.Errorf("task %s: %w", id, store.ErrNotFound)
		}
		out = copyTask(t)
		return nil
	})
	return out, err
}

// Tasks lists tasks in inbox order.
func (s *Store) Tasks(_ context.Context, f store.TaskFilter) (out []*store.Task, err error) {
	err = s.read(func(w *workRows) error {
		if f.Process != "" { // one process's tasks: from its index
			if r := w.byProcess[f.Process]; r != nil {
				for _, id := range r.tasks {
					if t := w.tasks[id]; t != nil && store.TaskMatches(t, f) {
						out = append(out, copyTask(t))
					}
				}
			}
			return nil
		}
		for _, t := range w.tasks {
			if store.TaskMatches(t, f) {
				out = append(out, copyTask(t))
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return store.TaskBefore(out[i], out[j]) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, err
}

// Job reads a job.
func (s *Store) Job(_ context.Context, id string) (out *store.Job, err error) {
	err = s.read(func(w *workRows) error {
		j, ok := w.jobs[id]
		if !ok {
			return fmt.Errorf("job %s: %w", id, store.ErrNotFound)
		}
		out = copyJob(j)
		return nil
	})
	return out, err
}

// Jobs lists jobs by ID.
func (s *Store) Jobs(_ context.Context, f store.JobFilter) (out []*store.Job, err error) {
	err = s.read(func(w *workRows) error {
		all := w.jobs
		if f.Process != "" { // one process's jobs: from its index
			all = map[string]*store.Job{}
			if r := w.byProcess[f.Process]; r != nil {
				for _, id := range r.jobs {
					if j := w.jobs[id]; j != nil {
						all[id] = j
					}
				}
			}
		}
		for _, j := range all {
			if (len(f.Types) == 0 || slices.Contains(f.Types, j.Type)) && (len(f.States) == 0 || slices.Contains(f.States, j.State)) &&
				(f.Process == "" || j.Process == f.Process) && j.ID > f.After {
				out = append(out, copyJob(j))
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, err
}

// available reports whether a job may be leased at now.
func available(j *store.Job, typ string, now time.Time) bool {
	if j.Type != typ {
		return false
	}
	switch j.State {
	case store.JobOpen:
		return !j.DueAt.After(now)
	case store.JobLeased:
		return !j.LockedUntil.After(now)
	}
	return false
}

// ActivateJobs leases available jobs, oldest due first. It runs between
// Updates, so that an Update that fails cannot undo a lease.
func (s *Store) ActivateJobs(_ context.Context, a store.Activation) ([]*store.Job, error) {
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	w := s.rows()
	q := w.avail[a.Type]
	out := make([]*store.Job, 0, min(max(a.Max, 0), 16))
	now := a.Now.UnixNano()
	for q != nil && q.due(now) && len(out) < a.Max {
		e := q.pop()
		j := w.jobs[e.id]
		if !availTrue(j, a.Type, e.at) || !available(j, a.Type, a.Now) {
			continue // the job changed since the entry was made
		}
		j.State, j.Worker, j.LockedUntil = store.JobLeased, a.Worker, a.Now.Add(a.LockFor)
		j.Rev++
		w.noteJob(j)
		out = append(out, copyJob(j))
	}
	return out, nil
}

// ExpireLeases opens the jobs whose lease ran out.
func (s *Store) ExpireLeases(_ context.Context, now time.Time) ([]string, error) {
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	seen := map[string]bool{}
	var types []string
	w := s.rows()
	for w.leases.due(now.UnixNano()) {
		e := w.leases.pop()
		j := w.jobs[e.id]
		if !leaseTrue(j, e.at) {
			continue // the job changed since the entry was made
		}
		j.State = store.JobOpen
		j.Rev++
		w.noteJob(j)
		if !seen[j.Type] {
			seen[j.Type] = true
			types = append(types, j.Type)
		}
	}
	sort.Strings(types)
	return types, nil
}

// Incident reads an incident.
func (s *Store) Incident(_ context.Context, id string) (out *store.Incident, err error) {
	err = s.read(func(w *workRows) error {
		i, ok := w.incidents[id]
		if !ok {
			return fmt.Errorf("incident %s: %w", id, store.ErrNotFound)
		}
		out = copyIncident(i)
		return nil
	})
	return out, err
}

// Incidents lists incidents by ID.
func (s *Store) Incidents(_ context.Context, f store.IncidentFilter) (out []*store.Incident, err error) {
	err = s.read(func(w *workRows) error {
		for _, i := range w.incidents {
			if (len(f.States) == 0 || slices.Contains(f.States, i.State)) && (f.Process == "" || i.Process == f.Process) && i.ID > f.After {
				out = append(out, copyIncident(i))
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, err
}

// AuditNotes returns notes of a process after a sequence number.
func (s *Store) AuditNotes(_ context.Context, process string, after int64, limit int) (out []store.AuditNote, err error) {
	err = s.read(func(w *workRows) error {
		for _, n := range w.notes[process] {
			if n.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, n)
			}
		}
		return nil
	})
	return out, err
}

// Attachments returns a process's attachments by name.
func (s *Store) Attachments(_ context.Context, process string) (out []store.Attachment, err error) {
	err = s.read(func(w *workRows) error {
		for _, a := range w.attach[process] {
			out = append(out, a)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// PutSubscription stores a new subscription.
func (s *Store) PutSubscription(_ context.Context, sub *store.Subscription) error {
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	w := s.rows()
	if _, ok := w.subs[sub.Name]; ok {
		return fmt.Errorf("subscription %q: %w", sub.Name, store.ErrConflict)
	}
	c := *sub
	w.subs[sub.Name] = &c
	return nil
}

// Subscription reads a subscription.
func (s *Store) Subscription(_ context.Context, name string) (out *store.Subscription, err error) {
	err = s.read(func(w *workRows) error {
		sub, ok := w.subs[name]
		if !ok {
			return fmt.Errorf("subscription %q: %w", name, store.ErrNotFound)
		}
		c := *sub
		out = &c
		return nil
	})
	return out, err
}

// Subscriptions lists subscriptions by name.
func (s *Store) Subscriptions(context.Context) (out []*store.Subscription, err error) {
	err = s.read(func(w *workRows) error {
		for _, sub := range w.subs {
			c := *sub
			out = append(out, &c)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// DeleteSubscription removes a subscription.
func (s *Store) DeleteSubscription(_ context.Context, name string) error {
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	w := s.rows()
	if _, ok := w.subs[name]; !ok {
		return fmt.Errorf("subscription %q: %w", name, store.ErrNotFound)
	}
	delete(w.subs, name)
	return nil
}

// WorkCounts counts the work waiting.
func (s *Store) WorkCounts(context.Context) (*store.WorkCounts, error) {
	c := &store.WorkCounts{Tasks: map[string]int{}, Jobs: map[store.JobKey]int{}, Incidents: map[string]int{}}
	err := s.read(func(w *workRows) error {
		for _, t := range w.tasks {
			if t.State == store.TaskOpen || t.State == store.TaskClaimed {
				c.Tasks[t.State]++
			}
		}
		for _, j := range w.jobs {
			if j.State == store.JobOpen || j.State == store.JobLeased || j.State == store.JobFailed {
				c.Jobs[store.JobKey{Type: j.Type, State: j.State}]++
			}
		}
		for _, i := range w.incidents {
			if i.State == store.IncidentOpen {
				c.Incidents[i.Kind]++
			}
		}
		return nil
	})
	return c, err
}

// The writes of a command.

func (t *tx) Task(ctx context.Context, id string) (*store.Task, error) { return t.s.Task(ctx, id) }
func (t *tx) Job(ctx context.Context, id string) (*store.Job, error)   { return t.s.Job(ctx, id) }
func (t *tx) Incident(ctx context.Context, id string) (*store.Incident, error) {
	return t.s.Incident(ctx, id)
}

// putRow inserts (rev 0) or updates at revision rev a row of m; it returns
// the new revision.
func putRow[T any](t *tx, m map[string]*T, id string, rev int64, revOf func(*T) int64, row *T, what string) error {
	old, had := m[id]
	switch {
	case rev == 0 && had:
		return fmt.Errorf("%s %s exists already: %w", what, id, store.ErrConflict)
	case rev != 0 && !had:
		return fmt.Errorf("%s %s: %w", what, id, store.ErrNotFound)
	case rev != 0 && revOf(old) != rev:
		return fmt.Errorf("%s %s is at revision %d, not %d: %w", what, id, revOf(old), rev, store.ErrStale)
	}
	m[id] = row
	t.undo = append(t.undo, func() {
		if had {
			m[id] = old
		} else {
			delete(m, id)
		}
	})
	return nil
}

func (t *tx) PutTask(_ context.Context, task *store.Task) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := copyTask(task)
	c.Rev = task.Rev + 1
	w := s.rows()
	if err := putRow(t, w.tasks, task.ID, task.Rev, func(x *store.Task) int64 { return x.Rev }, c, "task"); err != nil {
		return err
	}
	addID(&w.process(c.Process).tasks, c.ID)
	task.Rev = c.Rev
	return nil
}

func (t *tx) PutJob(_ context.Context, j *store.Job) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := copyJob(j)
	c.Rev = j.Rev + 1
	w := s.rows()
	id := j.ID
	t.undo = append(t.undo, func() { w.indexJob(id) }) // runs after putRow's own undo
	if err := putRow(t, w.jobs, j.ID, j.Rev, func(x *store.Job) int64 { return x.Rev }, c, "job"); err != nil {
		return err
	}
	w.indexJob(id)
	j.Rev = c.Rev
	return nil
}

func (t *tx) PutIncident(_ context.Context, i *store.Incident) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := copyIncident(i)
	c.Rev = i.Rev + 1
	w := s.rows()
	if err := putRow(t, w.incidents, i.ID, i.Rev, func(x *store.Incident) int64 { return x.Rev }, c, "incident"); err != nil {
		return err
	}
	addID(&w.process(c.Process).incidents, c.ID)
	i.Rev = c.Rev
	return nil
}

func (t *tx) EndWork(_ context.Context, process string, token int, completed bool, at time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.rows()
	taskState, jobState := store.TaskCanceled, store.JobCanceled
	if completed {
		taskState, jobState = store.TaskCompleted, store.JobCompleted
	}
	rows := w.byProcess[process]
	if rows == nil {
		return nil
	}
	for _, id := range rows.tasks {
		if x := w.tasks[id]; x != nil && x.Process == process && x.Token == token && (x.State == store.TaskOpen || x.State == store.TaskClaimed) {
			c := copyTask(x)
			c.State, c.CompletedAt, c.Rev = taskState, at, x.Rev+1
			w.tasks[id] = c
			t.undo = append(t.undo, func() { w.tasks[id] = x })
		}
	}
	for _, id := range rows.jobs {
		if x := w.jobs[id]; x != nil && x.Process == process && x.Token == token && (x.State == store.JobOpen || x.State == store.JobLeased || x.State == store.JobFailed) {
			c := copyJob(x)
			c.State, c.Rev = jobState, x.Rev+1
			w.jobs[id] = c
			w.indexJob(id)
			t.undo = append(t.undo, func() { w.jobs[id] = x; w.indexJob(id) })
		}
	}
	for _, id := range rows.incidents {
		if x := w.incidents[id]; x != nil && x.Process == process && x.Token == token && x.State == store.IncidentOpen {
			c := copyIncident(x)
			c.State, c.ResolvedAt, c.Rev = store.IncidentResolved, at, x.Rev+1
			w.incidents[id] = c
			t.undo = append(t.undo, func() { w.incidents[id] = x })
		}
	}
	return nil
}

func (t *tx) PutAuditNotes(_ context.Context, notes []store.AuditNote) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.rows()
	for _, n := range notes {
		l := w.notes[n.Process]
		if k := len(l); k > 0 && l[k-1].Seq >= n.Seq {
			return fmt.Errorf("audit note %d of process %s: not after %d: %w", n.Seq, n.Process, l[k-1].Seq, store.ErrConflict)
		}
		w.notes[n.Process] = append(l, n)
		p := n.Process
		t.undo = append(t.undo, func() {
			l := w.notes[p]
			w.notes[p] = l[:len(l)-1]
		})
	}
	return nil
}

func (t *tx) PutAttachment(_ context.Context, a *store.Attachment) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.rows()
	m := w.attach[a.Process]
	if m == nil {
		m = map[string]store.Attachment{}
		w.attach[a.Process] = m
	}
	old, had := m[a.Name]
	m[a.Name] = *a
	t.undo = append(t.undo, func() {
		if had {
			m[a.Name] = old
		} else {
			delete(m, a.Name)
		}
	})
	return nil
}
