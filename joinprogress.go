package veena

import (
	"slices"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// JoinProgress is how far a waiting join has come for one group of the
// arc tokens waiting at it, counted as its strategy counts: Arrived of
// Needs, in units Of:
//
//   - "arcs" for an and join (the input arcs a token has arrived on, of all
//     of them) and a labelAnd join (of the input arcs with the name of the
//     arc the tokens came on, which Group gives as “name”, or "unnamed arcs"); tokens in token
//     sets join with their innermost set's member only, so each member is a
//     group of its own ("reviewers #1");
//   - "members" for a tokenSet or tokenSetOr join: the members of the set
//     (Group, by name) whose tokens have all arrived, of the members with a
//     token still active anywhere (a member whose branch was discarded is
//     not waited for).
//
// Joins of other kinds (or, first, class, JoinLang) have no progress.
type JoinProgress struct {
	Group   string `json:"group,omitempty"`
	Arrived int    `json:"arrived"`
	Needs   int    `json:"needs"`
	Of      string `json:"of"`
}

// setJoinProgress gives each join wait of a process read its progress.
func setJoinProgress(ws []Wait, p *kernel.Process) {
	for i := range ws {
		if ws[i].Kind != WaitJoin {
			continue
		}
		for _, n := range p.Graph.Nodes {
			if n.Name == ws[i].Node && n.ExternalName() == ws[i].External {
				ws[i].Progress = joinProgressOf(p, n)
				break
			}
		}
	}
}

// joinProgressOf is the progress of the join at node, one entry a group,
// in the order the groups' first tokens began to wait.
func joinProgressOf(p *kernel.Process, node *graph.Node) []JoinProgress {
	var waiting []*kernel.ArcToken
	for _, a := range p.ArcTokens {
		if a.Active() && a.Arc.To == node {
			waiting = append(waiting, a)
		}
	}
	var out []JoinProgress
	switch node.Join {
	case graph.JoinAnd, graph.JoinLabelAnd:
		type group struct {
			key  string
			arcs []*graph.Arc
		}
		var groups []*group
		for _, a := range waiting {
			key := ""
			if len(a.Sets) > 0 {
				m := innermostSet(a.Sets)
				key = m.Set.Name + " #" + strconv.Itoa(m.Member)
			}
			if node.Join == graph.JoinLabelAnd {
				label := "“" + a.Arc.Name + "”"
				if a.Arc.Name == "" {
					label = "unnamed arcs"
				}
				key = strings.TrimSpace(label + " " + key)
			}
			i := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
			if i < 0 {
				i = len(groups)
				groups = append(groups, &group{key: key})
			}
			if !slices.Contains(groups[i].arcs, a.Arc) {
				groups[i].arcs = append(groups[i].arcs, a.Arc)
			}
		}
		for _, g := range groups {
			needs := 0
			for _, in := range node.InArcs() {
				if node.Join != graph.JoinLabelAnd || in.Name == g.arcs[0].Name {
					needs++
				}
			}
			out = append(out, JoinProgress{Group: g.key, Arrived: len(g.arcs), Needs: needs, Of: "arcs"})
		}
	case graph.JoinTokenSet, graph.JoinTokenSetOr:
		var sets []*kernel.TokenSet
		for _, a := range waiting {
			if len(a.Sets) == 0 {
				continue
			}
			s := waitedSet(a, node)
			if !slices.Contains(sets, s) {
				sets = append(sets, s)
			}
		}
		for _, s := range sets {
			// A member has arrived when every token of it still active is
			// an arc token waiting here.
			here, elsewhere := map[int]bool{}, map[int]bool{}
			for _, t := range p.NodeTokens {
				if m, ok := memberOf(t.Sets, s); ok && !t.Complete {
					elsewhere[m] = true
				}
			}
			for _, a := range p.ArcTokens {
				if m, ok := memberOf(a.Sets, s); ok && !a.Complete {
					if a.Arc.To == node {
						here[m] = true
					} else {
						elsewhere[m] = true
					}
				}
			}
			arrived := 0
			for m := range here {
				if !elsewhere[m] {
					arrived++
				}
			}
			needs := len(elsewhere)
			for m := range here {
				if !elsewhere[m] {
					needs++
				}
			}
			out = append(out, JoinProgress{Group: s.Name, Arrived: arrived, Needs: needs, Of: "members"})
		}
	}
	return out
}

// innermostSet is the membership of the deepest set, the one an and join
// matches tokens by.
func innermostSet(ms []kernel.Membership) kernel.Membership {
	best := ms[0]
	for _, m := range ms[1:] {
		if m.Set.Level > best.Set.Level {
			best = m
		}
	}
	return best
}

// waitedSet is the set a tokenSet join waits for a token of: the one its
// join parameter names, if the token is in it, else its innermost.
func waitedSet(a *kernel.ArcToken, node *graph.Node) *kernel.TokenSet {
	if node.JoinParam != "" {
		for _, m := range a.Sets {
			if m.Set.Name == node.JoinParam {
				return m.Set
			}
		}
	}
	return innermostSet(a.Sets).Set
}

// memberOf is the member index of a token in s, if it is in s.
func memberOf(ms []kernel.Membership, s *kernel.TokenSet) (int, bool) {
	for _, m := range ms {
		if m.Set == s {
			return m.Member, true
		}
	}
	return 0, false
}
