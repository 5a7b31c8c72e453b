package kernel

// Conformance: join strategies (sarasvati.md §4.3, §5, §6; decisions 1, 2,
// 5, 6, 13). Graphs are re-expressed with mkGraph, expected histories are
// in the TestProcess notation.

import (
	"errors"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// split: A (start) splits to B and C, which both lead to D with the given join.
func splitJoin(join graph.JoinType, param string) []N {
	return []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
		{Name: "B", Type: "wait", Arcs: []string{"D"}},
		{Name: "C", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: join, Param: param},
	}
}

func TestConformanceOrAndFirstJoins(t *testing.T) {
	afterA := `[1 A C F] (C F 2) (C F 3)
	           [2 B I F]
	           [3 C I F]`
	runScenarios(t, []confScenario{
		{
			// §5.1: every arrival at an OR node makes its own node token.
			name: "or", nodes: splitJoin(graph.JoinOr, ""),
			start: `[1 A I F]`, state: "executing",
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: afterA},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C I F]
				                                   [4 D I F]`},
				{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C C F] (C F 5)
				                                   [4 D I F]
				                                   [5 D I F]`},
				{desc: "D", do: doneOn("D"), state: "executing"},
				{desc: "D again", do: doneOn("D"), state: "completed"},
			},
		},
		{
			// §5.2: C arrives first and waits (I); B completes the join.
			name: "and", nodes: splitJoin(graph.JoinAnd, ""),
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: afterA},
				{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B I F]
				                                   [3 C C F] (I F D)`},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C C F] (C F 4)
				                                   [4 D I F]`},
				{desc: "D", do: doneOn("D"), state: "completed"},
			},
			check: func(h *confHarness) {
				// Decision 1: parents in input-arc (document) order.
				d := h.p.NodeTokens[3]
				if len(d.Parents) != 2 || d.Parents[0].Parent.Node.Name != "B" || d.Parents[1].Parent.Node.Name != "C" {
					h.t.Fatalf("AND parents not in input-arc order: %v", d.Parents)
				}
			},
		},
		{
			// §4.3: an AND join that can never be satisfied keeps the process executing.
			name: "and unsatisfiable",
			nodes: []N{
				{Name: "A", Start: true, Arcs: []string{"B", "C"}},
				{Name: "B", Guard: "Discard", Arcs: []string{"D"}},
				{Name: "C", Arcs: []string{"D"}},
				{Name: "D", Join: graph.JoinAnd},
			},
			start: `[1 A C F] (C F 2) (C F 3)
			        [2 B C F]
			        [3 C C F] (I F D)`,
			state: "executing",
		},
		{
			// §5.2: an extra token on one arc waits for the next round.
			name: "and extra token waits",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "B", "C"}},
				{Name: "B", Type: "wait", Arcs: []string{"D"}},
				{Name: "C", Type: "wait", Arcs: []string{"D"}},
				{Name: "D", Type: "wait", Join: graph.JoinAnd},
			},
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "B", do: doneOn("B")},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				                                   [2 B C F] (I F D)
				                                   [3 B C F] (I F D)
				                                   [4 C I F]`},
				{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				                                   [2 B C F] (C F 5)
				                                   [3 B C F] (I F D)
				                                   [4 C C F] (C F 5)
				                                   [5 D I F]`},
				{desc: "D", do: doneOn("D"), state: "executing"},
			},
		},
		{
			// §5.3 example: D has inputs B 'x', C 'x', E default.
			name: "labelAnd",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C", "E"}},
				{Name: "B", Type: "wait", Arcs: []string{"D:x"}},
				{Name: "C", Type: "wait", Arcs: []string{"D:x"}},
				{Name: "E", Type: "wait", Arcs: []string{"D"}},
				{Name: "D", Type: "wait", Join: graph.JoinLabelAnd},
			},
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "E fires at once", do: doneOn("E"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				                                   [2 B I F]
				                                   [3 C I F]
				                                   [4 E C F] (C F 5)
				                                   [5 D I F]`},
				{desc: "B x waits", do: doneOn("B", "x"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				                                   [2 B C F] (I F D)
				                                   [3 C I F]
				                                   [4 E C F] (C F 5)
				                                   [5 D I F]`},
				{desc: "C x fires a second D", do: doneOn("C", "x"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				                                   [2 B C F] (C F 6)
				                                   [3 C C F] (C F 6)
				                                   [4 E C F] (C F 5)
				                                   [5 D I F]
				                                   [6 D I F]`},
			},
		},
		{
			// §5.4: the second arrival merges into the newest D token.
			name: "first merges", nodes: splitJoin(graph.JoinFirst, ""),
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C I F]
				                                   [4 D I F]`},
				{desc: "C merges", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C C F] (C F 4)
				                                   [4 D I F]`},
				{desc: "D", do: doneOn("D"), state: "completed"},
			},
		},
		{
			// §5.4: a merge goes even into a completed token; the process completes.
			name: "first merges into a completed token", nodes: splitJoin(graph.JoinFirst, ""),
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "B", do: doneOn("B")},
				{desc: "D", do: doneOn("D"), state: "executing"},
				{desc: "C merges", do: doneOn("C"), want: `[1 A C F] (C F 2) (C F 3)
				                                   [2 B C F] (C F 4)
				                                   [3 C C F] (C F 4)
				                                   [4 D C F]`, state: "completed"},
			},
		},
	})
}

// TestConformanceMergeEventOrder checks the §12.2 event order of a merge:
// no NODE_TOKEN_CREATED, and the merged token is completed once.
func TestConformanceMergeEventOrder(t *testing.T) {
	h := runScenario(t, confScenario{name: "merge events", nodes: splitJoin(graph.JoinFirst, ""),
		steps: []confStep{{desc: "A", do: doneOn("A")}, {desc: "B", do: doneOn("B")}}})
	i := len(h.events)
	if err := doneOn("C")(h); err != nil {
		t.Fatal(err)
	}
	h.collect()
	h.wantEventsSince(i, "NODE_TOKEN_COMPLETED C", "ARC_TOKEN_CREATED C->D", "ARC_TOKEN_PROCESSED C->D",
		"ARC_TOKEN_COMPLETED C->D", "ARC_TOKEN_MERGED C->D")
	d := h.p.NodeTokens[3]
	if len(d.Parents) != 2 || d.Parents[1].Parent.Node.Name != "C" {
		t.Fatalf("the merged arc token is not a parent of D: %v", d.Parents)
	}
}

// tsCheck is a wait-like node type that checks what the reference's token
// set test nodes check: the token is in set ts, the set env and the member
// env are those given at creation.
func tsCheck(t *testing.T) NodeTypeFactory {
	return func(*graph.Node) (NodeType, error) {
		return NodeTypeFunc(func(e *Engine, tok *NodeToken) error {
			m, ok := tok.Membership("ts")
			if !ok {
				t.Errorf("%s: not in token set ts", tok.Notation())
				return nil
			}
			if _, ok := tok.Membership("foo"); ok {
				t.Errorf("%s: member of foo", tok.Notation())
			}
			if v, _ := m.Set.Env.Get("testOne"); v.Str() != "hello" {
				t.Errorf("%s: set env testOne = %v", tok.Notation(), v)
			}
			if v, _ := m.Set.Env.Get("testTwo"); v.Str() != "world!" {
				t.Errorf("%s: set env testTwo = %v", tok.Notation(), v)
			}
			doc, user := "index.html", "indexer"
			if m.Member == 1 {
				doc, user = "page1.html", "system"
			}
			if v, _ := m.MemberEnv().Get("doc"); v.Str() != doc {
				t.Errorf("%s: member env doc = %v, want %s", tok.Notation(), v, doc)
			}
			if v, _ := m.MemberEnv().Get("user"); v.Str() != user {
				t.Errorf("%s: member env user = %v, want %s", tok.Notation(), v, user)
			}
			return nil
		}), nil
	}
}

// TestConformanceTokenSet re-expresses the reference TokenSetTest: N1 makes
// a set ts of 2 members on N2 and N3; N5 is a labelAnd join (per member
// index, §5.3), N6 a tokenSet join that fires only when the whole set has
// arrived — the last member (N5 ts 0) ends on a dead end, and the dead-end
// retry fires N6.
func TestConformanceTokenSet(t *testing.T) {
	nodes := []N{
		{Name: "N1", Type: "tsSetup", Start: true, Arcs: []string{"N2", "N3"}},
		{Name: "N2", Type: "tsTest", Arcs: []string{"N4", "N5"}},
		{Name: "N3", Type: "tsTest", Arcs: []string{"N5"}},
		{Name: "N4", Type: "tsTest", Arcs: []string{"N6"}},
		{Name: "N5", Type: "tsTest", Join: graph.JoinLabelAnd},
		{Name: "N6", Type: "wait", Join: graph.JoinTokenSet},
	}
	setup := func(k *Kernel) {
		k.RegisterNodeType("tsSetup", tokenSetNode("ts", 2, map[string]any{"testOne": "hello", "testTwo": "world!"},
			map[string][]Value{"doc": strs("index.html", "page1.html"), "user": strs("indexer", "system")}))
		k.RegisterNodeType("tsTest", tsCheck(t))
	}
	runScenarios(t, []confScenario{{
		name: "token set", nodes: nodes, setup: setup,
		// Member-major creation order (§8): ts0 on N2, ts0 on N3, ts1 on N2, ts1 on N3.
		start: `[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
		        [2 N2 I F ts 0]
		        [3 N3 I F ts 0]
		        [4 N2 I F ts 1]
		        [5 N3 I F ts 1]`,
		steps: []confStep{
			{desc: "N2 ts0", do: doneMember("N2", "ts", 0), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 I F ts 1]
				[5 N3 I F ts 1]
				[6 N4 I F ts 0]`},
			{desc: "N4 ts0", do: doneMember("N4", "ts", 0), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 I F ts 1]
				[5 N3 I F ts 1]
				[6 N4 C F ts 0] (I F N6)`},
			{desc: "N3 ts1", do: doneMember("N3", "ts", 1), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 I F ts 1]
				[5 N3 C F ts 1] (I F N5)
				[6 N4 C F ts 0] (I F N6)`},
			{desc: "N2 ts1", do: doneMember("N2", "ts", 1), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 C F ts 1] (C F 7) (C F 8)
				[5 N3 C F ts 1] (C F 8)
				[6 N4 C F ts 0] (I F N6)
				[7 N4 I F ts 1]
				[8 N5 I F ts 1]`},
			{desc: "N5 ts1 (dead end, set not complete)", do: doneMember("N5", "ts", 1), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 C F ts 1] (C F 7) (C F 8)
				[5 N3 C F ts 1] (C F 8)
				[6 N4 C F ts 0] (I F N6)
				[7 N4 I F ts 1]
				[8 N5 C F ts 1]`},
			{desc: "N4 ts1", do: doneMember("N4", "ts", 1), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (I F N5)
				[3 N3 I F ts 0]
				[4 N2 C F ts 1] (C F 7) (C F 8)
				[5 N3 C F ts 1] (C F 8)
				[6 N4 C F ts 0] (I F N6)
				[7 N4 C F ts 1] (I F N6)
				[8 N5 C F ts 1]`},
			{desc: "N3 ts0", do: doneMember("N3", "ts", 0), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (C F 9)
				[3 N3 C F ts 0] (C F 9)
				[4 N2 C F ts 1] (C F 7) (C F 8)
				[5 N3 C F ts 1] (C F 8)
				[6 N4 C F ts 0] (I F N6)
				[7 N4 C F ts 1] (I F N6)
				[8 N5 C F ts 1]
				[9 N5 I F ts 0]`},
			{desc: "N5 ts0: last member ends, dead-end retry fires N6", do: doneMember("N5", "ts", 0), want: `
				[1 N1 C F] (C F 2) (C F 3) (C F 4) (C F 5)
				[2 N2 C F ts 0] (C F 6) (C F 9)
				[3 N3 C F ts 0] (C F 9)
				[4 N2 C F ts 1] (C F 7) (C F 8)
				[5 N3 C F ts 1] (C F 8)
				[6 N4 C F ts 0] (C F 10)
				[7 N4 C F ts 1] (C F 10)
				[8 N5 C F ts 1]
				[9 N5 C F ts 0]
				[10 N6 I F]`},
			{desc: "N6", do: doneOn("N6"), state: "completed"},
		},
		check: func(h *confHarness) {
			n6 := h.p.NodeTokens[9]
			if n6.Node.Name != "N6" || len(n6.Sets) != 0 {
				h.t.Fatalf("N6 token %s keeps a membership of the terminated set", n6.Notation())
			}
		},
	}})
}

func memberIs(set string, want int) Predicate {
	return func(_ *Engine, t *NodeToken) (bool, error) {
		m, ok := t.Membership(set)
		return ok && m.Member == want, nil
	}
}

func TestConformanceTokenSetJoins(t *testing.T) {
	// A makes a set ts of 2 members on B; B leads to C.
	setNodes := func(bGuard string, cJoin graph.JoinType) []N {
		return []N{
			{Name: "A", Type: "ts2", Start: true, Arcs: []string{"B"}},
			{Name: "B", Type: "wait", Guard: bGuard, Arcs: []string{"C"}},
			{Name: "C", Type: "wait", Join: cJoin},
		}
	}
	setup := func(k *Kernel) {
		k.RegisterNodeType("ts2", tokenSetNode("ts", 2, nil, nil))
		k.RegisterPredicate("isMember1", memberIs("ts", 1))
	}
	twoB := `[1 A C F] (C F 2) (C F 3)
	         [2 B I F ts 0]
	         [3 B I F ts 1]`
	runScenarios(t, []confScenario{
		{
			name: "tokenSet waits for the whole set", nodes: setNodes("", graph.JoinTokenSet), setup: setup, start: twoB,
			steps: []confStep{
				{desc: "B ts0", do: doneMember("B", "ts", 0), want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (I F C)
					[3 B I F ts 1]`},
				{desc: "B ts1", do: doneMember("B", "ts", 1), want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (C F 4)
					[3 B C F ts 1] (C F 4)
					[4 C I F]`},
				{desc: "C", do: doneOn("C"), state: "completed"},
			},
		},
		{
			// §5.5 dead-end retry: the last member completes on a name with no arcs.
			name: "tokenSet dead end on an arc name with no arcs", nodes: setNodes("", graph.JoinTokenSet), setup: setup,
			steps: []confStep{
				{desc: "B ts0", do: doneMember("B", "ts", 0)},
				{desc: "B ts1 on nowhere", do: doneMember("B", "ts", 1, "nowhere"), want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (C F 4)
					[3 B C F ts 1]
					[4 C I F]`},
				{desc: "C", do: doneOn("C"), state: "completed"},
			},
		},
		{
			// §5.5 dead-end retry: the last member is discarded by its guard.
			name: "tokenSet dead end by discard", nodes: setNodes("if isMember1 then Discard else Accept", graph.JoinTokenSet), setup: setup,
			start: `[1 A C F] (C F 2) (C F 3)
			        [2 B I F ts 0]
			        [3 B C F ts 1]`,
			steps: []confStep{
				{desc: "B ts0", do: doneMember("B", "ts", 0), want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (C F 4)
					[3 B C F ts 1]
					[4 C I F]`},
			},
		},
		{
			// §5.6: with members tokenSetOr behaves like tokenSet (no dead-end retry needed here).
			name: "tokenSetOr with members", nodes: setNodes("", graph.JoinTokenSetOr), setup: setup,
			steps: []confStep{
				{desc: "B ts1", do: doneMember("B", "ts", 1), want: `[1 A C F] (C F 2) (C F 3)
					[2 B I F ts 0]
					[3 B C F ts 1] (I F C)`},
				{desc: "B ts0", do: doneMember("B", "ts", 0), want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (C F 4)
					[3 B C F ts 1] (C F 4)
					[4 C I F]`},
			},
		},
		{
			// §5.5: the dead-end retry is registered for tokenSet only, so a
			// tokenSetOr join whose last member ends on a dead end keeps waiting
			// (Java behaves the same; no decision changes it).
			name: "tokenSetOr has no dead-end retry", nodes: setNodes("", graph.JoinTokenSetOr), setup: setup,
			steps: []confStep{
				{desc: "B ts0", do: doneMember("B", "ts", 0)},
				{desc: "B ts1 on nowhere", do: doneMember("B", "ts", 1, "nowhere"), state: "executing",
					want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (I F C)
					[3 B C F ts 1]`},
				{desc: "an explicit retry fires the join", do: func(h *confHarness) error {
					fired, err := h.e().RetryIncompleteArcToken(h.p.NodeTokens[1].Children[0])
					if err == nil && !fired {
						h.t.Fatal("retry did not fire")
					}
					return err
				}, want: `[1 A C F] (C F 2) (C F 3)
					[2 B C F ts 0] (C F 4)
					[3 B C F ts 1]
					[4 C I F]`},
			},
		},
		{
			// Decision 5: a token outside every set falls back to or at tokenSetOr.
			name: "tokenSetOr non-member falls back to or",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "B"}},
				{Name: "B", Type: "wait", Join: graph.JoinTokenSetOr},
			},
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 2) (C F 3)
					[2 B I F]
					[3 B I F]`},
			},
		},
		{
			// Decision 5: tokenSet refuses a non-member with join_not_member.
			name: "tokenSet non-member refused",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
				{Name: "B", Type: "wait", Join: graph.JoinTokenSet},
			},
			steps: []confStep{{desc: "A", do: doneOn("A"), err: ErrJoinNotMember}},
		},
	})
}

// TestConformanceTokenSetJoinNonMemberStart: the refusal also fails a start.
func TestConformanceTokenSetJoinNonMemberStart(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "ts-start", N{Name: "A", Start: true, Arcs: []string{"B"}}, N{Name: "B", Join: graph.JoinTokenSet})
	_, err := k.Engine(t0).Start(g, nil)
	if !errors.Is(err, ErrJoinNotMember) {
		t.Fatalf("err = %v, want join_not_member", err)
	}
	var ke *Error
	if !errors.As(err, &ke) || ke.Code != "join_not_member" {
		t.Fatalf("err = %#v, want code join_not_member", err)
	}
}

// TestConformanceNestedTokenSets: an outer set of 2 members, each making an
// inner set of 2; D's tokenSet join names the outer set (decision 6): it
// fires once, after all four tokens arrived, counts every arc token once,
// and the new token is in no set.
func TestConformanceNestedTokenSets(t *testing.T) {
	nodes := []N{
		{Name: "A", Type: "outer", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "inner", Arcs: []string{"C"}},
		{Name: "C", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: graph.JoinTokenSet, Param: "outer"},
	}
	setup := func(k *Kernel) {
		k.RegisterNodeType("outer", tokenSetNode("outer", 2, nil, nil))
		k.RegisterNodeType("inner", tokenSetNode("inner", 2, nil, nil))
	}
	all := `[1 A C F] (C F 2) (C F 3)
	        [2 B C F outer 0] (C F 4) (C F 5)
	        [3 B C F outer 1] (C F 6) (C F 7)`
	runScenarios(t, []confScenario{{
		name: "nested sets, join parameter names the outer set", nodes: nodes, setup: setup,
		start: all + `
			[4 C I F outer 0 inner 0]
			[5 C I F outer 0 inner 1]
			[6 C I F outer 1 inner 0]
			[7 C I F outer 1 inner 1]`,
		steps: []confStep{
			{desc: "C o0 i0", do: doneMember("C", "outer", 0), want: all + `
				[4 C C F outer 0 inner 0] (I F D)
				[5 C I F outer 0 inner 1]
				[6 C I F outer 1 inner 0]
				[7 C I F outer 1 inner 1]`},
			{desc: "C o1 i0", do: doneMember("C", "outer", 1)},
			// The inner set of outer member 0 is complete at D, but D waits for the outer set.
			{desc: "C o0 i1", do: doneMember("C", "outer", 0), want: all + `
				[4 C C F outer 0 inner 0] (I F D)
				[5 C C F outer 0 inner 1] (I F D)
				[6 C C F outer 1 inner 0] (I F D)
				[7 C I F outer 1 inner 1]`},
			{desc: "C o1 i1", do: doneMember("C", "outer", 1), want: all + `
				[4 C C F outer 0 inner 0] (C F 8)
				[5 C C F outer 0 inner 1] (C F 8)
				[6 C C F outer 1 inner 0] (C F 8)
				[7 C C F outer 1 inner 1] (C F 8)
				[8 D I F]`},
			{desc: "D", do: doneOn("D"), state: "completed"},
		},
		check: func(h *confHarness) {
			d := h.p.NodeTokens[7]
			if len(d.Parents) != 4 {
				h.t.Fatalf("D has %d parents, want 4", len(d.Parents))
			}
			if len(d.Sets) != 0 {
				h.t.Fatalf("D %s keeps a membership after the outer set ended", d.Notation())
			}
		},
	}})
}

// TestConformanceNestedTokenSetsInnerJoin: without a join parameter the
// tokenSet join uses the arriving token's innermost set, so it fires once
// per inner set and the new tokens stay in the outer set.
func TestConformanceNestedTokenSetsInnerJoin(t *testing.T) {
	nodes := []N{
		{Name: "A", Type: "outer", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "inner", Arcs: []string{"C"}},
		{Name: "C", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: graph.JoinTokenSet},
	}
	setup := func(k *Kernel) {
		k.RegisterNodeType("outer", tokenSetNode("outer", 2, nil, nil))
		k.RegisterNodeType("inner", tokenSetNode("inner", 2, nil, nil))
	}
	all := `[1 A C F] (C F 2) (C F 3)
	        [2 B C F outer 0] (C F 4) (C F 5)
	        [3 B C F outer 1] (C F 6) (C F 7)`
	runScenarios(t, []confScenario{{
		name: "nested sets, innermost set", nodes: nodes, setup: setup,
		steps: []confStep{
			{desc: "C o0 i0", do: doneMember("C", "outer", 0)},
			{desc: "C o0 i1", do: doneMember("C", "outer", 0), want: all + `
				[4 C C F outer 0 inner 0] (C F 8)
				[5 C C F outer 0 inner 1] (C F 8)
				[6 C I F outer 1 inner 0]
				[7 C I F outer 1 inner 1]
				[8 D I F outer 0]`},
		},
		check: func(h *confHarness) {
			if d := h.p.NodeTokens[7]; len(d.Sets) != 1 || d.Sets[0].Set.Name != "outer" {
				h.t.Fatalf("D %s: want membership of outer only", d.Notation())
			}
		},
	}})
}

func TestConformanceCustomJoinStrategy(t *testing.T) {
	// "pairs" fires when two arc tokens wait at the node, whatever their arcs.
	pairs := JoinFunc(func(e *Engine, a *ArcToken) (JoinResult, error) {
		var waiting []*ArcToken
		for _, arc := range a.Arc.To.InArcs() {
			waiting = append(waiting, a.Process.WaitingAt(arc)...)
		}
		if len(waiting) < 2 {
			return JoinResult{}, nil
		}
		return JoinResult{Action: JoinComplete, ArcTokens: waiting[:2]}, nil
	})
	runScenarios(t, []confScenario{{
		name: "class join", setup: func(k *Kernel) { k.RegisterJoinStrategy("pairs", pairs) },
		nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C", "E"}},
			{Name: "B", Type: "wait", Arcs: []string{"D"}},
			{Name: "C", Type: "wait", Arcs: []string{"D"}},
			{Name: "E", Type: "wait", Arcs: []string{"D"}},
			{Name: "D", Type: "wait", Join: graph.JoinClass, Param: "pairs"},
		},
		steps: []confStep{
			{desc: "A", do: doneOn("A")},
			{desc: "E", do: doneOn("E"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				[2 B I F]
				[3 C I F]
				[4 E C F] (I F D)`},
			{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 2) (C F 3) (C F 4)
				[2 B C F] (C F 5)
				[3 C I F]
				[4 E C F] (C F 5)
				[5 D I F]`},
		},
	}})
	// An unregistered class is a preparation error.
	k := testKernel()
	g := mkGraph(t, "noclass", N{Name: "A", Start: true, Join: graph.JoinClass, Param: "missing"})
	if _, err := k.Engine(t0).Start(g, nil); err == nil {
		t.Fatal("starting with an unregistered join class succeeded")
	}
}

// TestConformanceNestedFanInFanOut: an inner tokenSet join per outer member,
// then an outer tokenSet join: two levels of fan-out and fan-in.
func TestConformanceNestedFanInFanOut(t *testing.T) {
	nodes := []N{
		{Name: "A", Type: "outer", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "inner", Arcs: []string{"C"}},
		{Name: "C", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: graph.JoinTokenSet, Arcs: []string{"E"}},
		{Name: "E", Type: "wait", Join: graph.JoinTokenSet},
	}
	setup := func(k *Kernel) {
		k.RegisterNodeType("outer", tokenSetNode("outer", 2, nil, nil))
		k.RegisterNodeType("inner", tokenSetNode("inner", 2, nil, nil))
	}
	head := `[1 A C F] (C F 2) (C F 3)
	         [2 B C F outer 0] (C F 4) (C F 5)
	         [3 B C F outer 1] (C F 6) (C F 7)`
	runScenarios(t, []confScenario{{
		name: "two levels", nodes: nodes, setup: setup,
		steps: []confStep{
			{desc: "C o1 i0", do: doneMember("C", "outer", 1)},
			{desc: "C o1 i1: inner set of outer 1 joins at D", do: doneMember("C", "outer", 1), want: head + `
				[4 C I F outer 0 inner 0] [5 C I F outer 0 inner 1]
				[6 C C F outer 1 inner 0] (C F 8) [7 C C F outer 1 inner 1] (C F 8)
				[8 D I F outer 1]`},
			{desc: "D o1 waits at E for outer 0", do: doneMember("D", "outer", 1), want: head + `
				[4 C I F outer 0 inner 0] [5 C I F outer 0 inner 1]
				[6 C C F outer 1 inner 0] (C F 8) [7 C C F outer 1 inner 1] (C F 8)
				[8 D C F outer 1] (I F E)`},
			{desc: "C o0 i0", do: doneMember("C", "outer", 0)},
			{desc: "C o0 i1", do: doneMember("C", "outer", 0)},
			{desc: "D o0: the outer set joins at E", do: doneMember("D", "outer", 0), want: head + `
				[4 C C F outer 0 inner 0] (C F 9) [5 C C F outer 0 inner 1] (C F 9)
				[6 C C F outer 1 inner 0] (C F 8) [7 C C F outer 1 inner 1] (C F 8)
				[8 D C F outer 1] (C F 10)
				[9 D C F outer 0] (C F 10)
				[10 E I F]`},
			{desc: "E", do: doneOn("E"), state: "completed"},
		},
		check: func(h *confHarness) {
			if e := h.p.NodeTokens[9]; len(e.Sets) != 0 {
				h.t.Fatalf("E %s keeps a membership", e.Notation())
			}
		},
	}})
}
