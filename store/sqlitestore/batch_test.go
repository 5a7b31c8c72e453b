package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// runBatch runs fns as Updates that share one transaction: the writer is
// held until all of them wait for it (they join the holding Update's
// batch). It returns their errors.
func runBatch(t *testing.T, s *sqlitestore.Store, fns []func(context.Context, store.Tx) error) []error {
	t.Helper()
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := make(chan error, 1)
	go func() {
		// The holder may run twice, if the batch runs again.
		held <- s.Update(ctx, func(context.Context, store.Tx) error {
			once.Do(func() { close(entered) })
			<-release
			return nil
		})
	}()
	<-entered
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Update(ctx, fn)
		}()
	}
	waitFor(t, func() bool { return s.Queued() == len(fns) })
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	return errs
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func row(id string, version int64) *store.Process {
	at := time.Unix(1700000000, 0)
	return &store.Process{ID: id, Root: id, ParentToken: -1, Definition: "d", Version: 1, State: "executing",
		Env: []byte("{}"), Snapshot: []byte("{}"), CreatedAt: at, UpdatedAt: at, TreeVersion: version}
}

// TestBatchRefusals: requests of a batch that fail before writing anything
// (an error of their own, a stale tree) leave the others to commit
// without the writer running the batch again; a request that fails after
// writing makes it run the batch again with a savepoint per request, and
// only that request's writes are lost.
func TestBatchRefusals(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "b.db"), sqlitestore.Options{})
	defer s.Close()
	ctx := context.Background()
	if err := s.Update(ctx, func(c context.Context, tx store.Tx) error { return tx.PutProcess(c, row("r", 3)) }); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	write := func(id string) func(context.Context, store.Tx) error {
		return func(c context.Context, tx store.Tx) error { return tx.PutProcess(c, row(id, 0)) }
	}
	stale := func(c context.Context, tx store.Tx) error {
		if err := tx.ExpectTree(c, "r", 2); err != nil {
			return err
		}
		q := row("r", 9)
		q.StoredState, q.State = "executing", "stale"
		if err := tx.PutProcess(c, q); err != nil {
			return err
		}
		return tx.AppendEvents(c, store.EncodeEventRecords([]store.Event{{Process: "r", Seq: 1, Type: "X", NodeToken: -1, ArcToken: -1, At: q.UpdatedAt}}))
	}
	for _, tc := range []struct {
		name      string
		late      bool // the failing requests fail after writing
		fallbacks int64
	}{
		{"refused before writing", false, 0},
		{"refused after writing", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Fallbacks()
			var fns []func(context.Context, store.Tx) error
			for i := range 8 {
				id := fmt.Sprintf("%s-%d", tc.name, i)
				switch {
				case i%2 == 0:
					fns = append(fns, write(id))
				case i == 1:
					fns = append(fns, stale)
				case tc.late:
					fns = append(fns, func(c context.Context, tx store.Tx) error {
						if err := write(id)(c, tx); err != nil {
							return err
						}
						return refused
					})
				default:
					fns = append(fns, func(context.Context, store.Tx) error { return refused })
				}
			}
			errs := runBatch(t, s, fns)
			for i, err := range errs {
				id := fmt.Sprintf("%s-%d", tc.name, i)
				_, rerr := s.Process(ctx, id)
				switch {
				case i%2 == 0:
					if err != nil || rerr != nil {
						t.Errorf("%s: update %v, read %v", id, err, rerr)
					}
				case i == 1:
					if !errors.Is(err, store.ErrStale) {
						t.Errorf("stale request: %v", err)
					}
				default:
					if !errors.Is(err, refused) || !errors.Is(rerr, store.ErrNotFound) {
						t.Errorf("%s: update %v, read %v", id, err, rerr)
					}
				}
			}
			if r, err := s.Process(ctx, "r"); err != nil || r.State != "executing" || r.TreeVersion != 3 {
				t.Errorf("root after a stale request: %+v, %v", r, err)
			}
			if evs, err := s.Events(ctx, "r", 0, 0); err != nil || len(evs) != 0 {
				t.Errorf("events of a stale request: %v, %v", evs, err)
			}
			if n := s.Fallbacks() - before; n != tc.fallbacks {
				t.Errorf("batch run again %d times, want %d", n, tc.fallbacks)
			}
		})
	}
}

// TestLateRequestsJoin: requests that arrive while a batch runs join its
// transaction instead of waiting for one of their own.
func TestLateRequestsJoin(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "j.db"), sqlitestore.Options{})
	defer s.Close()
	_, before := s.Stats()
	var fns []func(context.Context, store.Tx) error
	for i := range 8 {
		fns = append(fns, func(c context.Context, tx store.Tx) error { return tx.PutProcess(c, row(fmt.Sprint("j", i), 0)) })
	}
	for i, err := range runBatch(t, s, fns) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if _, after := s.Stats(); after-before != 1 {
		t.Fatalf("%d commits for a batch and the 8 requests that arrived while it ran, want 1", after-before)
	}
	for i := range 8 {
		if _, err := s.Process(context.Background(), fmt.Sprint("j", i)); err != nil {
			t.Errorf("j%d: %v", i, err)
		}
	}
}
