package graph

import (
	"fmt"
	"sort"
	"strings"
)

// RunawayCycles finds the cycles a token can run round without ever
// reaching a wait state: sets of nodes, strongly connected through arcs
// that a node may take as soon as a token arrives (takes reports which)
// and that end at a node that fires for every arriving token (an or join,
// or an and join with a single input). A token that enters such a cycle
// circles it, creating tokens, until something outside the graph stops it.
// Each cycle is returned as its nodes in document order; cycles are in the
// order of their first node.
func RunawayCycles(g *Graph, takes func(n *Node, a *Arc) bool) [][]*Node {
	out := make([][]*Arc, len(g.Nodes))
	for _, a := range g.Arcs {
		if firesEachArrival(a.To) && takes(a.From, a) {
			out[a.From.Index] = append(out[a.From.Index], a)
		}
	}
	// Tarjan's strongly connected components, iteratively.
	n := len(g.Nodes)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var cycles [][]*Node
	next := 0
	type frame struct{ v, arc int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		calls := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			if f.arc < len(out[f.v]) {
				w := out[f.v][f.arc].To.Index
				f.arc++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{w, 0})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var comp []*Node
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, g.Nodes[w])
				if w == v {
					break
				}
			}
			if len(comp) > 1 || selfLoop(out[v], v) {
				sort.Slice(comp, func(i, j int) bool { return comp[i].Index < comp[j].Index })
				cycles = append(cycles, comp)
			}
		}
	}
	sort.Slice(cycles, func(i, j int) bool { return cycles[i][0].Index < cycles[j][0].Index })
	return cycles
}

func selfLoop(arcs []*Arc, v int) bool {
	for _, a := range arcs {
		if a.To.Index == v {
			return true
		}
	}
	return false
}

// firesEachArrival reports whether a node makes a new token for every arc
// token that arrives.
func firesEachArrival(n *Node) bool {
	switch n.Join {
	case JoinOr, "":
		return true
	case JoinAnd, JoinLabelAnd:
		return len(n.InArcs()) == 1
	}
	return false
}

// RunawayWarnings describes the runaway cycles of g as warnings, each at
// the position of the cycle's first node.
func RunawayWarnings(g *Graph, takes func(n *Node, a *Arc) bool) []Problem {
	var out []Problem
	for _, c := range RunawayCycles(g, takes) {
		names := make([]string, len(c))
		var guarded []string
		for i, n := range c {
			names[i] = n.QualifiedName()
			if strings.TrimSpace(n.Guard) != "" {
				guarded = append(guarded, n.QualifiedName())
			}
		}
		msg := fmt.Sprintf("nodes %s form a cycle without a wait state: a token that enters it goes round it, creating tokens, until the command's budget stops it",
			strings.Join(names, ", "))
		if len(c) == 1 {
			msg = fmt.Sprintf("node %s leads back to itself without a wait state: a token that reaches it goes round, creating tokens, until the command's budget stops it", names[0])
		}
		if len(guarded) > 0 {
			msg += fmt.Sprintf(" (unless the guard of %s stops it)", strings.Join(guarded, ", "))
		} else {
			msg += "; add a wait node, a guard or a join that waits"
		}
		out = append(out, Problem{Line: c[0].Pos.Line, Column: c[0].Pos.Column, Message: msg})
	}
	return out
}
