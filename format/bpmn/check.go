package bpmn

import (
	"fmt"
	"sort"

	"github.com/veena-wf/veena/graph"
)

// check runs the static checks of a compiled process. Their findings are
// warnings: the process loads and runs, but probably not as meant.
//   - an element no path reaches from a start (it never runs);
//   - a parallel gateway joining flows that one exclusive (or event-based)
//     gateway splits: only one of them ever carries a token, so the join
//     waits forever;
//   - a flow with no condition leaving an exclusive gateway that has
//     other flows and no default flow.
func check(g *graph.Graph, p *Process) []graph.Problem {
	var out []graph.Problem
	warn := func(pos graph.Pos, format string, args ...any) {
		out = append(out, graph.Problem{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
	}
	// Reachability.
	reached := map[*graph.Node]bool{}
	var queue []*graph.Node
	visit := func(n *graph.Node) {
		if n != nil && !reached[n] {
			reached[n] = true
			queue = append(queue, n)
		}
	}
	for _, n := range g.Nodes {
		el := n.Props.(*Element)
		switch {
		case n.IsStart:
			visit(n)
		case el.Kind == "startEvent" && el.Scope == nil:
			visit(n) // message, timer and signal starts
		case el.Kind == "subProcess" && el.TriggeredByEvent && el.Scope == nil:
			visit(n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		el := n.Props.(*Element)
		for _, a := range n.OutArcs() {
			visit(a.To)
		}
		for _, b := range el.Boundaries {
			visit(g.Node(b))
		}
		if el.CompensatedBy != "" {
			visit(g.Node(el.CompensatedBy))
		}
		if el.Kind == "subProcess" {
			for _, c := range el.Children {
				if c.Kind == "startEvent" || (c.Kind == "subProcess" && c.TriggeredByEvent) {
					visit(g.Node(c.ID))
				}
			}
		}
	}
	for _, n := range g.Nodes {
		if !reached[n] {
			warn(n.Pos, "<%s id=%q> is unreachable: no path leads to it from a start event", n.Kind, n.Name)
		}
	}
	// Parallel joins after an exclusive split.
	for _, n := range g.Nodes {
		if n.Type != TypeParallel || len(n.InArcs()) < 2 {
			continue
		}
		splits := make([]map[string]string, len(n.InArcs())) // per incoming arc: exclusive gateway -> its flow
		for i, a := range n.InArcs() {
			splits[i] = exclusiveSplits(a, n)
		}
		var found []string
		seen := map[string]bool{}
		for i := range splits {
			for j := i + 1; j < len(splits); j++ {
				for gw, f1 := range splits[i] {
					if f2, ok := splits[j][gw]; ok && f1 != f2 && !seen[gw] {
						seen[gw] = true
						found = append(found, gw)
					}
				}
			}
		}
		sort.Strings(found)
		for _, gw := range found {
			warn(n.Pos, "<parallelGateway id=%q> joins flows that <%s id=%q> splits exclusively: only one of them gets a token, so the join can wait forever (deadlock)",
				n.Name, g.Node(gw).Kind, gw)
		}
	}
	// Exclusive gateways with unconditioned flows and no default.
	for _, n := range g.Nodes {
		el := n.Props.(*Element)
		if n.Type != TypeExclusive || len(n.OutArcs()) < 2 || el.Default != "" {
			continue
		}
		for _, a := range n.OutArcs() {
			f := p.Flow(a.Name)
			if f != nil && f.Condition == nil {
				warn(f.Pos, "<sequenceFlow id=%q> leaves <exclusiveGateway id=%q> with no condition, and the gateway has no default flow", f.ID, n.Name)
			}
		}
	}
	return out
}

// exclusiveSplits walks backwards from arc a (not through join) and
// returns, for every exclusive or event-based gateway met, the flow by
// which the walk left it.
func exclusiveSplits(a *graph.Arc, join *graph.Node) map[string]string {
	out := map[string]string{}
	seen := map[*graph.Arc]bool{}
	stack := []*graph.Arc{a}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		from := x.From
		if from == join {
			continue
		}
		if (from.Type == TypeExclusive || from.Type == TypeEventGateway) && len(from.OutArcs()) > 1 {
			if _, ok := out[from.Name]; !ok {
				out[from.Name] = x.Name
			}
			continue // the split is found on this path
		}
		if from.Type == TypeParallel || from.Type == TypeInclusive {
			// A parallel split (or an inclusive one) above restarts the
			// question: its branches do run together.
			if len(from.OutArcs()) > 1 {
				continue
			}
		}
		stack = append(stack, from.InArcs()...)
	}
	return out
}
