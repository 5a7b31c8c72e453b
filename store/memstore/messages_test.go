package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// waitingFor is a store with n processes waiting for message "paid" with
// their own key and for signal "stop".
func waitingFor(tb testing.TB, n int) *memstore.Store {
	s := memstore.New()
	ctx := context.Background()
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			id := fmt.Sprintf("p%06d", i)
			cs := []store.Correlation{
				{Process: id, Root: id, Token: 2, Kind: "message", Name: "paid", Key: fmt.Sprintf("order-%d", i)},
				{Process: id, Root: id, Token: 3, Kind: "signal", Name: "stop"},
			}
			if err := tx.ReplaceCorrelations(ctx, id, cs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestCorrelationsFollowReplacements replaces and undoes processes'
// correlations and checks what a message or a signal finds.
func TestCorrelationsFollowReplacements(t *testing.T) {
	ctx := context.Background()
	s := waitingFor(t, 5)
	find := func(kind, name, key string) string {
		t.Helper()
		cs, err := s.Correlations(ctx, kind, name, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, c := range cs {
			out += fmt.Sprintf("%s/%d ", c.Process, c.Token)
		}
		return out
	}
	waiting := func(name, key string) bool {
		t.Helper()
		var w bool
		if err := s.Update(ctx, func(ctx context.Context, tx store.Tx) (err error) { w, err = tx.Waiting(ctx, name, key); return }); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if got := find("message", "paid", "order-3"); got != "p000003/2 " {
		t.Errorf("message paid order-3: %q", got)
	}
	if got := find("signal", "stop", ""); got != "p000000/3 p000001/3 p000002/3 p000003/3 p000004/3 " {
		t.Errorf("signal stop: %q", got)
	}
	if got := find("message", "paid", "order-9"); got != "" || waiting("paid", "order-9") || !waiting("paid", "order-4") {
		t.Errorf("message paid order-9: %q", got)
	}
	// p000003 moves on to wait for "shipped"; p000004 waits no more; an
	// update that would have ended p000001's waits is undone.
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.ReplaceCorrelations(ctx, "p000003", []store.Correlation{{Process: "p000003", Root: "p000003", Token: 8, Kind: "message", Name: "shipped", Key: "order-3"}}); err != nil {
			return err
		}
		return tx.ReplaceCorrelations(ctx, "p000004", nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.ReplaceCorrelations(ctx, "p000001", nil); err != nil {
			return err
		}
		return fmt.Errorf("undone")
	})
	if err == nil {
		t.Fatal("the failing update succeeded")
	}
	if got := find("message", "paid", "order-3") + find("message", "paid", "order-4"); got != "" {
		t.Errorf("replaced and ended waits still found: %q", got)
	}
	if got := find("message", "shipped", "order-3"); got != "p000003/8 " || !waiting("shipped", "order-3") || waiting("paid", "order-3") {
		t.Errorf("message shipped order-3: %q", got)
	}
	if got := find("signal", "stop", ""); got != "p000000/3 p000001/3 p000002/3 " {
		t.Errorf("signal stop after the replacements: %q", got)
	}
	if got := find("message", "paid", "order-1"); got != "p000001/2 " {
		t.Errorf("after an undone update, message paid order-1: %q", got)
	}
}

// BenchmarkCorrelate is what publishing a message asks the store while
// many processes wait for messages of the same name with other keys: it
// should not cost more with more of them.
func BenchmarkCorrelate(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := waitingFor(b, n)
			for b.Loop() {
				cs, err := s.Correlations(ctx, "message", "paid", "order-7", 20)
				if err != nil || len(cs) != 1 {
					b.Fatal(cs, err)
				}
			}
		})
	}
}
