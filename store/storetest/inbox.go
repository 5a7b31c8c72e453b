package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
)

// testInbox: commands queue per tree in Seq order, keep what they carry,
// make TryLockTree refuse the tree while waiting, and are finished in the
// transaction that applies them.
func testInbox(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("r1", "r1", "", 0), proc("n1", "r1", "r1", 0), proc("r2", "r2", "", 0))

	if err := s.Enqueue(c, &store.Command{Root: "missing", Payload: []byte("x"), EnqueuedAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("enqueue for a missing tree: %v", err)
	}
	if err := s.Enqueue(c, &store.Command{Root: "n1", Payload: []byte("x"), EnqueuedAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("enqueue for a nested process instead of its root: %v", err)
	}
	tryLock := func(root string) (int64, error) {
		var v int64
		err := s.Update(c, func(c context.Context, tx store.Tx) (err error) {
			v, err = tx.TryLockTree(c, root)
			return err
		})
		return v, err
	}
	if _, err := tryLock("r1"); err != nil {
		t.Fatalf("try-lock of a tree with an empty inbox: %v", err)
	}
	if _, err := tryLock("missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("try-lock of a missing tree: %v", err)
	}

	c1 := &store.Command{Root: "r1", Key: "k1", Payload: []byte(`{"op":1}`), EnqueuedAt: t0}
	c2 := &store.Command{Root: "r1", Payload: []byte(`{"op":2}`), EnqueuedAt: t0.Add(time.Second)}
	c3 := &store.Command{Root: "r2", Payload: []byte(`{"op":3}`), EnqueuedAt: t0.Add(2 * time.Second)}
	for _, cmd := range []*store.Command{c1, c2, c3} {
		if err := s.Enqueue(c, cmd); err != nil {
			t.Fatal(err)
		}
	}
	if !(c1.Seq > 0 && c1.Seq < c2.Seq && c2.Seq < c3.Seq) {
		t.Fatalf("seqs %d, %d, %d are not in arrival order", c1.Seq, c2.Seq, c3.Seq)
	}
	if _, err := tryLock("r1"); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("try-lock of a tree with waiting commands: %v", err)
	}

	roots, err := s.InboxRoots(c, t0.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(roots)
	if !slices.Equal(roots, []string{"r1", "r2"}) {
		t.Fatalf("roots with waiting commands: %v", roots)
	}
	if roots, err := s.InboxRoots(c, t0.Add(-time.Second), 10); err != nil || len(roots) != 0 {
		t.Fatalf("roots with commands waiting since before any was enqueued: %v, %v", roots, err)
	}

	// A failed Update leaves the command waiting.
	boom := errors.New("boom")
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if _, err := tx.LockTree(c, "r1"); err != nil {
			return err
		}
		if err := tx.FinishCommand(c, c1.Seq, []byte("lost"), t0); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed update: %v", err)
	}

	next := func(root string) *store.Command {
		t.Helper()
		var got *store.Command
		err := s.Update(c, func(c context.Context, tx store.Tx) (err error) {
			if _, err := tx.LockTree(c, root); err != nil {
				return err
			}
			got, err = tx.NextCommand(c, root)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := next("r1")
	if got == nil || got.Seq != c1.Seq || got.Key != "k1" || string(got.Payload) != `{"op":1}` || got.Done || !got.EnqueuedAt.Equal(t0) {
		t.Fatalf("first waiting command of r1: %+v", got)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if _, err := tx.LockTree(c, "r1"); err != nil {
			return err
		}
		return tx.FinishCommand(c, c1.Seq, []byte(`{"ok":1}`), t0.Add(time.Minute))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := next("r1"); got == nil || got.Seq != c2.Seq {
		t.Fatalf("after the first is done, the next of r1 is %+v, want seq %d", got, c2.Seq)
	}
	done, err := s.Command(c, c1.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !done.Done || string(done.Outcome) != `{"ok":1}` || !done.DoneAt.Equal(t0.Add(time.Minute)) || done.Root != "r1" {
		t.Fatalf("finished command reads back as %+v", done)
	}
	if waiting, err := s.Command(c, c2.Seq); err != nil || waiting.Done || waiting.Outcome != nil {
		t.Fatalf("waiting command reads back as %+v, %v", waiting, err)
	}
	if _, err := s.Command(c, c3.Seq+1000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown command: %v", err)
	}

	// Finish the rest; the inbox empties and TryLockTree succeeds again.
	for _, cmd := range []*store.Command{c2, c3} {
		err := s.Update(c, func(c context.Context, tx store.Tx) error {
			if _, err := tx.LockTree(c, cmd.Root); err != nil {
				return err
			}
			return tx.FinishCommand(c, cmd.Seq, []byte(fmt.Sprint(cmd.Seq)), t0.Add(2*time.Minute))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := next("r1"); got != nil {
		t.Fatalf("r1's inbox still holds %+v", got)
	}
	if _, err := tryLock("r1"); err != nil {
		t.Fatalf("try-lock after the inbox emptied: %v", err)
	}
	if roots, err := s.InboxRoots(c, t0.Add(time.Hour), 10); err != nil || len(roots) != 0 {
		t.Fatalf("roots after every command is done: %v, %v", roots, err)
	}

	// Purging deletes done commands finished before the cut, only.
	n, err := s.PurgeCommands(c, t0.Add(90*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1", n, err)
	}
	if _, err := s.Command(c, c1.Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purged command: %v", err)
	}
	if _, err := s.Command(c, c2.Seq); err != nil {
		t.Fatalf("command finished after the cut: %v", err)
	}
}

// testWaitingCommands: WaitingCommands counts the commands of every inbox
// that are not done; a failed Update changes nothing.
func testWaitingCommands(t *testing.T, s store.Store) {
	c := ctx(t)
	waiting := func(want int) {
		t.Helper()
		if n, err := s.WaitingCommands(c); err != nil || n != want {
			t.Fatalf("waiting commands: %d, %v; want %d", n, err, want)
		}
	}
	waiting(0)
	put(t, s, proc("r1", "r1", "", 0), proc("r2", "r2", "", 0))
	cmds := []*store.Command{
		{Root: "r1", Payload: []byte("1"), EnqueuedAt: t0},
		{Root: "r1", Payload: []byte("2"), EnqueuedAt: t0},
		{Root: "r2", Payload: []byte("3"), EnqueuedAt: t0},
	}
	for _, cmd := range cmds {
		if err := s.Enqueue(c, cmd); err != nil {
			t.Fatal(err)
		}
	}
	waiting(3)
	finish := func(cmd *store.Command, fail error) error {
		return s.Update(c, func(c context.Context, tx store.Tx) error {
			if _, err := tx.LockTree(c, cmd.Root); err != nil {
				return err
			}
			if err := tx.FinishCommand(c, cmd.Seq, []byte("ok"), t0.Add(time.Second)); err != nil {
				return err
			}
			return fail
		})
	}
	if err := finish(cmds[0], nil); err != nil {
		t.Fatal(err)
	}
	waiting(2)
	boom := errors.New("boom")
	if err := finish(cmds[2], boom); !errors.Is(err, boom) {
		t.Fatalf("failed update: %v", err)
	}
	waiting(2)
	if _, err := s.PurgeCommands(c, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	waiting(2)
}
