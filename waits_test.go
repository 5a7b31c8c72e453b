package veena_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// labelJoin: A splits to the waits B, C and E; B and C reach the labelAnd
// join D on arcs named x, E on the default arc.
const labelJoin = `<?xml version="1.0"?>
<process-definition name="label-join" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" isStart="true"><arc to="B"/><arc to="C"/><arc to="E"/></node>
  <node name="B" type="wait"><arc name="x" to="D"/></node>
  <node name="C" type="wait"><arc name="x" to="D"/></node>
  <node name="E" type="wait"><arc to="D"/></node>
  <node name="D" joinType="labelAnd"/>
</process-definition>
`

// TestStallExplainsTheJoin: a labelAnd join lacks only the arcs named like
// those that arrived; the process is stalled once nothing else can move.
func TestStallExplainsTheJoin(t *testing.T) {
	ctx := context.Background()
	e := open(t, memstore.New(), veena.Options{})
	defer e.Close()
	if _, _, err := e.LoadDefinition(ctx, "label-join.wf.xml", []byte(labelJoin), ""); err != nil {
		t.Fatal(err)
	}
	p := start(t, e, veena.StartRequest{Definition: "label-join"})
	complete(t, e, one(t, e, p.ID, "B"), veena.CompleteRequest{Arcs: []*string{strp("x")}})
	got := complete(t, e, one(t, e, p.ID, "E"), veena.CompleteRequest{})
	if got.Stalled {
		t.Fatalf("stalled while C is active: %+v", got.Stall)
	}
	got = complete(t, e, one(t, e, p.ID, "C"), veena.CompleteRequest{Arcs: []*string{}})
	if !got.Stalled || got.State != "executing" {
		t.Fatalf("after C ended its branch: state %s, stalled %v", got.State, got.Stalled)
	}
	x := "x"
	want := []veena.StalledJoin{{Node: "D", Join: "labelAnd",
		Waiting: []veena.Arc{{From: "B", To: "D", Name: &x}}, Missing: []veena.Arc{{From: "C", To: "D", Name: &x}}}}
	read, err := e.Process(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for what, stall := range map[string][]veena.StalledJoin{"answer": got.Stall, "read": read.Stall} {
		if a, b := mustJSON(t, stall), mustJSON(t, want); a != b {
			t.Errorf("%s: stall %s, want %s", what, a, b)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOldRowsAreIndexed: an executing process whose row was written before
// stores kept where processes wait (as an older Veena wrote it) is found
// by node once an engine has run a little while on the store.
func TestOldRowsAreIndexed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		place := b.place(t)
		e := open(t, place(), veena.Options{})
		load(t, e, "wait")
		p := start(t, e, veena.StartRequest{Definition: "wait"})
		if page, err := e.Processes(ctx, veena.ProcessFilter{Node: "task"}); err != nil || len(page.Items) != 1 {
			t.Fatalf("by node before: %+v, %v", page, err)
		}
		// Make the row as an older Veena left it.
		st := veena.StoreOf(e)
		row, err := st.Process(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		row.StoredState, row.StoredWaitNodes, row.WaitNodes, row.Waits = row.State, []string{"task"}, nil, nil
		if err := st.Update(ctx, func(ctx context.Context, tx store.Tx) error { return tx.PutProcess(ctx, row) }); err != nil {
			t.Fatal(err)
		}
		if b.durable {
			e.Close()
			e = open(t, place(), veena.Options{})
		} else {
			e = open(t, st, veena.Options{})
		}
		defer e.Close()
		if page, err := e.Processes(ctx, veena.ProcessFilter{Node: "task"}); err != nil || len(page.Items) != 0 {
			t.Fatalf("by node with the old row: %+v, %v", page, err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			page, err := e.Processes(ctx, veena.ProcessFilter{Node: "task"})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) == 1 {
				if w := page.Items[0].WaitingAt; len(w) != 1 || w[0].Node != "task" {
					t.Fatalf("the indexed row waits at %+v", w)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the old row was not indexed within 10 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
