package kernel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// History renders the process's token history in the TestProcess notation:
// each node token as [id node status type (set member)…] in creation order,
// followed by its child arc tokens as (status type target). Ids are 1-based
// creation numbers; status is I (incomplete) or C (complete) for node
// tokens, and P (pending), I (waiting) or C (complete) for arc tokens; the
// target of a complete arc token is its child's id, otherwise its end node.
func (p *Process) History() string {
	var b strings.Builder
	for _, t := range p.NodeTokens {
		b.WriteString(t.Notation())
		b.WriteByte('\n')
		for _, a := range t.Children {
			b.WriteString("  ")
			b.WriteString(a.Notation())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Label names the token in messages as the notation numbers it: "5 (ship)".
func (t *NodeToken) Label() string { return fmt.Sprintf("%d (%s)", t.ID+1, t.Node.QualifiedName()) }

// Label names the arc token in messages: "3 (A -> B)".
func (a *ArcToken) Label() string { return fmt.Sprintf("%d (%s)", a.ID+1, a.Arc) }

// Notation is the token in TestProcess notation: [id node status type …].
func (t *NodeToken) Notation() string {
	status := "I"
	if t.Complete {
		status = "C"
	}
	s := fmt.Sprintf("[%d %s %s %s", t.ID+1, t.Node.QualifiedName(), status, t.ExecType.Short())
	for _, m := range t.Sets {
		s += fmt.Sprintf(" %s %d", m.Set.Name, m.Member)
	}
	return s + "]"
}

// Notation is the arc token in TestProcess notation: (status type target).
func (a *ArcToken) Notation() string {
	switch {
	case a.Complete && a.Child != nil:
		return fmt.Sprintf("(C %s %d)", a.ExecType.Short(), a.Child.ID+1)
	case a.Pending:
		return fmt.Sprintf("(P %s %s)", a.ExecType.Short(), a.Arc.To.QualifiedName())
	default:
		return fmt.Sprintf("(I %s %s)", a.ExecType.Short(), a.Arc.To.QualifiedName())
	}
}

// specNode and specArc are a parsed TestProcess expectation.
type specNode struct {
	label, node, status, exec string
	sets                      []specSet
	arcs                      []specArc
	line                      int
}

type specSet struct {
	name   string
	member int
}

type specArc struct {
	status, exec, target string
	line                 int
}

// parseSpec reads the TestProcess notation.
func parseSpec(spec string) ([]*specNode, error) {
	var nodes []*specNode
	var cur *specNode
	for i, raw := range strings.Split(spec, "\n") {
		line := i + 1
		rest := strings.TrimSpace(raw)
		for rest != "" {
			switch rest[0] {
			case '[':
				end := strings.IndexByte(rest, ']')
				if end < 0 {
					return nil, fmt.Errorf("line %d: unclosed [", line)
				}
				f := strings.Fields(rest[1:end])
				if len(f) < 4 || (len(f)-4)%2 != 0 {
					return nil, fmt.Errorf("line %d: want [id node status type (set member)…], have %q", line, rest[:end+1])
				}
				cur = &specNode{label: f[0], node: f[1], status: f[2], exec: f[3], line: line}
				for j := 4; j < len(f); j += 2 {
					m, err := strconv.Atoi(f[j+1])
					if err != nil {
						return nil, fmt.Errorf("line %d: bad member index %q", line, f[j+1])
					}
					cur.sets = append(cur.sets, specSet{f[j], m})
				}
				nodes = append(nodes, cur)
				rest = strings.TrimSpace(rest[end+1:])
			case '(':
				end := strings.IndexByte(rest, ')')
				if end < 0 {
					return nil, fmt.Errorf("line %d: unclosed (", line)
				}
				f := strings.Fields(rest[1:end])
				if len(f) != 3 {
					return nil, fmt.Errorf("line %d: want (status type target), have %q", line, rest[:end+1])
				}
				if cur == nil {
					return nil, fmt.Errorf("line %d: arc token before any node token", line)
				}
				cur.arcs = append(cur.arcs, specArc{f[0], f[1], f[2], line})
				rest = strings.TrimSpace(rest[end+1:])
			default:
				return nil, fmt.Errorf("line %d: unexpected %q", line, rest)
			}
		}
	}
	return nodes, nil
}

// MatchHistory compares the process's token history with an expectation in
// TestProcess notation. Ids in the expectation are labels only: tokens are
// matched by structure, start tokens by node, then child arc tokens
// recursively; every node token of the process must be covered. It returns
// nil on a match, or an error showing both histories.
func MatchHistory(p *Process, spec string) error {
	nodes, err := parseSpec(spec)
	if err != nil {
		return err
	}
	m := &matcher{byLabel: map[string]*specNode{}}
	for _, n := range nodes {
		if _, dup := m.byLabel[n.label]; dup {
			return fmt.Errorf("line %d: label %s used twice", n.line, n.label)
		}
		m.byLabel[n.label] = n
	}
	targeted := map[string]bool{}
	for _, n := range nodes {
		for _, a := range n.arcs {
			if a.status == "C" {
				if _, ok := m.byLabel[a.target]; !ok {
					return fmt.Errorf("line %d: arc target %s is not a node token label", a.line, a.target)
				}
				targeted[a.target] = true
			}
		}
	}
	for _, n := range nodes {
		if !targeted[n.label] {
			m.starts = append(m.starts, n)
		}
	}
	sort.SliceStable(m.starts, func(i, j int) bool { return m.starts[i].node < m.starts[j].node })
	if len(nodes) == len(p.NodeTokens) && m.solve(p, assignment{}, 0) {
		return nil
	}
	return fmt.Errorf("token history does not match\n--- want\n%s\n--- have\n%s", strings.TrimSpace(spec), p.History())
}

type matcher struct {
	byLabel map[string]*specNode
	starts  []*specNode
}

// assignment maps spec labels to node tokens, as a persistent list so that
// backtracking is free.
type assignment struct {
	label string
	token *NodeToken
	next  *assignment
}

func (a *assignment) lookup(label string) *NodeToken {
	for x := a; x != nil; x = x.next {
		if x.label == label {
			return x.token
		}
	}
	return nil
}

func (a *assignment) used(t *NodeToken) bool {
	for x := a; x != nil; x = x.next {
		if x.token == t {
			return true
		}
	}
	return false
}

func (a *assignment) with(label string, t *NodeToken) assignment {
	cp := *a
	return assignment{label: label, token: t, next: &cp}
}

// solve assigns the start specs, then expands every assigned spec node's arcs.
func (m *matcher) solve(p *Process, as assignment, i int) bool {
	if i < len(m.starts) {
		s := m.starts[i]
		for _, t := range p.NodeTokens {
			if len(t.Parents) == 0 && !as.used(t) && nodeMatches(s, t) {
				if m.solve(p, as.with(s.label, t), i+1) {
					return true
				}
			}
		}
		return false
	}
	return m.expand(p, as, map[string]bool{})
}

// expand picks an assigned spec node whose arcs are not yet matched and
// matches them against the token's children.
func (m *matcher) expand(p *Process, as assignment, done map[string]bool) bool {
	for x := &as; x != nil; x = x.next {
		if x.label == "" || done[x.label] {
			continue
		}
		s, t := m.byLabel[x.label], x.token
		if len(s.arcs) != len(t.Children) {
			return false
		}
		next := map[string]bool{x.label: true}
		for k := range done {
			next[k] = true
		}
		return m.matchArcs(p, as, next, s.arcs, t.Children, make([]bool, len(t.Children)))
	}
	return countAssigned(&as) == len(p.NodeTokens)
}

func countAssigned(as *assignment) int {
	n := 0
	for x := as; x != nil; x = x.next {
		if x.label != "" {
			n++
		}
	}
	return n
}

func (m *matcher) matchArcs(p *Process, as assignment, done map[string]bool, arcs []specArc, children []*ArcToken, taken []bool) bool {
	if len(arcs) == 0 {
		return m.expand(p, as, done)
	}
	sa := arcs[0]
	for j, a := range children {
		if taken[j] || !arcMatches(sa, a) {
			continue
		}
		next := as
		if sa.status == "C" {
			if have := as.lookup(sa.target); have != nil {
				if have != a.Child {
					continue
				}
			} else {
				if as.used(a.Child) || !nodeMatches(m.byLabel[sa.target], a.Child) {
					continue
				}
				next = as.with(sa.target, a.Child)
			}
		}
		taken[j] = true
		if m.matchArcs(p, next, done, arcs[1:], children, taken) {
			return true
		}
		taken[j] = false
	}
	return false
}

func nodeMatches(s *specNode, t *NodeToken) bool {
	status := "I"
	if t.Complete {
		status = "C"
	}
	if s.status != status || s.exec != t.ExecType.Short() || !nameMatches(s.node, t) {
		return false
	}
	for _, ss := range s.sets {
		m, ok := t.Membership(ss.name)
		if !ok || m.Member != ss.member {
			return false
		}
	}
	return true
}

// nameMatches accepts N (any node named N), :N (a node of the definition
// itself) and E:N (node N imported through instance E).
func nameMatches(spec string, t *NodeToken) bool {
	if strings.HasPrefix(spec, ":") {
		return t.Node.External == nil && t.Node.Name == spec[1:]
	}
	if strings.Contains(spec, ":") {
		return t.Node.QualifiedName() == spec
	}
	return t.Node.Name == spec
}

func arcMatches(s specArc, a *ArcToken) bool {
	if s.exec != a.ExecType.Short() {
		return false
	}
	switch s.status {
	case "C":
		return a.Complete && a.Child != nil
	case "P":
		return a.Pending && !a.Complete && endMatches(s.target, a)
	case "I":
		return !a.Pending && !a.Complete && endMatches(s.target, a)
	}
	return false
}

func endMatches(target string, a *ArcToken) bool {
	n := a.Arc.To
	if strings.HasPrefix(target, ":") {
		return n.External == nil && n.Name == target[1:]
	}
	if strings.Contains(target, ":") {
		return n.QualifiedName() == target
	}
	return n.Name == target
}
