package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
)

// testExpectTree: an Update that expects its tree at a version writes all
// of its rows if the tree is there, and none of them (ErrStale, or ErrBusy
// while commands wait in the inbox) if it is not; whether the command
// rewrites the root row, only bumps its version, or leaves it alone.
func testExpectTree(t *testing.T, s store.Store) {
	c := ctx(t)
	root := proc("r", "r", "", 0)
	root.TreeVersion = 3
	put(t, s, root, proc("n", "r", "r", 0))
	seq := int64(0)
	// command expects the tree at version and writes what write does,
	// plus an event of the root.
	command := func(version int64, write func(c context.Context, tx store.Tx) error) error {
		return s.Update(c, func(c context.Context, tx store.Tx) error {
			if err := tx.ExpectTree(c, "r", version); err != nil {
				return err
			}
			if err := write(c, tx); err != nil {
				return err
			}
			return tx.AppendEvents(c, store.EncodeEventRecords([]store.Event{{Process: "r", Seq: seq + 1, Type: "E", NodeToken: 0, ArcToken: -1, At: t0}}))
		})
	}
	rewrite := func(version int64, state string) func(c context.Context, tx store.Tx) error {
		return func(c context.Context, tx store.Tx) error {
			q := *root
			q.StoredState, q.State, q.TreeVersion, q.EventSeq = root.State, state, version, seq+1
			return tx.PutProcess(c, &q)
		}
	}
	bump := func(version int64) func(c context.Context, tx store.Tx) error {
		return func(c context.Context, tx store.Tx) error { return tx.SetTreeVersion(c, "r", version) }
	}
	nested := func(version int64, state string) func(c context.Context, tx store.Tx) error {
		return func(c context.Context, tx store.Tx) error {
			n := proc("n", "r", "r", 0)
			n.StoredState, n.State = "executing", state
			if err := tx.PutProcess(c, n); err != nil {
				return err
			}
			return tx.SetTreeVersion(c, "r", version)
		}
	}
	// check reads what is stored: the root's version and state, the
	// nested process's state and how many events the root has.
	check := func(step string, version int64, state, nestedState string) {
		t.Helper()
		r, err := s.Process(c, "r")
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Process(c, "n")
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.Events(c, "r", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.TreeVersion != version || r.State != state || n.State != nestedState || int64(len(evs)) != seq {
			t.Fatalf("%s: root at version %d %q, nested %q, %d events; want %d %q, %q, %d",
				step, r.TreeVersion, r.State, n.State, len(evs), version, state, nestedState, seq)
		}
	}
	steps := []struct {
		name    string
		version int64 // the version the command expects
		write   func(c context.Context, tx store.Tx) error
		want    error // nil: the command commits
		// what is stored afterwards
		tree          int64
		state, nested string
	}{
		{"rewrite the root at its version", 3, rewrite(4, "r4"), nil, 4, "r4", "executing"},
		{"rewrite the root at an old version", 3, rewrite(5, "stale"), store.ErrStale, 4, "r4", "executing"},
		{"bump the root at its version", 4, bump(5), nil, 5, "r4", "executing"},
		{"bump the root at an old version", 4, bump(6), store.ErrStale, 5, "r4", "executing"},
		{"rewrite a nested process, bump the root", 5, nested(6, "n6"), nil, 6, "r4", "n6"},
		{"the same at an old version", 5, nested(7, "stale"), store.ErrStale, 6, "r4", "n6"},
		{"leave the root alone", 6, rewriteNested("untouched"), nil, 6, "r4", "untouched"},
		{"leave the root alone at an old version", 5, rewriteNested("stale"), store.ErrStale, 6, "r4", "untouched"},
	}
	for _, st := range steps {
		err := command(st.version, st.write)
		if st.want == nil {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			seq++
		} else if !errors.Is(err, st.want) {
			t.Fatalf("%s: want %v, have %v", st.name, st.want, err)
		}
		check(st.name, st.tree, st.state, st.nested)
	}

	// A command waiting in the inbox makes the tree busy, or stale.
	if err := s.Enqueue(c, &store.Command{Root: "r", Payload: []byte("x"), EnqueuedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []func(c context.Context, tx store.Tx) error{rewrite(7, "queued"), bump(7), rewriteNested("queued")} {
		if err := command(6, w); !errors.Is(err, store.ErrBusy) && !errors.Is(err, store.ErrStale) {
			t.Fatalf("command on a tree with a waiting command: %v", err)
		}
		check("command on a tree with a waiting command", 6, "r4", "untouched")
	}
}

// rewriteNested rewrites the nested process only.
func rewriteNested(state string) func(c context.Context, tx store.Tx) error {
	return func(c context.Context, tx store.Tx) error {
		n := proc("n", "r", "r", 0)
		n.StoredState, n.State = "executing", state
		return tx.PutProcess(c, n)
	}
}
