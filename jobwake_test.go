package veena_test

import (
	"context"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store/pgstore"
)

const wakeJobXML = `<?xml version="1.0"?>
<process-definition name="wake-job" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="work"/></node>
  <node name="work" type="wait"><arc to="end"/><custom><job type="wake"/></custom></node>
  <node name="end"/>
</process-definition>
`

// TestJobWakeAcrossEngines: two engines on one PostgreSQL database; a job
// that engine A creates wakes an activation long-polling on engine B at
// once (B hears A's notice), not at B's next look, which is set far off.
func TestJobWakeAcrossEngines(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	engine := func() *veena.Engine {
		st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		e := open(t, st, veena.Options{})
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := engine(), engine()
	if _, _, err := a.LoadDefinition(ctx, "wake-job.wf.xml", []byte(wakeJobXML), ""); err != nil {
		t.Fatal(err)
	}
	const poll = 20 * time.Second // B's own looks: far beyond the test's patience
	veena.SetJobPoll(b, poll)

	// B's first wait starts its listening.
	if jobs, err := b.ActivateJobs(ctx, veena.ActivateRequest{Type: "wake", Worker: "b", Wait: time.Millisecond}); err != nil || len(jobs) != 0 {
		t.Fatalf("first activation: %v jobs, err %v; want none", len(jobs), err)
	}
	for deadline := time.Now().Add(10 * time.Second); !veena.ListeningForJobs(b); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("engine B does not listen for job notices after 10s")
		}
	}

	for round := range 3 {
		type result struct {
			jobs []veena.Job
			err  error
			at   time.Time
		}
		got := make(chan result, 1)
		go func() {
			jobs, err := b.ActivateJobs(ctx, veena.ActivateRequest{Type: "wake", Worker: "b", Wait: 2 * poll})
			got <- result{jobs, err, time.Now()}
		}()
		for deadline := time.Now().Add(10 * time.Second); veena.JobWaiters(b, "wake") == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("B's activation does not wait")
			}
		}
		// Let B's activation finish its first look before the job exists.
		time.Sleep(50 * time.Millisecond)
		p := start(t, a, veena.StartRequest{Definition: "wake-job"})
		created := time.Now()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.jobs) != 1 || r.jobs[0].Process != p.ID {
				t.Fatalf("round %d: B got %v, want the job of %s", round, r.jobs, p.ID)
			}
			wake := r.at.Sub(created)
			t.Logf("round %d: B leased A's job %v after it was created", round, wake)
			if wake > poll/4 {
				t.Errorf("round %d: B woke %v after A created the job: no sooner than its own look", round, wake)
			}
			if _, err := b.CompleteJob(ctx, r.jobs[0].ID, veena.CompleteJobRequest{Worker: "b"}); err != nil {
				t.Fatal(err)
			}
		case <-time.After(poll / 2):
			t.Fatalf("round %d: B's activation was not woken within %v of A creating the job", round, poll/2)
		}
	}
}
