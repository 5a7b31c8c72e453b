package storetest

import (
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
)

// testStoredRewrite: a row put with its StoredState (the engine knows it
// exists) takes the new state, environments, snapshot, event sequence,
// update time, tree version and context, and keeps the rest.
func testStoredRewrite(t *testing.T, s store.Store) {
	c := ctx(t)
	p := proc("r", "r", "", 0)
	p.Context = map[string]string{"k": "v"}
	put(t, s, p)
	q := *p
	q.StoredState = p.State
	q.State, q.Env, q.Snapshot, q.EventSeq = "completed", []byte(`{"a":2}`), []byte(`{"q":2}`), 7
	q.UpdatedAt, q.TreeVersion, q.Context = t0.Add(time.Minute), 3, map[string]string{"k": "w"}
	q.Definition, q.Version = "ignored", 99 // not what a rewrite changes
	put(t, s, &q)
	got, err := s.Process(c, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "completed" || string(got.Env) != `{"a":2}` || string(got.Snapshot) != `{"q":2}` || got.EventSeq != 7 ||
		!got.UpdatedAt.Equal(t0.Add(time.Minute)) || got.TreeVersion != 3 || got.Context["k"] != "w" {
		t.Fatalf("rewritten row reads back as %+v", got)
	}
	if !got.CreatedAt.Equal(t0) || got.Root != "r" || got.ParentToken != -1 {
		t.Fatalf("rewrite changed what it should keep: %+v", got)
	}
}
