package storetest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"context"

	"github.com/veena-wf/veena/store"
)

// workTests are the conformance cases of the work layer's rows.
var workTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"TaskRoundTrip", testTaskRoundTrip},
	{"TaskInbox", testTaskInbox},
	{"JobActivation", testJobActivation},
	{"ConcurrentActivation", testConcurrentActivation},
	{"EndWork", testEndWork},
	{"Incidents", testIncidents},
	{"RecordRows", testRecordRows},
	{"Subscriptions", testSubscriptions},
	{"WorkCounts", testWorkCounts},
	{"FailedUpdateKeepsNoWork", testFailedUpdateWork},
}

func update(t *testing.T, s store.Store, fn func(c context.Context, tx store.Tx) error) {
	t.Helper()
	if err := s.Update(ctx(t), fn); err != nil {
		t.Fatal(err)
	}
}

func task(id, process string, token, priority int, created time.Time) *store.Task {
	return &store.Task{
		ID: id, Process: process, Token: token, Node: "n", Label: "Do it", Definition: "d", State: store.TaskOpen,
		Priority: priority, Data: []byte(`{"a":1}`), Initial: []byte(`{"a":1}`), CreatedAt: created,
	}
}

func job(id, process, typ string, token int, due time.Time) *store.Job {
	return &store.Job{
		ID: id, Process: process, Token: token, Node: "n", Definition: "d", Type: typ, State: store.JobOpen,
		Retries: 3, Headers: []byte(`{"h":"v"}`), Env: []byte(`{"x":1}`), DueAt: due, CreatedAt: due,
	}
}

var workCmp = cmp.Options{cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)}

func testTaskRoundTrip(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	want := task("p1.t5", "p1", 2, 70, t0)
	want.Assignee, want.CandidateUsers, want.CandidateGroups, want.Queue = "alice", []string{"bob", "carol"}, []string{"sales"}, "orders"
	want.DueAt, want.FollowUpAt = t0.Add(48*time.Hour), t0.Add(4*time.Hour)
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.PutTask(c, want) })
	if want.Rev != 1 {
		t.Fatalf("a new task has revision %d, want 1", want.Rev)
	}
	got, err := s.Task(c, "p1.t5")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, workCmp); diff != "" {
		t.Fatalf("task (-put +read):\n%s", diff)
	}
	// Read in a command, changed, written at the revision read.
	update(t, s, func(c context.Context, tx store.Tx) error {
		x, err := tx.Task(c, "p1.t5")
		if err != nil {
			return err
		}
		x.State, x.ClaimedBy, x.ClaimedAt, x.Data = store.TaskClaimed, "bob", t0.Add(time.Minute), []byte(`{"a":2}`)
		return tx.PutTask(c, x)
	})
	got, _ = s.Task(c, "p1.t5")
	if got.State != store.TaskClaimed || got.ClaimedBy != "bob" || !got.ClaimedAt.Equal(t0.Add(time.Minute)) || string(got.Initial) != `{"a":1}` || got.Rev != 2 {
		t.Fatalf("claimed task %+v", got)
	}
	// A write at an old revision is stale; a new task with a taken id conflicts.
	stale := *got
	stale.Rev = 1
	if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutTask(c, &stale) }); !errors.Is(err, store.ErrStale) {
		t.Fatalf("write at an old revision: %v, want ErrStale", err)
	}
	dup := task("p1.t5", "p1", 2, 50, t0)
	if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutTask(c, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second task with one id: %v, want ErrConflict", err)
	}
	if _, err := s.Task(c, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		_, err := tx.Task(c, "nope")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown task in a command: %v", err)
	}
}

func testTaskInbox(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0), proc("p2", "p2", "", 0))
	tasks := []*store.Task{
		task("p1.a", "p1", 1, 50, t0.Add(1*time.Second)),
		task("p1.b", "p1", 2, 80, t0.Add(2*time.Second)),
		task("p2.c", "p2", 1, 50, t0.Add(0*time.Second)),
		task("p2.d", "p2", 2, 50, t0.Add(1*time.Second)), // ties with a on priority and time: by id
		task("p2.e", "p2", 3, 10, t0),
	}
	tasks[0].Assignee = "alice"
	tasks[1].CandidateGroups = []string{"sales", "managers"}
	tasks[2].CandidateUsers = []string{"bob", "alice"}
	tasks[3].Queue, tasks[3].Definition = "orders", "other"
	tasks[4].State, tasks[4].ClaimedBy = store.TaskClaimed, "carol"
	update(t, s, func(c context.Context, tx store.Tx) error {
		for _, x := range tasks {
			if err := tx.PutTask(c, x); err != nil {
				return err
			}
		}
		done := task("p2.f", "p2", 4, 99, t0)
		done.State = store.TaskCompleted
		return tx.PutTask(c, done)
	})
	ids := func(f store.TaskFilter) string {
		t.Helper()
		got, err := s.Tasks(c, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range got {
			out = append(out, x.ID[strings.LastIndexByte(x.ID, '.')+1:])
		}
		return strings.Join(out, " ")
	}
	open := []string{store.TaskOpen, store.TaskClaimed}
	for _, tc := range []struct {
		f    store.TaskFilter
		want string
	}{
		{store.TaskFilter{States: open}, "b c a d e"},
		{store.TaskFilter{}, "f b c a d e"},
		{store.TaskFilter{States: []string{store.TaskCompleted}}, "f"},
		{store.TaskFilter{States: open, Assignee: "alice"}, "a"},
		{store.TaskFilter{States: open, CandidateUser: "alice"}, "c"},
		{store.TaskFilter{States: open, CandidateGroup: "managers"}, "b"},
		{store.TaskFilter{States: open, Queue: "orders"}, "d"},
		{store.TaskFilter{States: open, Process: "p1"}, "b a"},
		{store.TaskFilter{States: open, Definition: "other"}, "d"},
		{store.TaskFilter{States: open, Mine: true, User: "alice"}, "c a"},
		{store.TaskFilter{States: open, Mine: true, User: "alice", Groups: []string{"sales"}}, "b c a"},
		{store.TaskFilter{States: open, Mine: true, User: "carol"}, "e"},
		{store.TaskFilter{States: open, Mine: true, User: "nobody", Groups: []string{"none"}}, ""},
		{store.TaskFilter{States: open, Limit: 2}, "b c"},
		{store.TaskFilter{States: open, After: &store.TaskCursor{Priority: 50, CreatedAt: t0, ID: "p2.c"}, Limit: 2}, "a d"},
		{store.TaskFilter{States: open, After: &store.TaskCursor{Priority: 50, CreatedAt: t0.Add(time.Second), ID: "p1.a"}}, "d e"},
	} {
		if got := ids(tc.f); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

func testJobActivation(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	later := job("p1.j3", "p1", "pay", 3, t0.Add(time.Hour)) // a retry's back-off: not yet
	update(t, s, func(c context.Context, tx store.Tx) error {
		for _, j := range []*store.Job{job("p1.j1", "p1", "pay", 1, t0), job("p1.j2", "p1", "pay", 2, t0.Add(time.Second)), later, job("p1.j4", "p1", "mail", 4, t0)} {
			if err := tx.PutJob(c, j); err != nil {
				return err
			}
		}
		return nil
	})
	now := t0.Add(time.Minute)
	got, err := s.ActivateJobs(c, store.Activation{Type: "pay", Worker: "w1", Max: 1, Now: now, LockFor: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "p1.j1" || got[0].State != store.JobLeased || got[0].Worker != "w1" || !got[0].LockedUntil.Equal(now.Add(5*time.Minute)) || got[0].Rev != 2 {
		t.Fatalf("first activation %+v", got)
	}
	if string(got[0].Env) != `{"x":1}` || string(got[0].Headers) != `{"h":"v"}` {
		t.Fatalf("activated job lost its env or headers: %s %s", got[0].Env, got[0].Headers)
	}
	got, _ = s.ActivateJobs(c, store.Activation{Type: "pay", Worker: "w2", Max: 10, Now: now, LockFor: time.Minute})
	if len(got) != 1 || got[0].ID != "p1.j2" {
		t.Fatalf("second activation %+v: want j2 only (j1 leased, j3 not due)", got)
	}
	if got, _ = s.ActivateJobs(c, store.Activation{Type: "pay", Worker: "w3", Max: 10, Now: now, LockFor: time.Minute}); len(got) != 0 {
		t.Fatalf("nothing is available, activated %+v", got)
	}
	// j2's lease ends first; expiring opens it again with its last worker.
	types, err := s.ExpireLeases(c, now.Add(2*time.Minute))
	if err != nil || fmt.Sprint(types) != "[pay]" {
		t.Fatalf("expired types %v, %v", types, err)
	}
	j2, _ := s.Job(c, "p1.j2")
	if j2.State != store.JobOpen || j2.Worker != "w2" {
		t.Fatalf("expired job %+v", j2)
	}
	j1, _ := s.Job(c, "p1.j1")
	if j1.State != store.JobLeased {
		t.Fatalf("j1's lease has not run out: %+v", j1)
	}
	// A lease that ran out is taken over even before it is expired.
	got, _ = s.ActivateJobs(c, store.Activation{Type: "pay", Worker: "w3", Max: 10, Now: now.Add(time.Hour), LockFor: time.Minute})
	var names []string
	for _, j := range got {
		names = append(names, j.ID+"@"+j.Worker)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "p1.j1@w3 p1.j2@w3 p1.j3@w3" {
		t.Fatalf("activation after every lease ran out: %v", names)
	}
	list, err := s.Jobs(c, store.JobFilter{Types: []string{"pay"}, States: []string{store.JobLeased}})
	if err != nil || len(list) != 3 || list[0].ID != "p1.j1" {
		t.Fatalf("leased pay jobs %v %v", list, err)
	}
	list, _ = s.Jobs(c, store.JobFilter{Process: "p1", After: "p1.j2", Limit: 1})
	if len(list) != 1 || list[0].ID != "p1.j3" {
		t.Fatalf("a page of jobs after j2: %v", list)
	}
	// A job leased by a command's read revision: the lease made it stale.
	stale := job("p1.j4", "p1", "mail", 4, t0)
	stale.Rev = 1
	if _, err := s.ActivateJobs(c, store.Activation{Type: "mail", Worker: "w", Max: 1, Now: now, LockFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	stale.State = store.JobCompleted
	if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutJob(c, stale) }); !errors.Is(err, store.ErrStale) {
		t.Fatalf("completing a job read before it was leased: %v, want ErrStale", err)
	}
}

// Concurrent activations never lease one job twice.
func testConcurrentActivation(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	const jobs = 60
	update(t, s, func(c context.Context, tx store.Tx) error {
		for i := range jobs {
			if err := tx.PutJob(c, job(fmt.Sprintf("p1.j%03d", i), "p1", "t", i, t0)); err != nil {
				return err
			}
		}
		return nil
	})
	var mu sync.Mutex
	leased := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := s.ActivateJobs(c, store.Activation{Type: "t", Worker: fmt.Sprint("w", w), Max: 3, Now: t0, LockFor: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				if len(got) > 3 {
					errs <- fmt.Errorf("w%d asked for 3 jobs and got %d", w, len(got))
				}
				for _, j := range got {
					if j.Worker != fmt.Sprint("w", w) || j.State != store.JobLeased || !j.LockedUntil.Equal(t0.Add(time.Hour)) {
						errs <- fmt.Errorf("w%d got job %s %s by %s until %v", w, j.ID, j.State, j.Worker, j.LockedUntil)
					}
					if prev, ok := leased[j.ID]; ok {
						errs <- fmt.Errorf("job %s leased to %s and %s", j.ID, prev, j.Worker)
					}
					leased[j.ID] = j.Worker
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(leased) != jobs {
		t.Fatalf("%d of %d jobs leased", len(leased), jobs)
	}
}

func testEndWork(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	update(t, s, func(c context.Context, tx store.Tx) error {
		for _, x := range []*store.Task{task("p1.t1", "p1", 1, 50, t0), task("p1.t2", "p1", 2, 50, t0)} {
			if err := tx.PutTask(c, x); err != nil {
				return err
			}
		}
		for _, j := range []*store.Job{job("p1.j1", "p1", "t", 1, t0), job("p1.j2", "p1", "t", 2, t0)} {
			if err := tx.PutJob(c, j); err != nil {
				return err
			}
		}
		return tx.PutIncident(c, &store.Incident{ID: "p1.i1", Process: "p1", Token: 1, Node: "n", Kind: "job_failed", State: store.IncidentOpen, CreatedAt: t0})
	})
	at := t0.Add(time.Hour)
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.EndWork(c, "p1", 1, false, at) })
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.EndWork(c, "p1", 2, true, at) })
	for id, want := range map[string]string{"p1.t1": store.TaskCanceled, "p1.t2": store.TaskCompleted} {
		x, _ := s.Task(c, id)
		if x.State != want || !x.CompletedAt.Equal(at) {
			t.Errorf("task %s: %s at %v, want %s at %v", id, x.State, x.CompletedAt, want, at)
		}
	}
	for id, want := range map[string]string{"p1.j1": store.JobCanceled, "p1.j2": store.JobCompleted} {
		x, _ := s.Job(c, id)
		if x.State != want {
			t.Errorf("job %s: %s, want %s", id, x.State, want)
		}
	}
	i, _ := s.Incident(c, "p1.i1")
	if i.State != store.IncidentResolved || !i.ResolvedAt.Equal(at) {
		t.Errorf("incident %+v, want resolved", i)
	}
	// Ended work stays as it ended.
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.EndWork(c, "p1", 1, true, at.Add(time.Hour)) })
	if x, _ := s.Task(c, "p1.t1"); x.State != store.TaskCanceled || !x.CompletedAt.Equal(at) {
		t.Errorf("ended task changed: %+v", x)
	}
}

func testIncidents(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0), proc("p2", "p2", "", 0))
	update(t, s, func(c context.Context, tx store.Tx) error {
		for i, p := range []string{"p1", "p1", "p2"} {
			err := tx.PutIncident(c, &store.Incident{ID: fmt.Sprintf("%s.i%d", p, i), Process: p, Token: i, Node: "n", Definition: "d",
				Job: "j", Kind: "job_failed", Message: "boom", State: store.IncidentOpen, CreatedAt: t0})
			if err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(c context.Context, tx store.Tx) error {
		i, err := tx.Incident(c, "p1.i1")
		if err != nil {
			return err
		}
		i.State, i.ResolvedAt = store.IncidentResolved, t0.Add(time.Hour)
		return tx.PutIncident(c, i)
	})
	list := func(f store.IncidentFilter) string {
		got, err := s.Incidents(c, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range got {
			out = append(out, i.ID)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		f    store.IncidentFilter
		want string
	}{
		{store.IncidentFilter{}, "p1.i0 p1.i1 p2.i2"},
		{store.IncidentFilter{States: []string{store.IncidentOpen}}, "p1.i0 p2.i2"},
		{store.IncidentFilter{States: []string{store.IncidentResolved}}, "p1.i1"},
		{store.IncidentFilter{Process: "p2"}, "p2.i2"},
		{store.IncidentFilter{After: "p1.i0", Limit: 1}, "p1.i1"},
	} {
		if got := list(tc.f); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
	got, err := s.Incident(c, "p1.i1")
	if err != nil || got.Message != "boom" || got.Job != "j" || got.Rev != 2 || !got.ResolvedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("incident %+v, %v", got, err)
	}
}

func testRecordRows(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	update(t, s, func(c context.Context, tx store.Tx) error {
		if err := tx.PutAuditNotes(c, []store.AuditNote{{Process: "p1", Seq: 3, User: "alice", Detail: "claimed"}, {Process: "p1", Seq: 9, User: "bob"}}); err != nil {
			return err
		}
		if err := tx.PutAttachment(c, &store.Attachment{Process: "p1", Name: "Quote", URI: "", Cardinality: 1}); err != nil {
			return err
		}
		return tx.PutAttachment(c, &store.Attachment{Process: "p1", Name: "InitiatingAttachment", URI: "/some/doc.xml", Cardinality: 1})
	})
	update(t, s, func(c context.Context, tx store.Tx) error {
		if err := tx.PutAuditNotes(c, []store.AuditNote{{Process: "p1", Seq: 12, User: "carol", Detail: "ünïcode"}}); err != nil {
			return err
		}
		return tx.PutAttachment(c, &store.Attachment{Process: "p1", Name: "Quote", URI: "/quotes/1.pdf", Cardinality: 2})
	})
	notes, err := s.AuditNotes(c, "p1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.AuditNote{{Process: "p1", Seq: 3, User: "alice", Detail: "claimed"}, {Process: "p1", Seq: 9, User: "bob"}, {Process: "p1", Seq: 12, User: "carol", Detail: "ünïcode"}}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Fatalf("notes (-want +got):\n%s", diff)
	}
	if notes, _ = s.AuditNotes(c, "p1", 3, 1); len(notes) != 1 || notes[0].Seq != 9 {
		t.Fatalf("notes after 3, limit 1: %v", notes)
	}
	if notes, _ = s.AuditNotes(c, "p2", 0, 0); len(notes) != 0 {
		t.Fatalf("notes of another process: %v", notes)
	}
	atts, err := s.Attachments(c, "p1")
	if err != nil {
		t.Fatal(err)
	}
	wantAtt := []store.Attachment{{Process: "p1", Name: "InitiatingAttachment", URI: "/some/doc.xml", Cardinality: 1}, {Process: "p1", Name: "Quote", URI: "/quotes/1.pdf", Cardinality: 2}}
	if diff := cmp.Diff(wantAtt, atts); diff != "" {
		t.Fatalf("attachments (-want +got):\n%s", diff)
	}
}

func testSubscriptions(t *testing.T, s store.Store) {
	c := ctx(t)
	sub := &store.Subscription{Name: "orders", Definition: "order", Version: 2, Match: `"orders" in collections`, CreatedAt: t0}
	if err := s.PutSubscription(c, sub); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSubscription(c, &store.Subscription{Name: "orders", Definition: "x", Match: "true", CreatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second subscription named orders: %v, want ErrConflict", err)
	}
	if err := s.PutSubscription(c, &store.Subscription{Name: "all", Definition: "y", Match: "true", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Subscription(c, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sub, got, workCmp); diff != "" {
		t.Fatalf("subscription (-put +read):\n%s", diff)
	}
	list, err := s.Subscriptions(c)
	if err != nil || len(list) != 2 || list[0].Name != "all" || list[1].Name != "orders" {
		t.Fatalf("subscriptions %v, %v", list, err)
	}
	if err := s.DeleteSubscription(c, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSubscription(c, "orders"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting it again: %v, want ErrNotFound", err)
	}
	if _, err := s.Subscription(c, "orders"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted subscription: %v", err)
	}
}

func testWorkCounts(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	update(t, s, func(c context.Context, tx store.Tx) error {
		claimed := task("p1.t2", "p1", 2, 50, t0)
		claimed.State = store.TaskClaimed
		done := task("p1.t3", "p1", 3, 50, t0)
		done.State = store.TaskCompleted
		for _, x := range []*store.Task{task("p1.t1", "p1", 1, 50, t0), claimed, done} {
			if err := tx.PutTask(c, x); err != nil {
				return err
			}
		}
		failed := job("p1.j3", "p1", "pay", 6, t0)
		failed.State = store.JobFailed
		for _, j := range []*store.Job{job("p1.j1", "p1", "pay", 4, t0), job("p1.j2", "p1", "mail", 5, t0), failed} {
			if err := tx.PutJob(c, j); err != nil {
				return err
			}
		}
		return tx.PutIncident(c, &store.Incident{ID: "p1.i1", Process: "p1", Token: 6, Node: "n", Kind: "job_failed", State: store.IncidentOpen, CreatedAt: t0})
	})
	if _, err := s.ActivateJobs(c, store.Activation{Type: "pay", Worker: "w", Max: 5, Now: t0, LockFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	got, err := s.WorkCounts(c)
	if err != nil {
		t.Fatal(err)
	}
	want := &store.WorkCounts{
		Tasks:     map[string]int{store.TaskOpen: 1, store.TaskClaimed: 1},
		Jobs:      map[store.JobKey]int{{Type: "pay", State: store.JobLeased}: 1, {Type: "mail", State: store.JobOpen}: 1, {Type: "pay", State: store.JobFailed}: 1},
		Incidents: map[string]int{"job_failed": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("counts (-want +got):\n%s", diff)
	}
}

// A failed Update leaves none of its work rows behind.
func testFailedUpdateWork(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.PutTask(c, task("p1.t1", "p1", 1, 50, t0)) })
	boom := errors.New("boom")
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		x, err := tx.Task(c, "p1.t1")
		if err != nil {
			return err
		}
		x.State = store.TaskClaimed
		if err := tx.PutTask(c, x); err != nil {
			return err
		}
		if err := tx.PutJob(c, job("p1.j1", "p1", "t", 2, t0)); err != nil {
			return err
		}
		if err := tx.PutAuditNotes(c, []store.AuditNote{{Process: "p1", Seq: 1, User: "u"}}); err != nil {
			return err
		}
		if err := tx.PutAttachment(c, &store.Attachment{Process: "p1", Name: "a", URI: "u", Cardinality: 1}); err != nil {
			return err
		}
		if err := tx.EndWork(c, "p1", 1, false, t0); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update: %v", err)
	}
	if x, _ := s.Task(c, "p1.t1"); x.State != store.TaskOpen || x.Rev != 1 {
		t.Fatalf("task after a failed update: %+v", x)
	}
	if _, err := s.Job(c, "p1.j1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a failed update: %v", err)
	}
	if n, _ := s.AuditNotes(c, "p1", 0, 0); len(n) != 0 {
		t.Fatalf("notes of a failed update: %v", n)
	}
	if a, _ := s.Attachments(c, "p1"); len(a) != 0 {
		t.Fatalf("attachments of a failed update: %v", a)
	}
}
