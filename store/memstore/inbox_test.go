package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// inboxWith is a store with one process tree per root and n commands
// queued for them and done, as an hour of busy trees leaves the inbox.
func inboxWith(tb testing.TB, roots, n int, t0 time.Time) (*memstore.Store, []string) {
	s := memstore.New()
	ctx := context.Background()
	ids := make([]string, roots)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%04d", i)
		p := &store.Process{ID: ids[i], Root: ids[i], Definition: "d", Version: 1, State: "executing", CreatedAt: t0, UpdatedAt: t0}
		update(tb, s, func(ctx context.Context, tx store.Tx) error { return tx.PutProcess(ctx, p) })
	}
	for i := range n {
		c := &store.Command{Root: ids[i%roots], Payload: []byte("{}"), EnqueuedAt: t0}
		if err := s.Enqueue(ctx, c); err != nil {
			tb.Fatal(err)
		}
		update(tb, s, func(ctx context.Context, tx store.Tx) error { return tx.FinishCommand(ctx, c.Seq, []byte("{}"), t0) })
	}
	return s, ids
}

// TestInboxOrder queues commands for trees and finishes some: each tree's
// next command is its oldest one not done, trees with commands waiting
// since a time are listed oldest first, and a finish that is undone
// leaves the command waiting.
func TestInboxOrder(t *testing.T) {
	ctx := context.Background()
	s, ids := inboxWith(t, 3, 30, t0)
	enqueue := func(root string, at time.Time) int64 {
		c := &store.Command{Root: root, Payload: []byte("{}"), EnqueuedAt: at}
		if err := s.Enqueue(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c.Seq
	}
	a1 := enqueue(ids[1], t0.Add(time.Second))
	b1 := enqueue(ids[2], t0.Add(2*time.Second))
	a2 := enqueue(ids[1], t0.Add(3*time.Second))
	next := func(root string) int64 {
		t.Helper()
		var seq int64
		err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			c, err := tx.NextCommand(ctx, root)
			if c != nil {
				seq = c.Seq
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if next(ids[0]) != 0 || next(ids[1]) != a1 || next(ids[2]) != b1 {
		t.Fatalf("next: %d %d %d; want 0 %d %d", next(ids[0]), next(ids[1]), next(ids[2]), a1, b1)
	}
	if roots, _ := s.InboxRoots(ctx, t0.Add(2*time.Second), 0); fmt.Sprint(roots) != fmt.Sprint([]string{ids[1], ids[2]}) {
		t.Fatalf("roots waiting since 2s: %v", roots)
	}
	if roots, _ := s.InboxRoots(ctx, t0.Add(time.Second), 0); fmt.Sprint(roots) != fmt.Sprint([]string{ids[1]}) {
		t.Fatalf("roots waiting since 1s: %v", roots)
	}
	if n, _ := s.WaitingCommands(ctx); n != 3 {
		t.Fatalf("waiting: %d", n)
	}
	finish := func(seq int64, fail error) error {
		return s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := tx.FinishCommand(ctx, seq, []byte(`"ok"`), t0.Add(time.Minute)); err != nil {
				return err
			}
			return fail
		})
	}
	if err := finish(a1, fmt.Errorf("undone")); err == nil {
		t.Fatal("the failing update succeeded")
	}
	if next(ids[1]) != a1 {
		t.Fatalf("after an undone finish, next is %d; want %d", next(ids[1]), a1)
	}
	if err := finish(a1, nil); err != nil {
		t.Fatal(err)
	}
	if err := finish(a1, nil); err == nil {
		t.Fatal("a command finished twice")
	}
	if next(ids[1]) != a2 {
		t.Fatalf("after the finish, next is %d; want %d", next(ids[1]), a2)
	}
	if c, err := s.Command(ctx, a1); err != nil || !c.Done || string(c.Outcome) != `"ok"` {
		t.Fatalf("finished command: %+v, %v", c, err)
	}
	if n, _ := s.PurgeCommands(ctx, t0.Add(2*time.Minute)); n != 31 {
		t.Fatalf("purged %d; want the 30 done at the start and a1", n)
	}
	if _, err := s.Command(ctx, a1); err == nil {
		t.Fatal("a purged command is still found")
	}
	if c, err := s.Command(ctx, a2); err != nil || c.Done {
		t.Fatalf("waiting command after the purge: %+v, %v", c, err)
	}
}

// BenchmarkCommandLookups is what a command on a process tree asks the
// inbox (its tree's next command, a queued command by number) while the
// inbox keeps many finished commands for an hour: it should not cost more
// with more of them.
func BenchmarkCommandLookups(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s, ids := inboxWith(b, 100, n, t0)
			c := &store.Command{Root: ids[7], Payload: []byte("{}"), EnqueuedAt: t0}
			if err := s.Enqueue(ctx, c); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
					next, err := tx.NextCommand(ctx, ids[7])
					if err != nil || next == nil || next.Seq != c.Seq {
						return fmt.Errorf("next command: %v, %v", next, err)
					}
					_, err = s.Command(ctx, c.Seq)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
