package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// manyTimers is a store holding n processes waiting on a timer each, due
// one second apart from t0 on.
func manyTimers(tb testing.TB, n int, t0 time.Time) *memstore.Store {
	s := memstore.New()
	update(tb, s, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			id := fmt.Sprintf("p%06d", i)
			if err := tx.ReplaceTimers(ctx, id, []store.Timer{{Process: id, Root: id, Token: 1, DueAt: t0.Add(time.Duration(i) * time.Second)}}); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// TestClaimTimersInDueOrder claims a store's timers in batches as they
// fall due, with leases that end and timers replaced in between: every
// claim returns what is due and not leased, earliest first, and nothing
// twice while its lease holds.
func TestClaimTimersInDueOrder(t *testing.T) {
	ctx := context.Background()
	s := manyTimers(t, 1000, t0)
	next, err := s.NextTimer(ctx)
	if err != nil || !next.Equal(t0) {
		t.Fatalf("NextTimer = %v, %v; want %v", next, err, t0)
	}
	// 100 are due; a claim of 30 takes the earliest 30, the next the 30 after.
	now := t0.Add(99 * time.Second)
	a, _ := s.ClaimTimers(ctx, now, time.Minute, 30)
	b, _ := s.ClaimTimers(ctx, now, time.Minute, 30)
	if len(a) != 30 || len(b) != 30 || a[0].Process != "p000000" || a[29].Process != "p000029" || b[0].Process != "p000030" {
		t.Fatalf("claims: %d %d, %v .. %v, %v", len(a), len(b), a[0], a[len(a)-1], b[0])
	}
	// The leased ones stay the earliest timers, and are not offered again
	// before their lease ends.
	if next, _ := s.NextTimer(ctx); !next.Equal(t0) {
		t.Fatalf("NextTimer with leased timers = %v", next)
	}
	rest, _ := s.ClaimTimers(ctx, now, time.Minute, 0)
	if len(rest) != 40 || rest[0].Process != "p000060" || rest[39].Process != "p000099" {
		t.Fatalf("the rest: %d, %v .. %v", len(rest), rest[0], rest[len(rest)-1])
	}
	// 59 more fall due (p000100..p000158) while the 100 leases hold.
	if more, _ := s.ClaimTimers(ctx, now.Add(59*time.Second), time.Minute, 0); len(more) != 59 || more[0].Process != "p000100" {
		t.Fatalf("a minute less a second on: %d claimed", len(more))
	}
	// p000001 fires: its process now waits on a later timer; p000002
	// fails and is retried in an hour.
	err = s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.ReplaceTimers(ctx, "p000001", []store.Timer{{Process: "p000001", Root: "p000001", Token: 7, DueAt: t0.Add(time.Hour)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FailTimer(ctx, store.TimerFailure{Process: "p000002", Token: 1, DueAt: t0.Add(2 * time.Second), Message: "no", At: now}, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The first leases end: the 98 timers left of them come back, earliest
	// first, with the two that fell due since (p000159, p000160).
	again, _ := s.ClaimTimers(ctx, now.Add(61*time.Second), time.Minute, 0)
	if len(again) != 98+2 || again[0].Process != "p000000" || again[1].Process != "p000003" {
		t.Fatalf("after the leases: %d, %v, %v", len(again), again[0], again[1])
	}
	for _, x := range again {
		if x.Process == "p000001" || x.Process == "p000002" {
			t.Fatalf("%v claimed: replaced or failed", x)
		}
	}
	// Two hours on, every lease has ended and every timer is due.
	late, _ := s.ClaimTimers(ctx, t0.Add(2*time.Hour), time.Minute, 0)
	found := map[string]bool{}
	for _, x := range late {
		found[x.Process] = true
	}
	if len(late) != 1000 || !found["p000001"] || !found["p000002"] {
		t.Fatalf("two hours on: %d claimed, replaced %v, failed %v", len(late), found["p000001"], found["p000002"])
	}
}

// BenchmarkPollManyTimers is what the engine's timer loop asks its store
// at each poll (a claim, then the next due time) while many processes
// wait on timers that are not due: it should not cost more with more of
// them.
func BenchmarkPollManyTimers(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := manyTimers(b, n, t0.Add(time.Hour))
			b.ResetTimer()
			for b.Loop() {
				if ts, err := s.ClaimTimers(ctx, t0, time.Minute, 100); err != nil || len(ts) != 0 {
					b.Fatal(len(ts), err)
				}
				if _, err := s.NextTimer(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUndoneReplacementKeepsClaimsMadeMeanwhile undoes an update that
// replaced a timer which the timer loop claimed in between: the timer
// that comes back keeps the later lease, and is not offered before it
// ends.
func TestUndoneReplacementKeepsClaimsMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	s := manyTimers(t, 1, t0)
	if ts, _ := s.ClaimTimers(ctx, t0, time.Minute, 0); len(ts) != 1 {
		t.Fatalf("first claim: %v", ts)
	}
	undone := errors.New("undone")
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.ReplaceTimers(ctx, "p000000", []store.Timer{{Process: "p000000", Root: "p000000", Token: 1, DueAt: t0}}); err != nil {
			return err
		}
		if ts, _ := s.ClaimTimers(ctx, t0.Add(time.Second), time.Hour, 0); len(ts) != 1 {
			t.Errorf("claim in between: %v", ts)
		}
		return undone
	})
	if !errors.Is(err, undone) {
		t.Fatal(err)
	}
	if ts, _ := s.ClaimTimers(ctx, t0.Add(2*time.Minute), time.Minute, 0); len(ts) != 0 {
		t.Errorf("claimed within the lease taken in between: %v", ts)
	}
	if ts, _ := s.ClaimTimers(ctx, t0.Add(2*time.Hour), time.Minute, 0); len(ts) != 1 {
		t.Errorf("claimed after it: %v", ts)
	}
}
