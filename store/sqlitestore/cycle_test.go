package sqlitestore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// statementsOf runs fn on its own and returns the statements the writer ran
// for it (BEGIN and COMMIT included).
func statementsOf(t *testing.T, fn func() error) []string {
	t.Helper()
	var qs []string
	stop := sqlitestore.TraceStatements(func(q string) { qs = append(qs, strings.Join(strings.Fields(q), " ")) })
	err := fn()
	stop()
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestJobCycleStatements counts what a job cycle (activate + complete)
// costs the SQLite writer in statements, beside two plain completions of
// a waiting token: the job cycle should cost no more.
func TestJobCycleStatements(t *testing.T) {
	ctx := context.Background()
	open := func(workload string) *veena.Engine {
		st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "cycle.db"), sqlitestore.Options{Synchronous: "NORMAL", MaxBatch: 1})
		if err != nil {
			t.Fatal(err)
		}
		e, err := bench.OpenEngine(ctx, st, workload)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}

	// Two plain completions.
	w := open("wait2")
	var p *veena.Process
	start := func(e *veena.Engine, def string) error {
		var err error
		p, err = e.StartProcess(ctx, veena.StartRequest{Definition: def, Env: map[string]any{"client": "bench"}})
		return err
	}
	if err := start(w, "bench-wait2"); err != nil {
		t.Fatal(err)
	}
	var plain []string
	for _, n := range []string{".n2", ".n3"} {
		plain = append(plain, statementsOf(t, func() error {
			_, err := w.CompleteToken(ctx, p.ID+n, veena.CompleteRequest{})
			return err
		})...)
	}

	// A job cycle.
	j := open("job")
	if err := start(j, "bench-job"); err != nil {
		t.Fatal(err)
	}
	var jobs []veena.Job
	activate := statementsOf(t, func() error {
		var err error
		jobs, err = j.ActivateJobs(ctx, veena.ActivateRequest{Type: "bench-job", Worker: "w", MaxJobs: 1, LockFor: time.Minute})
		return err
	})
	if len(jobs) != 1 {
		t.Fatalf("activated %d jobs, want 1", len(jobs))
	}
	complete := statementsOf(t, func() error {
		q, err := j.CompleteJob(ctx, jobs[0].ID, veena.CompleteJobRequest{Worker: "w", Env: map[string]any{"done": true}})
		if err == nil && q.State != "completed" {
			t.Errorf("process is %s after its job", q.State)
		}
		return err
	})
	for _, x := range []struct {
		name string
		qs   []string
	}{{"two completions", plain}, {"activation", activate}, {"job completion", complete}} {
		t.Logf("%s: %d statements", x.name, len(x.qs))
		for _, q := range x.qs {
			t.Logf("    %.110s", q)
		}
	}
	if cycle := len(activate) + len(complete); cycle > len(plain) {
		t.Errorf("a job cycle runs %d statements, two completions %d", cycle, len(plain))
	}
}
