package wfxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/graph"
)

// Namespace is the XML namespace of Sarasvati process definitions. Files
// whose root element has no namespace are accepted too.
const Namespace = "http://sarasvati.googlecode.com/ProcessDefinition"

const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// Default limits; see the Option functions.
const (
	DefaultMaxBytes    = 4 << 20
	DefaultMaxDepth    = 64
	DefaultMaxText     = 64 << 10
	DefaultMaxNodes    = 10_000
	DefaultMaxArcs     = 100_000
	DefaultMaxElements = 200_000
)

// Option changes a limit of Parse, Load or a Loader.
type Option func(*options)

type options struct {
	maxBytes    int64
	maxDepth    int
	maxText     int
	maxNodes    int
	maxArcs     int
	maxElements int
}

func defaultOptions() options {
	return options{
		maxBytes:    DefaultMaxBytes,
		maxDepth:    DefaultMaxDepth,
		maxText:     DefaultMaxText,
		maxNodes:    DefaultMaxNodes,
		maxArcs:     DefaultMaxArcs,
		maxElements: DefaultMaxElements,
	}
}

func buildOptions(opts []Option) options {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithMaxBytes limits the size of a definition file (default 4 MiB).
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithMaxDepth limits how deeply elements nest, <custom> content included
// (default 64; the root element is depth 1).
func WithMaxDepth(n int) Option { return func(o *options) { o.maxDepth = n } }

// WithMaxText limits the length of one attribute value and of one element's
// text (default 64 KiB).
func WithMaxText(n int) Option { return func(o *options) { o.maxText = n } }

// WithMaxNodes limits the number of nodes of a definition, and of the graph
// composed from it (default 10,000).
func WithMaxNodes(n int) Option { return func(o *options) { o.maxNodes = n } }

// WithMaxArcs limits the number of arcs of a definition, and of the graph
// composed from it (default 100,000).
func WithMaxArcs(n int) Option { return func(o *options) { o.maxArcs = n } }

// WithMaxElements limits the number of elements in a file, <custom> content
// included (default 200,000).
func WithMaxElements(n int) Option { return func(o *options) { o.maxElements = n } }

// Document is one parsed definition file: its declarations, with the
// position of each. It is produced by Parse and read by Compile; a Document
// must not be changed after Parse returns it.
type Document struct {
	File   string
	Source []byte
	Pos    graph.Pos      // of the <process-definition> element
	Custom *graph.Element // the definition's <custom> element, or nil

	Nodes     []*NodeDef
	Externals []*ExternalDef

	name string
	opts options
}

// NodeDef is a <node> element.
type NodeDef struct {
	Name      string
	Type      string // "node" when not given
	IsStart   bool
	Join      graph.JoinType
	JoinParam string // the <join> element's text if the element is present, else the joinParam attribute
	Guard     string // whitespace collapsed; "" means Accept
	X, Y      int
	Arcs      []*ArcDef
	Custom    *graph.Element
	Pos       graph.Pos
}

// ArcDef is an <arc> element of a node.
type ArcDef struct {
	To       string
	External string // "" for a node of this definition
	Name     string // "" for the default arc
	Pos      graph.Pos
}

// ExternalDef is an <external> element.
type ExternalDef struct {
	Name       string
	Definition string // the processDefinition attribute
	X, Y       int
	Arcs       []*ExternalArcDef
	Custom     *graph.Element
	Pos        graph.Pos
}

// ExternalArcDef is an <arc> element of an external: an arc from a node of
// that instance.
type ExternalArcDef struct {
	From     string
	To       string
	External string // "" for a node of this definition
	Name     string
	Pos      graph.Pos
}

// Name is the definition's name.
func (d *Document) Name() string { return d.name }

// ExternalDefinitions are the names of the definitions the document's
// externals refer to, in document order, each once.
func (d *Document) ExternalDefinitions() []string {
	var names []string
	seen := map[string]bool{}
	for _, e := range d.Externals {
		if !seen[e.Definition] {
			seen[e.Definition] = true
			names = append(names, e.Definition)
		}
	}
	return names
}

// Parse reads one definition file and checks its syntax and structure: the
// schema's elements, attributes and their order, attribute values, unique
// node and external names, and that every arc names a node of this file or
// a declared external. It does not resolve externals (see Compile).
//
// file names the source in messages. On failure the error is a
// *graph.LoadError listing every problem found.
func Parse(file string, src []byte, opts ...Option) (*Document, error) {
	o := buildOptions(opts)
	p := &parser{opts: o, errs: &graph.LoadError{File: file}}
	if int64(len(src)) > o.maxBytes {
		p.errs.Add(graph.Pos{}, "file is %d bytes; the limit is %d bytes", len(src), o.maxBytes)
		return nil, p.errs
	}
	p.in = &guardReader{src: src, limit: tokenLimit(o.maxText)}
	p.dec = xml.NewDecoder(p.in)
	p.dec.Strict = true
	p.dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "us-ascii", "ascii":
			return in, nil // a subset of UTF-8
		}
		return nil, fmt.Errorf("encoding %q is not supported; use UTF-8", label)
	}
	p.doc = &Document{File: file, opts: o}
	p.parseDocument()
	if !p.fatal {
		p.checkReferences()
	}
	if err := p.result(); err != nil {
		return nil, err
	}
	p.doc.Source = bytes.Clone(src)
	return p.doc, nil
}

// tokenLimit bounds how many bytes one XML token (a tag, a text run, a
// comment, a declaration) may take before the decoder has read all of it.
func tokenLimit(maxText int) int {
	if maxText > (1<<40)/4 {
		return 1 << 40
	}
	return 4*maxText + 1024
}

var errTokenTooLong = errors.New("token too long")

// guardReader feeds the XML decoder one byte at a time and refuses to let a
// single token grow past limit bytes, so an oversized tag or text is refused
// before the decoder buffers it.
type guardReader struct {
	src   []byte
	off   int
	mark  int
	limit int
}

func (r *guardReader) ReadByte() (byte, error) {
	if r.off >= len(r.src) {
		return 0, io.EOF
	}
	if r.off-r.mark >= r.limit {
		return 0, errTokenTooLong
	}
	b := r.src[r.off]
	r.off++
	return b, nil
}

func (r *guardReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	p[0] = b
	return 1, nil
}

type parser struct {
	opts  options
	in    *guardReader
	dec   *xml.Decoder
	errs  *graph.LoadError
	doc   *Document
	fatal bool // a problem that stops parsing was found

	space    string // the root's namespace; every structural element must use it
	depth    int
	elements int
	arcs     int
}

func (p *parser) add(pos graph.Pos, format string, args ...any) {
	p.errs.Add(pos, format, args...)
}

// stop records a problem that ends parsing.
func (p *parser) stop(pos graph.Pos, format string, args ...any) {
	p.add(pos, format, args...)
	p.fatal = true
}

func (p *parser) pos() graph.Pos {
	line, col := p.dec.InputPos()
	return graph.Pos{Line: line, Column: col}
}

func (p *parser) result() error { return finishProblems(p.errs) }

// next returns the next token and where it starts. It applies every limit;
// ok is false once parsing has to stop (at the end of input too).
func (p *parser) next() (tok xml.Token, pos graph.Pos, ok bool) {
	if p.fatal {
		return nil, graph.Pos{}, false
	}
	pos = p.pos()
	p.in.mark = p.in.off
	tok, err := p.dec.Token()
	if err != nil {
		switch {
		case err == io.EOF:
			// The caller decides whether the end is expected.
		case errors.Is(err, errTokenTooLong):
			p.stop(pos, "a tag, text or comment is longer than %d bytes (attribute values and text are limited to %d bytes)",
				tokenLimit(p.opts.maxText), p.opts.maxText)
		default:
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				p.stop(p.pos(), "XML syntax error: %s", se.Msg)
			} else {
				p.stop(pos, "XML error: %s", strings.TrimPrefix(err.Error(), "xml: "))
			}
		}
		return nil, pos, false
	}
	switch t := tok.(type) {
	case xml.StartElement:
		p.depth++
		p.elements++
		if p.depth > p.opts.maxDepth {
			p.stop(pos, "elements are nested deeper than %d levels", p.opts.maxDepth)
			return nil, pos, false
		}
		if p.elements > p.opts.maxElements {
			p.stop(pos, "file has more than %d elements", p.opts.maxElements)
			return nil, pos, false
		}
		for _, a := range t.Attr {
			if len(a.Value) > p.opts.maxText {
				p.stop(pos, "attribute %q of <%s> is %d bytes long; the limit is %d bytes",
					a.Name.Local, t.Name.Local, len(a.Value), p.opts.maxText)
				return nil, pos, false
			}
		}
	case xml.EndElement:
		p.depth--
	case xml.Directive:
		if bytes.HasPrefix(t, []byte("DOCTYPE")) {
			p.stop(pos, "DOCTYPE declarations are not allowed (no DTDs or entity definitions)")
		} else {
			p.stop(pos, "markup declarations (<!...>) are not allowed")
		}
		return nil, pos, false
	case xml.CharData:
		if len(t) > p.opts.maxText {
			p.stop(pos, "text is %d bytes long; the limit is %d bytes", len(t), p.opts.maxText)
			return nil, pos, false
		}
	}
	return tok, pos, true
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

func (p *parser) parseDocument() {
	// Prolog: the XML declaration, processing instructions, comments and
	// white space, up to the root element.
	for {
		tok, pos, ok := p.next()
		if !ok {
			if !p.fatal {
				p.stop(pos, "no <process-definition> element: the file has no root element")
			}
			return
		}
		switch t := tok.(type) {
		case xml.CharData:
			if !isBlank(t) {
				p.stop(pos, "not an XML process definition: text before the root element")
				return
			}
		case xml.StartElement:
			if t.Name.Local != "process-definition" {
				p.stop(pos, "root element is <%s>, want <process-definition>", t.Name.Local)
				return
			}
			if t.Name.Space != Namespace && t.Name.Space != "" {
				p.stop(pos, "root element is in namespace %q, want %q or none", t.Name.Space, Namespace)
				return
			}
			p.space = t.Name.Space
			p.processDefinition(t, pos)
			p.epilog()
			return
		}
	}
}

// epilog reads what follows the root element: only comments, processing
// instructions and white space may.
func (p *parser) epilog() {
	for {
		tok, pos, ok := p.next()
		if !ok {
			return
		}
		switch t := tok.(type) {
		case xml.CharData:
			if !isBlank(t) {
				p.stop(pos, "text after the root element")
				return
			}
		case xml.StartElement:
			p.stop(pos, "element <%s> after the root element", t.Name.Local)
			return
		}
	}
}

// attrs checks the attributes of an element against the allowed names and
// returns their values. Namespace declarations and xsi: attributes are
// ignored.
func (p *parser) attrs(se xml.StartElement, pos graph.Pos, allowed ...string) map[string]string {
	m := map[string]string{}
	for _, a := range se.Attr {
		if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" || a.Name.Space == xsiNamespace {
			continue
		}
		if a.Name.Space != "" {
			p.add(pos, "unknown attribute %s:%s on <%s>", a.Name.Space, a.Name.Local, se.Name.Local)
			continue
		}
		known := false
		for _, n := range allowed {
			if n == a.Name.Local {
				known = true
				break
			}
		}
		if !known {
			p.add(pos, "unknown attribute %q on <%s>", a.Name.Local, se.Name.Local)
			continue
		}
		if _, dup := m[a.Name.Local]; dup {
			p.add(pos, "duplicate attribute %q on <%s>", a.Name.Local, se.Name.Local)
			continue
		}
		m[a.Name.Local] = a.Value
	}
	return m
}

// required returns a required attribute's value, reporting it if it is
// missing or blank.
func (p *parser) required(m map[string]string, name, el string, pos graph.Pos) string {
	v, ok := m[name]
	switch {
	case !ok:
		p.add(pos, "<%s> is missing required attribute %q", el, name)
	case strings.TrimSpace(v) == "":
		p.add(pos, "attribute %q of <%s> must not be empty", name, el)
	}
	return v
}

// intAttr parses an optional xs:int attribute.
func (p *parser) intAttr(m map[string]string, name, el string, pos graph.Pos) int {
	v, ok := m[name]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		p.add(pos, "attribute %q of <%s>: %q is not an integer", name, el, v)
		return 0
	}
	return int(n)
}

// boolAttr parses an optional xs:boolean attribute.
func (p *parser) boolAttr(m map[string]string, name, el string, pos graph.Pos) bool {
	v, ok := m[name]
	if !ok {
		return false
	}
	switch strings.TrimSpace(v) {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	p.add(pos, "attribute %q of <%s>: %q is not a boolean (want true, false, 1 or 0)", name, el, v)
	return false
}

// collapse applies xs:token white-space collapsing.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// isOwn reports whether a structural element is in the definition's namespace.
func (p *parser) isOwn(se xml.StartElement) bool { return se.Name.Space == p.space }

// elemName names an element for messages, with its namespace when that
// is not the definition's.
func (p *parser) elemName(se xml.StartElement) string {
	switch {
	case se.Name.Space == p.space:
		return "<" + se.Name.Local + ">"
	case se.Name.Space == "":
		return "<" + se.Name.Local + "> (in no namespace)"
	}
	return "<" + se.Name.Local + "> (in namespace " + strconv.Quote(se.Name.Space) + ")"
}

// textPos is the position of the first character of data that is not white
// space, data starting at pos.
func textPos(pos graph.Pos, data []byte) graph.Pos {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r':
			pos.Column++
		case '\n':
			pos.Line++
			pos.Column = 1
		default:
			return pos
		}
	}
	return pos
}

// sequence checks the order of child elements against a content model given
// as ranks: each child's rank must not be lower than the previous child's,
// and only repeatable elements may appear twice.
type sequence struct {
	parent     string
	model      string // for messages: "join?, guard?, arc*, custom?"
	last       int
	lastName   string
	repeatable map[string]bool
}

func (s *sequence) check(p *parser, name string, rank int, pos graph.Pos) {
	switch {
	case rank < s.last:
		p.add(pos, "<%s> is out of order in <%s>: it must come before <%s> (children are %s)", name, s.parent, s.lastName, s.model)
	case rank == s.last && !s.repeatable[name]:
		p.add(pos, "<%s> appears more than once in <%s>", name, s.parent)
	default:
		s.last, s.lastName = rank, name
	}
}

// children reads the content of the element just started, named parent,
// up to its end tag, passing each child element to child, which must consume
// it. Text other than white space is an error.
func (p *parser) children(parent string, child func(se xml.StartElement, pos graph.Pos)) {
	textReported := false
	for {
		tok, pos, ok := p.next()
		if !ok {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			child(t, pos)
			if p.fatal {
				return
			}
		case xml.EndElement:
			return
		case xml.CharData:
			if !textReported && !isBlank(t) {
				p.add(textPos(pos, t), "unexpected text in <%s>", parent)
				textReported = true
			}
		}
	}
}

// skip consumes the rest of an element whose start tag was just read.
func (p *parser) skip() {
	depth := 1
	for depth > 0 {
		tok, _, ok := p.next()
		if !ok {
			return
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
}

// unknown reports an element that the schema does not allow here and skips it.
func (p *parser) unknown(se xml.StartElement, pos graph.Pos, parent string) {
	p.add(pos, "unknown element %s in <%s>", p.elemName(se), parent)
	p.skip()
}

// text reads the text content of a simple element up to its end tag; child
// elements are errors. at is where the first character that is not white
// space is.
func (p *parser) text(el string) (text string, at graph.Pos) {
	var b strings.Builder
	reported := false
	for {
		tok, pos, ok := p.next()
		if !ok {
			return b.String(), at
		}
		switch t := tok.(type) {
		case xml.CharData:
			if b.Len()+len(t) > p.opts.maxText {
				p.stop(pos, "text of <%s> is longer than %d bytes", el, p.opts.maxText)
				return "", at
			}
			if at == (graph.Pos{}) && !isBlank(t) {
				at = textPos(pos, t)
			}
			b.Write(t)
		case xml.StartElement:
			if !reported {
				p.add(pos, "<%s> may not contain elements (found %s)", el, p.elemName(t))
				reported = true
			}
			p.skip()
		case xml.EndElement:
			return b.String(), at
		}
	}
}

// empty reads an element that may have neither child elements nor text.
func (p *parser) empty(el string) {
	if s, at := p.text(el); strings.TrimSpace(s) != "" {
		p.add(at, "<%s> may not contain text", el)
	}
}

// custom reads a <custom> element (or any element inside one) into a tree.
func (p *parser) custom(se xml.StartElement, at graph.Pos) *graph.Element {
	e := &graph.Element{Name: se.Name.Local, Pos: at}
	for _, a := range se.Attr {
		if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
			continue
		}
		e.Attrs = append(e.Attrs, graph.Attr{Name: a.Name.Local, Value: a.Value})
	}
	var text strings.Builder
	for {
		tok, pos, ok := p.next()
		if !ok {
			return e
		}
		switch t := tok.(type) {
		case xml.CharData:
			if text.Len()+len(t) > p.opts.maxText {
				p.stop(pos, "text of <%s> is longer than %d bytes", se.Name.Local, p.opts.maxText)
				return e
			}
			text.Write(t)
		case xml.StartElement:
			c := p.custom(t, pos)
			e.Children = append(e.Children, c)
			if p.fatal {
				return e
			}
		case xml.EndElement:
			e.Text = text.String()
			return e
		}
	}
}

func (p *parser) processDefinition(se xml.StartElement, pos graph.Pos) {
	d := p.doc
	d.Pos = pos
	m := p.attrs(se, pos, "name")
	d.name = p.required(m, "name", "process-definition", pos)

	seq := sequence{parent: "process-definition", model: "custom?, node+, external*", repeatable: map[string]bool{"node": true, "external": true}}
	p.children("process-definition", func(c xml.StartElement, cpos graph.Pos) {
		if !p.isOwn(c) {
			p.unknown(c, cpos, "process-definition")
			return
		}
		switch c.Name.Local {
		case "custom":
			seq.check(p, "custom", 1, cpos)
			p.attrs(c, cpos)
			el := p.custom(c, cpos)
			if d.Custom == nil {
				d.Custom = el
			}
		case "node":
			seq.check(p, "node", 2, cpos)
			if len(d.Nodes) >= p.opts.maxNodes {
				p.stop(cpos, "definition has more than %d nodes", p.opts.maxNodes)
				return
			}
			d.Nodes = append(d.Nodes, p.node(c, cpos))
		case "external":
			seq.check(p, "external", 3, cpos)
			d.Externals = append(d.Externals, p.external(c, cpos))
		default:
			p.unknown(c, cpos, "process-definition")
		}
	})
	if !p.fatal && len(d.Nodes) == 0 {
		p.add(pos, "<process-definition> has no <node>; at least one is required")
	}
}

func (p *parser) countArc(pos graph.Pos) bool {
	p.arcs++
	if p.arcs > p.opts.maxArcs {
		p.stop(pos, "definition has more than %d arcs", p.opts.maxArcs)
		return false
	}
	return true
}

func (p *parser) node(se xml.StartElement, pos graph.Pos) *NodeDef {
	m := p.attrs(se, pos, "name", "type", "isStart", "joinType", "joinParam", "x", "y")
	n := &NodeDef{Pos: pos}
	n.Name = p.required(m, "name", "node", pos)
	n.Type = strings.TrimSpace(m["type"])
	if n.Type == "" {
		n.Type = graph.TypeNode
	}
	n.IsStart = p.boolAttr(m, "isStart", "node", pos)
	jt, err := graph.ParseJoinType(strings.TrimSpace(m["joinType"]))
	if err != nil {
		p.add(pos, "attribute \"joinType\" of <node>: %v", err)
	}
	n.Join = jt
	if jt == "" {
		n.Join = graph.JoinOr
	}
	n.JoinParam = m["joinParam"]
	n.X = p.intAttr(m, "x", "node", pos)
	n.Y = p.intAttr(m, "y", "node", pos)

	seq := sequence{parent: "node", model: "join?, guard?, arc*, custom?", repeatable: map[string]bool{"arc": true}}
	p.children("node", func(c xml.StartElement, cpos graph.Pos) {
		if !p.isOwn(c) {
			p.unknown(c, cpos, "node")
			return
		}
		switch c.Name.Local {
		case "join":
			seq.check(p, "join", 1, cpos)
			p.attrs(c, cpos)
			text, _ := p.text("join")
			n.JoinParam = collapse(text)
		case "guard":
			seq.check(p, "guard", 2, cpos)
			p.attrs(c, cpos)
			text, _ := p.text("guard")
			n.Guard = collapse(text)
		case "arc":
			seq.check(p, "arc", 3, cpos)
			if !p.countArc(cpos) {
				return
			}
			am := p.attrs(c, cpos, "to", "name", "external")
			a := &ArcDef{Pos: cpos, External: strings.TrimSpace(am["external"]), Name: am["name"]}
			a.To = p.required(am, "to", "arc", cpos)
			if strings.TrimSpace(a.Name) == "" {
				a.Name = ""
			}
			p.empty("arc")
			n.Arcs = append(n.Arcs, a)
		case "custom":
			seq.check(p, "custom", 4, cpos)
			p.attrs(c, cpos)
			el := p.custom(c, cpos)
			if n.Custom == nil {
				n.Custom = el
			}
		default:
			p.unknown(c, cpos, "node")
		}
	})
	return n
}

func (p *parser) external(se xml.StartElement, pos graph.Pos) *ExternalDef {
	m := p.attrs(se, pos, "name", "processDefinition", "x", "y")
	e := &ExternalDef{Pos: pos}
	e.Name = p.required(m, "name", "external", pos)
	e.Definition = p.required(m, "processDefinition", "external", pos)
	e.X = p.intAttr(m, "x", "external", pos)
	e.Y = p.intAttr(m, "y", "external", pos)

	seq := sequence{parent: "external", model: "arc*, custom?", repeatable: map[string]bool{"arc": true}}
	p.children("external", func(c xml.StartElement, cpos graph.Pos) {
		if !p.isOwn(c) {
			p.unknown(c, cpos, "external")
			return
		}
		switch c.Name.Local {
		case "arc":
			seq.check(p, "arc", 1, cpos)
			if !p.countArc(cpos) {
				return
			}
			am := p.attrs(c, cpos, "from", "to", "name", "external")
			a := &ExternalArcDef{Pos: cpos, External: strings.TrimSpace(am["external"]), Name: am["name"]}
			a.From = p.required(am, "from", "arc", cpos)
			a.To = p.required(am, "to", "arc", cpos)
			if strings.TrimSpace(a.Name) == "" {
				a.Name = ""
			}
			p.empty("arc")
			e.Arcs = append(e.Arcs, a)
		case "custom":
			seq.check(p, "custom", 2, cpos)
			p.attrs(c, cpos)
			el := p.custom(c, cpos)
			if e.Custom == nil {
				e.Custom = el
			}
		default:
			p.unknown(c, cpos, "external")
		}
	})
	return e
}

// checkReferences checks what can be checked within the file: unique names,
// arcs to nodes of this file, arcs naming declared externals.
func (p *parser) checkReferences() {
	d := p.doc
	nodes := map[string]*NodeDef{}
	for _, n := range d.Nodes {
		if n.Name == "" {
			continue
		}
		if first, dup := nodes[n.Name]; dup {
			p.add(n.Pos, "duplicate node name %q (first declared at %d:%d)", n.Name, first.Pos.Line, first.Pos.Column)
			continue
		}
		nodes[n.Name] = n
	}
	exts := map[string]*ExternalDef{}
	for _, e := range d.Externals {
		if e.Name == "" {
			continue
		}
		if first, dup := exts[e.Name]; dup {
			p.add(e.Pos, "duplicate external name %q (first declared at %d:%d)", e.Name, first.Pos.Line, first.Pos.Column)
			continue
		}
		exts[e.Name] = e
		if d.name != "" && e.Definition == d.name {
			p.add(e.Pos, "external %q refers to definition %q itself", e.Name, e.Definition)
		}
	}
	target := func(to, ext string, pos graph.Pos) {
		switch {
		case to == "":
			// already reported as a missing attribute
		case ext != "":
			if _, ok := exts[ext]; !ok {
				p.add(pos, "arc to unknown external %q", ext)
			}
		default:
			if _, ok := nodes[to]; !ok {
				p.add(pos, "arc to unknown node %q", to)
			}
		}
	}
	for _, n := range d.Nodes {
		for _, a := range n.Arcs {
			target(a.To, a.External, a.Pos)
		}
	}
	for _, e := range d.Externals {
		for _, a := range e.Arcs {
			target(a.To, a.External, a.Pos)
		}
	}
}
