package veena_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

var (
	alice = veena.Actor{User: "alice", Groups: []string{"sales"}}
	bob   = veena.Actor{User: "bob", Groups: []string{"sales"}}
	carol = veena.Actor{User: "carol", Groups: []string{"support"}}
)

func oneTask(t *testing.T, e *veena.Engine, f veena.TaskFilter) veena.Task {
	t.Helper()
	page, err := e.Tasks(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("%d tasks for %+v, want 1", len(page.Items), f)
	}
	return page.Items[0]
}

func oneJob(t *testing.T, e *veena.Engine, f veena.JobFilter) veena.Job {
	t.Helper()
	page, err := e.Jobs(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("%d jobs for %+v, want 1", len(page.Items), f)
	}
	return page.Items[0]
}

func activate(t *testing.T, e *veena.Engine, typ, worker string) []veena.Job {
	t.Helper()
	jobs, err := e.ActivateJobs(context.Background(), veena.ActivateRequest{Type: typ, Worker: worker, MaxJobs: 10, LockFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// A task for a group, claimed, saved, completed with an outcome; the job
// it leads to, leased and completed: on every backend, surviving a restart
// where the store is durable.
func TestTaskAndJobLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now})
		load(t, e, "approval")
		p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 70, "amount": 40}})

		// The inbox: by group, queue and "mine"; not for another group.
		task := oneTask(t, e, veena.TaskFilter{CandidateGroup: "sales"})
		if task.Label != "Review the order" || task.Priority != 70 || task.State != "open" || *task.Queue != "orders" ||
			task.Data["amount"].IntValue() != 40 || !task.DueAt.Equal(t0.AddDate(0, 0, 2)) {
			t.Fatalf("task %+v", task)
		}
		oneTask(t, e, veena.TaskFilter{Mine: true, Actor: alice})
		if page, _ := e.Tasks(ctx, veena.TaskFilter{Mine: true, Actor: carol}); len(page.Items) != 0 {
			t.Fatalf("carol's inbox holds %d tasks", len(page.Items))
		}

		// Claim: alice wins, claiming again changes nothing, bob is refused.
		got, err := e.ClaimTask(ctx, task.ID, alice, "")
		if err != nil || got.State != "claimed" || *got.ClaimedBy != "alice" {
			t.Fatalf("claim: %+v, %v", got, err)
		}
		if _, err := e.ClaimTask(ctx, task.ID, alice, ""); err != nil {
			t.Fatalf("claiming one's own task again: %v", err)
		}
		_, err = e.ClaimTask(ctx, task.ID, bob, "")
		wantCode(t, err, "task_claimed")
		_, err = e.ReleaseTask(ctx, task.ID, bob, "")
		wantCode(t, err, "task_claimed")
		_, err = e.SaveTask(ctx, task.ID, veena.SaveTaskRequest{Actor: bob, Data: map[string]any{"x": 1}})
		wantCode(t, err, "task_claimed")
		_, err = e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: bob})
		wantCode(t, err, "task_claimed")

		// Save for later keeps the lock, and the data.
		got, err = e.SaveTask(ctx, task.ID, veena.SaveTaskRequest{Actor: alice, Data: map[string]any{"comment": "looks fine"}})
		if err != nil || got.State != "claimed" || got.Data["comment"].Str() != "looks fine" {
			t.Fatalf("save: %+v, %v", got, err)
		}
		if b.durable {
			e.Close()
			e = open(t, mk(), veena.Options{Clock: clk.Now})
		}
		if got, _ = e.Task(ctx, task.ID); got.State != "claimed" || *got.ClaimedBy != "alice" || got.Data["comment"].Str() != "looks fine" {
			t.Fatalf("task after a restart: %+v", got)
		}
		_, err = e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "maybe"})
		wantCode(t, err, "invalid_argument")
		clk.Advance(time.Minute)
		// Meanwhile the process env changes elsewhere: completing the task
		// merges only what the task changed.
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"amount": 45}, ""); err != nil {
			t.Fatal(err)
		}
		proc, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve", Data: map[string]any{"approved": true}})
		if err != nil {
			t.Fatal(err)
		}
		if proc.Env["amount"].IntValue() != 45 || proc.Env["comment"].Str() != "looks fine" || !proc.Env["approved"].BoolValue() {
			t.Fatalf("process env after the task %v", proc.Env)
		}
		if got, _ = e.Task(ctx, task.ID); got.State != "completed" || *got.CompletedBy != "alice" || !got.CompletedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("completed task %+v", got)
		}
		_, err = e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice})
		wantCode(t, err, "task_not_open")
		_, err = e.ClaimTask(ctx, task.ID, alice, "")
		wantCode(t, err, "task_not_open")

		// The job: leased to w1, refused to w2, completed by w1 with a result.
		job := oneJob(t, e, veena.JobFilter{Process: p.ID})
		if job.Type != "charge-card" || job.State != "open" || job.Retries != 2 || job.Headers["currency"] != "EUR" || !job.Env["approved"].BoolValue() {
			t.Fatalf("job %+v", job)
		}
		jobs := activate(t, e, "charge-card", "w1")
		if len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].State != "leased" || *jobs[0].Worker != "w1" {
			t.Fatalf("activated %+v", jobs)
		}
		if more := activate(t, e, "charge-card", "w2"); len(more) != 0 {
			t.Fatalf("a leased job was activated again: %+v", more)
		}
		_, err = e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w2"})
		wantCode(t, err, "job_not_leased")
		proc, err = e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w1", Result: "declined", Env: map[string]any{"reason": "expired card"}})
		if err != nil {
			t.Fatal(err)
		}
		if proc.State != "completed" || proc.Env["reason"].Str() != "expired card" {
			t.Fatalf("process after the job: %+v", proc)
		}
		if ids := active(t, e, p.ID, "declined"); len(ids) != 0 {
			t.Fatalf("declined still active: %v", ids)
		}
		if got, _ := e.Job(ctx, job.ID); got.State != "completed" {
			t.Fatalf("job after completion %+v", got)
		}
		_, err = e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w1"})
		wantCode(t, err, "job_not_leased")

		// The events of the work layer are in the log.
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var work []string
		for _, ev := range evs {
			if strings.HasPrefix(ev.Type, "TASK_") || strings.HasPrefix(ev.Type, "JOB_") || ev.Type == "ENV_CHANGED" {
				work = append(work, ev.Type)
			}
		}
		if got, want := strings.Join(work, " "), "TASK_CREATED TASK_CLAIMED TASK_SAVED ENV_CHANGED TASK_COMPLETED JOB_CREATED JOB_COMPLETED"; got != want {
			t.Fatalf("work events %s, want %s", got, want)
		}
		e.Close()
	})
}

// A lease that runs out makes the job available again; the worker whose
// lease was taken over is refused.
func TestLeaseExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		e := open(t, b.place(t)(), veena.Options{Clock: clk.Now})
		defer e.Close()
		load(t, e, "approval")
		p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
		task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
		if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
			t.Fatal(err)
		}
		job := activate(t, e, "charge-card", "w1")[0]
		clk.Advance(30 * time.Second)
		if more := activate(t, e, "charge-card", "w2"); len(more) != 0 {
			t.Fatal("activated before the lease ran out")
		}
		clk.Advance(31 * time.Second)
		// The lease ran out but nobody took the job: w1 may still finish.
		// Here w2 takes it over first.
		taken := activate(t, e, "charge-card", "w2")
		if len(taken) != 1 || taken[0].ID != job.ID || *taken[0].Worker != "w2" {
			t.Fatalf("take-over: %+v", taken)
		}
		_, err := e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w1"})
		wantCode(t, err, "job_not_leased")
		if _, err := e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w2"}); err != nil {
			t.Fatal(err)
		}
	})
}

// Failures use up retries with a back-off; at zero an incident opens;
// resolving it offers the job again.
func TestJobFailureAndIncident(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		e := open(t, b.place(t)(), veena.Options{Clock: clk.Now})
		defer e.Close()
		load(t, e, "approval")
		p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
		task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
		if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
			t.Fatal(err)
		}
		job := activate(t, e, "charge-card", "w1")[0]
		got, err := e.FailJob(ctx, job.ID, veena.FailJobRequest{Worker: "w1", RetryIn: 30 * time.Second, Message: "gateway timeout"})
		if err != nil {
			t.Fatal(err)
		}
		if got.State != "open" || got.Retries != 1 || *got.ErrorMessage != "gateway timeout" || !got.DueAt.Equal(t0.Add(30*time.Second)) {
			t.Fatalf("failed once: %+v", got)
		}
		if jobs := activate(t, e, "charge-card", "w1"); len(jobs) != 0 {
			t.Fatal("a job was offered before its back-off ended")
		}
		_, err = e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w1"})
		wantCode(t, err, "job_not_leased")
		clk.Advance(30 * time.Second)
		if jobs := activate(t, e, "charge-card", "w1"); len(jobs) != 1 {
			t.Fatal("the job was not offered after its back-off")
		}
		got, err = e.FailJob(ctx, job.ID, veena.FailJobRequest{Worker: "w1", Message: "card service down"})
		if err != nil || got.State != "failed" || got.Retries != 0 {
			t.Fatalf("failed twice: %+v, %v", got, err)
		}
		page, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("incidents %+v, %v", page, err)
		}
		inc := page.Items[0]
		if inc.Kind != "job_failed" || *inc.Job != job.ID || inc.Message != "card service down" || inc.State != "open" || inc.Node != "charge" {
			t.Fatalf("incident %+v", inc)
		}
		// Fix the data, resolve with two retries: the job is offered again
		// with the fixed data.
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"card": "4111"}, ""); err != nil {
			t.Fatal(err)
		}
		two := 2
		res, err := e.ResolveIncident(ctx, inc.ID, veena.ResolveIncidentRequest{Actor: carol, Retries: &two})
		if err != nil || res.State != "resolved" || res.ResolvedAt == nil {
			t.Fatalf("resolve: %+v, %v", res, err)
		}
		_, err = e.ResolveIncident(ctx, inc.ID, veena.ResolveIncidentRequest{Actor: carol})
		wantCode(t, err, "conflict")
		again := activate(t, e, "charge-card", "w3")
		if len(again) != 1 || again[0].Retries != 2 || again[0].Env["card"].Str() != "4111" {
			t.Fatalf("after resolution: %+v", again)
		}
		if _, err := e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w3"}); err != nil {
			t.Fatal(err)
		}
	})
}

// A business error nobody catches opens an incident; resolving it runs the
// step again: a new job.
func TestUncaughtJobError(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
	task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
	if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
		t.Fatal(err)
	}
	job := activate(t, e, "charge-card", "w1")[0]
	if _, err := e.ThrowJobError(ctx, job.ID, veena.JobErrorRequest{Worker: "w1", Code: "NO_FUNDS", Message: "insufficient funds"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Job(ctx, job.ID); got.State != "error_thrown" {
		t.Fatalf("job %+v", got)
	}
	inc := (func() veena.Incident {
		page, _ := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
		if len(page.Items) != 1 {
			t.Fatalf("incidents %+v", page.Items)
		}
		return page.Items[0]
	})()
	if inc.Kind != "uncaught_error" || !strings.Contains(inc.Message, "NO_FUNDS") {
		t.Fatalf("incident %+v", inc)
	}
	if _, err := e.ResolveIncident(ctx, inc.ID, veena.ResolveIncidentRequest{Actor: carol}); err != nil {
		t.Fatal(err)
	}
	jobs := activate(t, e, "charge-card", "w2")
	if len(jobs) != 1 || jobs[0].ID == job.ID {
		t.Fatalf("after resolution: %+v (old job %s)", jobs, job.ID)
	}
}

// Cancelling the process, backtracking and completing the token directly
// end the task in the same step.
func TestTokenEndEndsTask(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	for _, c := range []struct {
		name, state string
		act         func(p *veena.Process, task veena.Task) error
	}{
		{"cancel", "canceled", func(p *veena.Process, task veena.Task) error {
			_, err := e.CancelProcess(ctx, p.ID, "")
			return err
		}},
		{"complete the token", "completed", func(p *veena.Process, task veena.Task) error {
			_, err := e.CompleteToken(ctx, task.NodeToken, veena.CompleteRequest{Arcs: []*string{strp("reject")}})
			return err
		}},
		{"backtrack", "canceled", func(p *veena.Process, task veena.Task) error {
			h, err := e.Tokens(ctx, p.ID)
			if err != nil {
				return err
			}
			_, err = e.Backtrack(ctx, h.NodeTokens[0].ID, "")
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
			task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
			if _, err := e.ClaimTask(ctx, task.ID, alice, ""); err != nil {
				t.Fatal(err)
			}
			if err := c.act(p, task); err != nil {
				t.Fatal(err)
			}
			got, _ := e.Task(ctx, task.ID)
			if got.State != c.state || got.CompletedAt == nil {
				t.Fatalf("task %s, want %s", got.State, c.state)
			}
			_, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice})
			wantCode(t, err, "task_not_open")
		})
	}
}

// Many users claim one task at once: exactly one wins, every other one is
// refused with task_claimed, on every backend.
func TestClaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "approval")
		for round := range 5 {
			p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
			task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
			winners := claimAll(t, task.ID, 12, func(user string) error {
				_, err := e.ClaimTask(ctx, task.ID, veena.Actor{User: user}, "")
				return err
			})
			got, _ := e.Task(ctx, task.ID)
			if len(winners) != 1 || *got.ClaimedBy != winners[0] {
				t.Fatalf("round %d: winners %v, task held by %v", round, winners, got.ClaimedBy)
			}
		}
	})
}

// claimAll makes n users claim at once and returns the winners; every
// loser must have been refused with task_claimed.
func claimAll(t *testing.T, task string, n int, claim func(user string) error) []string {
	t.Helper()
	var mu sync.Mutex
	var winners []string
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("user%02d", i)
			<-startLine
			err := claim(user)
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, user)
				mu.Unlock()
			case veena.Code(err) != "task_claimed":
				errs <- fmt.Errorf("%s: %w", user, err)
			}
		}()
	}
	close(startLine)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return winners
}

// Two engines on one PostgreSQL database: claims race across them, and
// workers of both never lease one job twice; every job completes once.
func TestTwoEnginesWork(t *testing.T) {
	var pg backend
	for _, b := range backends() {
		if b.name == "postgres" {
			pg = b
		}
	}
	mk := pg.place(t)
	ctx := context.Background()
	e1 := open(t, mk(), veena.Options{})
	defer e1.Close()
	load(t, e1, "approval")
	e2 := open(t, mk(), veena.Options{})
	defer e2.Close()
	engines := []*veena.Engine{e1, e2}
	for round := range 4 {
		p := start(t, e1, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
		task := oneTask(t, e2, veena.TaskFilter{Process: p.ID})
		var k atomic.Int32
		winners := claimAll(t, task.ID, 10, func(user string) error {
			_, err := engines[k.Add(1)%2].ClaimTask(ctx, task.ID, veena.Actor{User: user}, "")
			return err
		})
		if len(winners) != 1 {
			t.Fatalf("round %d: winners %v", round, winners)
		}
		if _, err := e2.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: veena.Actor{User: winners[0]}, Outcome: "approve"}); err != nil {
			t.Fatal(err)
		}
	}
	// Four jobs wait; eight workers on two engines take them.
	var mu sync.Mutex
	done := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := engines[w%2]
			worker := fmt.Sprint("w", w)
			jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "charge-card", Worker: worker, MaxJobs: 1, LockFor: time.Minute})
			if err != nil {
				errs <- err
				return
			}
			for _, j := range jobs {
				mu.Lock()
				if prev, ok := done[j.ID]; ok {
					errs <- fmt.Errorf("job %s leased to %s and %s", j.ID, prev, worker)
				}
				done[j.ID] = worker
				mu.Unlock()
				if _, err := e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: worker}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(done) != 4 {
		t.Fatalf("%d of 4 jobs done: %v", len(done), done)
	}
	page, _ := e1.Jobs(ctx, veena.JobFilter{States: []string{"completed"}})
	if len(page.Items) != 4 {
		t.Fatalf("%d completed jobs", len(page.Items))
	}
}

// An activation that waits is woken by a job offered meanwhile.
func TestActivationWaits(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	got := make(chan []veena.Job, 1)
	go func() {
		jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "charge-card", Worker: "w", Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- jobs
	}()
	time.Sleep(50 * time.Millisecond)
	p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
	task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
	began := time.Now()
	if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
		t.Fatal(err)
	}
	select {
	case jobs := <-got:
		if len(jobs) != 1 {
			t.Fatalf("woken with %d jobs", len(jobs))
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("woken after %v", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting activation was not woken")
	}
	// A wait with nothing to find ends empty at its deadline.
	jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "none", Worker: "w", Wait: 100 * time.Millisecond})
	if err != nil || len(jobs) != 0 {
		t.Fatalf("%v, %v", jobs, err)
	}
	_, err = e.ActivateJobs(ctx, veena.ActivateRequest{Worker: "w"})
	wantCode(t, err, "invalid_argument")
}

// hangUpStore runs a callback after each job activation (a caller hanging
// up while its jobs were leased).
type hangUpStore struct {
	store.Store
	after func()
}

func (s hangUpStore) ActivateJobs(ctx context.Context, a store.Activation) ([]*store.Job, error) {
	jobs, err := s.Store.ActivateJobs(ctx, a)
	s.after()
	return jobs, err
}

// An activation whose caller went away while it leased jobs (a worker
// stopping, a long poll whose client hung up) offers them again at once
// instead of holding them to the end of the lease.
func TestActivationForNobodyOffersAgain(t *testing.T) {
	ctx := context.Background()
	actx, hangUp := context.WithCancel(ctx)
	var once sync.Once
	e := open(t, hangUpStore{memstore.New(), func() { once.Do(hangUp) }}, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
	task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
	if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := e.ActivateJobs(actx, veena.ActivateRequest{Type: "charge-card", Worker: "gone", Wait: time.Second})
	if !errors.Is(err, context.Canceled) || len(jobs) != 0 {
		t.Fatalf("activation for a caller who left: %v, %v", jobs, err)
	}
	jobs, err = e.ActivateJobs(ctx, veena.ActivateRequest{Type: "charge-card", Worker: "w2"})
	if err != nil || len(jobs) != 1 || jobs[0].Worker == nil || *jobs[0].Worker != "w2" {
		t.Fatalf("the job was not offered again: %+v, %v", jobs, err)
	}
	if _, err := e.CompleteJob(ctx, jobs[0].ID, veena.CompleteJobRequest{Worker: "w2"}); err != nil {
		t.Fatal(err)
	}
	if q, _ := e.Process(ctx, p.ID); q.State != "completed" {
		t.Fatalf("process %s", q.State)
	}
}

// Commands on work items that do not exist, and bad arguments.
func TestWorkRefusals(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
	task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
	for _, id := range []string{"nope", p.ID + ".t999", p.ID + ".x3", "unknown.t3"} {
		_, err := e.ClaimTask(ctx, id, alice, "")
		wantCode(t, err, "not_found")
		_, err = e.Task(ctx, id)
		wantCode(t, err, "not_found")
	}
	_, err := e.ClaimTask(ctx, task.ID, veena.Actor{}, "")
	wantCode(t, err, "invalid_argument")
	_, err = e.CompleteJob(ctx, p.ID+".j1", veena.CompleteJobRequest{Worker: "w"})
	wantCode(t, err, "not_found")
	_, err = e.CompleteJob(ctx, p.ID+".j1", veena.CompleteJobRequest{})
	wantCode(t, err, "invalid_argument")
	_, err = e.ResolveIncident(ctx, p.ID+".i4", veena.ResolveIncidentRequest{})
	wantCode(t, err, "not_found")
	_, err = e.Tasks(ctx, veena.TaskFilter{States: []string{"bogus"}})
	wantCode(t, err, "invalid_argument")
	_, err = e.Tasks(ctx, veena.TaskFilter{After: "%%%"})
	wantCode(t, err, "invalid_argument")
	// The idempotency key makes a retried completion answer the first result.
	p1, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "reject", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "reject", IdempotencyKey: "k1"})
	if err != nil || p2.State != p1.State || p2.UpdatedAt != p1.UpdatedAt {
		t.Fatalf("retry: %+v, %v", p2, err)
	}
	_, err = e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice})
	if !errors.Is(err, veena.ErrTaskNotOpen) {
		t.Fatalf("completing again: %v", err)
	}
}
