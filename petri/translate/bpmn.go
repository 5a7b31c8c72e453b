package translate

import (
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
)

// BPMN structure beyond flows: an embedded sub-process is entered (a token
// on each of its none start events) and left once an end was reached and
// no token is left inside it (inhibitor arcs from every place inside); a
// boundary event takes its activity's token (interrupting) or adds one of
// its own (non-interrupting, once); event sub-processes and compensation
// handlers, started by run-time events, are left out.

// bpmnElement is the BPMN element of a node, or nil.
func bpmnElement(n *graph.Node) *bpmn.Element {
	el, _ := n.Props.(*bpmn.Element)
	return el
}

// bpmnPlan prepares a BPMN graph's translation: which nodes are left out,
// and the places of sub-processes.
type bpmnPlan struct {
	skip    map[*graph.Node]bool
	byID    map[string]*graph.Node
	done    map[*bpmn.Element]int // a sub-process's "an end event was reached" place
	running map[*bpmn.Element]int // a sub-process's "entered, not left" place
	ends    map[*bpmn.Element]int // end events per sub-process
}

func (b *builder) planBPMN(g *graph.Graph) {
	pl := &bpmnPlan{skip: map[*graph.Node]bool{}, byID: map[string]*graph.Node{}, done: map[*bpmn.Element]int{},
		running: map[*bpmn.Element]int{}, ends: map[*bpmn.Element]int{}}
	b.bpmn = pl
	for _, n := range g.Nodes {
		el := bpmnElement(n)
		if el == nil {
			continue
		}
		pl.byID[el.ID] = n
		for s := el; s != nil; s = s.Scope {
			if s.TriggeredByEvent || s.ForCompensation {
				pl.skip[n] = true
				if s == el {
					b.approx(n, "an event sub-process or compensation handler, started by run-time events: left out")
				}
				break
			}
		}
		if el.Loop != nil && el.Loop.MultiInstance && !pl.skip[n] {
			b.approx(n, "multi-instance: analysed as one instance")
		}
		if el.Kind == "endEvent" && el.Scope != nil {
			pl.ends[el.Scope]++
		}
		if el.Kind == "endEvent" && el.Event != nil && el.Event.Kind == bpmn.EventTerminate {
			b.approx(n, "a terminate end event: the tokens it would end are left in place")
		}
	}
	// A process starts at one of its start events, whatever starts it (a
	// none start, a message, a timer, a signal): a choice.
	begin := -1
	for _, n := range g.Nodes {
		el := bpmnElement(n)
		if el == nil || pl.skip[n] || el.Kind != "startEvent" || el.Scope != nil {
			continue
		}
		if begin < 0 {
			begin = b.place("begin", 1)
		}
		b.aux(b.transition("begin at "+n.QualifiedName(), []int{begin}, []int{b.tr.NodePlace[n.Index]}, nil))
	}
	for _, n := range g.Nodes {
		el := bpmnElement(n)
		if el == nil || pl.skip[n] || el.Kind != "subProcess" {
			continue
		}
		pl.done[el] = b.place(n.QualifiedName()+" done", 0)
		pl.running[el] = b.place(n.QualifiedName()+" running", 0)
	}
}

// inside lists the places of everything within sub-process s: its
// elements' node places, the arcs leaving them, and nested sub-processes'
// own places.
func (b *builder) inside(s *bpmn.Element) []int {
	pl := b.bpmn
	var out []int
	for _, n := range b.tr.Graph.Nodes {
		el := bpmnElement(n)
		if el == nil || pl.skip[n] {
			continue
		}
		in := false
		for sc := el.Scope; sc != nil; sc = sc.Scope {
			in = in || sc == s
		}
		if !in {
			continue
		}
		out = append(out, b.tr.NodePlace[n.Index])
		for _, a := range n.OutArcs() {
			out = append(out, b.tr.ArcPlace[a.Index])
		}
		if el.Kind == "subProcess" {
			out = append(out, pl.done[el], pl.running[el])
		}
	}
	return out
}

// completeBPMN adds the transitions by which a BPMN node's token leaves,
// reporting whether it did (false: the flow-based rule applies).
func (b *builder) completeBPMN(n *graph.Node, node int, outs func([]*graph.Arc) []int) bool {
	pl := b.bpmn
	el := bpmnElement(n)
	if el == nil {
		return false
	}
	name := n.QualifiedName()
	// Boundary events of the activity.
	for _, id := range el.Boundaries {
		bn := pl.byID[id]
		if bn == nil || pl.skip[bn] {
			continue
		}
		be := bpmnElement(bn)
		from := node
		if el.Kind == "subProcess" {
			from = pl.running[el] // what runs inside is left as it is
		}
		target := b.tr.NodePlace[bn.Index]
		if be.Interrupting {
			if el.Kind != "subProcess" {
				b.transition(name+" interrupted by "+bn.QualifiedName(), []int{from}, []int{target}, nil)
				continue
			}
			// What runs inside is withdrawn: a cancelled mark lets every
			// place inside give up its tokens.
			cancelled := b.place(name+" cancelled", 0)
			b.bookkeepingPlace(cancelled)
			b.transition(name+" interrupted by "+bn.QualifiedName(), []int{from}, []int{target, cancelled}, nil)
			for _, p := range append(b.inside(el), pl.done[el]) {
				b.aux(b.transition(name+" withdraws "+b.places[p].Name, []int{p, cancelled}, []int{cancelled}, nil))
			}
			continue
		}
		once := b.place(bn.QualifiedName()+" not yet", 1)
		b.bookkeepingPlace(once)
		b.approx(bn, "non-interrupting: fires at most once")
		b.transition(bn.QualifiedName()+" beside "+name, []int{from, once}, []int{from, target}, nil)
	}
	switch {
	case el.Kind == "subProcess":
		var starts []int
		for _, c := range el.Children {
			if cn := pl.byID[c.ID]; cn != nil && c.Kind == "startEvent" && (c.Event == nil || c.Event.Kind == bpmn.EventNone) {
				starts = append(starts, b.tr.NodePlace[cn.Index])
			}
		}
		if len(starts) == 0 {
			// Collapsed, or nothing starts inside: it ends at once.
			starts = append(starts, pl.done[el])
		}
		b.transition(name+" enters", []int{node}, append(starts, pl.running[el]), nil)
		// Ends reached inside count once; the sub-process is left when
		// nothing is left inside.
		b.aux(b.transitionW(name+" ends merge", []int{pl.done[el], pl.done[el]}, []int{pl.done[el]}, nil))
		inh := append(b.inside(el), pl.done[el], pl.done[el])
		b.transitionW(name+" leaves", []int{pl.done[el], pl.running[el]}, outs(n.OutArcs()), inh)
		return true
	case el.Scope != nil && (el.Kind == "endEvent" || len(n.OutArcs()) == 0):
		// An end inside a sub-process, explicit or implicit.
		if done, ok := pl.done[el.Scope]; ok {
			b.transition(name+" ends", []int{node}, []int{done}, nil)
			return true
		}
	}
	return false
}
