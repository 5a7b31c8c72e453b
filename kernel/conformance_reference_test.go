package kernel

// Conformance: the scenarios of the reference suite's MultiLabelComplete,
// MultiStartNode, NestedProcesses and transient-attribute tests,
// re-expressed as tables in Veena's notation.

import (
	"testing"

	"github.com/veena-wf/veena/graph"
)

func TestConformanceMultiLabelComplete(t *testing.T) {
	runScenarios(t, []confScenario{
		{
			// N1 completes on arc1, arc2 and the default arc; N5 is an AND join of N2, N3, N4.
			name: "multi arc complete",
			nodes: []N{
				{Name: "N1", Type: "wait", Start: true, Arcs: []string{"N2:arc1", "N3:arc2", "N4"}},
				{Name: "N2", Type: "wait", Arcs: []string{"N5"}},
				{Name: "N3", Type: "wait", Arcs: []string{"N5"}},
				{Name: "N4", Type: "wait", Arcs: []string{"N5"}},
				{Name: "N5", Type: "wait", Join: graph.JoinAnd},
			},
			start: `[1 :N1 I F]`,
			steps: []confStep{
				{desc: "N1 on arc1 arc2 default", do: doneOn("N1", "arc1", "arc2", ""),
					want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4) [2 N2 I F] [3 N3 I F] [4 N4 I F]`},
				// Decision 11: Java ignores the second completion silently; Veena refuses it and changes nothing.
				{desc: "N1 again", do: func(h *confHarness) error { return h.e().Complete(h.p.NodeTokens[0], "arc1", "arc2", "") },
					err: ErrTokenComplete, want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4) [2 N2 I F] [3 N3 I F] [4 N4 I F]`},
				{desc: "N3", do: doneOn("N3"), want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4) [2 N2 I F] [3 N3 C F] (I F N5) [4 N4 I F]`},
				{desc: "N4", do: doneOn("N4"), want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4) [2 N2 I F] [3 N3 C F] (I F N5) [4 N4 C F] (I F N5)`},
				{desc: "N2", do: doneOn("N2"), want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4)
					[2 N2 C F] (C F 5) [3 N3 C F] (C F 5) [4 N4 C F] (C F 5) [5 N5 I F]`},
				{desc: "N5", do: doneOn("N5"), state: "completed", want: `[1 :N1 C F] (C F 2) (C F 3) (C F 4)
					[2 N2 C F] (C F 5) [3 N3 C F] (C F 5) [4 N4 C F] (C F 5) [5 N5 C F]`},
			},
		},
		{
			// N5 is a first join: N2 creates it, N3 merges into the completed token.
			name: "multi arc complete, first join",
			nodes: []N{
				{Name: "N1", Type: "wait", Start: true, Arcs: []string{"N2:arc1", "N3:arc2"}},
				{Name: "N2", Type: "wait", Arcs: []string{"N5"}},
				{Name: "N3", Type: "wait", Arcs: []string{"N5"}},
				{Name: "N5", Type: "wait", Join: graph.JoinFirst},
			},
			steps: []confStep{
				{desc: "N1", do: doneOn("N1", "arc1", "arc2"), want: `[1 :N1 C F] (C F 2) (C F 3) [2 N2 I F] [3 N3 I F]`},
				{desc: "N2", do: doneOn("N2"), want: `[1 :N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 I F] [4 N5 I F]`},
				{desc: "N5", do: doneOn("N5"), state: "executing",
					want: `[1 :N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 I F] [4 N5 C F]`},
				{desc: "N3 merges", do: doneOn("N3"), state: "completed",
					want: `[1 :N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 C F] (C F 4) [4 N5 C F]`},
			},
		},
		{
			// Two start nodes; a registered predicate reads the start env; nodeB discards.
			name: "multi start node",
			setup: func(k *Kernel) {
				k.RegisterPredicate("isFooBar", func(_ *Engine, t *NodeToken) (bool, error) {
					v, _ := t.Process.Env.Get("foo")
					return v.Str() == "bar", nil
				})
			},
			env: map[string]any{"foo": "bar"},
			nodes: []N{
				{Name: "nodeA", Start: true, Arcs: []string{"nodeC"}},
				{Name: "nodeB", Start: true, Guard: "if isFooBar then Discard else Accept", Arcs: []string{"nodeC"}},
				{Name: "nodeC"},
			},
			start: `[1 nodeA C F] (C F 3) [2 nodeB C F] [3 nodeC C F]`, state: "completed",
		},
	})
}

// nestedTestType is the reference's nested test node: it counts its
// executions in the process attribute count, and in the definition
// "nested-user" sets the token attribute <node> = <node>Foo. It waits.
func nestedTestType(k *Kernel) {
	k.RegisterNodeType("nestedTest", func(*graph.Node) (NodeType, error) {
		return NodeTypeFunc(func(e *Engine, t *NodeToken) error {
			n, _ := t.Process.Env.Get("count")
			t.Process.Env.Set("count", Int(n.IntValue()+1))
			if t.Process.Graph.Name == "nested-user" {
				t.SetAttr(t.Node.Name, String(t.Node.Name+"Foo"))
			}
			return nil
		}), nil
	})
}

var nestedUser = []N{
	{Name: "N1", Type: "nestedTest", Start: true, Arcs: []string{"N2", "N3"}},
	{Name: "N2", Type: "nestedTest", Arcs: []string{"N4"}},
	{Name: "N3", Type: "nestedTest", Arcs: []string{"N5"}},
	{Name: "N4", Type: "nested", Custom: nestedCustom("nested"), Arcs: []string{"N6"}},
	{Name: "N5", Type: "nested", Custom: nestedCustom("nested"), Arcs: []string{"N6"}},
	{Name: "N6", Type: "nestedTest", Join: graph.JoinAnd},
}

var nestedDef = map[string][]N{"nested": {
	{Name: "N1", Type: "nestedTest", Start: true, Arcs: []string{"N2", "N3"}},
	{Name: "N2", Type: "nestedTest", Arcs: []string{"N4"}},
	{Name: "N3", Type: "nestedTest"},
	{Name: "N4", Type: "nestedTest", Arcs: []string{"N5"}},
	{Name: "N5", Type: "nestedTest"},
}}

// child returns the nested process started by the active token on node.
func childAt(h *confHarness, node string) *Process {
	h.t.Helper()
	for _, c := range h.p.Nested {
		if c.ParentToken.Node.Name == node {
			return c
		}
	}
	h.t.Fatalf("no nested process started at %s", node)
	return nil
}

func doneIn(node, child string) func(*confHarness) error {
	return func(h *confHarness) error {
		tok, err := findToken(childAt(h, node), child)
		if err != nil {
			return err
		}
		return h.e().Complete(tok)
	}
}

func wantChild(h *confHarness, node, state, spec string) {
	h.t.Helper()
	c := childAt(h, node)
	if err := MatchHistory(c, spec); err != nil {
		h.t.Fatalf("nested process at %s: %v", node, err)
	}
	if c.State.String() != state {
		h.t.Fatalf("nested process at %s is %s, want %s", node, c.State, state)
	}
}

func TestConformanceNestedProcessesReference(t *testing.T) {
	childStarted := `[1 N1 I F]`
	childSplit := `[1 N1 C F] (C F 2) (C F 3) [2 N2 I F] [3 N3 I F]`
	runScenarios(t, []confScenario{{
		name: "nested-user", nodes: nestedUser, defs: nestedDef, setup: nestedTestType,
		env: map[string]any{"count": 0}, start: `[1 N1 I F]`, state: "executing",
		steps: []confStep{
			{desc: "N1", do: doneOn("N1"), want: `[1 N1 C F] (C F 2) (C F 3) [2 N2 I F] [3 N3 I F]`},
			{desc: "N2", do: doneOn("N2"), want: `[1 N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 I F] [4 N4 I F]`},
			{desc: "N3", do: doneOn("N3"), want: `[1 N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 C F] (C F 5) [4 N4 I F] [5 N5 I F]`},
			{desc: "children started with copies of the parent tokens' full env", do: func(h *confHarness) error {
				wantChild(h, "N4", "executing", childStarted)
				wantChild(h, "N5", "executing", childStarted)
				p2, p3 := childAt(h, "N4"), childAt(h, "N5")
				wantAttr(h.t, "p2", p2.Env.Get, "N1", String("N1Foo"))
				wantAttr(h.t, "p2", p2.Env.Get, "N2", String("N2Foo"))
				wantAttr(h.t, "p2", p2.Env.Get, "N3", Value{})
				wantAttr(h.t, "p3", p3.Env.Get, "N1", String("N1Foo"))
				wantAttr(h.t, "p3", p3.Env.Get, "N3", String("N3Foo"))
				wantAttr(h.t, "p3", p3.Env.Get, "N2", Value{})
				return nil
			}},
			{desc: "p2 N1", do: doneIn("N4", "N1")},
			{desc: "p3 N1", do: doneIn("N5", "N1")},
			{desc: "p2 N2", do: doneIn("N4", "N2")},
			{desc: "p2 N4", do: doneIn("N4", "N4")},
			{desc: "p2 N5: p2 still executing (N3 active)", do: doneIn("N4", "N5"), want: `[1 N1 C F] (C F 2) (C F 3)
				[2 N2 C F] (C F 4) [3 N3 C F] (C F 5) [4 N4 I F] [5 N5 I F]`},
			{desc: "p2 N3: p2 completes, N4 completes and waits at N6", do: doneIn("N4", "N3"), want: `[1 N1 C F] (C F 2) (C F 3)
				[2 N2 C F] (C F 4) [3 N3 C F] (C F 5) [4 N4 C F] (I F N6) [5 N5 I F]`},
			{desc: "p2 state", do: func(h *confHarness) error {
				wantChild(h, "N4", "completed", `[1 N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 C F] [4 N4 C F] (C F 5) [5 N5 C F]`)
				wantAttr(h.t, "p2", childAt(h, "N4").Env.Get, "count", Int(8))
				wantChild(h, "N5", "executing", childSplit)
				return nil
			}},
			{desc: "p3 N3", do: doneIn("N5", "N3")},
			{desc: "p3 N2", do: doneIn("N5", "N2")},
			{desc: "p3 N4", do: doneIn("N5", "N4")},
			{desc: "p3 N5: N5 completes, N6 fires", do: doneIn("N5", "N5"), want: `[1 N1 C F] (C F 2) (C F 3)
				[2 N2 C F] (C F 4) [3 N3 C F] (C F 5) [4 N4 C F] (C F 6) [5 N5 C F] (C F 6) [6 N6 I F]`},
			{desc: "N6", do: doneOn("N6"), state: "completed"},
		},
		check: func(h *confHarness) {
			wantAttr(h.t, "p3", childAt(h, "N5").Env.Get, "count", Int(8))
			wantAttr(h.t, "p", h.p.Env.Get, "count", Int(4))
		},
	}, {
		name: "nested-user cancel", nodes: nestedUser, defs: nestedDef, setup: nestedTestType,
		env: map[string]any{"count": 0},
		steps: []confStep{
			{desc: "N1", do: doneOn("N1")},
			{desc: "N2", do: doneOn("N2")},
			{desc: "p2 N1", do: doneIn("N4", "N1")},
			{desc: "p2 N2", do: doneIn("N4", "N2")},
			{desc: "p2 N4", do: doneIn("N4", "N4")},
			{desc: "cancel", do: cancelProc, state: "canceled"},
			// Java ignores these completions; Veena refuses them (decision 11).
			{desc: "N3 in the canceled parent", do: doneOn("N3"), err: ErrProcessNotExecuting,
				want: `[1 N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 I F] [4 N4 I F]`},
			{desc: "p2 N5 in the canceled child", do: doneIn("N4", "N5"), err: ErrProcessNotExecuting},
			{desc: "p2 state", do: func(h *confHarness) error {
				wantChild(h, "N4", "canceled", `[1 N1 C F] (C F 2) (C F 3) [2 N2 C F] (C F 4) [3 N3 I F] [4 N4 C F] (C F 5) [5 N5 I F]`)
				return nil
			}},
		},
	}})
}

// TestConformanceTransients re-expresses the reference's transient
// attribute tests (the one-session mode).
func TestConformanceTransients(t *testing.T) {
	twoNode := []N{{Name: "nodeA", Type: "wait", Start: true, Arcs: []string{"nodeB"}}, {Name: "nodeB", Type: "wait"}}
	k := testKernel()
	g := mkGraph(t, "two-node", twoNode...)

	// Token env: set, read through the full env, remove.
	p := start(t, k, g, nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	a := token(t, p, "nodeA")
	if a.Env.HasTransient("foo") || a.FullEnv().HasTransient("foo") {
		t.Fatal("fresh token has foo")
	}
	a.SetTransient("foo", "bar")
	if v, ok := a.Env.Transient("foo"); !ok || v != "bar" || !a.FullEnv().HasTransient("foo") {
		t.Fatal("token transient not set")
	}
	if a.Env.Has("foo") || a.FullEnv().Has("foo") {
		t.Fatal("a transient attribute counts as a persistent one")
	}
	a.SetTransient("foo", nil)
	if a.Env.HasTransient("foo") || a.FullEnv().HasTransient("foo") {
		t.Fatal("token transient not removed")
	}

	// Process env: visible through the token's full env only.
	p.Env.SetTransient("foo", "bar")
	if a.Env.HasTransient("foo") || !a.FullEnv().HasTransient("foo") {
		t.Fatal("process transient visibility")
	}
	if v, ok := a.FullEnv().Transient("foo"); !ok || v != "bar" {
		t.Fatal("full env transient read")
	}
	p.Env.RemoveTransient("foo")
	if a.FullEnv().HasTransient("foo") {
		t.Fatal("process transient not removed")
	}

	// Between tokens: a token transient is copied to the child; a process
	// transient stays on the process.
	a.SetTransient("foo", "bar")
	p.Env.SetTransient("pfoo", "pbar")
	complete(t, k, p, "nodeA")
	b := token(t, p, "nodeB")
	if v, ok := b.Env.Transient("foo"); !ok || v != "bar" {
		t.Fatalf("child transient foo = %v %v", v, ok)
	}
	if v, ok := p.Env.Transient("pfoo"); !ok || v != "pbar" {
		t.Fatal("process transient lost")
	}
	if _, ok := p.Env.Map()["pfoo"]; ok {
		t.Fatal("process transient in the persistent map")
	}
}
