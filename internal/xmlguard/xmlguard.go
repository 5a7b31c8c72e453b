// Package xmlguard reads XML that may be hostile into a small element tree
// with the position of every element, refusing before it costs memory what
// a definition file has no business holding: DTDs (and with them entity
// definitions, so no entity expansion "bombs" and no external entities),
// other markup declarations, encodings other than UTF-8, and files, tags,
// texts, attribute values, nesting depths and element counts over their
// limits. A single tag or text is refused while it is being read, so a
// megabyte-long attribute never reaches the decoder's buffers.
//
// Importers of XML definition formats walk the tree it returns and report
// their own problems at the positions it records.
package xmlguard

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits bound what Parse accepts. A zero field takes the default.
type Limits struct {
	MaxBytes    int64 // size of the file (default 16 MiB)
	MaxDepth    int   // nesting of elements, the root at depth 1 (default 64)
	MaxElements int   // elements in the file, skipped ones included (default 1,000,000)
	MaxText     int   // one attribute value, one element's text (default 64 KiB)
}

// Default limits.
const (
	DefaultMaxBytes    = 16 << 20
	DefaultMaxDepth    = 64
	DefaultMaxElements = 1_000_000
	DefaultMaxText     = 64 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultMaxElements
	}
	if l.MaxText <= 0 {
		l.MaxText = DefaultMaxText
	}
	return l
}

// Pos is a position in the file: 1-based line and column (in bytes).
type Pos struct{ Line, Column int }

// Advance returns the position of byte off of text that starts at p.
func (p Pos) Advance(text string, off int) Pos {
	if off > len(text) {
		off = len(text)
	}
	for i := 0; i < off; i++ {
		if text[i] == '\n' {
			p.Line++
			p.Column = 1
		} else {
			p.Column++
		}
	}
	return p
}

// Error is a file that could not be read as XML, with where.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Column, e.Msg) }

// Element is an element of the tree. Text is the element's own character
// data (CDATA included), concatenated; comments and processing
// instructions are dropped.
type Element struct {
	Name     xml.Name
	Attr     []xml.Attr
	Children []*Element
	Text     string
	Pos      Pos // of the element's "<"
	TextPos  Pos // where its first character data starts (zero if it has none)
}

// AttrValue returns the value of the attribute with that local name and no
// namespace, and whether it is there.
func (e *Element) AttrValue(local string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Local == local && a.Name.Space == "" {
			return a.Value, true
		}
	}
	return "", false
}

// Child returns the first child with that local name, or nil.
func (e *Element) Child(local string) *Element {
	for _, c := range e.Children {
		if c.Name.Local == local {
			return c
		}
	}
	return nil
}

// Keep decides, for an element about to be read, whether to keep it (and
// its subtree) in the tree. Skipped elements still count against the
// limits. parent is nil for the root.
type Keep func(parent *Element, name xml.Name) bool

var errTokenTooLong = errors.New("token too long")

// Parse reads src into a tree. keep may be nil (keep everything). The
// error is an *Error.
func Parse(src []byte, l Limits, keep Keep) (*Element, error) {
	l = l.withDefaults()
	if int64(len(src)) > l.MaxBytes {
		return nil, &Error{Pos: Pos{1, 1}, Msg: fmt.Sprintf("file is %d bytes; the limit is %d bytes", len(src), l.MaxBytes)}
	}
	in := &guardReader{src: src, limit: tokenLimit(l.MaxText)}
	dec := xml.NewDecoder(in)
	dec.Strict = true
	dec.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "us-ascii", "ascii", "utf-8", "utf8":
			return r, nil
		case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1":
			return &latin1Reader{r: r.(io.ByteReader)}, nil
		}
		return nil, fmt.Errorf("encoding %q is not supported; use UTF-8", label)
	}
	pos := func() Pos {
		line, col := dec.InputPos()
		return Pos{line, col}
	}
	var (
		root     *Element
		stack    []*Element // kept elements, innermost last; nil entries for skipped ones
		skipping int        // depth inside a skipped subtree
		depth    int
		elements int
		text     []*strings.Builder
	)
	for {
		at := pos()
		in.mark = in.off
		tok, err := dec.Token()
		if err == io.EOF {
			if root == nil {
				return nil, &Error{Pos: at, Msg: "no root element"}
			}
			if depth != 0 {
				return nil, &Error{Pos: at, Msg: "unexpected end of file"}
			}
			return root, nil
		}
		if err != nil {
			if errors.Is(err, errTokenTooLong) {
				return nil, &Error{Pos: at, Msg: fmt.Sprintf("a tag, text or comment is longer than %d bytes (attribute values and texts are limited to %d bytes)", tokenLimit(l.MaxText), l.MaxText)}
			}
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, &Error{Pos: pos(), Msg: "XML syntax error: " + se.Msg}
			}
			return nil, &Error{Pos: at, Msg: "XML error: " + strings.TrimPrefix(err.Error(), "xml: ")}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			elements++
			if depth > l.MaxDepth {
				return nil, &Error{Pos: at, Msg: fmt.Sprintf("elements are nested deeper than %d levels", l.MaxDepth)}
			}
			if elements > l.MaxElements {
				return nil, &Error{Pos: at, Msg: fmt.Sprintf("file has more than %d elements", l.MaxElements)}
			}
			for _, a := range t.Attr {
				if len(a.Value) > l.MaxText {
					return nil, &Error{Pos: at, Msg: fmt.Sprintf("attribute %q of <%s> is %d bytes long; the limit is %d bytes", a.Name.Local, t.Name.Local, len(a.Value), l.MaxText)}
				}
			}
			if root != nil && depth == 1 {
				return nil, &Error{Pos: at, Msg: fmt.Sprintf("element <%s> after the root element", t.Name.Local)}
			}
			if skipping > 0 {
				skipping++
				continue
			}
			var parent *Element
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			if keep != nil && !keep(parent, t.Name) {
				skipping = 1
				continue
			}
			el := &Element{Name: t.Name, Attr: t.Copy().Attr, Pos: at}
			if parent == nil {
				root = el
			} else {
				parent.Children = append(parent.Children, el)
			}
			stack = append(stack, el)
			text = append(text, nil)
		case xml.EndElement:
			depth--
			if skipping > 0 {
				skipping--
				continue
			}
			el := stack[len(stack)-1]
			if b := text[len(text)-1]; b != nil {
				el.Text = b.String()
			}
			stack = stack[:len(stack)-1]
			text = text[:len(text)-1]
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) > 0 {
					if root == nil {
						return nil, &Error{Pos: at, Msg: "text before the root element: not an XML file"}
					}
					return nil, &Error{Pos: at, Msg: "text after the root element"}
				}
				continue
			}
			if skipping > 0 {
				continue
			}
			b := text[len(text)-1]
			if b == nil {
				b = &strings.Builder{}
				text[len(text)-1] = b
				stack[len(stack)-1].TextPos = at
			}
			if b.Len()+len(t) > l.MaxText {
				return nil, &Error{Pos: at, Msg: fmt.Sprintf("text of <%s> is longer than %d bytes", stack[len(stack)-1].Name.Local, l.MaxText)}
			}
			b.Write(t)
		case xml.Directive:
			if bytes.HasPrefix(t, []byte("DOCTYPE")) {
				return nil, &Error{Pos: at, Msg: "DOCTYPE declarations are not allowed (no DTDs or entity definitions)"}
			}
			return nil, &Error{Pos: at, Msg: "markup declarations (<!...>) are not allowed"}
		}
	}
}

// tokenLimit bounds how many bytes one XML token (a tag, a text run, a
// comment, a declaration) may take before the decoder has read all of it.
func tokenLimit(maxText int) int {
	if maxText > (1<<40)/4 {
		return 1 << 40
	}
	return 4*maxText + 1024
}

// guardReader feeds the XML decoder one byte at a time and refuses to let
// a single token grow past limit bytes.
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

// latin1Reader turns ISO-8859-1 into UTF-8: each byte is the code point
// of the same number.
type latin1Reader struct {
	r       io.ByteReader
	pending byte // the second byte of a two-byte sequence, if any
	has     bool
}

func (l *latin1Reader) ReadByte() (byte, error) {
	if l.has {
		l.has = false
		return l.pending, nil
	}
	b, err := l.r.ReadByte()
	if err != nil || b < 0x80 {
		return b, err
	}
	l.pending, l.has = 0x80|b&0x3f, true
	return 0xc0 | b>>6, nil
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := l.ReadByte()
	if err != nil {
		return 0, err
	}
	p[0] = b
	return 1, nil
}
