package bpmn

import (
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// outgoing chooses the arcs a token leaving an activity or event takes:
// every flow without a condition and every flow whose condition holds; the
// default flow only when no other is taken. requested, if it names arcs
// (a task's outcome), decides instead.
func outgoing(e *kernel.Engine, t *kernel.NodeToken, requested []string) []string {
	if len(requested) > 0 && !(len(requested) == 1 && requested[0] == "") {
		return resolveOutcome(e, t, requested)
	}
	el := elementOf(t.Node)
	if el.AllOut {
		return el.OutNames
	}
	var names []string
	def := ""
	for i, f := range el.OutFlows {
		switch {
		case f != nil && f.ID == el.Default:
			def = el.OutNames[i]
		case f == nil || f.Condition == nil || flowCondition(e, t, f):
			names = append(names, el.OutNames[i])
		}
	}
	if len(names) == 0 && def != "" {
		names = append(names, def)
	}
	if len(names) == 0 && len(el.OutNames) > 0 {
		fail(e, t, CodeNoRoute, "no condition of its outgoing sequence flows holds and it has no default flow")
	}
	return names
}

// flowCondition evaluates the condition of a sequence flow.
func flowCondition(e *kernel.Engine, t *kernel.NodeToken, f *bpmn.Flow) bool {
	b, err := truth(e, t, f.Condition, nil)
	if err != nil {
		fail(e, t, CodeConditionFailed, "condition of sequence flow %s (line %d): %v", f.ID, f.Condition.Pos.Line, err)
	}
	return b
}

// resolveOutcome maps the outcome of a task (flow ids or names) onto arcs.
func resolveOutcome(e *kernel.Engine, t *kernel.NodeToken, requested []string) []string {
	el := elementOf(t.Node)
	var names []string
	for _, r := range requested {
		found := ""
		for _, name := range el.OutNames {
			if name == r {
				found = name
				break
			}
		}
		if found == "" {
			for i, f := range el.OutFlows {
				if f != nil && f.Name == r {
					found = el.OutNames[i]
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
type gateway struct{ el *bpmn.Element }

func (g *gateway) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	switch g.el.Gateway {
	case "parallel", "eventBased":
		complete(e, t, g.el.OutNames...)
	case "exclusive":
		complete(e, t, g.exclusive(e, t)...)
	case "inclusive":
		complete(e, t, outgoing(e, t, nil)...)
	}
	return nil
}

// exclusive takes the first flow, in document order, whose condition
// holds; a flow without a condition counts as true; else the default
// flow; else the step fails (no_route). The arc taken is a slice of the
// element's OutNames: nothing is allocated.
func (g *gateway) exclusive(e *kernel.Engine, t *kernel.NodeToken) []string {
	names := g.el.OutNames
	if len(names) == 1 {
		return names
	}
	def := -1
	for i, f := range g.el.OutFlows {
		if f != nil && f.ID == g.el.Default {
			def = i
			continue
		}
		if f == nil || f.Condition == nil || flowCondition(e, t, f) {
			return names[i : i+1 : i+1]
		}
	}
	if def >= 0 {
		return names[def : def+1 : def+1]
	}
	if len(names) == 0 {
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
