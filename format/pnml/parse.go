package pnml

import (
	"encoding/xml"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/xmlguard"
	"github.com/veena-wf/veena/petri"
)

// Format is the format name of PNML definitions.
const Format = "pnml"

// Namespace is the namespace of PNML 2009 (ISO/IEC 15909-2). Files whose
// root has no namespace are read too.
const Namespace = "http://www.pnml.org/version-2009/grammar/pnml"

// Net types read as P/T nets: ISO's, the core model's, and no type at all.
var ptTypes = map[string]bool{
	"": true,
	"http://www.pnml.org/version-2009/grammar/ptnet":                  true,
	"http://www.pnml.org/version-2009/grammar/pnmlcoremodel":          true,
	"http://www.pnml.org/version-2009/extensions/inhibitorptnet.pntd": true,
	"P/T net": true,
}

// Net types that are not P/T nets, refused with a reason.
var otherTypes = map[string]string{
	"http://www.pnml.org/version-2009/grammar/symmetricnet": "a symmetric (coloured) net",
	"http://www.pnml.org/version-2009/grammar/highlevelnet": "a high-level Petri net graph",
	"http://www.pnml.org/version-2009/grammar/pt-hlpng":     "a high-level net",
}

// Default limits; see the Option functions.
const (
	DefaultMaxBytes    = 16 << 20
	DefaultMaxNodes    = 200_000
	DefaultMaxArcs     = 1_000_000
	DefaultMaxElements = 4_000_000
)

// Option changes a limit of Parse and Load.
type Option func(*options)

type options struct {
	limits   xmlguard.Limits
	maxNodes int
	maxArcs  int
}

func buildOptions(opts []Option) options {
	o := options{
		limits:   xmlguard.Limits{MaxBytes: DefaultMaxBytes, MaxElements: DefaultMaxElements},
		maxNodes: DefaultMaxNodes,
		maxArcs:  DefaultMaxArcs,
	}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// WithMaxBytes limits the size of a file (default 16 MiB).
func WithMaxBytes(n int64) Option { return func(o *options) { o.limits.MaxBytes = n } }

// WithMaxDepth limits how deeply elements nest (default 64).
func WithMaxDepth(n int) Option { return func(o *options) { o.limits.MaxDepth = n } }

// WithMaxText limits one attribute value or text (default 64 KiB).
func WithMaxText(n int) Option { return func(o *options) { o.limits.MaxText = n } }

// WithMaxElements limits the elements of a file, tool-specific content
// included (default 4,000,000).
func WithMaxElements(n int) Option { return func(o *options) { o.limits.MaxElements = n } }

// WithMaxNodes limits the places and transitions of a file, and of a
// bundle (default 200,000).
func WithMaxNodes(n int) Option { return func(o *options) { o.maxNodes = n } }

// WithMaxArcs limits the arcs of a file, and of a bundle (default 1,000,000).
func WithMaxArcs(n int) Option { return func(o *options) { o.maxArcs = n } }

// Document is one parsed PNML file: its nets with pages flattened and
// reference nodes resolved, and every position.
type Document struct {
	File     string
	Source   []byte
	Nets     []*Net
	Warnings []graph.Problem
	opts     options
}

// Net is one <net> of a file.
type Net struct {
	ID          string
	Name        string
	Type        string
	Pos         graph.Pos
	Places      []*Place
	Transitions []*Transition
	Arcs        []*Arc // sources and targets resolved to places and transitions
}

// Label is a <name> (or <inscription>) text with where it starts.
type Label struct {
	Text string    // as written
	Pos  graph.Pos // of the text's first character
	Set  bool      // the element is there
}

// Place is a <place>.
type Place struct {
	ID         string
	Name       Label
	Initial    int
	HasInitial bool // an <initialMarking> was given
	Capacity   int
	X, Y       int
	Pos        graph.Pos
}

// Transition is a <transition>.
type Transition struct {
	ID   string
	Name Label
	X, Y int
	Pos  graph.Pos
}

// Arc is an <arc>, its ends resolved through reference nodes.
type Arc struct {
	ID        string
	Source    string
	Target    string
	Weight    int
	Inhibitor bool
	Name      Label
	Points    [][2]int
	Pos       graph.Pos
}

func gpos(p xmlguard.Pos) graph.Pos { return graph.Pos{Line: p.Line, Column: p.Column} }

type parser struct {
	doc   *Document
	errs  *graph.LoadError
	ids   map[string]graph.Pos // every id of the document
	kind  map[string]string    // node id -> "place", "transition", "referencePlace", "referenceTransition"
	refs  map[string]string    // reference node id -> ref
	rpos  map[string]graph.Pos
	nodes int
	arcs  int
	net   *Net

	warned  map[string]int // warning format -> index in doc.Warnings
	repeats []int          // by warning: how many more of its kind
	raw     []*Arc         // arcs of the current net, ends not yet resolved
}

func (p *parser) add(pos xmlguard.Pos, format string, args ...any) {
	p.errs.Add(gpos(pos), format, args...)
}

// warn records a warning. Warnings of one kind (their format) after the
// first are counted, not listed: a file that uses one construct a
// thousand times gets one warning.
func (p *parser) warn(pos xmlguard.Pos, format string, args ...any) {
	if i, seen := p.warned[format]; seen {
		p.repeats[i]++
		return
	}
	if p.warned == nil {
		p.warned = map[string]int{}
	}
	p.warned[format] = len(p.doc.Warnings)
	p.repeats = append(p.repeats, 0)
	p.doc.Warnings = append(p.doc.Warnings, graph.Problem{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// Parse reads one PNML file: its nets, pages flattened and reference nodes
// resolved. file names it in messages. On failure the error is a
// *graph.LoadError listing every problem with its line and column.
func Parse(file string, src []byte, opts ...Option) (*Document, error) {
	o := buildOptions(opts)
	p := &parser{
		doc:  &Document{File: file, opts: o},
		errs: &graph.LoadError{File: file},
		ids:  map[string]graph.Pos{},
		kind: map[string]string{},
		refs: map[string]string{},
		rpos: map[string]graph.Pos{},
	}
	root, err := xmlguard.Parse(src, o.limits, func(_ *xmlguard.Element, name xml.Name) bool {
		return name.Local != "toolspecific"
	})
	if err != nil {
		xe := err.(*xmlguard.Error)
		p.add(xe.Pos, "%s", xe.Msg)
		return nil, p.errs
	}
	if root.Name.Local != "pnml" {
		p.add(root.Pos, "root element is <%s>, want <pnml>", root.Name.Local)
		return nil, p.errs
	}
	if root.Name.Space != Namespace && root.Name.Space != "" {
		p.add(root.Pos, "root element is in namespace %q, want %q or none", root.Name.Space, Namespace)
		return nil, p.errs
	}
	for _, c := range root.Children {
		switch c.Name.Local {
		case "net":
			p.parseNet(c)
		default:
			p.warn(c.Pos, "element <%s> in <pnml> is not part of PNML; ignored", c.Name.Local)
		}
	}
	if len(p.doc.Nets) == 0 && len(p.errs.Problems) == 0 {
		p.add(root.Pos, "the file has no <net>")
	}
	if err := p.errs.OrNil(); err != nil {
		slices.SortStableFunc(p.errs.Problems, func(a, b graph.Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, err
	}
	for i, n := range p.repeats {
		if n > 0 {
			p.doc.Warnings[i].Message += fmt.Sprintf(" (and %d more like it)", n)
		}
	}
	p.doc.Source = src
	return p.doc, nil
}

// id reads and registers an element's id attribute.
func (p *parser) id(el *xmlguard.Element) (string, bool) {
	id, ok := el.AttrValue("id")
	id = strings.TrimSpace(id)
	if !ok || id == "" {
		p.add(el.Pos, "<%s> has no id", el.Name.Local)
		return "", false
	}
	if prev, dup := p.ids[id]; dup {
		p.add(el.Pos, "id %q is used twice (first at line %d, column %d)", id, prev.Line, prev.Column)
		return "", false
	}
	p.ids[id] = gpos(el.Pos)
	return id, true
}

func (p *parser) parseNet(el *xmlguard.Element) {
	id, ok := p.id(el)
	if !ok {
		return
	}
	typ, _ := el.AttrValue("type")
	typ = strings.TrimSpace(typ)
	if why, bad := otherTypes[typ]; bad {
		p.add(el.Pos, "net %s is %s (type %s); Veena runs place/transition nets", id, why, typ)
		return
	}
	if !ptTypes[typ] {
		p.warn(el.Pos, "net %s has type %q, which is not a P/T net type Veena knows; read as a P/T net", id, typ)
	}
	p.net = &Net{ID: id, Type: typ, Pos: gpos(el.Pos)}
	p.raw = nil
	p.kind, p.refs, p.rpos = map[string]string{}, map[string]string{}, map[string]graph.Pos{}
	p.parseContent(el, "net")
	p.resolveArcs()
	p.doc.Nets = append(p.doc.Nets, p.net)
}

// parseContent reads what a <net> or a <page> holds.
func (p *parser) parseContent(el *xmlguard.Element, where string) {
	for _, c := range el.Children {
		switch c.Name.Local {
		case "name":
			if where == "net" {
				p.net.Name = strings.TrimSpace(p.label(c).Text)
			}
		case "page":
			if _, ok := p.id(c); ok {
				p.parseContent(c, "page")
			}
		case "place":
			p.parsePlace(c)
		case "transition":
			p.parseTransition(c)
		case "arc":
			p.parseArc(c)
		case "referencePlace", "referenceTransition":
			p.parseReference(c)
		case "graphics", "token":
			// <token> declares PIPE's token classes; a P/T net has one.
		case "declaration", "declarations":
			p.add(c.Pos, "<%s> declares sorts or variables of a high-level net; Veena runs place/transition nets", c.Name.Local)
		default:
			p.warn(c.Pos, "element <%s> in <%s> is not part of a P/T net; ignored", c.Name.Local, where)
		}
	}
}

func (p *parser) countNode(el *xmlguard.Element) bool {
	p.nodes++
	if p.nodes > p.doc.opts.maxNodes {
		if p.nodes == p.doc.opts.maxNodes+1 {
			p.add(el.Pos, "the file has more than %d places and transitions", p.doc.opts.maxNodes)
		}
		return false
	}
	return true
}

// label reads an annotation label: the text of its <text> child (or of a
// legacy <value> child).
func (p *parser) label(el *xmlguard.Element) Label {
	for _, c := range el.Children {
		if c.Name.Local == "text" || c.Name.Local == "value" {
			pos := c.TextPos
			if pos.Line == 0 {
				pos = c.Pos
			}
			return Label{Text: c.Text, Pos: gpos(pos), Set: true}
		}
	}
	return Label{Pos: gpos(el.Pos), Set: true}
}

func (p *parser) position(el *xmlguard.Element) (x, y int) {
	g := el.Child("graphics")
	if g == nil {
		return 0, 0
	}
	if pos := g.Child("position"); pos != nil {
		return p.coord(pos, "x"), p.coord(pos, "y")
	}
	return 0, 0
}

func (p *parser) coord(el *xmlguard.Element, attr string) int {
	s, _ := el.AttrValue(attr)
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
		return 0
	}
	return int(math.Round(f))
}

func (p *parser) parsePlace(el *xmlguard.Element) {
	id, ok := p.id(el)
	if !ok || !p.countNode(el) {
		return
	}
	pl := &Place{ID: id, Pos: gpos(el.Pos)}
	pl.X, pl.Y = p.position(el)
	p.once(el, "place "+id, "name", "initialMarking", "capacity")
	for _, c := range el.Children {
		switch c.Name.Local {
		case "name":
			pl.Name = p.label(c)
		case "initialMarking":
			pl.Initial, pl.HasInitial = p.tokens(c, "initial marking of place "+id, 0), true
		case "capacity":
			pl.Capacity = p.tokens(c, "capacity of place "+id, 0)
		case "graphics":
		case "type":
			// SNAKES writes the place's token domain here; a P/T net's
			// tokens are black, whatever the domain.
		default:
			p.warn(c.Pos, "element <%s> in place %s is not part of a P/T net; ignored", c.Name.Local, id)
		}
	}
	p.kind[id] = "place"
	p.net.Places = append(p.net.Places, pl)
}

func (p *parser) parseTransition(el *xmlguard.Element) {
	id, ok := p.id(el)
	if !ok || !p.countNode(el) {
		return
	}
	t := &Transition{ID: id, Pos: gpos(el.Pos)}
	t.X, t.Y = p.position(el)
	p.once(el, "transition "+id, "name")
	for _, c := range el.Children {
		switch c.Name.Local {
		case "name":
			t.Name = p.label(c)
		case "graphics", "orientation", "rate", "timed", "infiniteServer":
			// Drawing and timing (PIPE): an untimed net fires the same.
		case "priority":
			if s := strings.TrimSpace(p.label(c).Text); s != "" && s != "1" {
				p.warn(c.Pos, "transition %s has priority %s; Veena gives no transition priority over another", id, s)
			}
		default:
			p.warn(c.Pos, "element <%s> in transition %s is not part of a P/T net; ignored", c.Name.Local, id)
		}
	}
	p.kind[id] = "transition"
	p.net.Transitions = append(p.net.Transitions, t)
}

// once reports labels given more than once on an object (the second
// would silently win otherwise).
func (p *parser) once(el *xmlguard.Element, what string, labels ...string) {
	seen := map[string]bool{}
	for _, c := range el.Children {
		if slices.Contains(labels, c.Name.Local) {
			if seen[c.Name.Local] {
				p.add(c.Pos, "%s has more than one <%s>", what, c.Name.Local)
			}
			seen[c.Name.Local] = true
		}
	}
}

func (p *parser) parseReference(el *xmlguard.Element) {
	id, ok := p.id(el)
	if !ok {
		return
	}
	ref, _ := el.AttrValue("ref")
	ref = strings.TrimSpace(ref)
	if ref == "" {
		p.add(el.Pos, "%s %s has no ref", el.Name.Local, id)
		return
	}
	p.kind[id] = el.Name.Local
	p.refs[id] = ref
	p.rpos[id] = gpos(el.Pos)
}

// arcKinds are the values of an arc's type (attribute or <type value>)
// that Veena reads.
var arcKinds = map[string]bool{"": false, "normal": false, "inhibitor": true, "tapnInhibitor": true}

func (p *parser) parseArc(el *xmlguard.Element) {
	id, ok := p.id(el)
	if !ok {
		return
	}
	p.arcs++
	if p.arcs > p.doc.opts.maxArcs {
		if p.arcs == p.doc.opts.maxArcs+1 {
			p.add(el.Pos, "the file has more than %d arcs", p.doc.opts.maxArcs)
		}
		return
	}
	a := &Arc{ID: id, Weight: 1, Pos: gpos(el.Pos)}
	p.once(el, "arc "+id, "name", "inscription")
	a.Source, _ = el.AttrValue("source")
	a.Target, _ = el.AttrValue("target")
	a.Source, a.Target = strings.TrimSpace(a.Source), strings.TrimSpace(a.Target)
	if a.Source == "" || a.Target == "" {
		p.add(el.Pos, "arc %s needs a source and a target", id)
		return
	}
	kind := func(v string, at xmlguard.Pos) {
		v = strings.TrimSpace(v)
		inh, known := arcKinds[v]
		switch {
		case known:
			a.Inhibitor = a.Inhibitor || inh
		case v == "reset" || v == "transport" || v == "read" || v == "test":
			p.add(at, "arc %s is a %s arc; Veena runs normal and inhibitor arcs", id, v)
		default:
			p.warn(at, "arc %s has type %q, which Veena does not know; read as a normal arc", id, v)
		}
	}
	if v, ok := el.AttrValue("type"); ok {
		kind(v, el.Pos)
	}
	for _, c := range el.Children {
		switch c.Name.Local {
		case "inscription":
			a.Weight = p.tokens(c, "inscription of arc "+id, 1)
		case "name":
			a.Name = p.label(c)
		case "type":
			v, ok := c.AttrValue("value")
			if !ok {
				v = p.label(c).Text
			}
			kind(v, c.Pos)
		case "arctype":
			kind(p.label(c).Text, c.Pos)
		case "graphics":
			for _, pt := range c.Children {
				if pt.Name.Local == "position" {
					a.Points = append(a.Points, [2]int{p.coord(pt, "x"), p.coord(pt, "y")})
				}
			}
		case "arcpath":
			// PIPE's bend points, the ends included.
			a.Points = append(a.Points, [2]int{p.coord(c, "x"), p.coord(c, "y")})
		case "tagged":
		default:
			p.warn(c.Pos, "element <%s> in arc %s is not part of a P/T net; ignored", c.Name.Local, id)
		}
	}
	if a.Inhibitor && a.Weight < 1 {
		a.Weight = 1
	}
	p.raw = append(p.raw, a)
}

// tokens reads a natural number label: an initial marking, a capacity or
// an inscription. ISO writes <text>n</text>; PIPE <value>Default,n</value>;
// SNAKES a <multiset> of items, or a <variable> (one token of the net's
// black skeleton). def is the value of an empty label; an inscription must
// be positive.
func (p *parser) tokens(el *xmlguard.Element, what string, def int) int {
	positive := def > 0
	for _, c := range el.Children {
		switch c.Name.Local {
		case "text", "value":
			s := strings.TrimSpace(c.Text)
			at := c.TextPos
			if at.Line == 0 {
				at = c.Pos
			}
			if c.Name.Local == "value" {
				// PIPE: "Default,3" (token class, count), possibly several classes.
				if parts := strings.Split(s, ","); len(parts) >= 2 && len(parts)%2 == 0 {
					total := 0
					for i := 0; i < len(parts); i += 2 {
						n, err := strconv.Atoi(strings.TrimSpace(parts[i+1]))
						if err != nil || n < 0 || n > petri.MaxTokens {
							p.add(at, "%s: %q is not a token count", what, s)
							return def
						}
						if n > 0 && strings.TrimSpace(parts[i]) != "Default" {
							p.add(at, "%s: %q gives tokens of class %q (a coloured net); Veena runs P/T nets", what, s, strings.TrimSpace(parts[i]))
							return def
						}
						total += n
					}
					s = strconv.Itoa(total)
				}
			}
			if s == "" {
				return def
			}
			n, err := strconv.Atoi(s)
			switch {
			case err != nil && strings.HasPrefix(s, "[") && strings.HasSuffix(s, ")"):
				p.add(at, "%s: %q is a time interval (a timed-arc net); Veena runs untimed P/T nets", what, s)
				return def
			case err != nil:
				p.add(at, "%s: %q is not a whole number", what, s)
				return def
			case n < 0 || n > petri.MaxTokens:
				p.add(at, "%s: %d is not between 0 and %d", what, n, petri.MaxTokens)
				return def
			case positive && n == 0:
				p.add(at, "%s: 0; an arc weighs at least 1", what)
				return def
			}
			return n
		case "multiset":
			n := 0
			for _, item := range c.Children {
				if item.Name.Local != "item" {
					continue
				}
				m := 1
				if mul := item.Child("multiplicity"); mul != nil {
					v, err := strconv.Atoi(strings.TrimSpace(mul.Text))
					if err != nil || v < 0 || v > petri.MaxTokens {
						p.add(mul.Pos, "%s: multiplicity %q is not a token count", what, mul.Text)
						return def
					}
					m = v
				}
				n = min(n+m, petri.MaxTokens)
			}
			if n > 0 {
				p.warn(c.Pos, "%s: a multiset of coloured tokens, read as %d black tokens", what, n)
			}
			if positive && n == 0 {
				return def
			}
			return n
		case "variable":
			p.warn(c.Pos, "%s: the variable %q of a high-level net, read as one black token", what, strings.TrimSpace(c.Text))
			return 1
		case "graphics":
		}
	}
	return def
}

// resolve follows reference nodes to the place or transition they stand
// for.
func (p *parser) resolve(id string) (string, string, error) {
	seen := map[string]bool{}
	cur := id
	for {
		k, ok := p.kind[cur]
		if !ok {
			return "", "", fmt.Errorf("%q is not a place, a transition or a reference node of this file", cur)
		}
		if k == "place" || k == "transition" {
			return cur, k, nil
		}
		if seen[cur] {
			return "", "", fmt.Errorf("reference node %s refers to itself through a cycle", id)
		}
		seen[cur] = true
		next := p.refs[cur]
		nk, ok := p.kind[next]
		if !ok {
			return "", "", fmt.Errorf("reference node %s refers to %q, which is not a node of this file", cur, next)
		}
		want := "place"
		if k == "referenceTransition" {
			want = "transition"
		}
		if nk != want && nk != "reference"+strings.ToUpper(want[:1])+want[1:] {
			return "", "", fmt.Errorf("%s %s refers to %s, which is a %s", k, cur, next, nk)
		}
		cur = next
	}
}

// resolveArcs checks the current net's reference nodes and arcs.
func (p *parser) resolveArcs() {
	bad := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(p.refs)) {
		if _, _, err := p.resolve(id); err != nil {
			p.errs.Add(p.rpos[id], "%v", err)
			bad[id] = true
		}
	}
	end := func(a *Arc, which, id string) (string, string, bool) {
		if bad[id] {
			p.errs.Add(a.Pos, "arc %s: %s %s is a reference node that stands for no place or transition", a.ID, which, id)
			return "", "", false
		}
		node, kind, err := p.resolve(id)
		if err != nil {
			p.errs.Add(a.Pos, "arc %s: %s %v", a.ID, which, err)
			return "", "", false
		}
		return node, kind, true
	}
	for _, a := range p.raw {
		src, sk, ok := end(a, "source", a.Source)
		if !ok {
			continue
		}
		dst, dk, ok := end(a, "target", a.Target)
		if !ok {
			continue
		}
		if sk == dk {
			p.errs.Add(a.Pos, "arc %s joins %s %s to %s %s; an arc must join a place and a transition", a.ID, sk, src, dk, dst)
			continue
		}
		if a.Inhibitor && sk != "place" {
			p.errs.Add(a.Pos, "arc %s is an inhibitor arc from transition %s; an inhibitor arc goes from a place to a transition", a.ID, src)
			continue
		}
		a.Source, a.Target = src, dst
		p.net.Arcs = append(p.net.Arcs, a)
	}
}
