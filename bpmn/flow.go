package bpmn

import (
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"sync"
)

// flowOf returns the sequence flow an arc was compiled from (nil for the
// arc a link event adds).
func flowOf(t *kernel.NodeToken, a *graph.Arc) *bpmn.Flow {
	if a.Name == "" {
		return nil
	}
	return propsOf(t.Process.Graph).Process.Flow(a.Name)
}

// outgoing chooses the arcs a token leaving an activity or event takes:
// every flow without a condition and every flow whose condition holds; the
// default flow only when no other is taken. requested, if it names arcs
// (a task's outcome), decides instead.
func outgoing(e *kernel.Engine, t *kernel.NodeToken, requested []string) []string {
	n := t.Node
	if len(requested) > 0 && !(len(requested) == 1 && requested[0] == "") {
		return resolveOutcome(e, t, requested)
	}
	el := elementOf(n)
	if plain := plainOut(t.Process.Graph, n); len(plain) > 0 {
		return plain
	}
	var names []string
	def := ""
	for _, a := range n.OutArcs() {
		f := flowOf(t, a)
		switch {
		case f != nil && f.ID == el.Default:
			def = a.Name
		case f == nil || f.Condition == nil:
			names = append(names, a.Name)
		case condition(e, t, f.Condition, "condition of sequence flow "+f.ID, nil):
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 && def != "" {
		names = append(names, def)
	}
	if len(names) == 0 && len(n.OutArcs()) > 0 {
		fail(e, t, CodeNoRoute, "no condition of its outgoing sequence flows holds and it has no default flow")
	}
	return names
}

// resolveOutcome maps the outcome of a task (flow ids or names) onto arcs.
func resolveOutcome(e *kernel.Engine, t *kernel.NodeToken, requested []string) []string {
	var names []string
	for _, r := range requested {
		found := ""
		for _, a := range t.Node.OutArcs() {
			if a.Name == r {
				found = a.Name
				break
			}
		}
		if found == "" {
			for _, a := range t.Node.OutArcs() {
				if f := flowOf(t, a); f != nil && f.Name == r {
					found = a.Name
					break
				}
			}
		}
		if found == "" {
			e.Fail(&kernel.Error{Code: kernel.ErrInvalidArgument.Code, Msg: "outcome " + r + " names no outgoing sequence flow of " + t.Node.Name})
		}
		names = append(names, found)
	}
	return names
}

// gateway is the node type of the four gateways.
type gateway struct {
	el  *bpmn.Element
	out []string // the names of its out-arcs (read only: shared by its tokens)
}

func (g *gateway) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	switch g.el.Gateway {
	case "parallel", "eventBased":
		complete(e, t, g.out...)
	case "exclusive":
		complete(e, t, g.exclusive(e, t)...)
	case "inclusive":
		complete(e, t, outgoing(e, t, nil)...)
	}
	return nil
}

// exclusive takes the first flow, in document order, whose condition
// holds; a flow without a condition counts as true; else the default
// flow; else the step fails (no_route).
func (g *gateway) exclusive(e *kernel.Engine, t *kernel.NodeToken) []string {
	out := t.Node.OutArcs()
	if len(out) == 1 {
		return []string{out[0].Name}
	}
	def := ""
	for _, a := range out {
		f := flowOf(t, a)
		if f != nil && f.ID == g.el.Default {
			def = a.Name
			continue
		}
		if f == nil || f.Condition == nil || condition(e, t, f.Condition, "condition of sequence flow "+f.ID, nil) {
			return []string{a.Name}
		}
	}
	if def != "" {
		return []string{def}
	}
	if len(out) == 0 {
		return nil
	}
	fail(e, t, CodeNoRoute, "no condition of its outgoing sequence flows holds and it has no default flow")
	return nil
}

// inclusiveJoin is the converging inclusive gateway's join, with the
// non-local rule: it fires when every incoming flow holds a token of the
// arriving token's scope, or when no other active token of that scope can
// still reach the gateway (except through the flows already holding one).
type inclusiveJoin struct{}

func (inclusiveJoin) Join(e *kernel.Engine, a *kernel.ArcToken) (kernel.JoinResult, error) {
	p, node := a.Process, a.Arc.To
	scope := scopeOf(a.Sets)
	var tokens []*kernel.ArcToken
	waiting := map[*graph.Arc]bool{}
	for _, in := range node.InArcs() {
		for _, w := range p.WaitingAt(in) {
			if scopeOf(w.Sets) == scope {
				tokens = append(tokens, w)
				waiting[in] = true
				break
			}
		}
	}
	if len(tokens) == 0 {
		return kernel.JoinResult{}, nil
	}
	if len(tokens) < len(node.InArcs()) && upstream(p, node, scope, waiting) {
		return kernel.JoinResult{}, nil
	}
	return kernel.JoinResult{Action: kernel.JoinComplete, ArcTokens: tokens}, nil
}

// upstream reports whether an active token of the scope, other than those
// waiting at the join, can still reach the join node.
func upstream(p *kernel.Process, join *graph.Node, scope *kernel.TokenSet, waiting map[*graph.Arc]bool) bool {
	r := reachOf(p.Graph)
	for _, t := range p.NodeTokens {
		if !t.Active() || t.Complete || scopeOf(t.Sets) != scope || isListener(t) {
			continue
		}
		if r.reaches(t.Node, join) {
			return true
		}
	}
	for _, a := range p.ArcTokens {
		if a.Complete || scopeOf(a.Sets) != scope {
			continue
		}
		if a.Arc.To == join {
			if a.Active() && waiting[a.Arc] {
				continue // one of the tokens that would join
			}
			if !a.Active() && !a.Pending {
				continue
			}
			return true // on its way to the join
		}
		if r.reaches(a.Arc.To, join) {
			return true
		}
	}
	return false
}

// plainOuts caches, per node, the names of its out-arcs when none of its
// flows has a condition and it has no default flow: they are all taken.
var plainOuts sync.Map // *graph.Node -> []string (empty: not plain)

func plainOut(g *graph.Graph, n *graph.Node) []string {
	if v, ok := plainOuts.Load(n); ok {
		return v.([]string)
	}
	names := outArcNames(n)
	el := elementOf(n)
	for _, a := range n.OutArcs() {
		f := propsOf(g).Process.Flow(a.Name)
		if (f != nil && f.Condition != nil) || (el != nil && el.Default != "") {
			names = []string{}
			break
		}
	}
	if len(n.OutArcs()) == 0 {
		names = []string{}
	}
	v, _ := plainOuts.LoadOrStore(n, names)
	return v.([]string)
}
