package veena_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// TestTwoEnginesOneSQLiteFile: two engines, each with a store of its own
// on the same SQLite file, share processes: commands to one process from
// both are all applied, once each.
func TestTwoEnginesOneSQLiteFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	var engines []*veena.Engine
	for range 2 {
		st, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := open(t, st, veena.Options{})
		defer e.Close()
		engines = append(engines, e)
	}
	load(t, engines[0], "fan")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n*6)
	var ids []string
	for i := range n {
		p, toks := fanTokens(t, engines[i%2])
		ids = append(ids, p.ID)
		for j, tok := range toks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := engines[j%2].CompleteToken(ctx, tok, veena.CompleteRequest{}); err != nil {
					errs <- fmt.Errorf("process %s, token %s, engine %d: %w", p.ID, tok, j%2, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, id := range ids {
		p, err := engines[(i+1)%2].Process(ctx, id)
		if err != nil || p.State != "completed" {
			t.Fatalf("process %s after its six commands: %+v, %v", id, p, err)
		}
		if done := completedOrder(t, engines[i%2], id); len(done) != 8 {
			t.Fatalf("process %s: %d node tokens completed, want 8 (start, six waits, join): %v", id, len(done), done)
		}
	}
}
