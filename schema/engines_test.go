package schema_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store/pgstore"
)

const alarms = `
schema: alarm
context: {keys: [n]}
nodes:
  - {id: set, type: root, next: [{to: ring}]}
  - id: ring
    type: timer
    timer: {after: PT10M}
    actions: [{id: bell, do: bell.ring, result: rang}]
    next: [{to: done}]
  - {id: done, type: terminator}
`

// TestTimersOnceAcrossEngines: two engines share a PostgreSQL database and
// both fire due timers; each instance's timer fires once and its action
// runs once, whichever engine takes it up.
func TestTimersOnceAcrossEngines(t *testing.T) {
	ctx := context.Background()
	where := pgtest.Schema(t)
	c := &clock{now: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	rings := map[string]int{}
	byEngine := map[int]int{}
	var engines []*veena.Engine
	for i := range 2 {
		st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: where, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		rt := schema.New()
		rt.Action("bell.ring", func(ctx context.Context, call *schema.Call) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			rings[call.Process]++
			byEngine[i]++
			return fmt.Sprintf("engine %d", i), nil
		})
		k := kernel.New()
		rt.Register(k)
		e, err := veena.Open(ctx, veena.Options{Store: st, Kernel: k, Clock: c.Now, TimerInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		rt.Attach(e)
		engines = append(engines, e)
	}
	if _, _, err := engines[0].LoadDefinition(ctx, "alarm.yaml", []byte(alarms), ""); err != nil {
		t.Fatal(err)
	}
	const n = 200
	ids := make([]string, n)
	for i := range n {
		p, err := engines[i%2].StartProcess(ctx, veena.StartRequest{Definition: "alarm", Context: map[string]string{"n": fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = p.ID
	}
	for _, e := range engines {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(11 * time.Minute)
	deadline := time.Now().Add(time.Minute)
	for {
		page, err := engines[0].Processes(ctx, veena.ProcessFilter{Definition: "alarm", State: "completed", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d alarms completed", len(page.Items), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if rings[id] != 1 {
			t.Errorf("alarm %s rang %d times", id, rings[id])
		}
	}
	t.Logf("rung by engine 0: %d, by engine 1: %d", byEngine[0], byEngine[1])
}
