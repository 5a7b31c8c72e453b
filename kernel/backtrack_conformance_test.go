package kernel

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// Backtracking conformance: the shapes and steps the reference engine's
// backtracking suites assert (linear, split, join, split-join, diamond and
// uneven trees), re-expressed as mkGraph definitions and table rows, plus
// the Veena-specific cases of sarasvati.md §11 (dead ends, token sets,
// custom node types and refusals).
//
// Node and arc order is document order (decision 1). In every definition
// below the document order is also the alphabetical order the Java engine
// sorts into, so the expectations are the reference's unchanged.

// btStep is one command of a scenario and the whole history expected after it.
type btStep struct {
	op   string   // "complete", "completeSet" (with a new token set "ts" of two members) or "backtrack"
	node string   // node name
	arcs []string // complete: arc names (none: the default arcs)
	nth  int      // 1-based creation rank of the token among node's tokens (complete: 0 means the only active one)
	want string   // expected history in TestProcess notation
}

func btComplete(node string, want string, arcs ...string) btStep {
	return btStep{op: "complete", node: node, arcs: arcs, want: want}
}

// cmpNth completes the nth token created on node (one of several active).
func btCompleteNth(node string, nth int, want string, arcs ...string) btStep {
	return btStep{op: "complete", node: node, nth: nth, arcs: arcs, want: want}
}

func btCompleteSet(node string, want string) btStep {
	return btStep{op: "completeSet", node: node, want: want}
}

func btBack(node string, nth int, want string) btStep {
	return btStep{op: "backtrack", node: node, nth: nth, want: want}
}

type btScenario struct {
	name  string
	nodes []N
	start string // history right after the start
	steps []btStep
}

// Definitions of the reference suites (all nodes wait).
var (
	btLinear = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait"},
	}
	btTwiceLinear = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"C"}},
		{Name: "C", Type: "wait"},
	}
	btSplit = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C", "D"}},
		{Name: "B", Type: "wait"},
		{Name: "C", Type: "wait"},
		{Name: "D", Type: "wait"},
	}
	btJoin = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"C"}},
		{Name: "B", Type: "wait", Start: true, Arcs: []string{"C"}},
		{Name: "C", Type: "wait", Join: graph.JoinAnd},
	}
	btSplitJoin = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"C"}},
		{Name: "B", Type: "wait", Start: true, Arcs: []string{"D"}},
		{Name: "C", Type: "wait", Arcs: []string{"E"}},
		{Name: "D", Type: "wait", Arcs: []string{"E"}},
		{Name: "E", Type: "wait", Join: graph.JoinAnd, Arcs: []string{"F", "G"}},
		{Name: "F", Type: "wait"},
		{Name: "G", Type: "wait"},
	}
	btDiamond = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
		{Name: "B", Type: "wait", Arcs: []string{"D"}},
		{Name: "C", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Join: graph.JoinAnd},
	}
	btDiamond2 = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"C", "D"}},
		{Name: "C", Type: "wait", Arcs: []string{"E"}},
		{Name: "D", Type: "wait", Arcs: []string{"E"}},
		{Name: "E", Type: "wait", Join: graph.JoinAnd},
	}
	btSplitDead = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "D"}},
		{Name: "B", Type: "wait", Arcs: []string{"C"}},
		{Name: "C", Type: "wait"},
		{Name: "D", Type: "wait"},
	}
	btTokenSetJoin = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"D"}},
		{Name: "D", Type: "wait", Arcs: []string{"C"}},
		{Name: "C", Type: "wait", Join: graph.JoinTokenSet, Arcs: []string{"E"}},
		{Name: "E", Type: "wait"},
	}
	btTwoStarts = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"C", "D"}},
		{Name: "B", Type: "wait", Start: true, Arcs: []string{"D", "E"}},
		{Name: "C", Type: "wait", Arcs: []string{"F"}},
		{Name: "D", Type: "wait", Join: graph.JoinAnd, Arcs: []string{"F", "G"}},
		{Name: "E", Type: "wait", Arcs: []string{"G"}},
		{Name: "F", Type: "wait", Join: graph.JoinAnd},
		{Name: "G", Type: "wait", Join: graph.JoinAnd},
	}
	btUneven = []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
		{Name: "B", Type: "wait", Arcs: []string{"B:reject"}},
		{Name: "C", Type: "wait"},
	}
)

var btScenarios = []btScenario{
	// BacktrackLinearTest.testLinear
	{name: "linear", nodes: btLinear, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2)
		          [2 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2)
		              [2 B C FB] (C B 3)
		              [3 A I F]`),
		btComplete("A", `[1 A C FB] (C FB 2)
		          [2 B C FB] (C B 3)
		          [3 A C F]  (C F 4)
		          [4 B I F]`),
		btBack("A", 2, `[1 A C FB] (C FB 2)
		              [2 B C FB] (C B 3)
		              [3 A C FB] (C FB 4)
		              [4 B C FB] (C B 5)
		              [5 A I F]`),
	}},
	// BacktrackLinearTest.testLinearTwice
	{name: "linear twice", nodes: btTwiceLinear, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2)
		          [2 B I F]`),
		btComplete("B", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3)
		          [3 C I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2)
		              [2 B C FB] (C FB 3)
		              [3 C C FB] (C B 4)
		              [4 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2)
		              [2 B C FB] (C FB 3)
		              [3 C C FB] (C B 4)
		              [4 B C FB] (C B 5)
		              [5 A I F]`),
	}},
	// BacktrackSplitTest.testSplit
	{name: "split", nodes: btSplit, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B I F]
		          [3 C I F]
		          [4 D I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3) (C FB 4)
		              [2 B C FB] (C B 5)
		              [3 C C FB] (C B 5)
		              [4 D C FB] (C B 5)
		              [5 A I F]`),
		btComplete("A", `[1 A C FB] (C FB 2) (C FB 3) (C FB 4)
		          [2 B C FB] (C B 5)
		          [3 C C FB] (C B 5)
		          [4 D C FB] (C B 5)
		          [5 A C F]  (C F 6) (C F 7) (C F 8)
		          [6 B I F]
		          [7 C I F]
		          [8 D I F]`),
		btBack("A", 2, `[1 A C FB] (C FB 2) (C FB 3) (C FB 4)
		              [2 B C FB] (C B 5)
		              [3 C C FB] (C B 5)
		              [4 D C FB] (C B 5)
		              [5 A C FB] (C FB 6) (C FB 7) (C FB 8)
		              [6 B C FB] (C B 9)
		              [7 C C FB] (C B 9)
		              [8 D C FB] (C B 9)
		              [9 A I F]`),
	}},
	// BacktrackSplitTest.testSplitDeadEnd
	{name: "split dead end", nodes: btSplit, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B I F]
		          [3 C I F]
		          [4 D I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B C F]
		          [3 C I F]
		          [4 D I F]`),
		btComplete("C", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B C F]
		          [3 C C F]
		          [4 D I F]`),
		btBack("B", 1, `[1 A C F] (C FB 2) (C F 3) (C F 4)
		              [2 B C FB] (C U 5)
		              [3 C C F]
		              [4 D I F]
		              [5 B I F]`),
		btComplete("B", `[1 A C F] (C FB 2) (C F 3) (C F 4)
		          [2 B C FB] (C U 5)
		          [3 C C F]
		          [4 D I F]
		          [5 B C F]`),
		btBack("B", 2, `[1 A C F] (C FB 2) (C F 3) (C F 4)
		              [2 B C FB] (C UB 5)
		              [3 C C F]
		              [4 D I F]
		              [5 B C FB] (C U 6)
		              [6 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3) (C FB 4)
		              [2 B C FB] (C UB 5)
		              [3 C C FB] (C B 7)
		              [4 D C FB] (C B 7)
		              [5 B C FB] (C UB 6)
		              [6 B C FB] (C B 7)
		              [7 A I F]`),
	}},
	// BacktrackJoinTest.testJoin: the pending u-turn (I U C) is later turned
	// into (C B 5) by the backtrack to B.
	{name: "join", nodes: btJoin, start: `[1 A I F] [2 B I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (I F C)
		          [2 B I F]`),
		btComplete("B", `[1 A C F] (C F 3)
		          [2 B C F] (C F 3)
		          [3 C I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C FB 3)
		              [3 C C FB] (C B 4) (I U C)
		              [4 A I F]`),
		btBack("B", 1, `[1 A C FB] (C FB 3)
		              [2 B C FB] (C FB 3)
		              [3 C C FB] (C B 4) (C B 5)
		              [4 A I F]
		              [5 B I F]`),
	}},
	// BacktrackJoinTest.testJoin2: the pending u-turn is consumed by the join
	// (C U 5), then turned into (C UB 5) by the backtrack to the second A.
	{name: "join 2", nodes: btJoin, start: `[1 A I F] [2 B I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (I F C)
		          [2 B I F]`),
		btComplete("B", `[1 A C F] (C F 3)
		          [2 B C F] (C F 3)
		          [3 C I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C FB 3)
		              [3 C C FB] (C B 4) (I U C)
		              [4 A I F]`),
		btComplete("A", `[1 A C FB] (C FB 3)
		          [2 B C F]  (C FB 3)
		          [3 C C FB] (C B 4) (C U 5)
		          [4 A C F]  (C F 5)
		          [5 C I F]`),
		btBack("A", 2, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C FB 3)
		              [3 C C FB] (C B 4) (C UB 5)
		              [4 A C FB] (C FB 5)
		              [5 C C FB] (C B 6) (I U C)
		              [6 A I F]`),
		btBack("B", 1, `[1 A C FB] (C FB 3)
		              [2 B C FB] (C FB 3)
		              [3 C C FB] (C B 4) (C UB 5)
		              [4 A C FB] (C FB 5)
		              [5 C C FB] (C B 6) (C B 7)
		              [6 A I F]
		              [7 B I F]`),
	}},
	// BacktrackSplitJoinTest.testSplitJoin
	{name: "split join", nodes: btSplitJoin, start: `[1 A I F] [2 B I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C I F]
		          [4 D I F]`),
		btComplete("C", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (I F E)
		          [4 D I F]`),
		btComplete("D", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 5)
		          [4 D C F] (C F 5)
		          [5 E I F]`),
		btComplete("E", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 5)
		          [4 D C F] (C F 5)
		          [5 E C F] (C F 6) (C F 7)
		          [6 F I F]
		          [7 G I F]`),
		btComplete("F", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 5)
		          [4 D C F] (C F 5)
		          [5 E C F] (C F 6) (C F 7)
		          [6 F C F]
		          [7 G I F]`),
		btBack("C", 1, `[1 A C F]  (C F 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C F]  (C FB 5)
		              [5 E C FB] (C FB 6) (C FB 7)
		              [6 F C FB] (C B 8)
		              [7 G C FB] (C B 8)
		              [8 E C B]  (C B 9) (I U E)
		              [9 C I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C F]  (C FB 5)
		              [5 E C FB] (C FB 6) (C FB 7)
		              [6 F C FB] (C B 8)
		              [7 G C FB] (C B 8)
		              [8 E C B]  (C B 9) (I U E)
		              [9 C C FB] (C B 10)
		              [10 A I F]`),
		btBack("D", 1, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C FB 6) (C FB 7)
		              [6 F C FB] (C B 8)
		              [7 G C FB] (C B 8)
		              [8 E C B]  (C B 9) (C B 11)
		              [9 C C FB] (C B 10)
		              [10 A I F]
		              [11 D I F]`),
		btBack("B", 1, `[1 A C FB] (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C FB 6) (C FB 7)
		              [6 F C FB] (C B 8)
		              [7 G C FB] (C B 8)
		              [8 E C B]  (C B 9) (C B 11)
		              [9 C C FB] (C B 10)
		              [10 A I F]
		              [11 D C FB] (C B 12)
		              [12 B I F]`),
	}},
	// BacktrackSplitJoinTest.testDiamond
	{name: "diamond", nodes: btDiamond, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (I F D)
		          [3 C I F]`),
		btComplete("C", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 4)
		          [4 D I F]`),
		btBack("C", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C F]  (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (I U D)
		              [5 C I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C B 6)
		              [5 C I F]
		              [6 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C B 6)
		              [5 C C FB] (C B 7)
		              [6 B C FB] (C B 7)
		              [7 A I F]`),
	}},
	// BacktrackSplitJoinTest.testDiamondExtended
	{name: "diamond extended", nodes: btDiamond, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (I F D)
		          [3 C I F]`),
		btComplete("C", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 4)
		          [4 D I F]`),
		btBack("C", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C F]  (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (I U D)
		              [5 C I F]`),
		btComplete("C", `[1 A C F]  (C F 2) (C F 3)
		          [2 B C F]  (C FB 4)
		          [3 C C FB] (C FB 4)
		          [4 D C FB] (C B 5) (C U 6)
		          [5 C C F]  (C F 6)
		          [6 D I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C UB 6)
		              [5 C C F]  (C FB 6)
		              [6 D C FB] (C B 7) (I U D)
		              [7 B I F]`),
		btComplete("B", `[1 A C F]  (C F 2) (C F 3)
		          [2 B C FB] (C FB 4)
		          [3 C C FB] (C FB 4)
		          [4 D C FB] (C B 5) (C UB 6)
		          [5 C C F]  (C FB 6)
		          [6 D C FB] (C B 7) (C U 8)
		          [7 B C F]  (C F 8)
		          [8 D I F]`),
		btBack("B", 2, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C UB 6)
		              [5 C C F]  (C FB 6)
		              [6 D C FB] (C B 7) (C UB 8)
		              [7 B C FB] (C FB 8)
		              [8 D C FB] (C B 9) (I U D)
		              [9 B I F]`),
		btBack("C", 2, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C UB 6)
		              [5 C C FB] (C FB 6)
		              [6 D C FB] (C B 7) (C UB 8)
		              [7 B C FB] (C FB 8)
		              [8 D C FB] (C B 9) (C B 10)
		              [9 B I F]
		              [10 C I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C FB 4)
		              [4 D C FB] (C B 5) (C UB 6)
		              [5 C C FB] (C FB 6)
		              [6 D C FB] (C B 7) (C UB 8)
		              [7 B C FB] (C FB 8)
		              [8 D C FB] (C B 9) (C B 10)
		              [9 B C FB] (C B 11)
		              [10 C C FB] (C B 11)
		              [11 A I F]`),
	}},
	// BacktrackSplitJoinTest.testDiamond2
	{name: "diamond 2", nodes: btDiamond2, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2)
		          [2 B I F]`),
		btComplete("B", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3) (C F 4)
		          [3 C I F]
		          [4 D I F]`),
		btComplete("C", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3) (C F 4)
		          [3 C C F] (I F E)
		          [4 D I F]`),
		btComplete("D", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3) (C F 4)
		          [3 C C F] (C F 5)
		          [4 D C F] (C F 5)
		          [5 E I F]`),
		btBack("D", 1, `[1 A C F]  (C F 2)
		              [2 B C F]  (C F 3) (C F 4)
		              [3 C C F]  (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (I U E)
		              [6 D I F]`),
		btComplete("D", `[1 A C F]  (C F 2)
		          [2 B C F]  (C F 3) (C F 4)
		          [3 C C F]  (C FB 5)
		          [4 D C FB] (C FB 5)
		          [5 E C FB] (C B 6) (C U 7)
		          [6 D C F]  (C F 7)
		          [7 E I F]`),
		btBack("C", 1, `[1 A C F]  (C F 2)
		              [2 B C F]  (C F 3) (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 D C F]  (C FB 7)
		              [7 E C FB] (C B 8) (I U E)
		              [8 C I F]`),
		btComplete("C", `[1 A C F]  (C F 2)
		          [2 B C F]  (C F 3) (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C FB] (C FB 5)
		          [5 E C FB] (C B 6) (C UB 7)
		          [6 D C F]  (C FB 7)
		          [7 E C FB] (C B 8) (C U 9)
		          [8 C C F]  (C F 9)
		          [9 E I F]`),
		btBack("C", 2, `[1 A C F]  (C F 2)
		              [2 B C F]  (C F 3) (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 D C F]  (C FB 7)
		              [7 E C FB] (C B 8) (C UB 9)
		              [8 C C FB] (C FB 9)
		              [9 E C FB] (C B 10) (I U E)
		              [10 C I F]`),
		btBack("D", 2, `[1 A C F]  (C F 2)
		              [2 B C F]  (C F 3) (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 D C FB] (C FB 7)
		              [7 E C FB] (C B 8) (C UB 9)
		              [8 C C FB] (C FB 9)
		              [9 E C FB] (C B 10) (C B 11)
		              [10 C I F]
		              [11 D I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2)
		              [2 B C FB] (C FB 3) (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 D C FB] (C FB 7)
		              [7 E C FB] (C B 8) (C UB 9)
		              [8 C C FB] (C FB 9)
		              [9 E C FB] (C B 10) (C B 11)
		              [10 C C FB] (C B 12)
		              [11 D C FB] (C B 12)
		              [12 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2)
		              [2 B C FB] (C FB 3) (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 D C FB] (C FB 7)
		              [7 E C FB] (C B 8) (C UB 9)
		              [8 C C FB] (C FB 9)
		              [9 E C FB] (C B 10) (C B 11)
		              [10 C C FB] (C B 12)
		              [11 D C FB] (C B 12)
		              [12 B C FB] (C B 13)
		              [13 A I F]`),
	}},
	// BacktrackUnevenTreesTest.testReject. The reference writes the state
	// after the second reject as "[3 nodeC C F]" but never validates it (C
	// is still active there); the row states the real history.
	{name: "uneven trees", nodes: btUneven, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (C F 4)
		          [3 C I F]
		          [4 B I F]`, "reject"),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (C F 4)
		          [3 C I F]
		          [4 B C F] (C F 5)
		          [5 B I F]`, "reject"),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C B 8)
		              [4 B C FB] (C FB 5)
		              [5 B C FB] (C B 6)
		              [6 B C B]  (C B 7)
		              [7 B C B]  (C B 8)
		              [8 A I F]`),
	}},
	// Veena: completing on a name that matches no arc is a dead end too
	// (§4.3, §11.2): the destination gets a u-turn into its replacement.
	{name: "dead end after completing on an unknown arc name", nodes: btSplit, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B I F]
		          [3 C I F]
		          [4 D I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3) (C F 4)
		          [2 B C F]
		          [3 C I F]
		          [4 D I F]`, "nowhere"),
		btBack("B", 1, `[1 A C F] (C FB 2) (C F 3) (C F 4)
		              [2 B C FB] (C U 5)
		              [3 C I F]
		              [4 D I F]
		              [5 B I F]`),
		btComplete("B", `[1 A C F] (C FB 2) (C F 3) (C F 4)
		          [2 B C FB] (C U 5)
		          [3 C I F]
		          [4 D I F]
		          [5 B C F]`, "nowhere"),
		// Backtracking to A across the two dead ends of B.
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3) (C FB 4)
		              [2 B C FB] (C UB 5)
		              [3 C C FB] (C B 6)
		              [4 D C FB] (C B 6)
		              [5 B C FB] (C B 6)
		              [6 A I F]`),
	}},

	// The rows below go beyond the reference suites; each pins a kernel
	// bug found while writing them (see backtrack.go).

	// A leaf arc token (waiting at a join) under the destination is
	// completed into the destination's replacement (§11.3: map[a] = a).
	// Backtracking further up then undoes that replacement through the
	// parents of the token it replaced (it used to fail: "no replacement").
	{name: "leaf under the destination, then upstream", nodes: btDiamond, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (I F D)
		          [3 C I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 C I F]
		              [4 B I F]`),
		btComplete("B", `[1 A C F]  (C F 2) (C F 3)
		          [2 B C FB] (C FB 4)
		          [3 C I F]
		          [4 B C F]  (I F D)`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 C C FB] (C B 6)
		              [4 B C FB] (C FB 5)
		              [5 B C B]  (C B 6)
		              [6 A I F]`),
	}},
	// A leaf arc token turned into a mirror token (C#5 stands for C#3), whose
	// backtracked arc token leads to the redone B: backtracking B's redo and
	// then A finds the mirrors through what C#5 stands for (this used to
	// fail: "the destination was not reached").
	{name: "leaf turned into a mirror, then two levels up", nodes: btDiamond2, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2)
		          [2 B I F]`),
		btComplete("B", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3) (C F 4)
		          [3 C I F]
		          [4 D I F]`),
		btComplete("C", `[1 A C F] (C F 2)
		          [2 B C F] (C F 3) (C F 4)
		          [3 C C F] (I F E)
		          [4 D I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2)
		              [2 B C FB] (C FB 3) (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C B 6)
		              [5 C C B]  (C B 6)
		              [6 B I F]`),
		btComplete("B", `[1 A C F]  (C F 2)
		          [2 B C FB] (C FB 3) (C FB 4)
		          [3 C C FB] (C FB 5)
		          [4 D C FB] (C B 6)
		          [5 C C B]  (C B 6)
		          [6 B C F]  (C F 7) (C F 8)
		          [7 C I F]
		          [8 D I F]`),
		btBack("B", 2, `[1 A C F]  (C F 2)
		              [2 B C FB] (C FB 3) (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C B 6)
		              [5 C C B]  (C B 6)
		              [6 B C FB] (C FB 7) (C FB 8)
		              [7 C C FB] (C B 9)
		              [8 D C FB] (C B 9)
		              [9 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2)
		              [2 B C FB] (C FB 3) (C FB 4)
		              [3 C C FB] (C FB 5)
		              [4 D C FB] (C B 6)
		              [5 C C B]  (C B 6)
		              [6 B C FB] (C FB 7) (C FB 8)
		              [7 C C FB] (C B 9)
		              [8 D C FB] (C B 9)
		              [9 B C FB] (C B 10)
		              [10 A I F]`),
	}},
	// A leaf arc token under a token between the leaf and the destination:
	// it is backtracked once (ARC_TOKEN_BACKTRACKED used to fire twice).
	{name: "leaf under a mirrored token", nodes: btSplitJoin, start: `[1 A I F] [2 B I F]`, steps: []btStep{
		btComplete("B", `[1 A I F]
		          [2 B C F] (C F 3)
		          [3 D I F]`),
		btComplete("A", `[1 A C F] (C F 4)
		          [2 B C F] (C F 3)
		          [3 D I F]
		          [4 C I F]`),
		btComplete("D", `[1 A C F] (C F 4)
		          [2 B C F] (C F 3)
		          [3 D C F] (I F E)
		          [4 C I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 4)
		              [2 B C F]  (C F 3)
		              [3 D C F]  (I F E)
		              [4 C C FB] (C B 5)
		              [5 A I F]`),
		btBack("B", 1, `[1 A C FB] (C FB 4)
		              [2 B C FB] (C FB 3)
		              [3 D C FB] (C FB 6)
		              [4 C C FB] (C B 5)
		              [5 A I F]
		              [6 D C B]  (C B 7)
		              [7 B I F]`),
	}},
	// A replacement (reached through a backtracked arc token) that ends in
	// a dead end, is backtracked to, and then backtracked across: the redo
	// stands for the original B (this used to fail: "no replacement"), and
	// the dead end's parent, already B, is not backtracked a second time.
	{name: "dead end of a replacement, then upstream", nodes: btSplitDead, start: `[1 A I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 2) (C F 3)
		          [2 B I F]
		          [3 D I F]`),
		btComplete("B", `[1 A C F] (C F 2) (C F 3)
		          [2 B C F] (C F 4)
		          [3 D I F]
		          [4 C I F]`),
		btBack("B", 1, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 D I F]
		              [4 C C FB] (C B 5)
		              [5 B I F]`),
		btComplete("B", `[1 A C F]  (C F 2) (C F 3)
		          [2 B C FB] (C FB 4)
		          [3 D I F]
		          [4 C C FB] (C B 5)
		          [5 B C F]`, "nowhere"),
		btBack("B", 2, `[1 A C F]  (C F 2) (C F 3)
		              [2 B C FB] (C FB 4)
		              [3 D I F]
		              [4 C C FB] (C B 5)
		              [5 B C FB] (C U 6)
		              [6 B I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB] (C FB 4)
		              [3 D C FB] (C B 7)
		              [4 C C FB] (C B 5)
		              [5 B C FB] (C UB 6)
		              [6 B C FB] (C B 7)
		              [7 A I F]`),
	}},
	// A u-turn consumed by the join, backtracked (it turns back again),
	// consumed again, and then the whole branch is backtracked: the last
	// u-turn goes back to the join as a u-turn for the D branch, which is
	// not undone (it used to stay processed and incomplete, "(I B E)").
	{name: "u-turn chain at a join", nodes: btSplitJoin, start: `[1 A I F] [2 B I F]`, steps: []btStep{
		btComplete("A", `[1 A C F] (C F 3)
		          [2 B I F]
		          [3 C I F]`),
		btComplete("B", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C I F]
		          [4 D I F]`),
		btComplete("D", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C I F]
		          [4 D C F] (I F E)`),
		btComplete("C", `[1 A C F] (C F 3)
		          [2 B C F] (C F 4)
		          [3 C C F] (C F 5)
		          [4 D C F] (C F 5)
		          [5 E I F]`),
		btBack("C", 1, `[1 A C F]  (C F 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C F]  (C FB 5)
		              [5 E C FB] (C B 6) (I U E)
		              [6 C I F]`),
		btComplete("C", `[1 A C F]  (C F 3)
		          [2 B C F]  (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C F]  (C FB 5)
		          [5 E C FB] (C B 6) (C U 7)
		          [6 C C F]  (C F 7)
		          [7 E I F]`),
		btBack("C", 2, `[1 A C F]  (C F 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C F]  (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 C C FB] (C FB 7)
		              [7 E C FB] (C B 8) (I U E)
		              [8 C I F]`),
		btComplete("C", `[1 A C F]  (C F 3)
		          [2 B C F]  (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C F]  (C FB 5)
		          [5 E C FB] (C B 6) (C UB 7)
		          [6 C C FB] (C FB 7)
		          [7 E C FB] (C B 8) (C U 9)
		          [8 C C F]  (C F 9)
		          [9 E I F]`),
		btComplete("E", `[1 A C F]  (C F 3)
		          [2 B C F]  (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C F]  (C FB 5)
		          [5 E C FB] (C B 6) (C UB 7)
		          [6 C C FB] (C FB 7)
		          [7 E C FB] (C B 8) (C U 9)
		          [8 C C F]  (C F 9)
		          [9 E C F]  (C F 10) (C F 11)
		          [10 F I F]
		          [11 G I F]`),
		btBack("A", 1, `[1 A C FB] (C FB 3)
		              [2 B C F]  (C F 4)
		              [3 C C FB] (C FB 5)
		              [4 D C F]  (C FB 5)
		              [5 E C FB] (C B 6) (C UB 7)
		              [6 C C FB] (C FB 7)
		              [7 E C FB] (C B 8) (C UB 9)
		              [8 C C FB] (C FB 9)
		              [9 E C FB] (C FB 10) (C FB 11)
		              [10 F C FB] (C B 12)
		              [11 G C FB] (C B 12)
		              [12 E C B]  (C B 13) (I U E)
		              [13 C C B]  (C B 14)
		              [14 A I F]`),
		// The D branch's u-turn still waits at E: redoing C and A lets E
		// fire again.
		btComplete("A", `[1 A C FB] (C FB 3)
		          [2 B C F]  (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C F]  (C FB 5)
		          [5 E C FB] (C B 6) (C UB 7)
		          [6 C C FB] (C FB 7)
		          [7 E C FB] (C B 8) (C UB 9)
		          [8 C C FB] (C FB 9)
		          [9 E C FB] (C FB 10) (C FB 11)
		          [10 F C FB] (C B 12)
		          [11 G C FB] (C B 12)
		          [12 E C B]  (C B 13) (I U E)
		          [13 C C B]  (C B 14)
		          [14 A C F]  (C F 15)
		          [15 C I F]`),
		btComplete("C", `[1 A C FB] (C FB 3)
		          [2 B C F]  (C F 4)
		          [3 C C FB] (C FB 5)
		          [4 D C F]  (C FB 5)
		          [5 E C FB] (C B 6) (C UB 7)
		          [6 C C FB] (C FB 7)
		          [7 E C FB] (C B 8) (C UB 9)
		          [8 C C FB] (C FB 9)
		          [9 E C FB] (C FB 10) (C FB 11)
		          [10 F C FB] (C B 12)
		          [11 G C FB] (C B 12)
		          [12 E C B]  (C B 13) (C U 16)
		          [13 C C B]  (C B 14)
		          [14 A C F]  (C F 15)
		          [15 C C F]  (C F 16)
		          [16 E I F]`),
	}},
	// Token sets meeting at a tokenSet join. Backtracking one member must
	// not let the join fire on the others in the middle of the backtrack
	// (the completion of the member's active token is an undo, not a dead
	// end), and the arc tokens of the members on the same arc are told
	// apart by their memberships (the mirror of member 0's arc token used
	// to be member 1's).
	{name: "token set join", nodes: btTokenSetJoin, start: `[1 A I F]`, steps: []btStep{
		btCompleteSet("A", `[1 A C F] (C F 2) (C F 3)
		             [2 B I F ts 0]
		             [3 B I F ts 1]`),
		btCompleteNth("B", 1, `[1 A C F] (C F 2) (C F 3)
		                [2 B C F ts 0] (C F 4)
		                [3 B I F ts 1]
		                [4 D I F ts 0]`),
		btCompleteNth("D", 1, `[1 A C F] (C F 2) (C F 3)
		                [2 B C F ts 0] (C F 4)
		                [3 B I F ts 1]
		                [4 D C F ts 0] (I F C)`),
		btCompleteNth("B", 2, `[1 A C F] (C F 2) (C F 3)
		                [2 B C F ts 0] (C F 4)
		                [3 B C F ts 1] (C F 5)
		                [4 D C F ts 0] (I F C)
		                [5 D I F ts 1]`),
		// Member 1 is redone; member 0 still waits at C.
		btBack("B", 2, `[1 A C F] (C F 2) (C F 3)
		              [2 B C F ts 0] (C F 4)
		              [3 B C FB ts 1] (C FB 5)
		              [4 D C F ts 0] (I F C)
		              [5 D C FB ts 1] (C B 6)
		              [6 B I F ts 1]`),
		btCompleteNth("B", 3, `[1 A C F] (C F 2) (C F 3)
		                [2 B C F ts 0] (C F 4)
		                [3 B C FB ts 1] (C FB 5)
		                [4 D C F ts 0] (I F C)
		                [5 D C FB ts 1] (C B 6)
		                [6 B C F ts 1] (C F 7)
		                [7 D I F ts 1]`),
		// The whole set has arrived: C fires once, outside the set.
		btCompleteNth("D", 3, `[1 A C F] (C F 2) (C F 3)
		                [2 B C F ts 0] (C F 4)
		                [3 B C FB ts 1] (C FB 5)
		                [4 D C F ts 0] (C F 8)
		                [5 D C FB ts 1] (C B 6)
		                [6 B C F ts 1] (C F 7)
		                [7 D C F ts 1] (C F 8)
		                [8 C I F]`),
		// Back into the set, member 1: member 0's arc token goes back to
		// the join as a u-turn.
		btBack("B", 3, `[1 A C F] (C F 2) (C F 3)
		              [2 B C F ts 0] (C F 4)
		              [3 B C FB ts 1] (C FB 5)
		              [4 D C F ts 0] (C FB 8)
		              [5 D C FB ts 1] (C B 6)
		              [6 B C FB ts 1] (C FB 7)
		              [7 D C FB ts 1] (C FB 8)
		              [8 C C FB] (C B 9) (I U C)
		              [9 D C B ts 1] (C B 10)
		              [10 B I F ts 1]`),
		// Then member 0: its u-turn is the one that goes back.
		btBack("B", 1, `[1 A C F] (C F 2) (C F 3)
		              [2 B C FB ts 0] (C FB 4)
		              [3 B C FB ts 1] (C FB 5)
		              [4 D C FB ts 0] (C FB 8)
		              [5 D C FB ts 1] (C B 6)
		              [6 B C FB ts 1] (C FB 7)
		              [7 D C FB ts 1] (C FB 8)
		              [8 C C FB] (C B 9) (C B 11)
		              [9 D C B ts 1] (C B 10)
		              [10 B I F ts 1]
		              [11 D C B ts 0] (C B 12)
		              [12 B I F ts 0]`),
		btCompleteNth("B", 4, `[1 A C F] (C F 2) (C F 3)
		                [2 B C FB ts 0] (C FB 4)
		                [3 B C FB ts 1] (C FB 5)
		                [4 D C FB ts 0] (C FB 8)
		                [5 D C FB ts 1] (C B 6)
		                [6 B C FB ts 1] (C FB 7)
		                [7 D C FB ts 1] (C FB 8)
		                [8 C C FB] (C B 9) (C B 11)
		                [9 D C B ts 1] (C B 10)
		                [10 B C F ts 1] (C F 13)
		                [11 D C B ts 0] (C B 12)
		                [12 B I F ts 0]
		                [13 D I F ts 1]`),
		// Back to A, across both members.
		btBack("A", 1, `[1 A C FB] (C FB 2) (C FB 3)
		              [2 B C FB ts 0] (C FB 4)
		              [3 B C FB ts 1] (C FB 5)
		              [4 D C FB ts 0] (C FB 8)
		              [5 D C FB ts 1] (C B 6)
		              [6 B C FB ts 1] (C FB 7)
		              [7 D C FB ts 1] (C FB 8)
		              [8 C C FB] (C B 9) (C B 11)
		              [9 D C B ts 1] (C B 10)
		              [10 B C FB ts 1] (C FB 13)
		              [11 D C B ts 0] (C B 12)
		              [12 B C FB ts 0] (C B 15)
		              [13 D C FB ts 1] (C B 14)
		              [14 B C B ts 1] (C B 15)
		              [15 A I F]`),
	}},
}

func TestBacktrackConformance(t *testing.T) {
	for _, sc := range btScenarios {
		t.Run(sc.name, func(t *testing.T) {
			k := testKernel()
			p := start(t, k, mkGraph(t, sc.name, sc.nodes...), nil)
			wantHistory(t, p, sc.start)
			for i, st := range sc.steps {
				btRun(t, k, p, st)
				if err := MatchHistory(p, st.want); err != nil {
					t.Fatalf("step %d (%s %s %v %d): %v", i+1, st.op, st.node, st.arcs, st.nth, err)
				}
				btNoDuplicateEvents(t, p)
			}
		})
	}
}

// btRun performs one step.
func btRun(t *testing.T, k *Kernel, p *Process, st btStep) {
	t.Helper()
	switch st.op {
	case "complete":
		if st.nth == 0 {
			complete(t, k, p, st.node, st.arcs...)
		} else if err := k.Engine(t0).Complete(btNth(t, p, st.node, st.nth), st.arcs...); err != nil {
			t.Fatalf("complete %s #%d: %v\n%s", st.node, st.nth, err, p.History())
		}
	case "completeSet":
		if _, err := k.Engine(t0).CompleteWithNewTokenSet(token(t, p, st.node), "", "ts", 2, nil, nil); err != nil {
			t.Fatalf("complete %s with a new token set: %v", st.node, err)
		}
	case "backtrack":
		if _, err := k.Engine(t0).Backtrack(btNth(t, p, st.node, st.nth)); err != nil {
			t.Fatalf("backtrack to %s #%d: %v\n%s", st.node, st.nth, err, p.History())
		}
	default:
		t.Fatalf("unknown step %q", st.op)
	}
}

// btNth returns the nth (1-based) node token created on the named node.
func btNth(t testing.TB, p *Process, node string, nth int) *NodeToken {
	t.Helper()
	n := 0
	for _, nt := range p.NodeTokens {
		if nt.Node.Name == node {
			n++
			if n == nth {
				return nt
			}
		}
	}
	t.Fatalf("no token #%d on %s:\n%s", nth, node, p.History())
	return nil
}

// btNoDuplicateEvents is the reference suite's global invariant, checked
// over every event the process has fired: no node or arc token is
// completed twice or backtracked twice.
func btNoDuplicateEvents(t testing.TB, p *Process) {
	t.Helper()
	if err := btDuplicateEvent(p); err != "" {
		t.Fatalf("%s\n%s", err, p.History())
	}
}

func btDuplicateEvent(p *Process) string {
	seen := map[string]bool{}
	for _, ev := range p.EventList() {
		var key string
		switch ev.Type {
		case NodeTokenCompleted, NodeTokenBacktracked:
			key = fmt.Sprintf("%s node token %d", ev.Type, ev.NodeToken().ID+1)
		case ArcTokenCompleted, ArcTokenBacktracked:
			key = fmt.Sprintf("%s arc token %d (%s)", ev.Type, ev.ArcToken().ID, ev.ArcToken().Arc)
		default:
			continue
		}
		if seen[key] {
			return "duplicate event " + key
		}
		seen[key] = true
	}
	return ""
}

// TestBacktrackDeadEndAfterDiscard: a discarded token has no children; the
// backtrack to it is the dead-end case, and the redone token runs its guard
// again.
func TestBacktrackDeadEndAfterDiscard(t *testing.T) {
	k := testKernel()
	discard := true
	k.RegisterPredicate("discardB", func(*Engine, *NodeToken) (bool, error) { return discard, nil })
	g := mkGraph(t, "discard",
		N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
		N{Name: "B", Type: "wait", Guard: "if discardB then Discard else Accept", Arcs: []string{"D"}},
		N{Name: "C", Type: "wait"},
		N{Name: "D", Type: "wait"})
	p := start(t, k, g, nil)
	complete(t, k, p, "A")
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B C F]
		[3 C I F]`)
	if b := btNth(t, p, "B", 1); b.GuardAction != Discard {
		t.Fatalf("B guard action %v, want discard", b.GuardAction)
	}
	discard = false
	p.Events = nil
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "B", 1)); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C F] (C FB 2) (C F 3)
		[2 B C FB] (C U 4)
		[3 C I F]
		[4 B I F]`)
	wantEvents(t, p,
		"NODE_TOKEN_BACKTRACKED B", "ARC_TOKEN_BACKTRACKED A->B", "ARC_TOKEN_CREATED A->B",
		"NODE_TOKEN_CREATED B", "ARC_TOKEN_PROCESSED A->B", "ARC_TOKEN_COMPLETED A->B",
		"NODE_TOKEN_ACCEPTED B", "NODE_TOKEN_EXECUTED B")
	complete(t, k, p, "B")
	wantHistory(t, p, `
		[1 A C F] (C FB 2) (C F 3)
		[2 B C FB] (C U 4)
		[3 C I F]
		[4 B C F] (C F 5)
		[5 D I F]`)
	btNoDuplicateEvents(t, p)
}

// TestBacktrackTokenSetMemberships: backtracking copies token-set
// memberships onto the tokens it creates (§8).
func TestBacktrackTokenSetMemberships(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "ts",
		N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		N{Name: "B", Type: "wait", Arcs: []string{"C"}},
		N{Name: "C", Type: "wait"})
	p := start(t, k, g, nil)
	if _, err := k.Engine(t0).CompleteWithNewTokenSet(token(t, p, "A"), "", "ts", 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B I F ts 0]
		[3 B I F ts 1]`)
	if err := k.Engine(t0).Complete(btNth(t, p, "B", 1)); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B C F ts 0] (C F 4)
		[3 B I F ts 1]
		[4 C I F ts 0]`)
	// Backtrack into the set: the replacement of member 0 is member 0 again,
	// and so is the backtracked arc token that leads into it.
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "B", 1)); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B C FB ts 0] (C FB 4)
		[3 B I F ts 1]
		[4 C C FB ts 0] (C B 5)
		[5 B I F ts 0]`)
	btArcMemberships(t, p)
	// Member 1 goes on; then the redone member 0 goes on into C.
	if err := k.Engine(t0).Complete(btNth(t, p, "B", 2)); err != nil {
		t.Fatal(err)
	}
	if err := k.Engine(t0).Complete(btNth(t, p, "B", 3)); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B C FB ts 0] (C FB 4)
		[3 B C F ts 1] (C F 6)
		[4 C C FB ts 0] (C B 5)
		[5 B C F ts 0] (C F 7)
		[6 C I F ts 1]
		[7 C I F ts 0]`)
	// Backtrack out of the set to A: every member is backtracked, the mirror
	// tokens keep their memberships, and the new A is in no set.
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "A", 1)); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `
		[1 A C FB] (C FB 2) (C FB 3)
		[2 B C FB ts 0] (C FB 4)
		[3 B C FB ts 1] (C FB 6)
		[4 C C FB ts 0] (C B 5)
		[5 B C FB ts 0] (C FB 7)
		[6 C C FB ts 1] (C B 8)
		[7 C C FB ts 0] (C B 9)
		[8 B C B ts 1] (C B 10)
		[9 B C B ts 0] (C B 10)
		[10 A I F]`)
	btArcMemberships(t, p)
	if nt := btNth(t, p, "A", 2); len(nt.Sets) != 0 {
		t.Fatalf("new A token is in sets %v", nt.Sets)
	}
	btNoDuplicateEvents(t, p)
}

// btArcMemberships checks that every arc token is a member of set ts, at
// its parent's index when the parent is a member.
func btArcMemberships(t *testing.T, p *Process) {
	t.Helper()
	for _, a := range p.ArcTokens {
		if len(a.Sets) != 1 || a.Sets[0].Set.Name != "ts" {
			t.Fatalf("arc token %d (%s %s): memberships %v", a.ID, a.Arc, a.ExecType, a.Sets)
		}
		if m, ok := a.Parent.Membership("ts"); ok && m.Member != a.Sets[0].Member {
			t.Fatalf("arc token %d (%s %s): member %d, parent member %d", a.ID, a.Arc, a.ExecType, a.Sets[0].Member, m.Member)
		}
	}
}

// btProbeNode is a custom wait-like node type taking part in backtracking.
type btProbeNode struct {
	node          *graph.Node
	backtrackable bool
	calls         *[]string
}

func (n *btProbeNode) Execute(*Engine, *NodeToken) error { return nil }

func (n *btProbeNode) IsBacktrackable(_ *Engine, t *NodeToken) bool {
	*n.calls = append(*n.calls, fmt.Sprintf("is %s%d", t.Node.Name, t.ID+1))
	return n.backtrackable
}

func (n *btProbeNode) Backtrack(_ *Engine, t *NodeToken) error {
	*n.calls = append(*n.calls, fmt.Sprintf("bt %s%d", t.Node.Name, t.ID+1))
	return nil
}

func btProbeKernel(calls *[]string) *Kernel {
	k := testKernel()
	k.RegisterNodeType("probe", func(n *graph.Node) (NodeType, error) {
		return &btProbeNode{node: n, backtrackable: true, calls: calls}, nil
	})
	k.RegisterNodeType("fixed", func(n *graph.Node) (NodeType, error) {
		return &btProbeNode{node: n, backtrackable: false, calls: calls}, nil
	})
	return k
}

// TestBacktrackCustomNodeRefuses: a node whose type says it cannot be
// backtracked refuses both a backtrack across it and a backtrack to it, and
// the process is left as it was.
func TestBacktrackCustomNodeRefuses(t *testing.T) {
	var calls []string
	k := btProbeKernel(&calls)
	g := mkGraph(t, "fixed",
		N{Name: "A", Type: "probe", Start: true, Arcs: []string{"B"}},
		N{Name: "B", Type: "fixed", Arcs: []string{"C"}},
		N{Name: "C", Type: "probe"})
	p := start(t, k, g, nil)
	complete(t, k, p, "A")
	complete(t, k, p, "B")
	before, events := p.History(), len(p.Events)
	for _, dest := range []string{"A", "B"} {
		calls = nil
		_, err := k.Engine(t0).Backtrack(btNth(t, p, dest, 1))
		if !errors.Is(err, ErrBacktrackNotAllowed) {
			t.Fatalf("backtrack to %s: %v, want backtrack_not_allowed", dest, err)
		}
		if !strings.Contains(err.Error(), "B") {
			t.Errorf("backtrack to %s: reason %q does not name node B", dest, err)
		}
		if h := p.History(); h != before || len(p.Events) != events {
			t.Fatalf("backtrack to %s changed the process:\n%s", dest, h)
		}
		for _, c := range calls {
			if strings.HasPrefix(c, "bt ") {
				t.Fatalf("backtrack to %s: Backtrack hook called on refusal: %v", dest, calls)
			}
		}
	}
	wantHistory(t, p, `
		[1 A C F] (C F 2)
		[2 B C F] (C F 3)
		[3 C I F]`)
	btNoDuplicateEvents(t, p)

	// A backtrack to a dead end asks nobody (§11.2): it is allowed even on
	// a node that cannot be backtracked, and no hook is called.
	p = start(t, k, mkGraph(t, "fixed dead end",
		N{Name: "A", Type: "probe", Start: true, Arcs: []string{"B", "C"}},
		N{Name: "B", Type: "fixed", Arcs: []string{"C"}},
		N{Name: "C", Type: "probe"}), nil)
	complete(t, k, p, "A")
	complete(t, k, p, "B", "nowhere")
	calls = nil
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "B", 1)); err != nil {
		t.Fatalf("backtrack to the dead end B: %v", err)
	}
	if len(calls) != 0 {
		t.Fatalf("backtrack to a dead end called %v", calls)
	}
	wantHistory(t, p, `
		[1 A C F] (C FB 2) (C F 3)
		[2 B C FB] (C U 4)
		[3 C I F]
		[4 B I F]`)
}

// TestBacktrackCustomNodeHooks: the Backtrack hook is called once for each
// backtracked token (not for the mirrors and replacements), newest first,
// after every visited token was asked IsBacktrackable.
func TestBacktrackCustomNodeHooks(t *testing.T) {
	var calls []string
	k := btProbeKernel(&calls)
	g := mkGraph(t, "hooks",
		N{Name: "A", Type: "probe", Start: true, Arcs: []string{"B", "C"}},
		N{Name: "B", Type: "probe", Arcs: []string{"E"}},
		N{Name: "C", Type: "probe", Arcs: []string{"D"}},
		N{Name: "D", Type: "probe"},
		N{Name: "E", Type: "probe"})
	p := start(t, k, g, nil)
	complete(t, k, p, "A")
	complete(t, k, p, "C")
	complete(t, k, p, "B")
	wantHistory(t, p, `
		[1 A C F] (C F 2) (C F 3)
		[2 B C F] (C F 5)
		[3 C C F] (C F 4)
		[4 D I F]
		[5 E I F]`)
	calls = nil
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "A", 1)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		// the traversal in creation order
		"is A1", "is B2", "is C3", "is D4", "is E5",
		// the backtrack, newest token first
		"bt E5", "bt D4", "bt C3", "bt B2", "bt A1",
	}
	if strings.Join(calls, ", ") != strings.Join(want, ", ") {
		t.Fatalf("calls\n  have %s\n  want %s", strings.Join(calls, ", "), strings.Join(want, ", "))
	}
	wantHistory(t, p, `
		[1 A C FB] (C FB 2) (C FB 3)
		[2 B C FB] (C FB 5)
		[3 C C FB] (C FB 4)
		[4 D C FB] (C B 6)
		[5 E C FB] (C B 7)
		[6 C C B] (C B 8)
		[7 B C B] (C B 8)
		[8 A I F]`)
	btNoDuplicateEvents(t, p)
}

// TestBacktrackRefusalsConformance: every refusal of §11.1 answers
// backtrack_not_allowed and changes nothing.
func TestBacktrackRefusalsConformance(t *testing.T) {
	type setup func(t *testing.T) (*Kernel, *Process, *NodeToken)
	linear := func(t *testing.T) (*Kernel, *Process) {
		k := testKernel()
		p := start(t, k, mkGraph(t, "linear", btTwiceLinear...), nil)
		complete(t, k, p, "A")
		complete(t, k, p, "B")
		return k, p
	}
	cases := []struct {
		name  string
		setup setup
	}{
		{"process completed", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k := testKernel()
			p := start(t, k, mkGraph(t, "auto",
				N{Name: "A", Start: true, Arcs: []string{"B"}},
				N{Name: "B"}), nil)
			if p.State != Completed {
				t.Fatalf("state %s", p.State)
			}
			return k, p, btNth(t, p, "A", 1)
		}},
		{"process canceled", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k, p := linear(t)
			if err := k.Engine(t0).Cancel(p); err != nil {
				t.Fatal(err)
			}
			return k, p, btNth(t, p, "A", 1)
		}},
		{"incomplete destination", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k, p := linear(t)
			return k, p, btNth(t, p, "C", 1)
		}},
		{"already backtracked (FB)", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k, p := linear(t)
			if _, err := k.Engine(t0).Backtrack(btNth(t, p, "A", 1)); err != nil {
				t.Fatal(err)
			}
			return k, p, btNth(t, p, "B", 1)
		}},
		{"already backtracked (B mirror)", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k, p := linear(t)
			if _, err := k.Engine(t0).Backtrack(btNth(t, p, "A", 1)); err != nil {
				t.Fatal(err)
			}
			return k, p, btNth(t, p, "B", 2)
		}},
		{"already backtracked (dead end)", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			k := testKernel()
			p := start(t, k, mkGraph(t, "split", btSplit...), nil)
			complete(t, k, p, "A")
			complete(t, k, p, "B")
			if _, err := k.Engine(t0).Backtrack(btNth(t, p, "B", 1)); err != nil {
				t.Fatal(err)
			}
			return k, p, btNth(t, p, "B", 1)
		}},
		{"not backtrackable", func(t *testing.T) (*Kernel, *Process, *NodeToken) {
			var calls []string
			k := btProbeKernel(&calls)
			p := start(t, k, mkGraph(t, "fixed",
				N{Name: "A", Type: "probe", Start: true, Arcs: []string{"B"}},
				N{Name: "B", Type: "fixed"}), nil)
			complete(t, k, p, "A")
			return k, p, btNth(t, p, "A", 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, p, dest := c.setup(t)
			before, events, state := p.History(), len(p.Events), p.State
			res, err := k.Engine(t0).Backtrack(dest)
			if !errors.Is(err, ErrBacktrackNotAllowed) {
				t.Fatalf("err %v, want backtrack_not_allowed", err)
			}
			if res != nil {
				t.Fatalf("result %v on refusal", res.Notation())
			}
			if h := p.History(); h != before || len(p.Events) != events || p.State != state {
				t.Fatalf("refusal changed the process:\n--- before\n%s--- after\n%s", before, h)
			}
		})
	}
}

// TestBacktrackRandomWalk drives the definitions above through random
// sequences of completions and backtracks (to any completed token that is
// not backtracked), then completes every token until the process ends. No
// step may fail, the history must stay well formed after every step, no
// token may be completed or backtracked twice, and the process must finish:
// a backtrack never loses a branch.
func TestBacktrackRandomWalk(t *testing.T) {
	defs := []struct {
		name  string
		nodes []N
	}{
		{"linear twice", btTwiceLinear}, {"split", btSplit}, {"join", btJoin}, {"split join", btSplitJoin},
		{"diamond", btDiamond}, {"diamond 2", btDiamond2}, {"uneven trees", btUneven}, {"split dead", btSplitDead},
		{"token set join", []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
			{Name: "B", Type: "wait", Arcs: []string{"D", "B:reject"}},
			{Name: "D", Type: "wait", Arcs: []string{"C"}},
			{Name: "C", Type: "wait", Join: graph.JoinTokenSet, Arcs: []string{"E"}},
			{Name: "E", Type: "wait"},
		}},
		{"wide", trTraversalNodes(graph.TypeWait)},
		{"loop join", []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
			{Name: "B", Type: "wait", Arcs: []string{"D"}},
			{Name: "C", Type: "wait", Arcs: []string{"D"}},
			{Name: "D", Type: "wait", Join: graph.JoinAnd, Arcs: []string{"E", "A:reject"}},
			{Name: "E", Type: "wait", Arcs: []string{"F", "G"}},
			{Name: "F", Type: "wait", Arcs: []string{"H"}},
			{Name: "G", Type: "wait", Arcs: []string{"H"}},
			{Name: "H", Type: "wait", Join: graph.JoinAnd},
		}},
		{"two starts", btTwoStarts},
		{"or join", []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B", "C"}},
			{Name: "B", Type: "wait", Arcs: []string{"D"}},
			{Name: "C", Type: "wait", Arcs: []string{"D"}},
			{Name: "D", Type: "wait", Arcs: []string{"E"}},
			{Name: "E", Type: "wait"},
		}},
	}
	seeds, steps := 100, 30
	if testing.Short() {
		seeds = 20
	}
	for _, d := range defs {
		g := mkGraph(t, d.name, d.nodes...)
		for seed := 0; seed < seeds; seed++ {
			r := rand.New(rand.NewSource(int64(seed)))
			k := testKernel()
			p := start(t, k, g, nil)
			var log []string
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("%s, seed %d: %s\nsteps: %s\n%s", d.name, seed, fmt.Sprintf(format, args...), strings.Join(log, "; "), p.History())
			}
			completeOne := func(tok *NodeToken, random bool) {
				var err error
				switch {
				case tok.Node.Name == "A" && d.name == "token set join":
					log = append(log, "set "+btRef(tok))
					_, err = k.Engine(t0).CompleteWithNewTokenSet(tok, "", "ts", 2, nil, nil)
				case random && r.Intn(3) == 0:
					log = append(log, "c "+btRef(tok)+" reject")
					err = k.Engine(t0).Complete(tok, "reject") // a dead end where there is no such arc
				default:
					log = append(log, "c "+btRef(tok))
					err = k.Engine(t0).Complete(tok)
				}
				if err != nil {
					fail("%v", err)
				}
			}
			for i := 0; i < steps && p.State == Executing; i++ {
				if r.Intn(2) == 0 {
					if act := p.ActiveNodeTokens(); len(act) > 0 {
						completeOne(act[r.Intn(len(act))], true)
					}
				} else {
					var dests []*NodeToken
					for _, nt := range p.NodeTokens {
						if nt.Complete && !nt.ExecType.IsBacktracked() {
							dests = append(dests, nt)
						}
					}
					if len(dests) > 0 {
						dest := dests[r.Intn(len(dests))]
						log = append(log, "b "+btRef(dest))
						if _, err := k.Engine(t0).Backtrack(dest); err != nil {
							fail("%v", err)
						}
					}
				}
				if err := btWellFormed(p); err != "" {
					fail("%s", err)
				}
				if err := btDuplicateEvent(p); err != "" {
					fail("%s", err)
				}
			}
			for i := 0; i < 100 && p.State == Executing; i++ {
				act := p.ActiveNodeTokens()
				if len(act) == 0 {
					break
				}
				completeOne(act[0], false)
			}
			if p.State != Completed && !btBranchEnded(p) {
				fail("the process is %s, not completed", p.State)
			}
		}
	}
}

// btRef names a node token as node#n, the nth token created on its node.
func btRef(t *NodeToken) string {
	n := 0
	for _, x := range t.Process.NodeTokens[:t.ID+1] {
		if x.Node == t.Node {
			n++
		}
	}
	return fmt.Sprintf("%s#%d", t.Node.Name, n)
}

// btReplay runs steps written as the random walk logs them: "c B#2"
// completes the second token on B (on the default arcs), "c B#2 reject" on
// the arcs named reject, "set A#1" with a new token set ts of two members,
// "b A#1" backtracks to the first token on A.
func btReplay(t *testing.T, k *Kernel, p *Process, steps string) {
	t.Helper()
	for _, st := range strings.Split(steps, ";") {
		f := strings.Fields(st)
		if len(f) == 0 {
			continue
		}
		node, nth, _ := strings.Cut(f[1], "#")
		var n int
		fmt.Sscan(nth, &n)
		tok := btNth(t, p, node, n)
		var err error
		switch f[0] {
		case "c":
			var arcs []string // nil: the default arcs
			if len(f) > 2 {
				arcs = f[2:]
			}
			err = k.Engine(t0).Complete(tok, arcs...)
		case "set":
			_, err = k.Engine(t0).CompleteWithNewTokenSet(tok, "", "ts", 2, nil, nil)
		case "b":
			_, err = k.Engine(t0).Backtrack(tok)
		default:
			t.Fatalf("bad step %q", st)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", st, err, p.History())
		}
		if err := btWellFormed(p); err != "" {
			t.Fatalf("%s: %s\n%s", st, err, p.History())
		}
		btNoDuplicateEvents(t, p)
	}
}

// btBranchEnded reports whether a live (not backtracked) node token ended
// its branch on a node that has out-arcs: an AND join may then wait for
// ever, legitimately.
func btBranchEnded(p *Process) bool {
	for _, t := range p.NodeTokens {
		if t.Complete && !t.ExecType.IsBacktracked() && len(t.Children) == 0 && len(t.Node.OutArcs()) > 0 {
			return true
		}
	}
	return false
}

// btWellFormed checks the history after a command: no arc token is left
// processed but neither complete nor waiting, no incomplete arc token is of
// a backtracked type, and exactly the incomplete node tokens are active.
func btWellFormed(p *Process) string {
	for _, a := range p.ArcTokens {
		if !a.Complete && a.ExecType.IsBacktracked() {
			return fmt.Sprintf("incomplete arc token %d (%s) is %s", a.ID, a.Arc, a.ExecType)
		}
		if !a.Complete && !a.Pending && !a.Active() {
			return fmt.Sprintf("arc token %d (%s) is processed but neither complete nor waiting", a.ID, a.Arc)
		}
	}
	for _, t := range p.NodeTokens {
		if t.Complete == t.Active() {
			return fmt.Sprintf("node token %s: complete %v, active %v", t.Notation(), t.Complete, t.Active())
		}
	}
	return ""
}

// TestBacktrackReplays replays step sequences (in the random walk's log
// format, see btReplay) that once failed, and checks the final history.
func TestBacktrackReplays(t *testing.T) {
	cases := []struct {
		name  string
		nodes []N
		steps string
		want  string
	}{
		// Rejected twice, backtracked to the first B (its replacement B#5
		// comes through a backtracked arc token), dead ends of that
		// replacement and of its redo, then back to A: each redo stands for
		// B#1 (this used to fail: "no replacement").
		{"redo of a redo of a replacement", btUneven,
			"c A#1; c B#1 reject; c B#2 reject; b B#1; c B#5; b B#5; c B#6; b B#6; b A#1", `
			[1 A C FB] (C FB 2) (C FB 3)
			[2 B C FB] (C FB 4)
			[3 C C FB] (C B 10)
			[4 B C FB] (C FB 5)
			[5 B C FB] (C B 6)
			[6 B C B]  (C B 7)
			[7 B C FB] (C UB 8)
			[8 B C FB] (C UB 9)
			[9 B C FB] (C B 10)
			[10 A I F]`},
		// A dead end at the AND join D (D#3), redone, and then B's branch
		// and A's backtracked: the redo's u-turn on B's arc is not followed
		// when backtracking A (B's side of D#3 was not reached), so B keeps
		// its redone token B#15 and both branches can run again (it used to
		// backtrack B#15 away and stall).
		{"dead end at a join, then both branches", btTwoStarts,
			"c A#1; b A#1; c B#1; b B#1; c A#2; c B#2; c D#1; b A#2; c A#3; c D#3 reject; b D#3; b B#2; b A#3", `
			[1 A C FB] (C FB 3) (C FB 4)
			[2 B C FB] (C FB 6) (C FB 5)
			[3 C C FB] (C B 4)
			[4 A C FB] (C FB 7) (C FB 8)
			[5 E C FB] (C B 6)
			[6 B C FB] (C FB 8) (C FB 9)
			[7 C C FB] (C B 11)
			[8 D C FB] (C FB 10) (C FB 10)
			[9 E C FB] (C B 15)
			[10 D C B] (C B 11) (C UB 13)
			[11 A C FB] (C FB 12) (C FB 13)
			[12 C C FB] (C B 16)
			[13 D C FB] (C UB 14) (C UB 14)
			[14 D C FB] (C B 16) (C B 15)
			[15 B I F]
			[16 A I F]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			p := start(t, k, mkGraph(t, c.name, c.nodes...), nil)
			btReplay(t, k, p, c.steps)
			wantHistory(t, p, c.want)
			for p.State == Executing && len(p.ActiveNodeTokens()) > 0 {
				if err := k.Engine(t0).Complete(p.ActiveNodeTokens()[0]); err != nil {
					t.Fatal(err)
				}
			}
			if p.State != Completed {
				t.Fatalf("the process is %s after completing every token:\n%s", p.State, p.History())
			}
		})
	}
}
