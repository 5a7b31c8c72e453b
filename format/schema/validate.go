package schema

import (
	"fmt"
	"strings"
)

// validate checks the rules that concern a schema's graph as a whole:
// unique node ids, one root, at least one terminator, connections that
// lead somewhere and end with their default, every node reachable from the
// root, every cycle passing through an event or timer node, and actions
// that name the parent or children this schema has.
func (d *decoder) validate(s *Schema, what string, nodesVal *value) {
	ids := map[string]*Node{}
	var roots, terminators []*Node
	for _, n := range s.Nodes {
		if n.ID == "" {
			continue
		}
		if ids[n.ID] != nil {
			d.add(n.Pos, "%s: two nodes have the id %q", what, n.ID)
			continue
		}
		ids[n.ID] = n
		switch n.Kind {
		case KindRoot:
			roots = append(roots, n)
		case KindTerminator:
			terminators = append(terminators, n)
		}
	}
	pos := s.Pos
	if nodesVal != nil {
		pos = nodesVal.pos
	}
	switch len(roots) {
	case 0:
		if len(s.Nodes) > 0 {
			d.add(pos, "%s has no root node (type \"root\"): an instance starts there", what)
		} else if nodesVal != nil {
			d.add(pos, "%s has no nodes", what)
		}
	case 1:
	default:
		for _, r := range roots[1:] {
			d.add(r.Pos, "%s: node %q is a second root; a schema has exactly one (%q)", what, r.ID, roots[0].ID)
		}
	}
	if len(terminators) == 0 && len(s.Nodes) > 0 {
		d.add(pos, "%s has no terminator node: an instance could never complete", what)
	}

	for _, n := range s.Nodes {
		labels := map[string]bool{}
		defaults := 0
		for i, x := range n.Next {
			if x.To != "" && ids[x.To] == nil {
				d.add(x.Pos, "node %q: connection to %q, which is not a node of %s", n.ID, x.To, s.Name)
			}
			if x.Label != "" {
				if labels[x.Label] {
					d.add(x.Pos, "node %q: two connections are labelled %q", n.ID, x.Label)
				}
				labels[x.Label] = true
			}
			if x.When == nil {
				defaults++
				if i != len(n.Next)-1 {
					d.add(x.Pos, "node %q: the connection without a condition (the default) must be the last one; those after it could never be taken", n.ID)
				}
			}
		}
		if defaults > 1 {
			d.add(n.Pos, "node %q has %d connections without a condition; at most one (the last) can be the default", n.ID, defaults)
		}
		for _, x := range n.Next {
			x.Arc = x.Label
			if x.Arc == "" {
				x.Arc = "to:" + x.To
			}
		}
		// An unlabelled connection's arc name could equal another's label.
		names := map[string]string{}
		for _, x := range n.Next {
			if prev, ok := names[x.Arc]; ok && prev != x.To {
				d.add(x.Pos, "node %q: label %q is also the name of the unlabelled connection to %q; choose another label", n.ID, x.Arc, prev)
			}
			names[x.Arc] = x.To
		}
		d.checkActions(s, n)
	}
	if len(roots) != 1 {
		return
	}

	// Reachability from the root.
	seen := map[string]bool{}
	stack := []*Node{roots[0]}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		for _, x := range n.Next {
			if t := ids[x.To]; t != nil && !seen[t.ID] {
				stack = append(stack, t)
			}
		}
	}
	for _, n := range s.Nodes {
		if n.ID != "" && !seen[n.ID] && ids[n.ID] == n {
			d.add(n.Pos, "node %q cannot be reached from the root node %q", n.ID, roots[0].ID)
		}
	}

	// Every cycle must pass through an event or timer node: without them,
	// the rest of the graph must be acyclic.
	waits := func(n *Node) bool { return n.Kind == KindEvent || n.Kind == KindTimer }
	state := map[string]int{} // 0 new, 1 on the path, 2 done
	var path []*Node
	reported := map[string]bool{}
	var visit func(n *Node)
	visit = func(n *Node) {
		state[n.ID] = 1
		path = append(path, n)
		for _, x := range n.Next {
			t := ids[x.To]
			if t == nil || waits(t) {
				continue
			}
			switch state[t.ID] {
			case 0:
				visit(t)
			case 1:
				var cyc []string
				for i := len(path) - 1; i >= 0; i-- {
					cyc = append([]string{path[i].ID}, cyc...)
					if path[i] == t {
						break
					}
				}
				key := strings.Join(cyc, ">")
				if !reported[key] {
					reported[key] = true
					d.add(x.Pos, "%s: the cycle %s → %s passes through no event or timer node, so it could run for ever within one step", what, strings.Join(cyc, " → "), t.ID)
				}
			}
		}
		path = path[:len(path)-1]
		state[n.ID] = 2
	}
	for _, n := range s.Nodes {
		if n.ID != "" && ids[n.ID] == n && !waits(n) && state[n.ID] == 0 {
			visit(n)
		}
	}
}

// checkActions checks that actions name a parent or children this schema has.
func (d *decoder) checkActions(s *Schema, n *Node) {
	for _, a := range n.Actions {
		what := fmt.Sprintf("node %q, action %q", n.ID, a.ID)
		childArg := func(key string) {
			v, ok := a.With.Field(key).Literal()
			if !ok || v == nil {
				return // an expression: checked when it runs
			}
			name, _ := v.(string)
			if s.Child(name) == nil {
				d.add(a.Pos, "%s: %s names %v, which is not a child schema of %s%s", what, key, v, s.Name, childList(s))
			}
		}
		switch a.Do {
		case ActAlmanacSetParent:
			if s.Parent == nil {
				d.add(a.Pos, "%s: almanac.setParent is for child schemas; %s has no parent", what, s.Name)
			}
		case ActAlmanacSetChild:
			childArg("child")
		case ActChildStart:
			childArg("schema")
		case ActEmit:
			to, _ := a.With.Field("to").Literal()
			switch to {
			case ToParent:
				if s.Parent == nil {
					d.add(a.Pos, "%s: emit to the parent, but %s has no parent", what, s.Name)
				}
			case ToChildren:
				if len(s.Children) == 0 {
					d.add(a.Pos, "%s: emit to children, but %s has no child schemas", what, s.Name)
				}
				childArg("child")
			}
		}
	}
}

func childList(s *Schema) string {
	if len(s.Children) == 0 {
		return " (it has none)"
	}
	var names []string
	for _, c := range s.Children {
		names = append(names, c.Local)
	}
	return " (children: " + strings.Join(names, ", ") + ")"
}
