package bpmn

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/veena-wf/veena/graph"
)

// Default limits; see the Option functions.
const (
	DefaultMaxBytes    = 8 << 20
	DefaultMaxDepth    = 64
	DefaultMaxText     = 256 << 10
	DefaultMaxElements = 500_000
	DefaultMaxNodes    = 10_000
)

// Option changes a limit of Parse and Load.
type Option func(*options)

type options struct {
	maxBytes    int64
	maxDepth    int
	maxText     int
	maxElements int
	maxNodes    int
}

func buildOptions(opts []Option) options {
	o := options{maxBytes: DefaultMaxBytes, maxDepth: DefaultMaxDepth, maxText: DefaultMaxText,
		maxElements: DefaultMaxElements, maxNodes: DefaultMaxNodes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithMaxBytes limits the size of a file (default 8 MiB).
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithMaxDepth limits how deeply elements nest (default 64).
func WithMaxDepth(n int) Option { return func(o *options) { o.maxDepth = n } }

// WithMaxText limits the length of one attribute value or text (default 256 KiB).
func WithMaxText(n int) Option { return func(o *options) { o.maxText = n } }

// WithMaxElements limits the number of elements in a file (default 500,000).
func WithMaxElements(n int) Option { return func(o *options) { o.maxElements = n } }

// WithMaxNodes limits the number of flow elements of one process (default 10,000).
func WithMaxNodes(n int) Option { return func(o *options) { o.maxNodes = n } }

// elem is one XML element of a BPMN file, with its namespace resolved and
// where it starts.
type elem struct {
	Space, Local string
	Attrs        []xml.Attr
	Children     []*elem
	Text         string // the element's own character data, concatenated
	Pos          graph.Pos
	TextPos      graph.Pos // where the first non-blank character of Text is
	Parent       *elem
	// NS are the namespace declarations in scope (prefix -> URI), for
	// expressions that use prefixes and for QName attribute values.
	NS map[string]string
}

// attr returns the value of an attribute in no namespace.
func (e *elem) attr(name string) (string, bool) {
	for _, a := range e.Attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// get is attr without the presence flag.
func (e *elem) get(name string) string {
	v, _ := e.attr(name)
	return v
}

// attrNS returns the value of an attribute in one of the namespaces.
func (e *elem) attrNS(name string, spaces ...string) (string, bool) {
	for _, a := range e.Attrs {
		if a.Name.Local != name {
			continue
		}
		for _, s := range spaces {
			if a.Name.Space == s {
				return a.Value, true
			}
		}
	}
	return "", false
}

// child returns the first child element with that local name in namespace space.
func (e *elem) child(space, local string) *elem {
	for _, c := range e.Children {
		if c.Local == local && c.Space == space {
			return c
		}
	}
	return nil
}

// childrenNamed returns the children with that local name in namespace space.
func (e *elem) childrenNamed(space, local string) []*elem {
	var out []*elem
	for _, c := range e.Children {
		if c.Local == local && c.Space == space {
			out = append(out, c)
		}
	}
	return out
}

// text is the element's text with surrounding white space removed.
func (e *elem) text() string { return strings.TrimSpace(e.Text) }

// xmlParser reads a whole document into an elem tree, applying the limits
// and refusing DTDs (and so entity definitions) and encodings other than
// UTF-8.
type xmlParser struct {
	opts     options
	in       *guardReader
	dec      *xml.Decoder
	errs     *graph.LoadError
	depth    int
	elements int
}

func parseXML(file string, src []byte, o options) (*elem, *graph.LoadError) {
	errs := &graph.LoadError{File: file}
	if int64(len(src)) > o.maxBytes {
		errs.Add(graph.Pos{}, "file is %d bytes; the limit is %d bytes", len(src), o.maxBytes)
		return nil, errs
	}
	p := &xmlParser{opts: o, errs: errs}
	p.in = &guardReader{src: src, limit: 4*o.maxText + 1024}
	p.dec = xml.NewDecoder(p.in)
	p.dec.Strict = true
	p.dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "us-ascii", "ascii":
			return in, nil
		case "iso-8859-1", "latin1", "iso8859-1", "l1":
			return &latin1Reader{in: in}, nil
		}
		return nil, fmt.Errorf("encoding %q is not supported; use UTF-8 or ISO-8859-1", label)
	}
	root := p.document()
	if len(errs.Problems) > 0 {
		return nil, errs
	}
	return root, nil
}

func (p *xmlParser) pos() graph.Pos {
	line, col := p.dec.InputPos()
	return graph.Pos{Line: line, Column: col}
}

// next returns the next token, applying the limits; ok is false at the end
// of input or after an error (recorded).
func (p *xmlParser) next() (tok xml.Token, pos graph.Pos, ok bool) {
	pos = p.pos()
	p.in.mark = p.in.off
	tok, err := p.dec.Token()
	if err != nil {
		switch {
		case err == io.EOF:
		case errors.Is(err, errTokenTooLong):
			p.errs.Add(pos, "a tag, text or comment is longer than %d bytes (attribute values and text are limited to %d bytes)", p.in.limit, p.opts.maxText)
		default:
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				p.errs.Add(p.pos(), "XML syntax error: %s", se.Msg)
			} else {
				p.errs.Add(pos, "XML error: %s", strings.TrimPrefix(err.Error(), "xml: "))
			}
		}
		return nil, pos, false
	}
	switch t := tok.(type) {
	case xml.StartElement:
		p.depth++
		p.elements++
		if p.depth > p.opts.maxDepth {
			p.errs.Add(pos, "elements are nested deeper than %d levels", p.opts.maxDepth)
			return nil, pos, false
		}
		if p.elements > p.opts.maxElements {
			p.errs.Add(pos, "file has more than %d elements", p.opts.maxElements)
			return nil, pos, false
		}
		for _, a := range t.Attr {
			if len(a.Value) > p.opts.maxText {
				p.errs.Add(pos, "attribute %q of <%s> is %d bytes long; the limit is %d bytes", a.Name.Local, t.Name.Local, len(a.Value), p.opts.maxText)
				return nil, pos, false
			}
		}
	case xml.EndElement:
		p.depth--
	case xml.Directive:
		if bytes.HasPrefix(t, []byte("DOCTYPE")) {
			p.errs.Add(pos, "DOCTYPE declarations are not allowed (no DTDs or entity definitions)")
		} else {
			p.errs.Add(pos, "markup declarations (<!...>) are not allowed")
		}
		return nil, pos, false
	case xml.CharData:
		if len(t) > p.opts.maxText {
			p.errs.Add(pos, "text is %d bytes long; the limit is %d bytes", len(t), p.opts.maxText)
			return nil, pos, false
		}
	}
	return tok, pos, true
}

func (p *xmlParser) document() *elem {
	for {
		tok, pos, ok := p.next()
		if !ok {
			if len(p.errs.Problems) == 0 {
				p.errs.Add(pos, "not a BPMN file: no root element")
			}
			return nil
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				p.errs.Add(pos, "not an XML file: text before the root element")
				return nil
			}
		case xml.StartElement:
			root := p.element(t, pos, nil, nil)
			if root == nil {
				return nil
			}
			// Only comments, processing instructions and white space may follow.
			for {
				tok, pos, ok := p.next()
				if !ok {
					return root
				}
				switch t := tok.(type) {
				case xml.CharData:
					if len(bytes.TrimSpace(t)) > 0 {
						p.errs.Add(pos, "text after the root element")
						return nil
					}
				case xml.StartElement:
					p.errs.Add(pos, "element <%s> after the root element", t.Name.Local)
					return nil
				}
			}
		}
	}
}

// element reads the content of an element whose start tag was just read.
func (p *xmlParser) element(se xml.StartElement, pos graph.Pos, parent *elem, ns map[string]string) *elem {
	e := &elem{Space: se.Name.Space, Local: se.Name.Local, Attrs: se.Attr, Pos: pos, Parent: parent, NS: ns}
	copied := false
	for _, a := range se.Attr {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			if !copied {
				copied = true
				e.NS = make(map[string]string, len(ns)+2)
				for k, v := range ns {
					e.NS[k] = v
				}
			}
			prefix := a.Name.Local
			if a.Name.Space == "" {
				prefix = ""
			}
			e.NS[prefix] = a.Value
		}
	}
	var text strings.Builder
	for {
		tok, tpos, ok := p.next()
		if !ok {
			if len(p.errs.Problems) == 0 {
				p.errs.Add(tpos, "unexpected end of file inside <%s>", se.Name.Local)
			}
			return nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			c := p.element(t, tpos, e, e.NS)
			if c == nil {
				return nil
			}
			e.Children = append(e.Children, c)
		case xml.EndElement:
			e.Text = text.String()
			return e
		case xml.CharData:
			if text.Len() == 0 && len(bytes.TrimSpace(t)) > 0 {
				e.TextPos = textPos(tpos, t)
			}
			if text.Len()+len(t) > p.opts.maxText {
				p.errs.Add(tpos, "text of <%s> is longer than %d bytes", se.Name.Local, p.opts.maxText)
				return nil
			}
			text.Write(t)
		}
	}
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

var errTokenTooLong = errors.New("token too long")

// guardReader feeds the XML decoder one byte at a time and refuses to let a
// single token grow past limit bytes, so an oversized tag or text is
// refused before the decoder buffers it.
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

// latin1Reader decodes ISO-8859-1 into UTF-8: each byte is the code point
// of the same value.
type latin1Reader struct {
	in      io.Reader
	pending []byte
	buf     [1]byte
}

func (r *latin1Reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.pending) > 0 {
			c := copy(p[n:], r.pending)
			r.pending = r.pending[c:]
			n += c
			continue
		}
		if n > 0 {
			return n, nil
		}
		k, err := r.in.Read(r.buf[:])
		if k == 0 {
			return n, err
		}
		b := r.buf[0]
		if b < 0x80 {
			p[n] = b
			n++
			continue
		}
		r.pending = []byte{0xC0 | b>>6, 0x80 | b&0x3F}
	}
	return n, nil
}
