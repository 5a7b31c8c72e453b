package bpmn

import (
	"runtime"
	"sync"
	"weak"

	"github.com/veena-wf/veena/graph"
)

// reach answers "can a token at node x still reach node y" for the
// inclusive join's non-local rule: by sequence flows (and link events),
// from a sub-process to what follows it, and from an activity to what its
// boundary events lead to. Computed once per graph.
type reach struct {
	to map[*graph.Node]map[*graph.Node]bool
}

// reaches holds each graph's reach, computed on first need. Graphs are
// weak keys: an entry goes when its graph does (a program may open and
// close many engines, each with its graphs).
var reaches sync.Map // weak.Pointer[graph.Graph] -> *reach

func reachOf(g *graph.Graph) *reach {
	key := weak.Make(g)
	if r, ok := reaches.Load(key); ok {
		return r.(*reach)
	}
	r := &reach{to: map[*graph.Node]map[*graph.Node]bool{}}
	succ := func(n *graph.Node) []*graph.Node {
		var out []*graph.Node
		for _, a := range n.OutArcs() {
			out = append(out, a.To)
		}
		if el := elementOf(n); el != nil {
			for _, b := range el.Boundaries {
				if bn := g.Node(b); bn != nil {
					out = append(out, bn)
				}
			}
		}
		return out
	}
	for _, n := range g.Nodes {
		seen := map[*graph.Node]bool{}
		stack := succ(n)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[x] {
				continue
			}
			seen[x] = true
			stack = append(stack, succ(x)...)
		}
		r.to[n] = seen
	}
	actual, loaded := reaches.LoadOrStore(key, r)
	if !loaded {
		runtime.AddCleanup(g, func(k weak.Pointer[graph.Graph]) { reaches.Delete(k) }, key)
	}
	return actual.(*reach)
}

// reaches reports whether a token at x can get to y; a token at y itself
// is there already (it has passed, or will pass, the join).
func (r *reach) reaches(x, y *graph.Node) bool {
	if x == y {
		return false
	}
	return r.to[x][y]
}
