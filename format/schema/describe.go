package schema

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/veena-wf/veena/graph"
)

// Describe renders compiled graphs as stable text: each graph's nodes and
// arcs as the kernel sees them, with the schema properties that the node
// types run (actions, waits, conditions). Golden files hold it.
func Describe(gs []*graph.Graph) string {
	var b strings.Builder
	for i, g := range gs {
		if i > 0 {
			b.WriteString("\n")
		}
		describeGraph(&b, g)
	}
	return b.String()
}

func describeGraph(b *strings.Builder, g *graph.Graph) {
	s, _ := g.Props.(*Schema)
	fmt.Fprintf(b, "definition %s (format %s)\n", g.Name, g.Format)
	if s != nil {
		if s.Description != "" {
			fmt.Fprintf(b, "  description %q\n", s.Description)
		}
		if len(s.Inherit) > 0 {
			fmt.Fprintf(b, "  context inherit %s\n", strings.Join(s.Inherit, ", "))
		}
		if len(s.ContextKeys) > 0 {
			fmt.Fprintf(b, "  context keys %s\n", strings.Join(s.ContextKeys, ", "))
		}
		fmt.Fprintf(b, "  routing keys [%s]\n", strings.Join(s.RoutingKeys(), ", "))
		if t := s.Trigger; t != nil {
			fmt.Fprintf(b, "  trigger event %s", t.Event)
			if t.FromParent {
				b.WriteString(" from parent")
			}
			if t.When != nil {
				fmt.Fprintf(b, " when %q", t.When.Source)
			}
			b.WriteString("\n")
		}
		for _, e := range s.Almanac {
			v, _ := json.Marshal(e.Value)
			fmt.Fprintf(b, "  almanac %s = %s\n", e.Key, v)
		}
		if s.QueueLimit != DefaultQueueLimit {
			fmt.Fprintf(b, "  event queue %d\n", s.QueueLimit)
		}
		for _, c := range s.Children {
			fmt.Fprintf(b, "  child %s\n", c.Name)
		}
	}
	b.WriteString("nodes:\n")
	for _, n := range g.Nodes {
		fmt.Fprintf(b, "  %d %s type=%s join=%s", n.Index, n.Name, n.Type, n.Join)
		if n.IsStart {
			b.WriteString(" start")
		}
		if n.Label != "" {
			fmt.Fprintf(b, " label=%q", n.Label)
		}
		fmt.Fprintf(b, " at %d:%d\n", n.Pos.Line, n.Pos.Column)
		sn, _ := n.Props.(*Node)
		if sn == nil {
			continue
		}
		if w := sn.Event; w != nil {
			fmt.Fprintf(b, "      waits for event %s", w.Name)
			if w.When != nil {
				fmt.Fprintf(b, " when %q", w.When.Source)
			}
			b.WriteString("\n")
		}
		if w := sn.Timer; w != nil {
			if w.At != nil {
				fmt.Fprintf(b, "      waits until %q\n", w.At.Source)
			} else {
				fmt.Fprintf(b, "      waits %s\n", w.After)
			}
		}
		for i, a := range sn.Actions {
			fmt.Fprintf(b, "      action %d %s: %s", i+1, a.ID, a.Name())
			if a.With != nil {
				fmt.Fprintf(b, " with %s", a.With)
			}
			if a.Result != "" {
				fmt.Fprintf(b, " -> almanac.%s", a.Result)
			}
			if a.Retry.Max > 0 {
				fmt.Fprintf(b, " retry %d every %s", a.Retry.Max, a.Retry.Delay)
			}
			if a.Timeout != DefaultActionTimeout {
				fmt.Fprintf(b, " timeout %s", a.Timeout)
			}
			b.WriteString("\n")
		}
		for _, x := range sn.Next {
			fmt.Fprintf(b, "      next %s via %q", x.To, x.Arc)
			if x.When != nil {
				fmt.Fprintf(b, " when %q", x.When.Source)
			} else {
				b.WriteString(" otherwise")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("arcs:\n")
	for _, a := range g.Arcs {
		fmt.Fprintf(b, "  %d %s -> %s %q\n", a.Index, a.From.Name, a.To.Name, a.Name)
	}
}

// Detail is what the API shows of a schema node beyond its graph node:
// its waits, its actions (with their argument templates) and its
// connections with their conditions.
func (n *Node) Detail() any {
	d := map[string]any{}
	if n.Description != "" {
		d["description"] = n.Description
	}
	if w := n.Event; w != nil {
		ev := map[string]any{"name": w.Name}
		if w.When != nil {
			ev["when"] = w.When.Source
		}
		d["event"] = ev
	}
	if w := n.Timer; w != nil {
		if w.At != nil {
			d["timer"] = map[string]any{"at": w.At.Source}
		} else {
			d["timer"] = map[string]any{"after": w.After.String()}
		}
	}
	acts := make([]map[string]any, len(n.Actions))
	for i, a := range n.Actions {
		x := map[string]any{"id": a.ID}
		if a.Job != "" {
			x["job"] = a.Job
		} else {
			x["do"] = a.Do
		}
		if a.With != nil {
			x["with"] = a.With.Template()
		}
		if a.Result != "" {
			x["result"] = a.Result
		}
		if a.Retry.Max > 0 {
			x["retry"] = map[string]any{"max": a.Retry.Max, "delay": a.Retry.Delay.String()}
		}
		acts[i] = x
	}
	d["actions"] = acts
	next := make([]map[string]any, len(n.Next))
	for i, x := range n.Next {
		y := map[string]any{"to": x.To, "arc": x.Arc}
		if x.Label != "" {
			y["label"] = x.Label
		}
		if x.When != nil {
			y["when"] = x.When.Source
		}
		next[i] = y
	}
	d["next"] = next
	return d
}

// Detail is what the API shows of a schema beyond its nodes: context
// keys, trigger, initial almanac, children.
func (s *Schema) Detail() any {
	d := map[string]any{"routingKeys": s.RoutingKeys()}
	if s.Description != "" {
		d["description"] = s.Description
	}
	if len(s.Inherit) > 0 {
		d["inherit"] = s.Inherit
	}
	if t := s.Trigger; t != nil {
		x := map[string]any{"event": t.Event}
		if t.When != nil {
			x["when"] = t.When.Source
		}
		if t.FromParent {
			x["from"] = ToParent
		}
		d["trigger"] = x
	}
	alm := map[string]any{}
	for _, e := range s.Almanac {
		alm[e.Key] = e.Value
	}
	d["almanac"] = alm
	var children []string
	for _, c := range s.Children {
		children = append(children, c.Name)
	}
	if len(children) > 0 {
		d["children"] = children
	}
	if s.Parent != nil {
		d["parent"] = s.Parent.Name
	}
	return d
}
