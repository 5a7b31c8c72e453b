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

// waitingFor is a store with n processes waiting for message "paid" with
// their own key and for signal "stop".
func waitingFor(tb testing.TB, n int) *memstore.Store {
	s := memstore.New()
	update(tb, s, func(ctx context.Context, tx store.Tx) error {
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

// TestBufferedMessagesUndone buffers and takes messages in updates that
// are undone: the buffer is as it was, and the oldest message of a name
// and key is still taken first.
func TestBufferedMessagesUndone(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	buffer := func(key, id string) error {
		return s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.BufferMessage(ctx, &store.Message{Name: "paid", Key: key, ID: id, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		})
	}
	for i, key := range []string{"a", "b", "a", "c", "a"} {
		if err := buffer(key, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	undone := errors.New("undone")
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		m, err := tx.OldestMessage(ctx, "paid", "a", t0, 0)
		if err != nil || m == nil || m.ID != "0" {
			return fmt.Errorf("oldest of a: %v, %v", m, err)
		}
		if err := tx.DeleteMessage(ctx, m.Name, m.Key, m.Seq); err != nil {
			return err
		}
		if err := tx.BufferMessage(ctx, &store.Message{Name: "paid", Key: "a", ID: "5", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			return err
		}
		return undone
	})
	if !errors.Is(err, undone) {
		t.Fatal(err)
	}
	ids := func(name string) string {
		ms, err := s.BufferedMessages(ctx, name, t0, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, m := range ms {
			out += m.Key + m.ID + " "
		}
		return out
	}
	if got := ids("paid"); got != "a0 b1 a2 c3 a4 " {
		t.Fatalf("after the undone update: %q", got)
	}
	if m, _ := s.OldestMessage(ctx, "paid", "a", t0, 0); m == nil || m.ID != "0" {
		t.Fatalf("oldest of a: %v", m)
	}
	if m, _ := s.OldestMessage(ctx, "paid", "a", t0, 3); m == nil || m.ID != "4" {
		t.Fatalf("oldest of a after seq 3: %v", m)
	}
	// A message is buffered with the next number, not the undone one's.
	if err := buffer("d", "6"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.OldestMessage(ctx, "paid", "d", t0, 0); m == nil || m.Seq != 6 {
		t.Fatalf("the message after an undone one: %+v", m)
	}
	if n, _ := s.PurgeMessages(ctx, t0.Add(2*time.Hour)); n != 6 || ids("paid") != "" {
		t.Fatalf("purged %d, left %q", n, ids("paid"))
	}
}

// BenchmarkBufferMessage buffers messages while many are buffered already,
// and takes the oldest of a key: neither should cost more with more
// messages kept.
func BenchmarkBufferMessage(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := memstore.New()
			update(b, s, func(ctx context.Context, tx store.Tx) error {
				for i := range n {
					if err := tx.BufferMessage(ctx, &store.Message{Name: "paid", Key: fmt.Sprint(i), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
						return err
					}
				}
				return nil
			})
			for b.Loop() {
				err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
					if err := tx.BufferMessage(ctx, &store.Message{Name: "paid", Key: "x", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
						return err
					}
					m, err := tx.OldestMessage(ctx, "paid", "x", t0, 0)
					if err != nil || m == nil {
						return fmt.Errorf("oldest: %v, %v", m, err)
					}
					return tx.DeleteMessage(ctx, m.Name, m.Key, m.Seq)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
