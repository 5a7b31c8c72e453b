package veena_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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

// TestWaitsColumnIsSmall: the waits column a process row keeps (rewritten
// at nearly every step) is compact, a list shows from it what the process
// itself shows, and more waits than kept are counted; a row whose waits an
// earlier version wrote as JSON still lists where it waits.
func TestWaitsColumnIsSmall(t *testing.T) {
	ctx := context.Background()
	split := func(name string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `<process-definition name="%s" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"><node name="start" isStart="true">`, name)
		for i := range n {
			fmt.Fprintf(&b, `<arc to="w%d"/>`, i)
		}
		b.WriteString(`</node>`)
		for i := range n {
			fmt.Fprintf(&b, `<node name="w%d" type="wait"><arc to="end"/></node>`, i)
		}
		b.WriteString(`<node name="end" joinType="and"/></process-definition>`)
		return b.String()
	}
	st := memstore.New()
	e := open(t, st, veena.Options{})
	defer e.Close()
	for _, d := range []struct {
		name string
		n    int
	}{{"split10", 10}, {"split25", 25}} {
		if _, _, err := e.LoadDefinition(ctx, d.name+".wf.xml", []byte(split(d.name, d.n)), ""); err != nil {
			t.Fatal(err)
		}
	}
	p := start(t, e, veena.StartRequest{Definition: "split10"})
	tok := p.WaitingAt[0].Token
	p, err := e.CompleteToken(ctx, tok, veena.CompleteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	row, err := veena.StoreOf(e).Process(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the waits column of 9 tokens and a join: %d bytes", len(row.Waits))
	if len(row.Waits) > 150 {
		t.Errorf("the waits column of 9 tokens and a join takes %d bytes, want at most 150", len(row.Waits))
	}
	listed := func(id string) veena.Process {
		t.Helper()
		page, err := e.Processes(ctx, veena.ProcessFilter{ID: id})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("list %s: %+v %v", id, page, err)
		}
		return page.Items[0]
	}
	if got := listed(p.ID); !reflect.DeepEqual(got.WaitingAt, p.WaitingAt) || len(got.WaitingAt) != 10 || got.WaitingAt[9].Kind != veena.WaitJoin || got.WaitingAt[9].Arcs != 1 {
		t.Errorf("listed waits\n%+v\nthe process's\n%+v", got.WaitingAt, p.WaitingAt)
	}

	// 25 tokens: the row keeps 20 and counts the others.
	q := start(t, e, veena.StartRequest{Definition: "split25"})
	if got := listed(q.ID); len(got.WaitingAt) != 20 || got.WaitingMore != 5 || !reflect.DeepEqual(got.WaitingAt, q.WaitingAt[:20]) {
		t.Errorf("25 waits listed as %d and %d more", len(got.WaitingAt), got.WaitingMore)
	}

	// A row as the previous version wrote it: JSON.
	old, err := veena.StoreOf(e).Process(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	since := p.WaitingAt[0].Since.UnixNano()
	old.StoredState, old.StoredWaitNodes = old.State, old.WaitNodes
	old.Waits = []byte(fmt.Sprintf(`{"w":[{"n":"w1","k":"token","t":2,"s":%d},{"n":"end","k":"join","t":-1,"s":%d,"a":1}],"c":3}`, since, since))
	if err := veena.StoreOf(e).Update(ctx, func(ctx context.Context, tx store.Tx) error { return tx.PutProcess(ctx, old) }); err != nil {
		t.Fatal(err)
	}
	got := listed(p.ID)
	if len(got.WaitingAt) != 2 || got.WaitingAt[0].Node != "w1" || got.WaitingAt[0].Token != p.ID+".n3" || got.WaitingAt[1].Kind != veena.WaitJoin ||
		!got.WaitingAt[0].Since.Equal(p.WaitingAt[0].Since) || got.WaitingMore != 1 {
		t.Errorf("a JSON waits column lists as %+v (%d more)", got.WaitingAt, got.WaitingMore)
	}
}
