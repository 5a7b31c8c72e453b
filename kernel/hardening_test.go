package kernel

import (
	"errors"
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// TestJoinLangTokenSetWaitsForWholeSet: a `require tokenset` requirement
// contributes its arc tokens only once every member of the set is at the
// join (as the Java evaluator does). The first set of "s" fires J; a second
// set named "s" must then wait whole at J and merge both members at once,
// not merge its first member alone while the second is still on its way.
func TestJoinLangTokenSetWaitsForWholeSet(t *testing.T) {
	nodes := []N{
		{Name: "A1", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "A2", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"J"}},
		{Name: "J", Type: "wait", Join: "joinlang", Param: `require tokenset "s" when first`},
	}
	runScenarios(t, []confScenario{{
		name:  "second set waits whole",
		nodes: nodes,
		steps: []confStep{
			{desc: "A1 makes set s", do: doneSet("A1", "", "s", 2, nil, nil)},
			{desc: "first member of the first set waits", do: doneMember("B", "s", 0), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 I F]
				[3 B C F s 0] (I F J)
				[4 B I F s 1]`},
			{desc: "the first set is whole: J fires", do: doneMember("B", "s", 1), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 I F]
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]`},
			{desc: "A2 makes a second set s", do: doneSet("A2", "", "s", 2, nil, nil)},
			{desc: "its first member waits at J", do: doneMember("B", "s", 0), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 C F] (C F 6) (C F 7)
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]
				[6 B C F s 0] (I F J)
				[7 B I F s 1]`},
			{desc: "the second set is whole: both merge into J", do: doneMember("B", "s", 1), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 C F] (C F 6) (C F 7)
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]
				[6 B C F s 0] (C F 5)
				[7 B C F s 1] (C F 5)`},
		},
	}})
}

// TestCompletingNestedTokenRefused: completing from outside a node token
// whose nested process still runs would orphan the child; it is refused,
// naming the child, and nothing changes. Once the child ends, the parent
// token completes by itself.
func TestCompletingNestedTokenRefused(t *testing.T) {
	k := testKernel()
	child := mkGraph(t, "child", N{Name: "C", Type: "wait", Start: true})
	k.Definitions = func(name string) *graph.Graph { return child }
	g := mkGraph(t, "parent", N{Name: "P", Type: "nested", Start: true, Custom: nestedCustom("child"), Arcs: []string{"Q"}}, N{Name: "Q", Type: "wait"})
	p := start(t, k, g, nil)
	pt := token(t, p, "P")
	before := p.History()
	err := k.Engine(t0).Complete(pt)
	if !errors.Is(err, ErrNestedProcessActive) || !strings.Contains(err.Error(), p.Nested[0].ID) {
		t.Fatalf("completing the nested token: %v, want %s naming %s", err, ErrNestedProcessActive.Code, p.Nested[0].ID)
	}
	if _, err := k.Engine(t0).CompleteWithNewTokenSet(pt, "", "s", 2, nil, nil); !errors.Is(err, ErrNestedProcessActive) {
		t.Fatalf("completing the nested token with a token set: %v", err)
	}
	if p.History() != before || p.Nested[0].State != Executing {
		t.Fatalf("a refused completion changed the tree:\n%s", p.History())
	}
	complete(t, k, p.Nested[0], "C")
	wantHistory(t, p, `[1 P C F] (C F 2) [2 Q I F]`)
}
