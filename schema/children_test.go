package schema_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// household starts a chore child that waits for a job, and whose own
// child (a pet) waits for a timer; the household completes when "leave"
// arrives.
const household = `
schema: household
context: {keys: [house]}
nodes:
  - id: start
    type: root
    actions: [{id: chore, do: child.start, with: {schema: chore}}]
    next: [{to: wait}]
  - {id: wait, type: event, event: {name: leave}, next: [{to: done}]}
  - {id: done, type: terminator}
children:
  - schema: chore
    nodes:
      - id: begin
        type: root
        actions: [{id: pet, do: child.start, with: {schema: pet}}, {id: sweep, job: sweep}]
        next: [{to: end}]
      - {id: end, type: terminator}
    children:
      - schema: pet
        nodes:
          - {id: born, type: root, next: [{to: nap}]}
          - id: nap
            type: timer
            timer: {after: PT1H}
            actions: [{id: woke, do: almanac.setParent, with: {woke: true}}]
            next: [{to: gone}]
          - {id: gone, type: terminator}
`

// TestChildrenEndWithParent: a schema instance that completes cancels its
// children that still run, and theirs, in the step that completes it —
// their open jobs are cancelled, their timers never fire, and a second
// engine reading the store sees them cancelled. On memory, SQLite and
// PostgreSQL.
func TestChildrenEndWithParent(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		childrenEndWithParent(t, memstore.New(), nil)
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "veena.db")
		open := func() store.Store {
			st, err := sqlitestore.Open(path, sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		childrenEndWithParent(t, open(), open)
	})
	t.Run("postgres", func(t *testing.T) {
		where := pgtest.Schema(t)
		open := func() store.Store {
			st, err := pgstore.Open(context.Background(), pgtest.URL(), pgstore.Options{Schema: where, MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		childrenEndWithParent(t, open(), open)
	})
}

// childrenEndWithParent runs the test on st; reopen, if not nil, opens
// another store on the same database for a second engine.
func childrenEndWithParent(t *testing.T, st store.Store, reopen func() store.Store) {
	ctx := context.Background()
	h := open(t, st, newBot())
	if _, _, err := h.e.LoadDefinition(ctx, "household.yaml", []byte(household), ""); err != nil {
		t.Fatal(err)
	}
	p, err := h.e.StartProcess(ctx, veena.StartRequest{Definition: "household", Context: map[string]string{"house": "h1"}})
	if err != nil {
		t.Fatal(err)
	}
	// states gives the state of every instance of the family, by schema.
	states := func(e *veena.Engine) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, def := range []string{"household", "household.chore", "household.chore.pet"} {
			page, err := e.Processes(ctx, veena.ProcessFilter{Definition: def})
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range page.Items {
				if out[def] != "" {
					t.Fatalf("two instances of %s", def)
				}
				out[def] = q.State
			}
		}
		return out
	}
	want := map[string]string{"household": "executing", "household.chore": "executing", "household.chore.pet": "executing"}
	if got := states(h.e); !equalMaps(got, want) {
		t.Fatalf("after start: %v, want %v", got, want)
	}
	jobs, err := h.e.Jobs(ctx, veena.JobFilter{Types: []string{"sweep"}})
	if err != nil || len(jobs.Items) != 1 || jobs.Items[0].State != "open" {
		t.Fatalf("the chore's job: %+v %v", jobs, err)
	}

	if _, err := h.e.Deliver(ctx, p.ID, kernel.Message{Name: "leave"}, ""); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"household": "completed", "household.chore": "canceled", "household.chore.pet": "canceled"}
	if got := states(h.e); !equalMaps(got, want) {
		t.Fatalf("after the household completed: %v, want %v", got, want)
	}
	if j, err := h.e.Job(ctx, jobs.Items[0].ID); err != nil || j.State != "canceled" {
		t.Fatalf("the cancelled chore's job: %+v %v", j, err)
	}
	chores, _ := h.e.Processes(ctx, veena.ProcessFilter{Definition: "household.chore"})
	in, err := h.rt.Nodes(ctx, chores.Items[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := in.Nodes[len(in.Nodes)-1]; last.State != schema.NodeCanceled {
		t.Errorf("the chore's waiting node instance shows %s", last.State)
	}
	// The pet's timer would have written the chore's almanac: it never
	// fires.
	h.clock.Add(2 * time.Hour)
	waitTimers(t, h)
	if a := h.almanac(chores.Items[0].ID); a["woke"] != nil {
		t.Errorf("a cancelled child's timer fired: %v", a)
	}

	if reopen == nil {
		return
	}
	// Another engine on the same database sees what the step wrote.
	other := open(t, reopen(), newBot())
	if got := states(other.e); !equalMaps(got, want) {
		t.Fatalf("a second engine sees %v, want %v", got, want)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
