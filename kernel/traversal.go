package kernel

import "container/heap"

// TokenVisitor is told about the tokens a traversal reaches. Follow decides
// whether the traversal goes through an arc token: if it answers true, the
// arc token is visited and the node token on its far side (its child, or
// its parent when going up) is reached next.
type TokenVisitor interface {
	VisitNode(t *NodeToken)
	VisitArc(a *ArcToken)
	Follow(a *ArcToken) bool
}

// VisitorFuncs adapts functions to a TokenVisitor. A nil Node or Arc does
// nothing; a nil FollowArc follows every arc token.
type VisitorFuncs struct {
	Node      func(*NodeToken)
	Arc       func(*ArcToken)
	FollowArc func(*ArcToken) bool
}

// VisitNode calls Node.
func (f VisitorFuncs) VisitNode(t *NodeToken) {
	if f.Node != nil {
		f.Node(t)
	}
}

// VisitArc calls Arc.
func (f VisitorFuncs) VisitArc(a *ArcToken) {
	if f.Arc != nil {
		f.Arc(a)
	}
}

// Follow calls FollowArc, or answers true.
func (f VisitorFuncs) Follow(a *ArcToken) bool { return f.FollowArc == nil || f.FollowArc(a) }

// Every traversal starts by visiting t itself and visits each node token it
// reaches once. Arc tokens are offered to Follow each time they are met;
// arc tokens without a node token on the far side (still waiting at a join)
// are visited but lead nowhere.

// TraverseChildrenBreadthFirst visits t and the tokens downstream of it,
// level by level: all the node tokens reached so far, then all the arc
// tokens leaving them, in child order.
func TraverseChildrenBreadthFirst(t *NodeToken, v TokenVisitor) { breadthFirst(t, v, true) }

// TraverseParentsBreadthFirst visits t and the tokens upstream of it, level
// by level, following parent arc tokens in parent order.
func TraverseParentsBreadthFirst(t *NodeToken, v TokenVisitor) { breadthFirst(t, v, false) }

// TraverseChildrenDepthFirst visits t and the tokens downstream of it, each
// branch to its end before the next one (child order).
func TraverseChildrenDepthFirst(t *NodeToken, v TokenVisitor) { depthFirst(t, v, true) }

// TraverseParentsDepthFirst visits t and the tokens upstream of it, each
// branch to its start before the next one (parent order).
func TraverseParentsDepthFirst(t *NodeToken, v TokenVisitor) { depthFirst(t, v, false) }

// TraverseChildrenInCreateOrder visits t and the tokens downstream of it in
// the order they came to be: node tokens by creation sequence, arc tokens by
// their parent's completion sequence, then their own creation sequence
// (decision 2). It is the order backtracking visits the history in.
func TraverseChildrenInCreateOrder(t *NodeToken, v TokenVisitor) {
	traverseCreateOrder(t, v.VisitNode, v.Follow, v.VisitArc, nil)
}

// FindFirstNamedParent returns the first node token on a node with that
// name, not backtracked, met going up from t breadth first (t itself
// included), or nil.
func FindFirstNamedParent(t *NodeToken, name string) *NodeToken {
	var match *NodeToken
	TraverseParentsBreadthFirst(t, VisitorFuncs{
		Node: func(n *NodeToken) {
			if match == nil && !n.ExecType.IsBacktracked() && n.Node.Name == name {
				match = n
			}
		},
		FollowArc: func(*ArcToken) bool { return match == nil },
	})
	return match
}

// far is the node token on the other side of a in the traversal's direction.
func far(a *ArcToken, forward bool) *NodeToken {
	if forward {
		return a.Child
	}
	return a.Parent
}

func arcsOf(t *NodeToken, forward bool) []*ArcToken {
	if forward {
		return t.Children
	}
	return t.Parents
}

func breadthFirst(start *NodeToken, v TokenVisitor, forward bool) {
	seen := map[*NodeToken]bool{start: true}
	nodes := []*NodeToken{start}
	var arcs []*ArcToken
	for len(nodes) > 0 || len(arcs) > 0 {
		for len(nodes) > 0 {
			t := nodes[0]
			nodes = nodes[1:]
			v.VisitNode(t)
			arcs = append(arcs, arcsOf(t, forward)...)
		}
		for len(arcs) > 0 {
			a := arcs[0]
			arcs = arcs[1:]
			if !v.Follow(a) {
				continue
			}
			v.VisitArc(a)
			if n := far(a, forward); n != nil && !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
	}
}

func depthFirst(start *NodeToken, v TokenVisitor, forward bool) {
	seen := map[*NodeToken]bool{start: true}
	nodes := []*NodeToken{start} // a stack: the last one is next
	var arcs []*ArcToken         // a stack: the last one is next
	for len(nodes) > 0 || len(arcs) > 0 {
		if n := len(nodes); n > 0 {
			t := nodes[n-1]
			nodes = nodes[:n-1]
			v.VisitNode(t)
			next := arcsOf(t, forward)
			for i := len(next) - 1; i >= 0; i-- {
				arcs = append(arcs, next[i])
			}
		}
		if n := len(arcs); n > 0 {
			a := arcs[n-1]
			arcs = arcs[:n-1]
			if v.Follow(a) {
				v.VisitArc(a)
				if c := far(a, forward); c != nil && !seen[c] {
					seen[c] = true
					nodes = append(nodes, c)
				}
			}
		}
	}
}

// traverseCreateOrder is the creation-order traversal shared with
// backtracking. It stops early when stop (if given) reports true.
func traverseCreateOrder(start *NodeToken, visitNode func(*NodeToken), follow func(*ArcToken) bool, visitArc func(*ArcToken), stop func() bool) {
	q := &traversal{}
	seen := map[*NodeToken]bool{start: true}
	heap.Push(q, item{node: start})
	for q.Len() > 0 {
		if stop != nil && stop() {
			return
		}
		it := heap.Pop(q).(item)
		if t := it.node; t != nil {
			visitNode(t)
			for _, a := range t.Children {
				heap.Push(q, item{arc: a})
			}
			continue
		}
		a := it.arc
		if !follow(a) {
			continue
		}
		visitArc(a)
		if c := a.Child; c != nil && !seen[c] {
			seen[c] = true
			heap.Push(q, item{node: c})
		}
	}
}
