package kernel

// Conformance: completion forms and completing with a new token set
// (sarasvati.md §2 example, §3, §4.3, §8; decisions 1, 3, 4, 11).

import (
	"errors"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// fanOut is the §2 example: A has arcs B 'x', C 'x', D 'y', E default, in
// that document order.
func fanOut() []N {
	return []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B:x", "C:x", "D:y", "E"}},
		{Name: "B", Type: "wait"}, {Name: "C", Type: "wait"}, {Name: "D", Type: "wait"}, {Name: "E", Type: "wait"},
	}
}

// childOrder lists the end nodes of the node token's arc tokens in creation order.
func childOrder(t *NodeToken) string {
	s := ""
	for _, a := range t.Children {
		s += a.Arc.To.Name
	}
	return s
}

func TestConformanceCompletionForms(t *testing.T) {
	type row struct {
		name  string
		do    func(*confHarness) error
		want  string
		order string // end nodes of A's arc tokens, in creation order
		state string
	}
	rows := []row{
		{name: "default arc", do: doneOn("A"), order: "E", state: "executing",
			want: `[1 A C F] (C F 2) [2 E I F]`},
		{name: "one name, two arcs", do: doneOn("A", "x"), order: "BC", state: "executing",
			want: `[1 A C F] (C F 2) (C F 3) [2 B I F] [3 C I F]`},
		// Decision 1: document order, so D (y) comes before E (default); Java sorts and makes E first.
		{name: "several names in document order", do: doneOn("A", "y", ""), order: "DE", state: "executing",
			want: `[1 A C F] (C F 2) (C F 3) [2 D I F] [3 E I F]`},
		{name: "names given in another order keep arc order", do: doneOn("A", "", "x"), order: "BCE", state: "executing",
			want: `[1 A C F] (C F 2) (C F 3) (C F 4) [2 B I F] [3 C I F] [4 E I F]`},
		// Decision 3: a repeated name takes each arc once (Java duplicates the arc tokens).
		{name: "repeated names", do: doneOn("A", "y", "y"), order: "D", state: "executing",
			want: `[1 A C F] (C F 2) [2 D I F]`},
		{name: "repeated names x x", do: doneOn("A", "x", "x"), order: "BC", state: "executing",
			want: `[1 A C F] (C F 2) (C F 3) [2 B I F] [3 C I F]`},
		// Decision 3: an empty list of names ends the branch.
		{name: "empty name list ends the branch", do: doneNone("A"), order: "", state: "completed",
			want: `[1 A C F]`},
		{name: "a name with no arc ends the branch", do: doneOn("A", "nowhere"), order: "", state: "completed",
			want: `[1 A C F]`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			h := runScenario(t, confScenario{name: "fan", nodes: fanOut(), start: `[1 A I F]`, state: "executing",
				steps: []confStep{{desc: r.name, do: r.do, want: r.want, state: r.state}}})
			if got := childOrder(h.p.NodeTokens[0]); got != r.order {
				t.Fatalf("arc tokens created towards %q, want %q", got, r.order)
			}
			// Node tokens follow the arc tokens' order.
			for i, a := range h.p.NodeTokens[0].Children {
				if a.Child != h.p.NodeTokens[i+1] {
					t.Fatalf("node token %d is not the child of arc token %d", i+2, i)
				}
			}
		})
	}
}

func TestConformanceAsyncCompletion(t *testing.T) {
	runScenarios(t, []confScenario{{
		name: "async", nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
			{Name: "B", Type: "wait"},
			{Name: "C"},
		},
		steps: []confStep{
			{desc: "A async", do: doneAsync("A"), want: `[1 A C F] (P F B) (P F C)`, state: "executing"},
			{desc: "run the queue", do: runQueue, want: `[1 A C F] (C F 2) (C F 3) [2 B I F] [3 C C F]`, state: "executing"},
			// As in Java, an asynchronous completion never runs the queue nor the
			// completion check: the process completes when the caller runs the queue.
			{desc: "B async, no arcs: still executing", do: doneAsync("B"), state: "executing"},
			{desc: "run the (empty) queue", do: runQueue, state: "completed"},
			{desc: "queue of a completed process is refused", do: runQueue, err: ErrProcessNotExecuting},
		},
	}})
	// A pending arc token keeps the process from completing until the queue runs.
	runScenarios(t, []confScenario{{
		name: "async-last", nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
			{Name: "B"},
		},
		steps: []confStep{
			{desc: "A async", do: doneAsync("A"), want: `[1 A C F] (P F B)`, state: "executing"},
			{desc: "run", do: runQueue, want: `[1 A C F] (C F 2) [2 B C F]`, state: "completed"},
		},
	}})
}

func TestConformanceCompleteWithNewTokenSet(t *testing.T) {
	idx := map[string][]Value{"idx": strs("zero", "one", "two")}
	runScenarios(t, []confScenario{
		{
			// §8 example; decision 4: the process runs on from outside execution.
			name: "three members, set env and member env",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
				{Name: "B", Type: "wait", Arcs: []string{"C"}},
				{Name: "C", Type: "wait", Join: graph.JoinTokenSet},
			},
			steps: []confStep{
				{desc: "A with set s", do: doneSet("A", "", "s", 3, map[string]any{"shared": "yes"}, idx),
					want: `[1 A C F] (C F 2) (C F 3) (C F 4) [2 B I F s 0] [3 B I F s 1] [4 B I F s 2]`, state: "executing"},
				{desc: "members", do: func(h *confHarness) error {
					for i, want := range []string{"zero", "one", "two"} {
						b, err := findToken(h.p, "B", "s", i)
						if err != nil {
							return err
						}
						m, _ := b.Membership("s")
						if v, _ := m.MemberEnv().Get("idx"); v.Str() != want {
							h.t.Fatalf("member %d idx = %v, want %s", i, v, want)
						}
						if v, _ := m.Set.Env.Get("shared"); v.Str() != "yes" {
							h.t.Fatalf("member %d shared = %v", i, v)
						}
						if m.Set.MaxMemberIndex != 2 || m.Set.Level != 1 {
							h.t.Fatalf("set max index %d level %d, want 2 and 1", m.Set.MaxMemberIndex, m.Set.Level)
						}
					}
					return nil
				}},
				{desc: "B s 2", do: doneMember("B", "s", 2)},
				{desc: "B s 0", do: doneMember("B", "s", 0)},
				{desc: "B s 1", do: doneMember("B", "s", 1), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
					[2 B C F s 0] (C F 5) [3 B C F s 1] (C F 5) [4 B C F s 2] (C F 5) [5 C I F]`},
			},
		},
		{
			// Member-major order: for each member, for each arc.
			name: "member-major arc token order and levels of nested sets",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
				{Name: "B", Type: "wait", Arcs: []string{"D"}},
				{Name: "C", Type: "wait"},
				{Name: "D", Type: "wait"},
			},
			steps: []confStep{
				{desc: "A with set s of 2", do: doneSet("A", "", "s", 2, nil, nil),
					want: `[1 A C F] (C F 2) (C F 3) (C F 4) (C F 5) [2 B I F s 0] [3 C I F s 0] [4 B I F s 1] [5 C I F s 1]`},
				{desc: "B s 1 with inner set", do: func(h *confHarness) error {
					b, err := findToken(h.p, "B", "s", 1)
					if err != nil {
						return err
					}
					set, err := h.e().CompleteWithNewTokenSet(b, "", "inner", 2, nil, nil)
					if err != nil {
						return err
					}
					if set.Level != 2 || set.MaxMemberIndex != 1 {
						h.t.Fatalf("inner set level %d max %d, want 2 and 1", set.Level, set.MaxMemberIndex)
					}
					return nil
				}, want: `[1 A C F] (C F 2) (C F 3) (C F 4) (C F 5) [2 B I F s 0] [3 C I F s 0] [4 B C F s 1] (C F 6) (C F 7) [5 C I F s 1]
					[6 D I F s 1 inner 0] [7 D I F s 1 inner 1]`},
			},
			check: func(h *confHarness) {
				if got := childOrder(h.p.NodeTokens[0]); got != "BCBC" {
					h.t.Fatalf("arc tokens towards %s, want BCBC", got)
				}
			},
		},
		{
			name:  "no matching arc: no set, the branch ends",
			nodes: []N{{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, {Name: "B"}},
			steps: []confStep{
				{desc: "A on nowhere", do: func(h *confHarness) error {
					a, _ := findToken(h.p, "A")
					set, err := h.e().CompleteWithNewTokenSet(a, "nowhere", "s", 2, nil, nil)
					if set != nil || len(h.p.TokenSets) != 0 {
						h.t.Fatalf("a set was created: %v", set)
					}
					return err
				}, want: `[1 A C F]`, state: "completed"},
			},
		},
		{
			name:  "refusals",
			nodes: []N{{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, {Name: "B", Type: "wait"}},
			steps: []confStep{
				{desc: "no members", do: doneSet("A", "", "s", 0, nil, nil), err: ErrInvalidArgument, want: `[1 A I F]`},
				{desc: "no name", do: doneSet("A", "", "", 2, nil, nil), err: ErrInvalidArgument, want: `[1 A I F]`},
				{desc: "ok", do: doneSet("A", "", "s", 1, nil, nil)},
				{desc: "complete token", do: func(h *confHarness) error {
					_, err := h.e().CompleteWithNewTokenSet(h.p.NodeTokens[0], "", "s", 1, nil, nil)
					return err
				}, err: ErrTokenComplete},
			},
		},
		{
			// From inside a node's execution, like the reference's setup node.
			name: "from inside execution",
			setup: func(k *Kernel) {
				k.RegisterNodeType("ts3", tokenSetNode("s", 3, map[string]any{"shared": "yes"}, idx))
			},
			nodes: []N{{Name: "A", Type: "ts3", Start: true, Arcs: []string{"B"}}, {Name: "B"}},
			start: `[1 A C F] (C F 2) (C F 3) (C F 4) [2 B C F s 0] [3 B C F s 1] [4 B C F s 2]`,
			state: "completed",
		},
	})
}

// TestConformanceCompletionRefusalsTable: decision 11.
func TestConformanceCompletionRefusalsTable(t *testing.T) {
	nodes := []N{{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, {Name: "B", Type: "wait"}}
	completeFirst := func(h *confHarness) error { return h.e().Complete(h.p.NodeTokens[0]) }
	runScenarios(t, []confScenario{{
		name: "refusals", nodes: nodes,
		steps: []confStep{
			{desc: "A", do: doneOn("A")},
			{desc: "A again", do: completeFirst, err: ErrTokenComplete, want: `[1 A C F] (C F 2) [2 B I F]`},
			{desc: "A again async", do: func(h *confHarness) error { return h.e().CompleteAsync(h.p.NodeTokens[0]) }, err: ErrTokenComplete},
			{desc: "cancel", do: cancelProc, state: "canceled", want: `[1 A C F] (C F 2) [2 B I F]`},
			{desc: "complete B in a canceled process", do: doneOn("B"), err: ErrProcessNotExecuting, want: `[1 A C F] (C F 2) [2 B I F]`},
			{desc: "cancel again", do: cancelProc, err: ErrProcessNotExecuting, state: "canceled"},
			{desc: "token set in a canceled process", do: doneSet("B", "", "s", 1, nil, nil), err: ErrProcessNotExecuting},
			{desc: "queue in a canceled process", do: runQueue, err: ErrProcessNotExecuting},
		},
	}, {
		name: "refusals after completion", nodes: nodes,
		steps: []confStep{
			{desc: "A", do: doneOn("A")},
			{desc: "B", do: doneOn("B"), state: "completed"},
			{desc: "cancel a completed process", do: cancelProc, err: ErrProcessNotExecuting, state: "completed"},
			{desc: "complete A", do: completeFirst, err: ErrProcessNotExecuting},
		},
	}})
	// Refusals leave no events.
	h := runScenario(t, confScenario{name: "no-events", nodes: nodes, steps: []confStep{{desc: "A", do: doneOn("A")}}})
	n := len(h.events)
	if err := h.e().Complete(h.p.NodeTokens[0]); !errors.Is(err, ErrTokenComplete) {
		t.Fatal(err)
	}
	h.collect()
	if len(h.events) != n {
		t.Fatalf("a refused command fired %v", h.eventsSince(n))
	}
}

// TestConformanceRetryIncompleteArcToken: retrying a waiting arc token runs
// its join again; a pending one (still queued) is refused.
func TestConformanceRetryIncompleteArcToken(t *testing.T) {
	retry := func(i int, want bool) func(*confHarness) error {
		return func(h *confHarness) error {
			fired, err := h.e().RetryIncompleteArcToken(h.p.ArcTokens[i])
			if err == nil && fired != want {
				h.t.Fatalf("retry fired %v, want %v", fired, want)
			}
			return err
		}
	}
	runScenarios(t, []confScenario{{
		name: "retry", nodes: splitJoin(graph.JoinAnd, ""),
		steps: []confStep{
			{desc: "A", do: doneOn("A")},
			{desc: "B async", do: doneAsync("B"), want: `[1 A C F] (C F 2) (C F 3) [2 B C F] (P F D) [3 C I F]`},
			{desc: "retry the pending arc token", do: retry(2, false), err: ErrInvalidArgument},
			{desc: "run", do: runQueue, want: `[1 A C F] (C F 2) (C F 3) [2 B C F] (I F D) [3 C I F]`},
			{desc: "retry the waiting arc token: still incomplete", do: retry(2, false),
				want: `[1 A C F] (C F 2) (C F 3) [2 B C F] (I F D) [3 C I F]`},
			{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
			{desc: "retry a complete arc token", do: retry(2, false)},
		},
	}})
}

// TestConformanceIncompleteJoinEvent: an arc token left waiting at a join
// fires ARC_TOKEN_INCOMPLETE_JOIN after ARC_TOKEN_PROCESSED.
func TestConformanceIncompleteJoinEvent(t *testing.T) {
	h := runScenario(t, confScenario{name: "incomplete", nodes: splitJoin(graph.JoinAnd, ""),
		steps: []confStep{{desc: "A", do: doneOn("A")}}})
	i := len(h.events)
	if err := doneOn("C")(h); err != nil {
		t.Fatal(err)
	}
	h.collect()
	h.wantEventsSince(i, "NODE_TOKEN_COMPLETED C", "ARC_TOKEN_CREATED C->D", "ARC_TOKEN_PROCESSED C->D", "ARC_TOKEN_INCOMPLETE_JOIN C->D")
}

// TestConformanceStartOrder: decision 1, start tokens in document order;
// decision 16, no start nodes.
func TestConformanceStartOrder(t *testing.T) {
	h := runScenario(t, confScenario{name: "starts",
		nodes: []N{{Name: "Z", Type: "wait", Start: true}, {Name: "M", Type: "wait"}, {Name: "A", Type: "wait", Start: true}},
		start: `[1 Z I F] [2 A I F]`, state: "executing"})
	if h.p.NodeTokens[0].Node.Name != "Z" || h.p.NodeTokens[1].Node.Name != "A" {
		t.Fatalf("start tokens not in document order:\n%s", h.p.History())
	}
	k := testKernel()
	if p, err := k.Engine(t0).Start(mkGraph(t, "nostart", N{Name: "A"}), nil); !errors.Is(err, ErrNoStartNodes) || p != nil {
		t.Fatalf("start without start nodes: %v, %v", p, err)
	}
	// A nested definition without start nodes fails the command too.
	k.Definitions = func(string) *graph.Graph { return mkGraph(t, "child", N{Name: "X"}) }
	p := start(t, k, mkGraph(t, "parent", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"N"}},
		N{Name: "N", Type: "nested", Custom: nestedCustom("child")}), nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	if err := k.Engine(t0).Complete(token(t, p, "A")); !errors.Is(err, ErrNoStartNodes) {
		t.Fatalf("nested without start nodes: %v", err)
	}
}
