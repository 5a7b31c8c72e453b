package kernel

// Conformance: JoinLang joins (sarasvati.md §6; decisions 2, 13).

import (
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

func constPred(v bool) Predicate {
	return func(*Engine, *NodeToken) (bool, error) { return v, nil }
}

// threeIntoD: A, B, C are start wait nodes leading to D, a JoinLang join.
func threeIntoD(prog string) []N {
	return []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"D"}},
		{Name: "B", Type: "wait", Start: true, Arcs: []string{"D"}},
		{Name: "C", Type: "wait", Start: true, Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: graph.JoinLang, Param: prog},
	}
}

const threeStarted = `[1 A I F] [2 B I F] [3 C I F]`

func TestConformanceJoinLangArcsAndNodes(t *testing.T) {
	runScenarios(t, []confScenario{
		{
			name: "require all arcs", nodes: threeIntoD("require all arcs"), start: threeStarted,
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (I F D) [2 B I F] [3 C I F]`},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (I F D) [2 B C F] (I F D) [3 C I F]`},
				{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
				{desc: "D", do: doneOn("D"), state: "completed"},
			},
		},
		{
			// Decision 13: when-predicates read boolean attributes of the arriving
			// token's full env (here the process env). C is not needed, but its
			// waiting token is swept into the join (§6.2).
			name: "require node, when reads env attributes, optional token swept in",
			nodes: threeIntoD(`require node "A"
				require node "B" when B.isNeeded
				require node "C" when C.isNeeded`),
			env: map[string]any{"B.isNeeded": true, "C.isNeeded": false},
			steps: []confStep{
				{desc: "A waits for B", do: doneOn("A"), want: `[1 A C F] (I F D) [2 B I F] [3 C I F]`},
				{desc: "C covered only by a non-applicable requirement: waits", do: doneOn("C"),
					want: `[1 A C F] (I F D) [2 B I F] [3 C C F] (I F D)`},
				{desc: "B fires with A, B and C", do: doneOn("B"),
					want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
			},
		},
		{
			// A late optional token merges into the join's token.
			name: "require node, late optional token merges",
			nodes: threeIntoD(`require node "A"
				require node "B" when B.isNeeded
				require node "C" when C.isNeeded`),
			env: map[string]any{"B.isNeeded": true, "C.isNeeded": false},
			steps: []confStep{
				{desc: "B", do: doneOn("B"), want: `[1 A I F] [2 B C F] (I F D) [3 C I F]`},
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C I F] [4 D I F]`},
				{desc: "C merges", do: doneOn("C"), want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
			},
		},
		{
			// The token's own attribute wins over the process attribute (decision 13).
			name: "when reads the token attribute over the process attribute",
			nodes: threeIntoD(`require node "A"
				require node "B" when B.isNeeded`),
			env: map[string]any{"B.isNeeded": true},
			steps: []confStep{
				{desc: "A says B is not needed", do: inOrder(setAttr("A", "B.isNeeded", Bool(false)), doneOn("A")),
					want: `[1 A C F] (C F 4) [2 B I F] [3 C I F] [4 D I F]`},
			},
		},
		{
			// §15.13: the engine's real behaviour, not the unrun test's expectation.
			name: "require at least 2 arcs when first", nodes: threeIntoD("require at least 2 arcs when first"),
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (I F D) [2 B I F] [3 C I F]`},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C I F] [4 D I F]`},
				{desc: "C merges (first is false now)", do: doneOn("C"),
					want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
				{desc: "D", do: doneOn("D"), state: "completed"},
			},
		},
		{
			// K larger than the number of joining arcs means all of them.
			name:  "require at least N arcs caps N at the number of joining arcs",
			nodes: threeIntoD("require at least 5 arcs"),
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (I F D) [2 B C F] (I F D) [3 C I F]`},
				{desc: "C", do: doneOn("C"), want: `[1 A C F] (C F 4) [2 B C F] (C F 4) [3 C C F] (C F 4) [4 D I F]`},
			},
		},
		{
			name:  "require at least 1 arcs labelled foo fires per arrival",
			nodes: labelledInto(`require at least 1 arcs labelled "foo"`),
			steps: []confStep{
				{desc: "A default: not covered, waits", do: doneOn("A"), want: `[1 A C F] (I F E) [2 B I F] [3 C I F] [4 D I F]`},
				{desc: "C foo fires", do: doneOn("C", "foo"), want: `[1 A C F] (I F E) [2 B I F] [3 C C F] (C F 5) [4 D I F] [5 E I F]`},
			},
		},
	})
}

// labelled: A, B default arcs into E; C, D arcs 'foo' into E.
func labelledInto(prog string) []N {
	return []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"E"}},
		{Name: "B", Type: "wait", Start: true, Arcs: []string{"E"}},
		{Name: "C", Type: "wait", Start: true, Arcs: []string{"E:foo"}},
		{Name: "D", Type: "wait", Start: true, Arcs: []string{"E:foo"}},
		{Name: "E", Type: "wait", Join: graph.JoinLang, Param: prog},
	}
}

func TestConformanceJoinLangLabelled(t *testing.T) {
	prog := `require all arcs labelled default when DefaultRequired
	         require all arcs labelled "foo" when FooRequired`
	preds := func(def, foo bool) func(*Kernel) {
		return func(k *Kernel) {
			k.RegisterPredicate("DefaultRequired", constPred(def))
			k.RegisterPredicate("FooRequired", constPred(foo))
		}
	}
	fired := `[1 A C F] (C F 5) [2 B C F] (C F 5) [3 C C F] (C F 5) [4 D C F] (C F 5) [5 E I F]`
	runScenarios(t, []confScenario{
		{
			name: "default required, foo optional: foo tokens merge", nodes: labelledInto(prog), setup: preds(true, false),
			start: `[1 A I F] [2 B I F] [3 C I F] [4 D I F]`,
			steps: []confStep{
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (I F E) [2 B I F] [3 C I F] [4 D I F]`},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (C F 5) [2 B C F] (C F 5) [3 C I F] [4 D I F] [5 E I F]`},
				{desc: "C foo merges", do: doneOn("C", "foo"), want: `[1 A C F] (C F 5) [2 B C F] (C F 5) [3 C C F] (C F 5) [4 D I F] [5 E I F]`},
				{desc: "D foo merges", do: doneOn("D", "foo"), want: fired},
				{desc: "E", do: doneOn("E"), state: "completed"},
			},
		},
		{
			name: "both required", nodes: labelledInto(prog), setup: preds(true, true),
			steps: []confStep{
				{desc: "A", do: doneOn("A")},
				{desc: "B", do: doneOn("B"), want: `[1 A C F] (I F E) [2 B C F] (I F E) [3 C I F] [4 D I F]`},
				{desc: "C foo", do: doneOn("C", "foo"), want: `[1 A C F] (I F E) [2 B C F] (I F E) [3 C C F] (I F E) [4 D I F]`},
				{desc: "D foo", do: doneOn("D", "foo"), want: fired},
			},
		},
		{
			// §6.2 [LabelArcsRequired.testThree/testFour]: waiting optional tokens are swept into the join.
			name: "waiting optional foo tokens are swept in", nodes: labelledInto(prog), setup: preds(true, false),
			steps: []confStep{
				{desc: "D foo waits (no merge token yet)", do: doneOn("D", "foo"), want: `[1 A I F] [2 B I F] [3 C I F] [4 D C F] (I F E)`},
				{desc: "B", do: doneOn("B")},
				{desc: "C foo", do: doneOn("C", "foo"), want: `[1 A I F] [2 B C F] (I F E) [3 C C F] (I F E) [4 D C F] (I F E)`},
				{desc: "A fires with all four", do: doneOn("A"), want: fired},
			},
		},
		{
			name: "one optional swept in, the other merges later", nodes: labelledInto(prog), setup: preds(true, false),
			steps: []confStep{
				{desc: "D foo", do: doneOn("D", "foo")},
				{desc: "B", do: doneOn("B")},
				{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 5) [2 B C F] (C F 5) [3 C I F] [4 D C F] (C F 5) [5 E I F]`},
				{desc: "C foo merges", do: doneOn("C", "foo"), want: fired},
			},
		},
	})
}

func TestConformanceJoinLangTokenSetAndMerge(t *testing.T) {
	runScenarios(t, []confScenario{
		{
			// require tokenset with an or of two blocks; the set is not terminated.
			name: "require tokenset or require tokenset",
			setup: func(k *Kernel) {
				k.RegisterNodeType("ts1", tokenSetNode("ts1", 2, nil, nil))
				k.RegisterNodeType("ts2", tokenSetNode("ts2", 2, nil, nil))
			},
			nodes: []N{
				{Name: "A", Type: "ts1", Start: true, Arcs: []string{"C"}},
				{Name: "B", Type: "ts2", Start: true, Arcs: []string{"D"}},
				{Name: "C", Type: "wait", Arcs: []string{"E"}},
				{Name: "D", Type: "wait", Arcs: []string{"E"}},
				{Name: "E", Type: "wait", Join: graph.JoinLang, Param: `require tokenset "ts1" or require tokenset "ts2"`},
			},
			start: `[1 A C F] (C F 3) (C F 4) [2 B C F] (C F 5) (C F 6)
			        [3 C I F ts1 0] [4 C I F ts1 1] [5 D I F ts2 0] [6 D I F ts2 1]`,
			steps: []confStep{
				{desc: "C ts1 0", do: doneMember("C", "ts1", 0)},
				{desc: "D ts2 1", do: doneMember("D", "ts2", 1), want: `[1 A C F] (C F 3) (C F 4) [2 B C F] (C F 5) (C F 6)
					[3 C C F ts1 0] (I F E) [4 C I F ts1 1] [5 D I F ts2 0] [6 D C F ts2 1] (I F E)`},
				{desc: "C ts1 1", do: doneMember("C", "ts1", 1), want: `[1 A C F] (C F 3) (C F 4) [2 B C F] (C F 5) (C F 6)
					[3 C C F ts1 0] (C F 7) [4 C C F ts1 1] (C F 7) [5 D I F ts2 0] [6 D C F ts2 1] (I F E)
					[7 E I F ts1 0]`},
				{desc: "D ts2 0", do: doneMember("D", "ts2", 0), want: `[1 A C F] (C F 3) (C F 4) [2 B C F] (C F 5) (C F 6)
					[3 C C F ts1 0] (C F 7) [4 C C F ts1 1] (C F 7) [5 D C F ts2 0] (C F 8) [6 D C F ts2 1] (C F 8)
					[7 E I F ts1 0] [8 E I F ts2 1]`}, // E takes the membership of its first parent: D ts2 1 completed first
			},
		},
		{
			// Decision 2: a merge goes into the newest node token on the node.
			name: "merge into the newest token",
			nodes: []N{
				{Name: "S", Type: "wait", Start: true, Arcs: []string{"A", "A"}},
				{Name: "A", Type: "wait", Arcs: []string{"D"}},
				{Name: "B", Type: "wait", Start: true, Arcs: []string{"D"}},
				{Name: "D", Type: "wait", Join: graph.JoinLang, Param: `require node "A" or require node "B" when first`},
			},
			steps: []confStep{
				{desc: "S", do: doneOn("S")},
				{desc: "A", do: doneOn("A")},
				{desc: "A", do: doneOn("A"), want: `[1 S C F] (C F 3) (C F 4) [2 B I F]
					[3 A C F] (C F 5) [4 A C F] (C F 6) [5 D I F] [6 D I F]`},
				{desc: "B merges into the second D", do: doneOn("B"), want: `[1 S C F] (C F 3) (C F 4) [2 B C F] (C F 6)
					[3 A C F] (C F 5) [4 A C F] (C F 6) [5 D I F] [6 D I F]`},
			},
			check: func(h *confHarness) {
				if d := h.p.NodeTokens[5]; len(d.Parents) != 2 || d.Parents[1].Parent.Node.Name != "B" {
					h.t.Fatalf("B did not merge into the newest D: %v", d.Parents)
				}
			},
		},
		{
			// The built-in first: B alone starts D while no D token exists.
			name: "first is true while there is no merge token",
			nodes: []N{
				{Name: "A", Type: "wait", Start: true, Arcs: []string{"D"}},
				{Name: "B", Type: "wait", Start: true, Arcs: []string{"D"}},
				{Name: "D", Type: "wait", Join: graph.JoinLang, Param: `require node "A" or require node "B" when first`},
			},
			steps: []confStep{
				{desc: "B", do: doneOn("B"), want: `[1 A I F] [2 B C F] (C F 3) [3 D I F]`},
				{desc: "A fires its own D", do: doneOn("A"), want: `[1 A C F] (C F 4) [2 B C F] (C F 3) [3 D I F] [4 D I F]`},
			},
		},
	})
}

// TestConformanceJoinLangWhenError: an unknown name in a when-clause fails
// the command with an error naming it (decision 13, 15).
func TestConformanceJoinLangWhenError(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "when-err", threeIntoD(`require node "A" when noSuchThing`)...)
	p := start(t, k, g, nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	err := k.Engine(t0).Complete(token(t, p, "A"))
	if err == nil || !strings.Contains(err.Error(), "noSuchThing") {
		t.Fatalf("err = %v, want an error naming noSuchThing", err)
	}
	// A registered predicate may fail too; its error reaches the caller.
	k2 := testKernel()
	k2.RegisterPredicate("broken", func(*Engine, *NodeToken) (bool, error) { return false, errBroken })
	g2 := mkGraph(t, "when-err2", threeIntoD(`require node "A" when broken`)...)
	p2 := start(t, k2, g2, nil)
	defer func() { checkNoDoubleCompletion(t, p2.EventList()) }()
	if err := k2.Engine(t0).Complete(token(t, p2, "A")); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v, want the predicate's failure", err)
	}
}

var errBroken = &Error{Code: "execution_failed", Msg: "predicate broken failed"}
