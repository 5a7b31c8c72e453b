package kernel

import (
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// The traversal definition of the reference's TraversalTest: A splits to B
// and C, B to D, E, F and C to G, H, I, all of which meet at the AND join J.
func trTraversalNodes(typ string) []N {
	return []N{
		{Name: "A", Type: typ, Start: true, Arcs: []string{"B", "C"}},
		{Name: "B", Type: typ, Arcs: []string{"D", "E", "F"}},
		{Name: "C", Type: typ, Arcs: []string{"G", "H", "I"}},
		{Name: "D", Type: typ, Arcs: []string{"J"}},
		{Name: "E", Type: typ, Arcs: []string{"J"}},
		{Name: "F", Type: typ, Arcs: []string{"J"}},
		{Name: "G", Type: typ, Arcs: []string{"J"}},
		{Name: "H", Type: typ, Arcs: []string{"J"}},
		{Name: "I", Type: typ, Arcs: []string{"J"}},
		{Name: "J", Type: typ, Join: graph.JoinAnd},
	}
}

// trRecorder writes node tokens as their node name and arc tokens as
// "(From>To)"; follow, if set, decides which arc tokens to follow.
type trRecorder struct {
	b      strings.Builder
	arcs   bool
	follow func(*ArcToken) bool
}

func (r *trRecorder) VisitNode(t *NodeToken) { r.b.WriteString(t.Node.Name) }
func (r *trRecorder) VisitArc(a *ArcToken) {
	if r.arcs {
		r.b.WriteString("(" + a.Arc.From.Name + ">" + a.Arc.To.Name + ")")
	}
}
func (r *trRecorder) Follow(a *ArcToken) bool { return r.follow == nil || r.follow(a) }

func TestTraversalOrders(t *testing.T) {
	k := testKernel()
	p := start(t, k, mkGraph(t, "traversal", trTraversalNodes(graph.TypeNode)...), nil)
	if p.State != Completed {
		t.Fatalf("state %s\n%s", p.State, p.History())
	}
	a, j := btNth(t, p, "A", 1), btNth(t, p, "J", 1)
	cases := []struct {
		name     string
		from     *NodeToken
		traverse func(*NodeToken, TokenVisitor)
		arcs     bool
		want     string
	}{
		// The reference's two assertions.
		{"children breadth first", a, TraverseChildrenBreadthFirst, false, "ABCDEFGHIJ"},
		{"children depth first", a, TraverseChildrenDepthFirst, false, "ABDJEFCGHI"},
		// Every arc token is visited once, even those leading to J, which
		// is visited once.
		{"children breadth first, arcs", a, TraverseChildrenBreadthFirst, true,
			"A(A>B)(A>C)BC(B>D)(B>E)(B>F)(C>G)(C>H)(C>I)DEFGHI(D>J)(E>J)(F>J)(G>J)(H>J)(I>J)J"},
		{"children depth first, arcs", a, TraverseChildrenDepthFirst, true,
			"A(A>B)B(B>D)D(D>J)J(B>E)E(E>J)(B>F)F(F>J)(A>C)C(C>G)G(G>J)(C>H)H(H>J)(C>I)I(I>J)"},
		// Going up from the join: its parents are in input-arc (document) order.
		{"parents breadth first", j, TraverseParentsBreadthFirst, false, "JDEFGHIBCA"},
		{"parents depth first", j, TraverseParentsDepthFirst, false, "JDBAEFGCHI"},
		{"parents depth first, arcs", j, TraverseParentsDepthFirst, true,
			"J(D>J)D(B>D)B(A>B)A(E>J)E(B>E)(F>J)F(B>F)(G>J)G(C>G)C(A>C)(H>J)H(C>H)(I>J)I(C>I)"},
		// Everything completed synchronously, in breadth-first order.
		{"children in create order", a, TraverseChildrenInCreateOrder, false, "ABCDEFGHIJ"},
		// A traversal starting at a leaf only visits the leaf.
		{"children of a leaf", j, TraverseChildrenBreadthFirst, true, "J"},
		{"parents of a start token", a, TraverseParentsDepthFirst, true, "A"},
	}
	for _, c := range cases {
		r := &trRecorder{arcs: c.arcs}
		c.traverse(c.from, r)
		if have := r.b.String(); have != c.want {
			t.Errorf("%s: have %s, want %s", c.name, have, c.want)
		}
	}
}

// TestTraversalCreateOrder: with wait nodes completed out of document order,
// the creation order differs from the breadth-first order: C completed
// first, so G, H and I (and the arc tokens leading to them) come before B's
// children; the arc tokens into J come in the order their parents completed.
func TestTraversalCreateOrder(t *testing.T) {
	k := testKernel()
	p := start(t, k, mkGraph(t, "traversal", trTraversalNodes(graph.TypeWait)...), nil)
	for _, n := range []string{"A", "C", "B", "I", "D", "H", "E", "G", "F"} {
		complete(t, k, p, n)
	}
	a := btNth(t, p, "A", 1)
	for _, c := range []struct {
		name     string
		traverse func(*NodeToken, TokenVisitor)
		arcs     bool
		want     string
	}{
		{"create order", TraverseChildrenInCreateOrder, false, "ABCGHIDEFJ"},
		{"create order, arcs", TraverseChildrenInCreateOrder, true,
			"A(A>B)(A>C)BC(C>G)(C>H)(C>I)GHI(B>D)(B>E)(B>F)DEF(I>J)(D>J)(H>J)(E>J)(G>J)(F>J)J"},
		{"breadth first", TraverseChildrenBreadthFirst, false, "ABCDEFGHIJ"},
	} {
		r := &trRecorder{arcs: c.arcs}
		c.traverse(a, r)
		if have := r.b.String(); have != c.want {
			t.Errorf("%s: have %s, want %s", c.name, have, c.want)
		}
	}
}

// TestTraversalFollow: arc tokens Follow refuses are neither visited nor
// crossed; a node token reachable another way is still reached.
func TestTraversalFollow(t *testing.T) {
	k := testKernel()
	p := start(t, k, mkGraph(t, "traversal", trTraversalNodes(graph.TypeNode)...), nil)
	a := btNth(t, p, "A", 1)
	notFromB := func(x *ArcToken) bool { return x.Arc.From.Name != "B" }
	for _, c := range []struct {
		name     string
		traverse func(*NodeToken, TokenVisitor)
		want     string
	}{
		{"breadth first", TraverseChildrenBreadthFirst, "ABCGHIJ"},
		{"depth first", TraverseChildrenDepthFirst, "ABCGJHI"},
		{"create order", TraverseChildrenInCreateOrder, "ABCGHIJ"},
	} {
		r := &trRecorder{follow: notFromB}
		c.traverse(a, r)
		if have := r.b.String(); have != c.want {
			t.Errorf("%s: have %s, want %s", c.name, have, c.want)
		}
	}
	// VisitorFuncs with nil functions follows everything.
	n := 0
	TraverseChildrenBreadthFirst(a, VisitorFuncs{Node: func(*NodeToken) { n++ }})
	if n != 10 {
		t.Errorf("VisitorFuncs visited %d node tokens, want 10", n)
	}
}

// TestTraversalWaitingArc: an arc token still waiting at a join is visited
// but leads nowhere.
func TestTraversalWaitingArc(t *testing.T) {
	k := testKernel()
	p := start(t, k, mkGraph(t, "diamond", btDiamond...), nil)
	complete(t, k, p, "A")
	complete(t, k, p, "B")
	r := &trRecorder{arcs: true}
	TraverseChildrenBreadthFirst(btNth(t, p, "A", 1), r)
	if have, want := r.b.String(), "A(A>B)(A>C)BC(B>D)"; have != want {
		t.Errorf("have %s, want %s", have, want)
	}
}

// TestFindFirstNamedParent: the nearest token on the named node going up,
// skipping backtracked ones; the token itself counts.
func TestFindFirstNamedParent(t *testing.T) {
	k := testKernel()
	p := start(t, k, mkGraph(t, "traversal", trTraversalNodes(graph.TypeNode)...), nil)
	j := btNth(t, p, "J", 1)
	for _, c := range []struct {
		from *NodeToken
		name string
		want *NodeToken
	}{
		{j, "A", btNth(t, p, "A", 1)},
		{j, "C", btNth(t, p, "C", 1)},
		{j, "J", j},
		{j, "Z", nil},
		{btNth(t, p, "D", 1), "C", nil}, // C is not upstream of D
	} {
		if have := FindFirstNamedParent(c.from, c.name); have != c.want {
			t.Errorf("from %s, %s: have %v, want %v", c.from.Notation(), c.name, have, c.want)
		}
	}

	// Backtracked tokens are skipped: after A→B→C and a backtrack to B,
	// the first B above the new C is the redone one, not the original.
	k = testKernel()
	p = start(t, k, mkGraph(t, "linear", btTwiceLinear...), nil)
	complete(t, k, p, "A")
	complete(t, k, p, "B")
	if _, err := k.Engine(t0).Backtrack(btNth(t, p, "B", 1)); err != nil {
		t.Fatal(err)
	}
	complete(t, k, p, "B")
	wantHistory(t, p, `
		[1 A C F]  (C F 2)
		[2 B C FB] (C FB 3)
		[3 C C FB] (C B 4)
		[4 B C F]  (C F 5)
		[5 C I F]`)
	c := btNth(t, p, "C", 2)
	if have, want := FindFirstNamedParent(c, "B"), btNth(t, p, "B", 2); have != want {
		t.Errorf("first B above the new C: have %v, want %v", have.Notation(), want.Notation())
	}
	// Going up from the old C (backtracked) through B#2 (backtracked).
	if have := FindFirstNamedParent(btNth(t, p, "C", 1), "B"); have != nil {
		t.Errorf("first B above the old C: have %v, want none", have.Notation())
	}
	if have, want := FindFirstNamedParent(btNth(t, p, "C", 1), "A"), btNth(t, p, "A", 1); have != want {
		t.Errorf("first A above the old C: have %v", have)
	}
}
