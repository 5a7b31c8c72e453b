package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// BenchmarkActivateJobs leases and completes one job at a time among many
// waiting: 100,000 jobs of other types and 10,000 of the type asked for,
// of which each round leases the oldest and then completes it (so the
// number waiting stays the same); only the activations are timed. Their
// cost should not grow with the jobs waiting.
func BenchmarkActivateJobs(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := memstore.New()
			t0 := time.Unix(1700000000, 0).UTC()
			put := func(i int, typ string) {
				err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
					return tx.PutJob(ctx, &store.Job{ID: fmt.Sprintf("p%07d.j1", i), Process: fmt.Sprintf("p%07d", i), Type: typ,
						State: store.JobOpen, Headers: []byte("{}"), Env: []byte("{}"), DueAt: t0.Add(time.Duration(i)), CreatedAt: t0})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				put(i, "other")
			}
			for i := range n / 10 {
				put(n+i, "wanted")
			}
			next := n + n/10
			now := t0.Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				jobs, err := s.ActivateJobs(ctx, store.Activation{Type: "wanted", Worker: "w", Max: 1, Now: now, LockFor: time.Minute})
				if err != nil || len(jobs) != 1 {
					b.Fatalf("activated %d jobs, err %v", len(jobs), err)
				}
				b.StopTimer()
				j := jobs[0]
				j.State = store.JobCompleted
				if err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error { x := *j; return tx.PutJob(ctx, &x) }); err != nil {
					b.Fatal(err)
				}
				put(next, "wanted")
				next++
				b.StartTimer()
			}
		})
	}
}
