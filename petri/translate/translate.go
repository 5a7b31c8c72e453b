// Package translate turns a process graph of any format (Sarasvati, BPMN,
// schema) into a place/transition net with the same control flow, so that
// the analysis of petri/analysis can answer of any definition whether its
// processes can get stuck: whether an AND join can wait for ever, whether
// every run can finish, whether some node can never be reached.
//
// The net has a place for every arc (an arc token waiting to be joined)
// and one for every node (an active node token); initially the start
// nodes are marked. A node's join is a transition per way it can fire; its
// completion a transition per way it can leave. A finished process is the
// empty marking.
//
// Joins: and waits for a token on every input arc; labelAnd for a token on
// every input arc of one name; first lets the first arrival through and
// absorbs the others; or (and anything else) lets each arrival through.
// Token-set joins, JoinLang programs and join classes depend on run-time
// data and are read as or joins; the translation lists them as
// approximations. A BPMN inclusive join passes any non-empty set of the
// branches that have arrived, an over-approximation (see
// InclusiveJoinLimit).
//
// Completion, by format: a Sarasvati node leaves on the arcs of one name at
// a time (completeMany is not modelled); a plain node without a guard
// leaves on its default arcs only; a node that leaves on a name no arc has
// (a wait node completed on the default arcs where it has none, a guard's
// Discard) ends its branch. A BPMN node leaves on all its outgoing flows,
// except gateways: exclusive and event-based gateways on one, inclusive
// ones on any non-empty set, parallel ones on all. A schema node leaves on
// one of its connections. Guards and conditions are not evaluated: every
// way is possible, which over-approximates what runs can do.
package translate

import (
	"fmt"
	"slices"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
)

// Translation is the net of a graph, with where its places and transitions
// came from.
type Translation struct {
	Net   *petri.Net
	Graph *graph.Graph
	// ArcPlace and NodePlace number the places of the graph's arcs and
	// nodes; JoinOf gives, for a transition that is a join, its node.
	ArcPlace  []int
	NodePlace []int
	JoinOf    map[int]*graph.Node
	// Approximations lists the nodes whose joins or completions the net
	// only approximates, with why.
	Approximations []string
	// Auxiliary are transitions of the translation's own bookkeeping (not
	// a step of the process): that they never fire says nothing.
	Auxiliary map[string]bool
	// Bookkeeping are places of the translation's own (a non-interrupting
	// boundary event's "not yet"), left as they are when a run finishes.
	Bookkeeping map[int]bool
}

// InclusiveJoinLimit is what the translation says of a BPMN inclusive (OR)
// join. Such a join waits for every branch that can still reach it and
// then passes once (the non-local rule); no place/transition net of the
// graph alone knows which branches can still arrive, so the net lets the
// join pass any non-empty set of the branches that have arrived. Every run
// of the process is a run of the net, so what holds of every reachable
// marking of the net (safe, bounded, a node never reached) holds of the
// process; the net also has runs the process has not (the join passing
// before every branch arrived, and again for the late ones), so a deadlock,
// a stuck join, an unsafe place or an unsound verdict after the join may
// be an artefact, and the net cannot show a process stuck at the join.
const InclusiveJoinLimit = "an inclusive (OR) join, read as passing any non-empty set of the branches that have arrived " +
	"(BPMN passes once, when no other branch can still arrive): the net has every run of the process and more, " +
	"so safe, bounded and never-reached verdicts hold for the process, while a deadlock, a stuck join, an unsafe place " +
	"or an unsound verdict after the join may be an artefact"

// inclusiveJoin adds the transitions of a BPMN inclusive join: one per
// non-empty set of its incoming flows (see InclusiveJoinLimit); those of
// two flows or more are auxiliary, as the process need not take them.
func (b *builder) inclusiveJoin(n *graph.Node, node int, in []*graph.Arc) {
	var live []*graph.Arc
	for _, a := range in {
		if !b.skipped(a.From) {
			live = append(live, a)
		}
	}
	name := n.QualifiedName()
	if len(live) > 6 {
		// Too many sets: each flow alone and all together only.
		b.approx(n, fmt.Sprintf("an inclusive (OR) join of %d flows, read as passing each flow alone or all together: not every run of the process is a run of the net, so no verdict after it is a proof", len(live)))
		var all []int
		for _, a := range live {
			b.noteJoin(b.transition(name+" from "+arcName(a), []int{b.tr.ArcPlace[a.Index]}, []int{node}, nil), n)
			all = append(all, b.tr.ArcPlace[a.Index])
		}
		t := b.transition(name+" join all", all, []int{node}, nil)
		b.noteJoin(t, n)
		b.aux(t)
		return
	}
	b.approx(n, InclusiveJoinLimit)
	for mask := 1; mask < 1<<len(live); mask++ {
		var ps []int
		id := name + " from"
		for i, a := range live {
			if mask&(1<<i) != 0 {
				ps = append(ps, b.tr.ArcPlace[a.Index])
				id += " " + arcName(a)
			}
		}
		t := b.transition(id, ps, []int{node}, nil)
		b.noteJoin(t, n)
		if len(ps) > 1 {
			b.aux(t)
		}
	}
}

// maxSubsets bounds how many outgoing sets of an inclusive gateway are
// spelt out; beyond it each single flow and all of them stand for the rest.
const maxSubsets = 63

// Translate builds the net of g. A Petri net graph (format pnml) is its
// own net.
func Translate(g *graph.Graph) (*Translation, error) {
	if g.Format == "pnml" {
		n, err := petri.Prepare(g)
		if err != nil {
			return nil, err
		}
		return &Translation{Net: n, Graph: g, JoinOf: map[int]*graph.Node{}}, nil
	}
	b := &builder{g: &graph.Graph{Name: g.Name, Format: "pnml", File: g.File}, tr: &Translation{Graph: g, JoinOf: map[int]*graph.Node{}}}
	b.tr.ArcPlace = make([]int, len(g.Arcs))
	b.tr.NodePlace = make([]int, len(g.Nodes))
	for _, n := range g.Nodes {
		init := 0
		if n.IsStart && n.External == nil && g.Format != "bpmn" {
			init = 1
		}
		b.tr.NodePlace[n.Index] = b.place(n.QualifiedName(), init)
	}
	for _, a := range g.Arcs {
		b.tr.ArcPlace[a.Index] = b.place(arcName(a), 0)
	}
	if g.Format == "bpmn" {
		b.planBPMN(g)
	}
	for _, n := range g.Nodes {
		if b.skipped(n) {
			continue
		}
		b.join(n)
		b.complete(n)
	}
	b.g.Finish()
	net, err := petri.FromGraph(b.g)
	if err != nil {
		return nil, fmt.Errorf("translate %s: %w", g.Name, err)
	}
	b.tr.Net = net
	for _, t := range b.auxT {
		b.tr.Auxiliary[net.Transitions[t].ID] = true
	}
	for t, node := range b.joinNode {
		b.tr.JoinOf[t] = node
	}
	return b.tr, nil
}

func arcName(a *graph.Arc) string {
	s := a.From.QualifiedName() + "->" + a.To.QualifiedName()
	if a.Name != "" {
		s += " '" + a.Name + "'"
	}
	return s
}

type builder struct {
	g           *graph.Graph
	tr          *Translation
	places      []*graph.Node
	joinNode    map[int]*graph.Node
	names       map[string]int
	transitions int
	bpmn        *bpmnPlan
	auxT        []int
}

// aux marks transition t as bookkeeping.
func (b *builder) aux(t int) {
	if b.tr.Auxiliary == nil {
		b.tr.Auxiliary = map[string]bool{}
	}
	b.auxT = append(b.auxT, t)
}

// bookkeepingPlace marks place p as the translation's own: a finished run
// may leave a token there.
func (b *builder) bookkeepingPlace(p int) {
	if b.tr.Bookkeeping == nil {
		b.tr.Bookkeeping = map[int]bool{}
	}
	b.tr.Bookkeeping[p] = true
}

// skipped reports whether a node is left out of the translation.
func (b *builder) skipped(n *graph.Node) bool { return b.bpmn != nil && b.bpmn.skip[n] }

func (b *builder) unique(base string) string {
	if b.names == nil {
		b.names = map[string]int{}
	}
	b.names[base]++
	if n := b.names[base]; n > 1 {
		return fmt.Sprintf("%s#%d", base, n)
	}
	return base
}

func (b *builder) place(id string, init int) int {
	n := &graph.Node{Name: b.unique(id), Kind: petri.KindPlace, Type: petri.KindPlace, Props: &petri.PlaceProps{Initial: init}}
	b.g.Nodes = append(b.g.Nodes, n)
	b.places = append(b.places, n)
	return len(b.places) - 1
}

// transitionW is transition where a place listed twice among the inputs
// is taken twice, and an inhibitor listed twice has threshold 2.
func (b *builder) transitionW(id string, in, out, inh []int) int {
	count := func(ps []int) ([]int, map[int]int) {
		w := map[int]int{}
		var order []int
		for _, p := range ps {
			if w[p] == 0 {
				order = append(order, p)
			}
			w[p]++
		}
		return order, w
	}
	t := &graph.Node{Name: b.unique(id), Kind: petri.KindTransition, Type: petri.KindTransition, Props: &petri.TransitionProps{}}
	b.g.Nodes = append(b.g.Nodes, t)
	ins, iw := count(in)
	for _, p := range ins {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: b.places[p], To: t, Props: &petri.ArcProps{Weight: iw[p]}})
	}
	inhs, hw := count(inh)
	for _, p := range inhs {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: b.places[p], To: t, Props: &petri.ArcProps{Weight: hw[p], Inhibitor: true}})
	}
	outs, ow := count(out)
	for _, p := range outs {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: t, To: b.places[p], Props: &petri.ArcProps{Weight: ow[p]}})
	}
	b.transitions++
	return b.transitions - 1
}

// transition adds a transition taking from the places in (weight 1 each,
// inhibitors in inh) and giving to the places in out; it returns its index.
func (b *builder) transition(id string, in, out, inh []int) int {
	t := &graph.Node{Name: b.unique(id), Kind: petri.KindTransition, Type: petri.KindTransition, Props: &petri.TransitionProps{}}
	b.g.Nodes = append(b.g.Nodes, t)
	for _, p := range in {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: b.places[p], To: t, Props: &petri.ArcProps{Weight: 1}})
	}
	for _, p := range inh {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: b.places[p], To: t, Props: &petri.ArcProps{Weight: 1, Inhibitor: true}})
	}
	for _, p := range out {
		b.g.Arcs = append(b.g.Arcs, &graph.Arc{From: t, To: b.places[p], Props: &petri.ArcProps{Weight: 1}})
	}
	b.transitions++
	return b.transitions - 1
}

func (b *builder) noteJoin(t int, n *graph.Node) {
	if b.joinNode == nil {
		b.joinNode = map[int]*graph.Node{}
	}
	b.joinNode[t] = n
}

func (b *builder) approx(n *graph.Node, why string) {
	b.tr.Approximations = append(b.tr.Approximations, fmt.Sprintf("%s: %s", n.QualifiedName(), why))
}

// join adds the transitions that turn arc tokens arriving at n into node
// tokens.
func (b *builder) join(n *graph.Node) {
	in := n.InArcs()
	if len(in) == 0 {
		return
	}
	node := b.tr.NodePlace[n.Index]
	name := n.QualifiedName()
	switch n.Join {
	case graph.JoinAnd:
		var ps []int
		for _, a := range in {
			ps = append(ps, b.tr.ArcPlace[a.Index])
		}
		b.noteJoin(b.transition(name+" join", ps, []int{node}, nil), n)
		return
	case graph.JoinLabelAnd:
		var labels []string
		for _, a := range in {
			if !slices.Contains(labels, a.Name) {
				labels = append(labels, a.Name)
			}
		}
		for _, l := range labels {
			var ps []int
			for _, a := range in {
				if a.Name == l {
					ps = append(ps, b.tr.ArcPlace[a.Index])
				}
			}
			id := name + " join"
			if l != "" {
				id += " '" + l + "'"
			}
			b.noteJoin(b.transition(id, ps, []int{node}, nil), n)
		}
		return
	case graph.JoinFirst:
		seen := b.place(name+" reached", 0)
		b.bookkeepingPlace(seen)
		for _, a := range in {
			p := b.tr.ArcPlace[a.Index]
			b.noteJoin(b.transition(name+" first from "+arcName(a), []int{p}, []int{node, seen}, []int{seen}), n)
			b.transition(name+" merge from "+arcName(a), []int{p, seen}, []int{seen}, nil)
		}
		return
	case graph.JoinOr, "":
	default:
		if b.tr.Graph.Format == "bpmn" && n.Kind == "inclusiveGateway" {
			b.inclusiveJoin(n, node, in)
			return
		}
		b.approx(n, fmt.Sprintf("its %s join depends on run-time data; read as an or join", n.Join))
	}
	for _, a := range in {
		if b.skipped(a.From) {
			continue
		}
		b.noteJoin(b.transition(name+" from "+arcName(a), []int{b.tr.ArcPlace[a.Index]}, []int{node}, nil), n)
	}
}

// complete adds the transitions by which a node token of n leaves.
func (b *builder) complete(n *graph.Node) {
	node := b.tr.NodePlace[n.Index]
	name := n.QualifiedName()
	out := n.OutArcs()
	arcs := func(as []*graph.Arc) []int {
		var ps []int
		for _, a := range as {
			ps = append(ps, b.tr.ArcPlace[a.Index])
		}
		return ps
	}
	end := func() { b.transition(name+" ends", []int{node}, nil, nil) }
	if b.tr.Graph.Format == "bpmn" && b.completeBPMN(n, node, arcs) {
		return
	}
	if len(out) == 0 {
		end()
		return
	}
	switch b.tr.Graph.Format {
	case "bpmn":
		switch n.Kind {
		case "exclusiveGateway", "eventBasedGateway":
			for _, a := range out {
				b.transition(name+" to "+a.To.QualifiedName(), []int{node}, arcs([]*graph.Arc{a}), nil)
			}
		case "inclusiveGateway", "complexGateway":
			b.subsets(n, node, out)
		default:
			b.transition(name+" leaves", []int{node}, arcs(out), nil)
		}
		return
	case "schema":
		for _, a := range out {
			b.transition(name+" to "+a.To.QualifiedName(), []int{node}, arcs([]*graph.Arc{a}), nil)
		}
		return
	}
	// Sarasvati: the arcs of one name at a time.
	var names []string
	for _, a := range out {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	plain := n.Type == graph.TypeNode && n.Guard == ""
	hasDefault := slices.Contains(names, "")
	for _, nm := range names {
		if plain && nm != "" {
			continue
		}
		var group []*graph.Arc
		for _, a := range out {
			if a.Name == nm {
				group = append(group, a)
			}
		}
		id := name + " leaves"
		if nm != "" {
			id += " '" + nm + "'"
		}
		b.transition(id, []int{node}, arcs(group), nil)
	}
	if !hasDefault || n.Guard != "" {
		// Completing on the default arcs where there are none, or a
		// guard's Discard, ends the branch.
		end()
	}
}

// subsets adds a transition for each non-empty set of out (an inclusive
// gateway), or, when there are too many, for each single arc and all.
func (b *builder) subsets(n *graph.Node, node int, out []*graph.Arc) {
	name := n.QualifiedName()
	if len(out) > 6 {
		b.approx(n, fmt.Sprintf("an inclusive split of %d flows: each flow alone and all together stand for the other sets", len(out)))
		for _, a := range out {
			b.transition(name+" to "+a.To.QualifiedName(), []int{node}, []int{b.tr.ArcPlace[a.Index]}, nil)
		}
		var all []int
		for _, a := range out {
			all = append(all, b.tr.ArcPlace[a.Index])
		}
		b.transition(name+" to all", []int{node}, all, nil)
		return
	}
	for mask := 1; mask < 1<<len(out) && mask <= maxSubsets; mask++ {
		var ps []int
		id := name + " to"
		for i, a := range out {
			if mask&(1<<i) != 0 {
				ps = append(ps, b.tr.ArcPlace[a.Index])
				id += " " + a.To.QualifiedName()
			}
		}
		b.transition(id, []int{node}, ps, nil)
	}
}
