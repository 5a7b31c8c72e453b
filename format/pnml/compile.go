package pnml

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/petri/annotation"
)

// VarPrefix starts the name of a generated lock place: VAR:x guards the
// variable x.
const VarPrefix = "VAR:"

// File is one file of a bundle.
type File struct {
	Name   string
	Source []byte
}

// Load parses one PNML file and compiles its nets, as one bundle, into a
// graph (see Compile).
func Load(file string, src []byte, opts ...Option) (*graph.Graph, error) {
	return LoadBundle([]File{{Name: file, Source: src}}, opts...)
}

// LoadBundle parses several PNML files and compiles all their nets, as one
// bundle, into a graph.
func LoadBundle(files []File, opts ...Option) (*graph.Graph, error) {
	var docs []*Document
	var errs []error
	for _, f := range files {
		d, err := Parse(f.Name, f.Source, opts...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, d)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return Compile(docs...)
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Compile superposes the nets of the documents, a bundle, into one graph
// of places and transitions, named after the first net's id.
//
// Superposition: places with the same name (their <name><text>, trimmed;
// an activity's canonical form) are one place, in one net or across the
// nets of the bundle; so are transitions with the same name (an
// annotation's canonical form). Nodes without a name are never
// superposed. The superposed node keeps the id of its first occurrence;
// an id already taken by another node becomes "net/id" (net the id of its
// net). Occurrences that state an initial marking (or a capacity) must
// agree.
//
// Annotations: a transition's name is an annotation when
// annotation.ClassifyTransition says so, a place's when
// annotation.ClassifyPlace does; an arc from an activity's place lists in
// its name the result codes it takes, comma-separated.
//
// Locks: for each variable x written through a binding argument &x, a
// place VAR:x (with one token, unless a drawn VAR:x place says otherwise)
// guards the writers. A transition whose event or action binds x tests
// the lock (takes its token and gives it back); a transition that puts
// tokens into a place whose activity binds x takes the lock for each, and
// one that takes tokens from such a place gives it back, so the lock is
// held while the activity runs. A transition with arcs of its own to or
// from VAR:x is left as drawn.
//
// Nodes: places in bundle order, then generated lock places, then
// transitions in bundle order (document order decides among enabled
// transitions). Arcs: in bundle order, then generated ones.
func Compile(docs ...*Document) (*graph.Graph, error) {
	if len(docs) == 0 || len(docs[0].Nets) == 0 {
		return nil, &graph.LoadError{Problems: []graph.Problem{{Message: "no net to compile"}}}
	}
	c := &compiler{
		docs:     docs,
		errs:     map[*Document]*graph.LoadError{},
		byKey:    map[string]*graph.Node{},
		ids:      map[string]bool{},
		local:    map[*Net]map[string]*graph.Node{},
		initial:  map[*graph.Node]stated{},
		capacity: map[*graph.Node]stated{},
	}
	for _, d := range docs {
		c.errs[d] = &graph.LoadError{File: d.File}
		for _, w := range d.Warnings {
			c.warnings = append(c.warnings, c.fileProblem(d, w))
		}
	}
	for _, d := range docs {
		for _, n := range d.Nets {
			c.local[n] = map[string]*graph.Node{}
			for _, p := range n.Places {
				c.place(d, n, p)
			}
		}
	}
	for _, d := range docs {
		for _, n := range d.Nets {
			for _, t := range n.Transitions {
				c.transition(d, n, t)
			}
		}
	}
	for _, d := range docs {
		for _, n := range d.Nets {
			for _, a := range n.Arcs {
				c.arc(d, n, a)
			}
		}
	}
	var errs []error
	for _, d := range docs {
		if err := c.errs[d].OrNil(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	c.locks()
	opts := docs[0].opts
	if n := len(c.places) + len(c.transitions); n > opts.maxNodes {
		return nil, &graph.LoadError{File: docs[0].File, Problems: []graph.Problem{{Message: fmt.Sprintf("the bundle has %d places and transitions; the limit is %d", n, opts.maxNodes)}}}
	}
	if len(c.arcs) > opts.maxArcs {
		return nil, &graph.LoadError{File: docs[0].File, Problems: []graph.Problem{{Message: fmt.Sprintf("the bundle has %d arcs; the limit is %d", len(c.arcs), opts.maxArcs)}}}
	}
	g := &graph.Graph{
		Name:     docs[0].Nets[0].ID,
		Format:   Format,
		File:     docs[0].File,
		Source:   docs[0].Source,
		Warnings: c.warnings,
	}
	h := sha256.New()
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintf(h, "\x00%d\x00", i)
		}
		h.Write(d.Source)
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	g.Nodes = append(append(append(g.Nodes, c.places...), c.generated...), c.transitions...)
	g.Arcs = append(c.arcs, c.genArcs...)
	g.Finish()
	if _, err := petri.Prepare(g); err != nil {
		return nil, err
	}
	return g, nil
}

type stated struct {
	value int
	pos   graph.Pos
	file  string
}

type compiler struct {
	docs     []*Document
	errs     map[*Document]*graph.LoadError
	warnings []graph.Problem

	byKey       map[string]*graph.Node          // superposition key -> node
	ids         map[string]bool                 // node ids taken
	arcIDs      map[string]bool                 // arc ids taken
	local       map[*Net]map[string]*graph.Node // a net's node ids -> nodes
	initial     map[*graph.Node]stated
	capacity    map[*graph.Node]stated
	places      []*graph.Node
	transitions []*graph.Node
	generated   []*graph.Node
	arcs        []*graph.Arc
	genArcs     []*graph.Arc
}

func (c *compiler) fileProblem(d *Document, p graph.Problem) graph.Problem {
	if len(c.docs) > 1 {
		p.Message = d.File + ": " + p.Message
	}
	return p
}

func (c *compiler) warn(d *Document, pos graph.Pos, format string, args ...any) {
	c.warnings = append(c.warnings, c.fileProblem(d, graph.Problem{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)}))
}

// uniqueID returns id, or net/id if id is taken.
func (c *compiler) uniqueID(id, net string) string {
	out := id
	for i := 1; c.ids[out]; i++ {
		out = net + "/" + id
		if i > 1 {
			out = fmt.Sprintf("%s/%s#%d", net, id, i)
		}
	}
	c.ids[out] = true
	return out
}

// annotationError reports an annotation's syntax error at its position in
// the file.
func (c *compiler) annotationError(d *Document, l Label, what string, err error) {
	pos := l.Pos
	msg := err.Error()
	var ae *annotation.Error
	if errors.As(err, &ae) {
		at := pos
		for i := 0; i < ae.Offset && i < len(l.Text); i++ {
			if l.Text[i] == '\n' {
				at.Line++
				at.Column = 1
			} else {
				at.Column++
			}
		}
		pos = at
		msg = fmt.Sprintf("annotation %q: %s", strings.TrimSpace(l.Text), ae.Msg)
	}
	c.errs[d].Add(pos, "%s: %s", what, msg)
}

func (c *compiler) state(d *Document, m map[*graph.Node]stated, node *graph.Node, v int, pos graph.Pos, what string) {
	prev, ok := m[node]
	if !ok {
		m[node] = stated{value: v, pos: pos, file: d.File}
		return
	}
	if prev.value != v {
		c.errs[d].Add(pos, "place %s: %s %d differs from the %d stated for the same place at %s:%d:%d", node.Name, what, v, prev.value, prev.file, prev.pos.Line, prev.pos.Column)
	}
}

func (c *compiler) place(d *Document, n *Net, p *Place) {
	key := ""
	var activity *annotation.Call
	if name := strings.TrimSpace(p.Name.Text); name != "" {
		kind, call, err := annotation.ClassifyPlace(p.Name.Text)
		if err != nil {
			c.annotationError(d, p.Name, "place "+p.ID, err)
			return
		}
		key = name
		if kind == annotation.Annotation {
			activity = call
			key = call.String()
		}
	}
	node := c.byKey["place\x00"+key]
	if key == "" || node == nil {
		node = &graph.Node{
			Name: c.uniqueID(p.ID, n.ID), Type: petri.KindPlace, Kind: petri.KindPlace,
			Label: strings.TrimSpace(p.Name.Text), X: p.X, Y: p.Y, Pos: p.Pos,
			Props: &petri.PlaceProps{Activity: activity},
		}
		c.places = append(c.places, node)
		if key != "" {
			c.byKey["place\x00"+key] = node
		}
	}
	props := node.Props.(*petri.PlaceProps)
	if p.HasInitial {
		c.state(d, c.initial, node, p.Initial, p.Pos, "initial marking")
		props.Initial = c.initial[node].value
	}
	if p.Capacity > 0 {
		c.state(d, c.capacity, node, p.Capacity, p.Pos, "capacity")
		props.Capacity = c.capacity[node].value
	}
	c.local[n][p.ID] = node
}

func (c *compiler) transition(d *Document, n *Net, t *Transition) {
	key := ""
	var ann annotation.Transition
	if name := strings.TrimSpace(t.Name.Text); name != "" {
		kind, tr, err := annotation.ClassifyTransition(t.Name.Text)
		if err != nil {
			c.annotationError(d, t.Name, "transition "+t.ID, err)
			return
		}
		key = name
		if kind == annotation.Annotation {
			ann = tr
			key = tr.String()
		}
	}
	node := c.byKey["transition\x00"+key]
	if key == "" || node == nil {
		node = &graph.Node{
			Name: c.uniqueID(t.ID, n.ID), Type: petri.KindTransition, Kind: petri.KindTransition,
			Label: strings.TrimSpace(t.Name.Text), X: t.X, Y: t.Y, Pos: t.Pos,
			Props: &petri.TransitionProps{Annotation: ann},
		}
		c.transitions = append(c.transitions, node)
		if key != "" {
			c.byKey["transition\x00"+key] = node
		}
	}
	c.local[n][t.ID] = node
}

func (c *compiler) arcID(id, net string) string {
	if c.arcIDs == nil {
		c.arcIDs = map[string]bool{}
	}
	out := id
	for i := 1; c.arcIDs[out]; i++ {
		out = net + "/" + id
		if i > 1 {
			out = fmt.Sprintf("%s/%s#%d", net, id, i)
		}
	}
	c.arcIDs[out] = true
	return out
}

func (c *compiler) arc(d *Document, n *Net, a *Arc) {
	from, to := c.local[n][a.Source], c.local[n][a.Target]
	if from == nil || to == nil {
		// Its end had an annotation error, reported already.
		return
	}
	props := &petri.ArcProps{Weight: a.Weight, Inhibitor: a.Inhibitor, Points: a.Points}
	label := strings.TrimSpace(a.Name.Text)
	if label != "" && from.Kind == petri.KindPlace {
		for _, code := range strings.Split(label, ",") {
			if code = strings.TrimSpace(code); code != "" {
				props.Codes = append(props.Codes, code)
			}
		}
		switch {
		case a.Inhibitor:
			c.warn(d, a.Name.Pos, "arc %s: an inhibitor arc takes no result codes; %q ignored", a.ID, label)
			props.Codes = nil
		case from.Props.(*petri.PlaceProps).Activity == nil:
			c.warn(d, a.Name.Pos, "arc %s: place %s has no activity, so the result codes %q select nothing", a.ID, from.Name, label)
			props.Codes = nil
		}
	}
	c.arcs = append(c.arcs, &graph.Arc{From: from, To: to, Name: c.arcID(a.ID, n.ID), Label: label, Pos: a.Pos, Props: props})
}

// locks generates the VAR:x places and arcs (see Compile).
func (c *compiler) locks() {
	var vars []string
	seen := map[string]bool{}
	note := func(names []string) {
		for _, x := range names {
			if !seen[x] {
				seen[x] = true
				vars = append(vars, x)
			}
		}
	}
	for _, t := range c.transitions {
		note(t.Props.(*petri.TransitionProps).Annotation.Bindings())
	}
	for _, p := range c.places {
		note(p.Props.(*petri.PlaceProps).Activity.Bindings())
	}
	for _, x := range vars {
		name := VarPrefix + x
		lock := c.byKey["place\x00"+name]
		if lock == nil {
			lock = &graph.Node{
				Name: c.uniqueID(name, "generated"), Type: petri.KindPlace, Kind: petri.KindPlace, Label: name,
				Props: &petri.PlaceProps{Initial: 1, Generated: true},
			}
			c.byKey["place\x00"+name] = lock
			c.generated = append(c.generated, lock)
		} else if _, stated := c.initial[lock]; !stated {
			lock.Props.(*petri.PlaceProps).Initial = 1
		}
		drawn := map[*graph.Node]bool{}
		for _, a := range c.arcs {
			if a.From == lock {
				drawn[a.To] = true
			}
			if a.To == lock {
				drawn[a.From] = true
			}
		}
		var xs, ys []int
		for _, t := range c.transitions {
			if drawn[t] {
				continue
			}
			writer := false
			for _, b := range t.Props.(*petri.TransitionProps).Annotation.Bindings() {
				writer = writer || b == x
			}
			take, give := 0, 0
			for _, a := range c.arcs {
				ap := a.Props.(*petri.ArcProps)
				if ap.Inhibitor {
					continue
				}
				if a.From == t && a.To.Kind == petri.KindPlace && a.To.Props.(*petri.PlaceProps).Activity.Binds(x) {
					take += ap.Weight
				}
				if a.To == t && a.From.Kind == petri.KindPlace && a.From.Props.(*petri.PlaceProps).Activity.Binds(x) {
					give += ap.Weight
				}
			}
			switch {
			case take > give:
				c.lockArc(lock, t, take-give)
			case give > take:
				c.lockArc(t, lock, give-take)
			case writer && take == 0:
				c.lockArc(lock, t, 1)
				c.lockArc(t, lock, 1)
			default:
				continue
			}
			xs, ys = append(xs, t.X), append(ys, t.Y)
		}
		if lock.Props.(*petri.PlaceProps).Generated && len(xs) > 0 {
			// Drawn below the writers it guards, if the net has positions.
			sx, sy, drawn := 0, 0, false
			for i := range xs {
				sx, sy = sx+xs[i], sy+ys[i]
				drawn = drawn || xs[i] != 0 || ys[i] != 0
			}
			if drawn {
				lock.X, lock.Y = sx/len(xs), sy/len(ys)+60
			}
		}
	}
}

func (c *compiler) lockArc(from, to *graph.Node, w int) {
	c.genArcs = append(c.genArcs, &graph.Arc{
		From: from, To: to, Name: c.arcID(from.Name+"->"+to.Name, "generated"),
		Props: &petri.ArcProps{Weight: w, Generated: true},
	})
}
