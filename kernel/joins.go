package kernel

import (
	"fmt"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/joinlang"
)

// JoinAction is what a join strategy decides when an arc token arrives.
type JoinAction uint8

// The join actions.
const (
	// JoinNothing leaves the arc token waiting.
	JoinNothing JoinAction = iota
	// JoinComplete creates a node token with the given arc tokens as parents.
	JoinComplete
	// JoinMerge adds the arc tokens as parents of an existing node token.
	JoinMerge
	// joinCompleteOne is the or join's JoinComplete with the arriving arc
	// token alone, without a slice to carry it.
	joinCompleteOne
)

// JoinResult is a join strategy's decision.
type JoinResult struct {
	Action      JoinAction
	ArcTokens   []*ArcToken // the arc tokens to complete or merge
	Terminating []*TokenSet // sets that end at the new node token (tokenSet joins)
	MergeTarget *NodeToken  // for JoinMerge
}

// JoinStrategy decides, for an arc token arriving at its end node, whether
// the node token there can be created yet.
type JoinStrategy interface {
	Join(e *Engine, a *ArcToken) (JoinResult, error)
}

// JoinFunc adapts a function to a JoinStrategy.
type JoinFunc func(e *Engine, a *ArcToken) (JoinResult, error)

// Join calls f.
func (f JoinFunc) Join(e *Engine, a *ArcToken) (JoinResult, error) { return f(e, a) }

// orJoin fires for every arriving arc token on its own.
type orJoin struct{}

func (orJoin) Join(_ *Engine, a *ArcToken) (JoinResult, error) {
	return JoinResult{Action: joinCompleteOne}, nil
}

// andJoin waits for a token on every input arc (label: every input arc with
// the arriving arc's name). A token in token sets only joins with tokens of
// its innermost set at the same member index.
type andJoin struct{ label bool }

func (j andJoin) Join(_ *Engine, a *ArcToken) (JoinResult, error) {
	p, node := a.Process, a.Arc.To
	in := node.InArcs()
	var filter Membership
	member := len(a.Sets) > 0
	if member {
		filter = innermost(a.Sets)
	} else if !j.label && p.readyArcs[node.Index] < len(in) {
		return JoinResult{}, nil
	}
	tokens := make([]*ArcToken, 0, len(in))
	for _, arc := range in {
		if j.label && arc.Name != a.Arc.Name {
			continue
		}
		found := firstMatching(p.firstWaiting(arc), member, filter)
		if found == nil {
			return JoinResult{}, nil
		}
		tokens = append(tokens, found)
	}
	return JoinResult{Action: JoinComplete, ArcTokens: tokens}, nil
}

// innermost is the membership with the highest level.
func innermost(ms []Membership) Membership {
	best := ms[0]
	for _, m := range ms[1:] {
		if m.Set.Level > best.Set.Level {
			best = m
		}
	}
	return best
}

// firstMatching walks a waiting list from t for the first token outside
// every set (member false) or in filter's set at filter's index.
func firstMatching(t *ArcToken, member bool, filter Membership) *ArcToken {
	for ; t != nil; t = t.nextWaiting {
		if !member {
			if len(t.Sets) == 0 {
				return t
			}
			continue
		}
		for _, m := range t.Sets {
			if m.Set == filter.Set && m.Member == filter.Member {
				return t
			}
		}
	}
	return nil
}

// firstJoin merges an arriving arc token into the newest node token on the
// node (unless that token was backtracked), or else acts as or.
type firstJoin struct{}

func (firstJoin) Join(e *Engine, a *ArcToken) (JoinResult, error) {
	if t := newestOn(a.Process, a.Arc.To); t != nil && !t.ExecType.IsBacktracked() {
		return JoinResult{Action: JoinMerge, ArcTokens: []*ArcToken{a}, MergeTarget: t}, nil
	}
	return orJoin{}.Join(e, a)
}

// newestOn is the node token on n with the highest creation sequence.
func newestOn(p *Process, n *graph.Node) *NodeToken {
	for i := len(p.NodeTokens) - 1; i >= 0; i-- {
		if t := p.NodeTokens[i]; t.Node == n {
			return t
		}
	}
	return nil
}

// tokenSetJoin waits until a whole token set has arrived at the node: no
// member node token active, no member arc token anywhere else. The set ends
// there. A token outside every set falls back to or (tokenSetOr) or is
// refused (tokenSet).
type tokenSetJoin struct{ or bool }

func (j tokenSetJoin) Join(e *Engine, a *ArcToken) (JoinResult, error) {
	if len(a.Sets) == 0 {
		if j.or {
			return orJoin{}.Join(e, a)
		}
		return JoinResult{}, refuse(ErrJoinNotMember, "an arc token outside every token set arrived at tokenSet join %s (from %s)",
			a.Arc.To.QualifiedName(), a.Arc.From.QualifiedName())
	}
	sets := chooseSets(a)
	p, node := a.Process, a.Arc.To
	for _, s := range sets {
		if !setArrived(p, s, node) {
			return JoinResult{}, nil
		}
	}
	var tokens []*ArcToken
	for _, t := range p.ArcTokens {
		if t.Complete {
			continue
		}
		for _, s := range sets {
			if hasSet(t.Sets, s) {
				tokens = append(tokens, t)
				break
			}
		}
	}
	// Sets nested inside the chosen ones (a joinParam naming an outer set:
	// the inner sets of the other outer members) have arrived whole too and
	// end here as well, so the new token keeps no membership of a sibling
	// inner set (decision 6).
	terminating := sets
	base := sets[0].Level
	for _, t := range tokens {
		for _, m := range t.Sets {
			if m.Set.Level > base && !containsSet(terminating, m.Set) && setArrived(p, m.Set, node) {
				if len(terminating) == len(sets) {
					terminating = append([]*TokenSet(nil), sets...)
				}
				terminating = append(terminating, m.Set)
			}
		}
	}
	return JoinResult{Action: JoinComplete, ArcTokens: tokens, Terminating: terminating}, nil
}

// chooseSets picks the sets a tokenSet join waits for: the one named by the
// join parameter (if the token belongs to it) with every set of the token at
// a higher level, or else the token's innermost set.
func chooseSets(a *ArcToken) []*TokenSet {
	if name := a.Arc.To.JoinParam; name != "" {
		for _, m := range a.Sets {
			if m.Set.Name != name {
				continue
			}
			sets := []*TokenSet{m.Set}
			for _, o := range a.Sets {
				if o.Set.Level > m.Set.Level && !containsSet(sets, o.Set) {
					sets = append(sets, o.Set)
				}
			}
			return sets
		}
	}
	return []*TokenSet{innermost(a.Sets).Set}
}

// setArrived reports whether no member node token of s is active and every
// incomplete member arc token of s ends at node.
func setArrived(p *Process, s *TokenSet, node *graph.Node) bool {
	for _, t := range p.NodeTokens {
		if !t.Complete && hasSet(t.Sets, s) {
			return false
		}
	}
	for _, t := range p.ArcTokens {
		if !t.Complete && hasSet(t.Sets, s) && t.Arc.To != node {
			return false
		}
	}
	return true
}

// joinLangJoin evaluates a JoinLang program.
type joinLangJoin struct{ prog *joinlang.Program }

func (j joinLangJoin) Join(e *Engine, a *ArcToken) (JoinResult, error) {
	for _, alt := range j.prog.Alternatives {
		res, err := e.evalRequireSet(alt, a)
		if err != nil {
			return JoinResult{}, err
		}
		if res.Action != JoinNothing {
			return res, nil
		}
	}
	return JoinResult{}, nil
}

// contribution is what one requirement found.
type contribution struct {
	satisfied bool
	tokens    []*ArcToken
}

func (e *Engine) evalRequireSet(set *joinlang.RequireSet, a *ArcToken) (JoinResult, error) {
	p, node := a.Process, a.Arc.To
	merge := newestOn(p, node)
	if merge != nil && merge.ExecType.IsBacktracked() {
		merge = nil
	}
	var required, optional []contribution
	initiatingRequired, initiatingOptional := false, false
	for _, req := range set.Requires {
		applicable := true
		if req.When != nil {
			ok, err := req.When.Eval(func(name string) (bool, error) {
				if name == "first" {
					return merge == nil, nil
				}
				v, err := rubricEnv{e, a.Parent}.Predicate(name)
				if err != nil {
					// Name the symbol, as guard errors do (decision 13).
					return false, fmt.Errorf("predicate %q: %w", name, err)
				}
				return v, nil
			})
			if err != nil {
				return JoinResult{}, fmt.Errorf("when clause at line %d: %w", req.Pos.Line, err)
			}
			applicable = ok
		}
		c := e.evalRequire(req, a)
		has := containsArc(c.tokens, a)
		if applicable {
			required = append(required, c)
			initiatingRequired = initiatingRequired || has
		} else {
			optional = append(optional, c)
			initiatingOptional = initiatingOptional || has
		}
	}
	if !initiatingRequired && !initiatingOptional {
		return JoinResult{}, nil
	}
	if initiatingRequired {
		all := true
		for _, c := range required {
			all = all && c.satisfied
		}
		if all {
			var tokens []*ArcToken
			for _, c := range append(required, optional...) {
				tokens = appendNew(tokens, c.tokens...)
			}
			return JoinResult{Action: JoinComplete, ArcTokens: tokens}, nil
		}
	}
	if merge != nil {
		var tokens []*ArcToken
		for _, c := range optional {
			tokens = appendNew(tokens, c.tokens...)
		}
		if containsArc(tokens, a) {
			return JoinResult{Action: JoinMerge, ArcTokens: tokens, MergeTarget: merge}, nil
		}
	}
	return JoinResult{}, nil
}

func (e *Engine) evalRequire(req *joinlang.Require, a *ArcToken) contribution {
	p, node := a.Process, a.Arc.To
	switch req.Kind {
	case joinlang.RequireNode:
		if nodeNamed(a.Arc.From, req.Name) {
			return contribution{true, []*ArcToken{a}}
		}
		for _, arc := range node.InArcs() {
			if !nodeNamed(arc.From, req.Name) {
				continue
			}
			if w := p.firstWaiting(arc); w != nil {
				return contribution{true, []*ArcToken{w}}
			}
		}
		return contribution{}
	case joinlang.RequireAllArcs, joinlang.RequireAtLeastArcs:
		var tokens []*ArcToken
		joining := 0
		for _, arc := range node.InArcs() {
			if req.Labelled && arc.Name != req.Label {
				continue
			}
			joining++
			if w := p.firstWaiting(arc); w != nil {
				tokens = append(tokens, w)
			}
		}
		need := joining
		if req.Kind == joinlang.RequireAtLeastArcs {
			need = min(req.Count, joining)
		}
		return contribution{len(tokens) >= need, tokens}
	case joinlang.RequireTokenSet:
		var set *TokenSet
		for _, arc := range node.InArcs() {
			for t := p.firstWaiting(arc); t != nil; t = t.nextWaiting {
				for _, m := range t.Sets {
					if m.Set.Name == req.Name && set == nil {
						set = m.Set
					}
				}
			}
		}
		// The set contributes only once it has arrived whole: until then
		// none of its arc tokens may join or merge.
		if set == nil || !setArrived(p, set, node) {
			return contribution{}
		}
		var tokens []*ArcToken
		for _, t := range p.ArcTokens {
			if !t.Complete && hasSet(t.Sets, set) {
				tokens = append(tokens, t)
			}
		}
		return contribution{true, tokens}
	}
	return contribution{}
}

func containsArc(list []*ArcToken, a *ArcToken) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

func appendNew(list []*ArcToken, more ...*ArcToken) []*ArcToken {
	for _, a := range more {
		if !containsArc(list, a) {
			list = append(list, a)
		}
	}
	return list
}

// nodeNamed matches a node by its plain or qualified ("E:N") name.
func nodeNamed(n *graph.Node, name string) bool {
	return n.Name == name || n.QualifiedName() == name
}
