// Package petri is Veena's marking kernel for place/transition nets: the
// net compiled from a graph of places and transitions, the firing rule
// (arc weights, inhibitor arcs, place capacities), and the state machine
// of a net process (its marking, its variables and its running
// activities) that commands advance: fire a transition, deliver an event,
// report an activity's result, retry a deferred action. Like the token
// kernel it does no I/O and takes the time as an argument; it returns the
// new state, the events it fired and the effects it asks for (jobs to
// offer or cancel, timers), which the engine writes in one transaction.
//
// Where the theory leaves a choice (which of several enabled transitions
// fires first) the kernel takes document order, which is one of the
// correct executions.
//
// Analysis of nets (reachability, coverability, liveness, soundness) is
// in petri/analysis; the translation of Sarasvati and BPMN graphs into
// nets in petri/translate.
package petri

import (
	"fmt"
	"slices"
	"strings"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri/annotation"
)

// Node kinds of a Petri net graph (graph.Node.Kind and Type).
const (
	KindPlace      = "place"
	KindTransition = "transition"
)

// MaxTokens is the most tokens one place may hold, and the largest arc
// weight, initial marking or capacity a net may state.
const MaxTokens = 1 << 30

// PlaceProps are the Petri net properties of a place node (graph.Node.Props).
type PlaceProps struct {
	Initial  int              // initial marking
	Capacity int              // most tokens the place may hold; 0: no limit
	Activity *annotation.Call // the activity its label names, or nil
	// Generated marks a VAR:x lock place made for binding arguments.
	Generated bool
}

// TransitionProps are the Petri net properties of a transition node.
type TransitionProps struct {
	// Annotation is the event and action its label names (both nil for a
	// plain label).
	Annotation annotation.Transition
}

// ArcProps are the Petri net properties of an arc (graph.Arc.Props).
type ArcProps struct {
	Weight    int      // tokens taken or given; an inhibitor arc's threshold
	Inhibitor bool     // the transition is enabled only while the place holds fewer than Weight tokens
	Codes     []string // result codes of the place's activity that this arc takes; none: every other code
	Generated bool     // an arc of a generated VAR:x lock
	Points    [][2]int // bend points, for drawing
}

// Net is a place/transition net compiled for firing. Places and
// transitions are numbered in the graph's node order (document order).
type Net struct {
	Name        string
	Places      []*Place
	Transitions []*Transition
	// Driven says the net drives work (it has an action or an activity):
	// its transitions without an event then fire by themselves as soon as
	// they are enabled. A net that drives nothing fires only by command
	// and by events.
	Driven bool
	// Inhibitors says some transition has an inhibitor arc.
	Inhibitors bool
	// Capacities says some place has a capacity.
	Capacities bool

	place      map[string]int
	transition map[string]int
}

// Place is a place of a net.
type Place struct {
	Index    int
	ID       string
	Label    string
	Initial  int
	Capacity int
	Activity *annotation.Call
	// Named are the result codes that arcs leaving the place name; a code
	// none names takes the catch-all arcs.
	Named     map[string]bool
	Generated bool
	Node      *graph.Node
	In, Out   []int // transitions that give to it and take from it, in order
	Inhibits  []int // transitions it inhibits, in order
}

// Transition is a transition of a net with its arcs, each list ordered by
// place.
type Transition struct {
	Index   int
	ID      string
	Label   string
	Event   *annotation.Call
	Action  *annotation.Call
	In      []Arc // arcs taking tokens
	Out     []Arc // arcs giving tokens
	Inhibit []Arc // inhibitor arcs (Weight is the threshold)
	Node    *graph.Node
}

// Arc is one weighted connection of a transition to a place. Parallel arcs
// between the same place and transition are one Arc with their weights
// added (inhibitor arcs: the smallest threshold), except input arcs that
// take different result codes.
type Arc struct {
	Place  int
	Weight int
	Codes  []string // input arcs of an activity's place: the codes it takes
}

// Autonomous reports whether the transition fires by itself when enabled.
func (n *Net) Autonomous(t *Transition) bool { return n.Driven && t.Event == nil }

// Place returns the index of the place with that id, or -1.
func (n *Net) Place(id string) int {
	if i, ok := n.place[id]; ok {
		return i
	}
	return -1
}

// Transition returns the index of the transition with that id, or -1.
func (n *Net) Transition(id string) int {
	if i, ok := n.transition[id]; ok {
		return i
	}
	return -1
}

// Compiled returns the net of a prepared Petri net graph (see Prepare), or nil.
func Compiled(g *graph.Graph) *Net {
	n, _ := g.Runtime.(*Net)
	return n
}

// Prepare compiles a graph of places and transitions into its net, once,
// and keeps it in g.Runtime.
func Prepare(g *graph.Graph) (*Net, error) {
	if n := Compiled(g); n != nil {
		return n, nil
	}
	n, err := FromGraph(g)
	if err != nil {
		return nil, err
	}
	g.Runtime = n
	return n, nil
}

// FromGraph compiles a graph whose nodes are places and transitions (kind
// KindPlace, KindTransition) into a net. Arcs must join a place and a
// transition; an inhibitor arc must go from a place to a transition.
func FromGraph(g *graph.Graph) (*Net, error) {
	n := &Net{Name: g.Name, place: map[string]int{}, transition: map[string]int{}}
	errs := &graph.LoadError{File: g.File}
	placeOf := map[*graph.Node]int{}
	transOf := map[*graph.Node]int{}
	for _, node := range g.Nodes {
		switch node.Kind {
		case KindPlace:
			p := &Place{Index: len(n.Places), ID: node.Name, Label: node.Label, Node: node, Named: map[string]bool{}}
			if pp, ok := node.Props.(*PlaceProps); ok && pp != nil {
				p.Initial, p.Capacity, p.Activity, p.Generated = pp.Initial, pp.Capacity, pp.Activity, pp.Generated
			}
			if p.Initial < 0 || p.Initial > MaxTokens || p.Capacity < 0 || p.Capacity > MaxTokens {
				errs.Add(node.Pos, "place %s: initial marking %d or capacity %d out of range", p.ID, p.Initial, p.Capacity)
			}
			if p.Capacity > 0 && p.Initial > p.Capacity {
				errs.Add(node.Pos, "place %s: initial marking %d exceeds its capacity %d", p.ID, p.Initial, p.Capacity)
			}
			if p.Activity != nil {
				n.Driven = true
			}
			if p.Capacity > 0 {
				n.Capacities = true
			}
			if _, dup := n.place[p.ID]; dup {
				errs.Add(node.Pos, "place id %q is used twice", p.ID)
			}
			n.place[p.ID] = p.Index
			placeOf[node] = p.Index
			n.Places = append(n.Places, p)
		case KindTransition:
			t := &Transition{Index: len(n.Transitions), ID: node.Name, Label: node.Label, Node: node}
			if tp, ok := node.Props.(*TransitionProps); ok && tp != nil {
				t.Event, t.Action = tp.Annotation.Event, tp.Annotation.Action
			}
			if t.Action != nil {
				n.Driven = true
			}
			if _, dup := n.transition[t.ID]; dup {
				errs.Add(node.Pos, "transition id %q is used twice", t.ID)
			}
			n.transition[t.ID] = t.Index
			transOf[node] = t.Index
			n.Transitions = append(n.Transitions, t)
		default:
			errs.Add(node.Pos, "node %s is a %q, not a place or a transition", node.Name, node.Kind)
		}
	}
	for _, a := range g.Arcs {
		props := ArcProps{Weight: 1}
		if ap, ok := a.Props.(*ArcProps); ok && ap != nil {
			props = *ap
		}
		if props.Weight < 1 || props.Weight > MaxTokens {
			errs.Add(a.Pos, "arc %s: weight %d is not between 1 and %d", a.Name, props.Weight, MaxTokens)
			continue
		}
		pFrom, fromPlace := placeOf[a.From]
		tTo, toTrans := transOf[a.To]
		tFrom, fromTrans := transOf[a.From]
		pTo, toPlace := placeOf[a.To]
		switch {
		case fromPlace && toTrans:
			t := n.Transitions[tTo]
			if props.Inhibitor {
				t.Inhibit = addInhibitor(t.Inhibit, pFrom, props.Weight)
				n.Inhibitors = true
				continue
			}
			codes := normalizeCodes(props.Codes)
			if n.Places[pFrom].Activity == nil {
				// Codes on an arc from a place without an activity select
				// nothing: no token there ever carries a code.
				codes = nil
			}
			t.In = addArc(t.In, Arc{Place: pFrom, Weight: props.Weight, Codes: codes})
			for _, c := range codes {
				n.Places[pFrom].Named[c] = true
			}
		case fromTrans && toPlace:
			if props.Inhibitor {
				errs.Add(a.Pos, "arc %s: an inhibitor arc must go from a place to a transition", a.Name)
				continue
			}
			t := n.Transitions[tFrom]
			t.Out = addArc(t.Out, Arc{Place: pTo, Weight: props.Weight})
		default:
			errs.Add(a.Pos, "arc %s joins %s and %s: an arc must join a place and a transition", a.Name, a.From.Name, a.To.Name)
		}
	}
	for _, t := range n.Transitions {
		for _, a := range t.In {
			if !slices.Contains(n.Places[a.Place].Out, t.Index) {
				n.Places[a.Place].Out = append(n.Places[a.Place].Out, t.Index)
			}
		}
		for _, a := range t.Out {
			if !slices.Contains(n.Places[a.Place].In, t.Index) {
				n.Places[a.Place].In = append(n.Places[a.Place].In, t.Index)
			}
		}
		for _, a := range t.Inhibit {
			n.Places[a.Place].Inhibits = append(n.Places[a.Place].Inhibits, t.Index)
		}
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	return n, nil
}

// normalizeCodes trims result codes, drops empty ones and duplicates, and
// sorts them (so that arcs taking the same codes merge).
func normalizeCodes(codes []string) []string {
	var out []string
	for _, c := range codes {
		c = strings.TrimSpace(c)
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// addArc adds a into arcs (kept ordered by place), merging it with an arc
// of the same place and codes.
func addArc(arcs []Arc, a Arc) []Arc {
	for i := range arcs {
		if arcs[i].Place == a.Place && slices.Equal(arcs[i].Codes, a.Codes) {
			arcs[i].Weight = min(arcs[i].Weight+a.Weight, MaxTokens)
			return arcs
		}
	}
	arcs = append(arcs, a)
	slices.SortStableFunc(arcs, func(x, y Arc) int { return x.Place - y.Place })
	return arcs
}

func addInhibitor(arcs []Arc, place, w int) []Arc {
	for i := range arcs {
		if arcs[i].Place == place {
			arcs[i].Weight = min(arcs[i].Weight, w)
			return arcs
		}
	}
	arcs = append(arcs, Arc{Place: place, Weight: w})
	slices.SortFunc(arcs, func(x, y Arc) int { return x.Place - y.Place })
	return arcs
}

// Marking is the number of tokens in each place, by place index.
type Marking []int

// InitialMarking is the net's initial marking.
func (n *Net) InitialMarking() Marking {
	m := make(Marking, len(n.Places))
	for i, p := range n.Places {
		m[i] = p.Initial
	}
	return m
}

// Clone copies the marking.
func (m Marking) Clone() Marking { return slices.Clone(m) }

// Enabled reports whether t may fire at m by the firing rule: every input
// place holds at least its arc's weight (arcs of one place add up), every
// inhibitor place fewer tokens than its threshold, and no output place
// would exceed its capacity. Result codes are not looked at here (see
// Process).
func (n *Net) Enabled(m Marking, t int) bool {
	tr := n.Transitions[t]
	for i, a := range tr.In {
		need := a.Weight
		for j := i + 1; j < len(tr.In) && tr.In[j].Place == a.Place; j++ {
			need += tr.In[j].Weight
		}
		if m[a.Place] < need {
			return false
		}
	}
	for _, a := range tr.Inhibit {
		if m[a.Place] >= a.Weight {
			return false
		}
	}
	if n.Capacities {
		return n.fitsCapacity(m, tr)
	}
	return true
}

// fitsCapacity reports whether firing tr at m keeps every output place
// within its capacity.
func (n *Net) fitsCapacity(m Marking, tr *Transition) bool {
	for _, a := range tr.Out {
		c := n.Places[a.Place].Capacity
		if c == 0 {
			continue
		}
		after := m[a.Place] + a.Weight
		for _, in := range tr.In {
			if in.Place == a.Place {
				after -= in.Weight
			}
		}
		if after > c {
			return false
		}
	}
	return true
}

// Fire fires t at m, which must enable it, changing m in place.
func (n *Net) Fire(m Marking, t int) {
	tr := n.Transitions[t]
	for _, a := range tr.In {
		m[a.Place] -= a.Weight
	}
	for _, a := range tr.Out {
		m[a.Place] += a.Weight
	}
}

// EnabledTransitions lists the transitions m enables, in order.
func (n *Net) EnabledTransitions(m Marking) []int {
	var out []int
	for t := range n.Transitions {
		if n.Enabled(m, t) {
			out = append(out, t)
		}
	}
	return out
}

// MarkingString renders a marking as "place=count" pairs of its non-empty places.
func (n *Net) MarkingString(m Marking) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i, c := range m {
		if c == 0 {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s=%d", n.Places[i].ID, c)
	}
	b.WriteByte('}')
	return b.String()
}
