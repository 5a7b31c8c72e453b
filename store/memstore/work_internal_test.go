package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
)

// TestJobQueuesStaySmall: jobs leased for an hour and completed at once
// leave their queue entries behind (an entry is checked when it comes up),
// but sweeps keep the queues at about twice the entries still true, and
// the jobs still open come out of a swept queue in due order.
func TestJobQueuesStaySmall(t *testing.T) {
	ctx := context.Background()
	s := New()
	t0 := time.Unix(1700000000, 0).UTC()
	put := func(j *store.Job) {
		t.Helper()
		if err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error { x := *j; return tx.PutJob(ctx, &x) }); err != nil {
			t.Fatal(err)
		}
	}
	job := func(i int, due time.Time) *store.Job {
		return &store.Job{ID: fmt.Sprintf("p%05d.j1", i), Process: fmt.Sprintf("p%05d", i), Type: "t",
			State: store.JobOpen, Headers: []byte("{}"), Env: []byte("{}"), DueAt: due, CreatedAt: t0}
	}
	// Ten jobs stay open, due in the future in the reverse order of their ids.
	for i := range 10 {
		put(job(100000+i, t0.Add(time.Duration(20-i)*time.Hour)))
	}
	const n = 3000
	for i := range n {
		put(job(i, t0))
		jobs, err := s.ActivateJobs(ctx, store.Activation{Type: "t", Worker: "w", Max: 1, Now: t0, LockFor: time.Hour})
		if err != nil || len(jobs) != 1 || jobs[0].ID != fmt.Sprintf("p%05d.j1", i) {
			t.Fatalf("round %d: activated %+v, %v", i, jobs, err)
		}
		j := jobs[0]
		j.State = store.JobCompleted
		put(j)
	}
	w := s.rows()
	if l := len(w.avail["t"].h); l > 2*10+sweepSlack {
		t.Errorf("the queue of type t holds %d entries for 10 open jobs", l)
	}
	if l := len(w.leases.h); l > sweepSlack {
		t.Errorf("the leases hold %d entries, no job leased", l)
	}
	// Past every lease and due time, the open jobs come out soonest first.
	jobs, err := s.ActivateJobs(ctx, store.Activation{Type: "t", Worker: "w", Max: 100, Now: t0.Add(30 * time.Hour), LockFor: time.Hour})
	if err != nil || len(jobs) != 10 {
		t.Fatalf("activated %d jobs at the end, %v; want the 10 open", len(jobs), err)
	}
	for k, j := range jobs {
		if want := fmt.Sprintf("p%05d.j1", 100009-k); j.ID != want {
			t.Errorf("job %d activated is %s, want %s", k, j.ID, want)
		}
	}
}
