package kernel

// Conformance: environments (sarasvati.md §9) and nested processes (§10).

import (
	"errors"
	"testing"

	"github.com/veena-wf/veena/graph"
)

func wantAttr(t testing.TB, what string, get func(string) (Value, bool), name string, want Value) {
	t.Helper()
	v, ok := get(name)
	if want.IsNone() {
		if ok {
			t.Fatalf("%s: %s = %v, want unset", what, name, v)
		}
		return
	}
	if !ok || v.String() != want.String() || v.Kind() != want.Kind() {
		t.Fatalf("%s: %s = %v (%v), want %v", what, name, v, ok, want)
	}
}

func TestConformanceProcessEnv(t *testing.T) {
	k := testKernel()
	env := mustEnv(t, map[string]any{"a": 1, "s": "x"})
	env.SetTransient("tr", &struct{}{})
	g := mkGraph(t, "penv", N{Name: "A", Type: "wait", Start: true})
	p := start(t, k, g, env)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	env.Set("a", Int(99)) // the caller's env is copied, not shared
	wantAttr(t, "process", p.Env.Get, "a", Int(1))
	wantAttr(t, "process", p.Env.Get, "s", String("x"))
	if _, ok := p.Env.Transient("tr"); !ok {
		t.Fatal("start env transient attribute not copied into the process env")
	}
	if _, ok := p.Env.Map()["tr"]; ok {
		t.Fatal("a transient attribute is in the persistent map")
	}
	// A start token's env starts empty; its full env reads the process.
	a := token(t, p, "A")
	if !a.Env.IsEmpty() {
		t.Fatalf("start token env %v", a.Env.Map())
	}
	wantAttr(t, "A full", a.FullEnv().Get, "a", Int(1))
}

func TestConformanceTokenEnv(t *testing.T) {
	nodes := []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"C"}},
		{Name: "C", Type: "wait"},
	}
	runScenarios(t, []confScenario{{
		name: "inheritance and copy-on-write", nodes: nodes, env: map[string]any{"procAttr": "process"},
		steps: []confStep{
			{desc: "A sets x, transient tr; completes", do: func(h *confHarness) error {
				a, _ := findToken(h.p, "A")
				a.SetAttr("x", Int(1))
				a.SetTransient("tr", "live")
				return h.e().Complete(a)
			}},
			{desc: "B inherits", do: func(h *confHarness) error {
				a, b := h.p.NodeTokens[0], h.p.NodeTokens[1]
				wantAttr(h.t, "B", b.Attr, "x", Int(1))
				if v, ok := b.FullEnv().Transient("tr"); !ok || v != "live" {
					h.t.Fatalf("B transient tr = %v %v", v, ok)
				}
				// The child writes: the parent is unchanged.
				b.SetAttr("x", Int(2))
				wantAttr(h.t, "A after B wrote", a.Attr, "x", Int(1))
				wantAttr(h.t, "B", b.Attr, "x", Int(2))
				// The parent writes: the child is unchanged.
				a.SetAttr("y", Int(3))
				wantAttr(h.t, "B after A wrote", b.Attr, "y", Value{})
				// Transients stay out of every persistent map.
				if _, ok := b.Env.Map()["tr"]; ok {
					h.t.Fatal("transient in the token's persistent map")
				}
				if _, ok := h.p.Env.Map()["tr"]; ok {
					h.t.Fatal("transient in the process's persistent map")
				}
				// Full env: reads the token over the process; writes go to the token.
				wantAttr(h.t, "B full", b.FullEnv().Get, "procAttr", String("process"))
				b.FullEnv().Set("procAttr", String("token"))
				wantAttr(h.t, "B full", b.FullEnv().Get, "procAttr", String("token"))
				wantAttr(h.t, "process", h.p.Env.Get, "procAttr", String("process"))
				if !b.FullEnv().Has("procAttr") || !b.FullEnv().HasTransient("tr") || b.FullEnv().Has("tr") {
					h.t.Fatal("full env Has misses an attribute")
				}
				b.FullEnv().Remove("procAttr")
				wantAttr(h.t, "B full after remove", b.FullEnv().Get, "procAttr", String("process"))
				return h.e().Complete(b)
			}},
			{desc: "C inherits B's env, not A's later write", do: func(h *confHarness) error {
				c := h.p.NodeTokens[2]
				wantAttr(h.t, "C", c.Attr, "x", Int(2))
				wantAttr(h.t, "C", c.Attr, "y", Value{})
				if v, ok := c.FullEnv().Transient("tr"); !ok || v != "live" {
					h.t.Fatalf("C transient tr = %v %v: transients are copied to children", v, ok)
				}
				// C writing leaves B alone.
				c.SetAttr("x", Int(7))
				wantAttr(h.t, "B", h.p.NodeTokens[1].Attr, "x", Int(2))
				return nil
			}},
		},
	}})
}

// TestConformanceAndJoinEnv: §9 example; D's env imports its parents in
// input-arc (document) order, so last=C even when C completes first.
func TestConformanceAndJoinEnv(t *testing.T) {
	for _, order := range [][]string{{"C", "B"}, {"B", "C"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			mark := func(node string) func(*confHarness) error {
				return inOrder(setAttr(node, node, String(node)), setAttr(node, "last", String(node)), doneOn(node))
			}
			h := runScenario(t, confScenario{name: "andenv", nodes: splitJoin(graph.JoinAnd, ""),
				steps: []confStep{
					{desc: "A", do: mark("A")},
					{desc: order[0], do: mark(order[0])},
					{desc: order[1], do: mark(order[1]), want: `[1 A C F] (C F 2) (C F 3) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
				}})
			d := h.p.NodeTokens[3]
			for _, n := range []string{"A", "B", "C"} {
				wantAttr(t, "D", d.Attr, n, String(n))
			}
			wantAttr(t, "D", d.Attr, "last", String("C"))
		})
	}
}

var cancelLog []string

func TestConformanceNestedProcesses(t *testing.T) {
	child := []N{
		{Name: "X", Type: "wait", Start: true, Arcs: []string{"Y"}},
		{Name: "Y"},
	}
	parent := []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"N"}},
		{Name: "N", Type: "nested", Custom: nestedCustom("child")},
		{Name: "B", Type: "wait"},
	}
	parent[1].Arcs = []string{"B"}
	childOf := func(h *confHarness) *Process {
		if len(h.p.Nested) != 1 {
			h.t.Fatalf("%d nested processes, want 1", len(h.p.Nested))
		}
		return h.p.Nested[0]
	}
	runScenarios(t, []confScenario{
		{
			name: "child env and completion", nodes: parent, defs: map[string][]N{"child": child},
			env: map[string]any{"procAttr": "p"},
			steps: []confStep{
				{desc: "A", do: inOrder(setAttr("A", "tokAttr", Int(1)), doneOn("A")),
					want: `[1 A C F] (C F 2) [2 N I F]`, state: "executing"},
				{desc: "child started with a copy of N's full env", do: func(h *confHarness) error {
					c := childOf(h)
					if c.State != Executing || c.ParentToken != h.p.NodeTokens[1] || c.Parent != h.p {
						h.t.Fatalf("child state %s parent token %v", c.State, c.ParentToken)
					}
					if err := MatchHistory(c, `[1 X I F]`); err != nil {
						h.t.Fatal(err)
					}
					wantAttr(h.t, "child", c.Env.Get, "procAttr", String("p"))
					wantAttr(h.t, "child", c.Env.Get, "tokAttr", Int(1))
					// A copy: the child writing does not reach the parent.
					c.Env.Set("procAttr", String("changed"))
					wantAttr(h.t, "parent", h.p.Env.Get, "procAttr", String("p"))
					return nil
				}},
				{desc: "complete X in the child: child completes, N completes", do: func(h *confHarness) error {
					x, err := findToken(childOf(h), "X")
					if err != nil {
						return err
					}
					return h.e().Complete(x)
				}, want: `[1 A C F] (C F 2) [2 N C F] (C F 3) [3 B I F]`, state: "executing"},
				{desc: "child completed", do: func(h *confHarness) error {
					if c := childOf(h); c.State != Completed {
						h.t.Fatalf("child %s", c.State)
					}
					return nil
				}},
			},
		},
		{
			name: "synchronous child completes N inside the command", nodes: parent,
			defs: map[string][]N{"child": {{Name: "X", Start: true}}},
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 N C F] (C F 3) [3 B I F]`},
			},
		},
		{
			name: "cancel cascades", nodes: parent, defs: map[string][]N{"child": child},
			setup: func(k *Kernel) {
				k.AddGlobalListener("cancels", ListenerFunc(func(e *Engine, ev *Event) EventActions {
					cancelLog = append(cancelLog, ev.Process.ID+" "+ev.String())
					return 0
				}), ProcessPendingCancel, ProcessCanceled)
			},
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "cancel the parent", do: func(h *confHarness) error {
					cancelLog = nil
					if err := h.e().Cancel(h.p); err != nil {
						return err
					}
					// The child is cancelled first (§4.3).
					want := []string{"p2 PROCESS_PENDING_CANCEL", "p2 PROCESS_CANCELED", "p1 PROCESS_PENDING_CANCEL", "p1 PROCESS_CANCELED"}
					if len(cancelLog) != len(want) {
						h.t.Fatalf("events %v, want %v", cancelLog, want)
					}
					for j := range want {
						if cancelLog[j] != want[j] {
							h.t.Fatalf("events %v, want %v", cancelLog, want)
						}
					}
					if c := childOf(h); c.State != Canceled {
						h.t.Fatalf("child %s", c.State)
					}
					return nil
				}, state: "canceled", want: `[1 A C F] (C F 2) [2 N I F]`},
				{desc: "completing in the canceled child is refused", do: func(h *confHarness) error {
					x, err := findToken(childOf(h), "X")
					if err != nil {
						return err
					}
					return h.e().Complete(x)
				}, err: ErrProcessNotExecuting},
			},
		},
		{
			name: "cancelling the child alone leaves the parent token waiting", nodes: parent, defs: map[string][]N{"child": child},
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "cancel the child", do: func(h *confHarness) error { return h.e().Cancel(childOf(h)) },
					state: "executing", want: `[1 A C F] (C F 2) [2 N I F]`},
			},
		},
	})

	// An unknown nested definition fails the command.
	k := testKernel()
	k.Definitions = func(string) *graph.Graph { return nil }
	g := mkGraph(t, "nested-missing", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"N"}},
		N{Name: "N", Type: "nested", Custom: nestedCustom("missing")})
	p := start(t, k, g, nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	err := k.Engine(t0).Complete(token(t, p, "A"))
	if !errors.Is(err, ErrDefinitionNotFound) {
		t.Fatalf("err = %v, want definition_not_found", err)
	}
}

// TestConformanceNestedDelayedFinalize: a child held in pending_completion
// by a listener completes its parent token only when finalized.
func TestConformanceNestedDelayedFinalize(t *testing.T) {
	runScenarios(t, []confScenario{{
		name: "nested finalize",
		setup: func(k *Kernel) {
			k.AddDefinitionListener("child", "hold", ListenerFunc(func(*Engine, *Event) EventActions { return DelayFinalizeComplete }), ProcessPendingComplete)
		},
		defs: map[string][]N{"child": {{Name: "X", Start: true}}},
		nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"N"}},
			{Name: "N", Type: "nested", Custom: nestedCustom("child"), Arcs: []string{"B"}},
			{Name: "B"},
		},
		steps: []confStep{
			{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 N I F]`, state: "executing"},
			{desc: "child pending", do: func(h *confHarness) error {
				if c := h.p.Nested[0]; c.State != PendingCompletion {
					h.t.Fatalf("child %s", c.State)
				}
				return h.e().FinalizeComplete(h.p.Nested[0])
			}, want: `[1 A C F] (C F 2) [2 N C F] (C F 3) [3 B C F]`, state: "completed"},
		},
	}})
}
