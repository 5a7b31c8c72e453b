// Package annotation parses the labels that link a Petri net to work, in
// the grammar of "Driving Workers from Petri nets":
//
//	TransitionAnnotation ::= [Event] ["/" Action]
//	Event                ::= Call
//	Action               ::= Call
//	PlaceAnnotation      ::= Identifier ["#" Number] "(" [Args] ")"
//	Call                 ::= Identifier ["#" Number] ["(" [Args] ")"]
//	Args                 ::= Arg { "," Arg }
//	Arg                  ::= Identifier | "&" Identifier
//
// An Identifier is a letter or "_" followed by letters, digits and "_".
// White space may separate the symbols. A value argument x selects (an
// event is welcome when its x equals the net's variable x; an action reads
// x); a binding argument &x writes the variable x (an event copies its x
// into it; an action may change it, and only its Success keeps the change).
//
// Veena reads the grammar a little more widely than the seed writes it: a
// call may have no arguments ("dawn()"), and a bare identifier ("dawn") is
// a call without arguments. The "#" Number suffix, which the seed leaves
// undefined, tells apart transitions (or places) that carry the same call:
// "dawn#1(x)" and "dawn#2(y)" both answer the event dawn, but their names
// differ, so superposition keeps them apart.
//
// Not every name is an annotation. Classify decides: a name that uses any
// of the grammar's punctuation ( ) / & # , must parse, and an error says
// where it does not; a bare identifier is a call without arguments; any
// other name (t10.2, "Making Water", VAR:x) is a plain label.
package annotation

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLength is the longest annotation Parse reads, in bytes.
const MaxLength = 4096

// Call is an event, an action or an activity: a name, an optional number
// and arguments.
type Call struct {
	Name   string
	Number int  // the "#" Number; 0 when HasNum is false
	HasNum bool // whether "#" Number was written
	Args   []Arg
	Pos    int // byte offset of the name in the annotation
}

// Arg is one argument of a call: a value argument x, or a binding
// argument &x.
type Arg struct {
	Name string
	Bind bool
	Pos  int // byte offset in the annotation
}

// Transition is a parsed transition annotation. Event and Action are nil
// when absent.
type Transition struct {
	Event  *Call
	Action *Call
}

// Error is a syntax error at a position in an annotation.
type Error struct {
	Text   string // the annotation
	Offset int    // byte offset of the problem
	Column int    // 1-based character column of the problem
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("annotation %q, column %d: %s", e.Text, e.Column, e.Msg)
}

// Binds reports whether the call has the binding argument &name.
func (c *Call) Binds(name string) bool {
	if c == nil {
		return false
	}
	for _, a := range c.Args {
		if a.Bind && a.Name == name {
			return true
		}
	}
	return false
}

// Bindings are the names of the call's binding arguments, in order.
func (c *Call) Bindings() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, a := range c.Args {
		if a.Bind {
			out = append(out, a.Name)
		}
	}
	return out
}

// String is the call in canonical form: name, number, and its arguments
// in parentheses (always written, "()" when there are none).
func (c *Call) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	if c.HasNum {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(c.Number))
	}
	b.WriteByte('(')
	for i, a := range c.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		if a.Bind {
			b.WriteByte('&')
		}
		b.WriteString(a.Name)
	}
	b.WriteByte(')')
	return b.String()
}

// String is the annotation in canonical form.
func (t Transition) String() string {
	var b strings.Builder
	if t.Event != nil {
		b.WriteString(t.Event.String())
	}
	if t.Action != nil {
		b.WriteString("/")
		b.WriteString(t.Action.String())
	}
	return b.String()
}

// Bindings are the variables the annotation writes: the event's binding
// arguments, then the action's, each once.
func (t Transition) Bindings() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range []*Call{t.Event, t.Action} {
		for _, n := range c.Bindings() {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// Kind says what Classify found a name to be.
type Kind uint8

// The kinds of name.
const (
	Label      Kind = iota // a plain label, no annotation
	Annotation             // an annotation (it parsed)
)

// punctuation is what makes a name an annotation that must parse.
const punctuation = "()/&#,"

// IsIdentifier reports whether s is an Identifier of the grammar.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !identRune(r, i == 0) {
			return false
		}
	}
	return true
}

func identRune(r rune, first bool) bool {
	if r == '_' || unicode.IsLetter(r) {
		return true
	}
	return !first && unicode.IsDigit(r)
}

// ClassifyTransition decides whether a transition's name is an annotation
// and parses it if so. A plain label gives Label and an empty Transition.
func ClassifyTransition(name string) (Kind, Transition, error) {
	s := strings.TrimSpace(name)
	if s == "" || (!strings.ContainsAny(s, punctuation) && !IsIdentifier(s)) {
		return Label, Transition{}, nil
	}
	t, err := ParseTransition(name)
	if err != nil {
		return Label, Transition{}, err
	}
	return Annotation, t, nil
}

// ClassifyPlace decides whether a place's name is an activity annotation
// and parses it if so. Only a name with punctuation is one: a bare
// identifier names a plain place (an activity needs its parentheses).
func ClassifyPlace(name string) (Kind, *Call, error) {
	s := strings.TrimSpace(name)
	if !strings.ContainsAny(s, punctuation) {
		return Label, nil, nil
	}
	c, err := ParsePlace(name)
	if err != nil {
		return Label, nil, err
	}
	return Annotation, c, nil
}

// ParseTransition parses a transition annotation. The empty annotation is
// valid and has neither event nor action.
func ParseTransition(s string) (Transition, error) {
	p := &parser{src: s}
	if err := p.check(); err != nil {
		return Transition{}, err
	}
	var t Transition
	p.space()
	if !p.eof() && p.peek() != '/' {
		c, err := p.call(false)
		if err != nil {
			return Transition{}, err
		}
		t.Event = c
		p.space()
	}
	if !p.eof() && p.peek() == '/' {
		p.off++
		p.space()
		if p.eof() {
			return Transition{}, p.errorf(p.off, "an action must follow \"/\"")
		}
		c, err := p.call(false)
		if err != nil {
			return Transition{}, err
		}
		t.Action = c
		p.space()
	}
	if !p.eof() {
		if t.Action != nil {
			return Transition{}, p.errorf(p.off, "unexpected %s after the action", p.describe())
		}
		return Transition{}, p.errorf(p.off, "unexpected %s after the event (an action follows \"/\")", p.describe())
	}
	return t, nil
}

// ParsePlace parses a place annotation: an activity call, whose
// parentheses are required.
func ParsePlace(s string) (*Call, error) {
	p := &parser{src: s}
	if err := p.check(); err != nil {
		return nil, err
	}
	p.space()
	if p.eof() {
		return nil, p.errorf(p.off, "an activity needs a name")
	}
	c, err := p.call(true)
	if err != nil {
		return nil, err
	}
	p.space()
	if !p.eof() {
		return nil, p.errorf(p.off, "unexpected %s after the activity", p.describe())
	}
	return c, nil
}

type parser struct {
	src string
	off int
}

func (p *parser) check() error {
	if len(p.src) > MaxLength {
		return p.errorf(MaxLength, "annotation is %d bytes long; the limit is %d", len(p.src), MaxLength)
	}
	if !utf8.ValidString(p.src) {
		for i := 0; i < len(p.src); {
			r, n := utf8.DecodeRuneInString(p.src[i:])
			if r == utf8.RuneError && n == 1 {
				return p.errorf(i, "invalid UTF-8")
			}
			i += n
		}
	}
	return nil
}

func (p *parser) errorf(off int, format string, args ...any) *Error {
	if off > len(p.src) {
		off = len(p.src)
	}
	return &Error{Text: p.src, Offset: off, Column: utf8.RuneCountInString(p.src[:off]) + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.off >= len(p.src) }

func (p *parser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.off:])
	return r
}

func (p *parser) describe() string {
	if p.eof() {
		return "end of annotation"
	}
	return fmt.Sprintf("%q", p.peek())
}

func (p *parser) space() {
	for !p.eof() {
		r, n := utf8.DecodeRuneInString(p.src[p.off:])
		if !unicode.IsSpace(r) {
			return
		}
		p.off += n
	}
}

func (p *parser) ident(what string) (string, int, error) {
	start := p.off
	for !p.eof() {
		r, n := utf8.DecodeRuneInString(p.src[p.off:])
		if !identRune(r, p.off == start) {
			break
		}
		p.off += n
	}
	if p.off == start {
		return "", start, p.errorf(start, "expected %s, found %s", what, p.describe())
	}
	return p.src[start:p.off], start, nil
}

// call reads Identifier ["#" Number] ["(" [Args] ")"]; parens says the
// parenthesised arguments are required.
func (p *parser) call(parens bool) (*Call, error) {
	name, pos, err := p.ident("a name (a letter or \"_\", then letters, digits or \"_\")")
	if err != nil {
		return nil, err
	}
	c := &Call{Name: name, Pos: pos}
	p.space()
	if !p.eof() && p.peek() == '#' {
		p.off++
		p.space()
		start := p.off
		for !p.eof() && p.src[p.off] >= '0' && p.src[p.off] <= '9' {
			p.off++
		}
		if p.off == start {
			return nil, p.errorf(start, "expected a number after \"#\", found %s", p.describe())
		}
		n, err := strconv.Atoi(p.src[start:p.off])
		if err != nil || n > 1<<30 {
			return nil, p.errorf(start, "number %s is too large", p.src[start:p.off])
		}
		c.Number, c.HasNum = n, true
		p.space()
	}
	if p.eof() || p.peek() != '(' {
		if parens {
			return nil, p.errorf(p.off, "expected \"(\" after %s, found %s (an activity is written name(args))", name, p.describe())
		}
		return c, nil
	}
	p.off++ // (
	p.space()
	if !p.eof() && p.peek() == ')' {
		p.off++
		return c, nil
	}
	seen := map[string]int{}
	for {
		p.space()
		a := Arg{Pos: p.off}
		if !p.eof() && p.peek() == '&' {
			a.Bind = true
			p.off++
			p.space()
		}
		n, _, err := p.ident("an argument (x or &x)")
		if err != nil {
			return nil, err
		}
		a.Name = n
		if _, dup := seen[n]; dup {
			return nil, p.errorf(a.Pos, "argument %s is given twice", n)
		}
		seen[n] = a.Pos
		c.Args = append(c.Args, a)
		p.space()
		if p.eof() {
			return nil, p.errorf(p.off, "expected \",\" or \")\", found end of annotation")
		}
		switch p.peek() {
		case ',':
			p.off++
		case ')':
			p.off++
			return c, nil
		default:
			return nil, p.errorf(p.off, "expected \",\" or \")\", found %s", p.describe())
		}
	}
}
