package veena_test

import (
	"context"
	"os"
	"testing"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store/memstore"
)

// TestFinishedTreesLeaveTheCache: the engine keeps a running process's
// tree decoded for its next command, and forgets it once it completes or
// is canceled; a finished process still reads back from the store.
func TestFinishedTreesLeaveTheCache(t *testing.T) {
	ctx := context.Background()
	e := open(t, memstore.New(), veena.Options{})
	defer e.Close()
	src, err := os.ReadFile("testdata/wait.wf.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.LoadDefinition(ctx, "wait.wf.xml", src, ""); err != nil {
		t.Fatal(err)
	}
	done := start(t, e, veena.StartRequest{Definition: "wait"})
	canceled := start(t, e, veena.StartRequest{Definition: "wait"})
	for _, p := range []*veena.Process{done, canceled} {
		if !veena.Cached(e, p.ID) {
			t.Fatalf("running process %s is not cached", p.ID)
		}
	}
	h, err := e.Tokens(ctx, done.ID)
	if err != nil {
		t.Fatal(err)
	}
	var task string
	for _, tok := range h.NodeTokens {
		if tok.Node == "task" && !tok.Complete {
			task = tok.ID
		}
	}
	if p, err := e.CompleteToken(ctx, task, veena.CompleteRequest{}); err != nil || p.State != "completed" {
		t.Fatalf("complete the task: %+v, %v", p, err)
	}
	if _, err := e.CancelProcess(ctx, canceled.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*veena.Process{done, canceled} {
		if veena.Cached(e, p.ID) {
			t.Fatalf("finished process %s is still cached", p.ID)
		}
	}
	if p, err := e.Process(ctx, done.ID); err != nil || p.State != "completed" {
		t.Fatalf("read the completed process: %+v, %v", p, err)
	}
}
