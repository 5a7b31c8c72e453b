package veena_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// backend opens stores of one kind. durable backends can be opened again
// on the same data (a restart).
type backend struct {
	name    string
	durable bool
	// place returns a function opening a store on one new, empty database.
	place func(t *testing.T) func() store.Store
}

func backends() []backend {
	return []backend{
		{"memory", false, func(t *testing.T) func() store.Store {
			s := memstore.New()
			return func() store.Store { return s }
		}},
		{"sqlite", true, func(t *testing.T) func() store.Store {
			path := filepath.Join(t.TempDir(), "veena.db")
			return func() store.Store {
				s, err := sqlitestore.Open(path, sqlitestore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
		{"postgres", true, func(t *testing.T) func() store.Store {
			schema := pgtest.Schema(t)
			return func() store.Store {
				s, err := pgstore.Open(context.Background(), pgtest.URL(), pgstore.Options{Schema: schema, MaxConns: 8})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
		{"postgres-group", true, func(t *testing.T) func() store.Store {
			schema := pgtest.Schema(t)
			return func() store.Store {
				s, err := pgstore.Open(context.Background(), pgtest.URL(), pgstore.Options{Schema: schema, MaxConns: 8, GroupCommit: 32, Committers: 2})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
	}
}

// eachBackend runs fn against every backend, in parallel: each has a
// database of its own.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func newClock() *clock { return &clock{now: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, st store.Store, opts veena.Options) *veena.Engine {
	t.Helper()
	opts.Store = st
	e, err := veena.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	return e
}

func load(t *testing.T, e *veena.Engine, names ...string) {
	t.Helper()
	for _, n := range names {
		src, err := os.ReadFile(filepath.Join("testdata", n+".wf.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.LoadDefinition(context.Background(), n+".wf.xml", src, ""); err != nil {
			t.Fatalf("load %s: %v", n, err)
		}
	}
}

func start(t *testing.T, e *veena.Engine, req veena.StartRequest) *veena.Process {
	t.Helper()
	p, err := e.StartProcess(context.Background(), req)
	if err != nil {
		t.Fatalf("start %s: %v", req.Definition, err)
	}
	return p
}

// active returns the ids of the incomplete node tokens on node.
func active(t *testing.T, e *veena.Engine, process, node string) []string {
	t.Helper()
	h, err := e.Tokens(context.Background(), process)
	if err != nil {
		t.Fatalf("tokens of %s: %v", process, err)
	}
	var out []string
	for _, tok := range h.NodeTokens {
		if tok.Node == node && !tok.Complete {
			out = append(out, tok.ID)
		}
	}
	return out
}

// one returns the only incomplete node token on node.
func one(t *testing.T, e *veena.Engine, process, node string) string {
	t.Helper()
	ids := active(t, e, process, node)
	if len(ids) != 1 {
		t.Fatalf("process %s: %d active tokens on %s, want 1", process, len(ids), node)
	}
	return ids[0]
}

func complete(t *testing.T, e *veena.Engine, token string, req veena.CompleteRequest) *veena.Process {
	t.Helper()
	p, err := e.CompleteToken(context.Background(), token, req)
	if err != nil {
		t.Fatalf("complete %s: %v", token, err)
	}
	return p
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, have none", code)
	}
	if veena.Code(err) != code {
		t.Fatalf("want error %s, have %s: %v", code, veena.Code(err), err)
	}
}

func strp(s string) *string { return &s }
