package joinlang

import (
	"fmt"
	"strconv"
)

// Limits that keep Compile's time, memory and recursion bounded.
const (
	// MaxSourceSize is the largest program Compile accepts, in bytes.
	MaxSourceSize = 64 << 10
	// MaxNesting is the deepest parenthesis nesting Compile accepts in a
	// when-expression.
	MaxNesting = 200
)

// Compile parses a JoinLang program. An invalid program gives a
// *CompileError that says where and why.
func Compile(src string) (*Program, error) {
	if len(src) > MaxSourceSize {
		return nil, &CompileError{
			Pos: Pos{Line: 1, Column: 1},
			Msg: fmt.Sprintf("program too large: %d bytes (limit %d)", len(src), MaxSourceSize),
		}
	}
	p := &parser{toks: tokenize(src)}
	return p.program()
}

// MustCompile is like Compile but panics if the program does not compile.
// It is meant for programs fixed in code and tests.
func MustCompile(src string) *Program {
	prog, err := Compile(src)
	if err != nil {
		panic("joinlang: MustCompile: " + err.Error())
	}
	return prog
}

type parser struct {
	toks  []token // ends with tokEOF or tokError
	i     int
	depth int // parenthesis nesting of the current when-expression
}

func (p *parser) peek() token { return p.toks[p.i] }

// peekAt returns the token n places ahead; the last token repeats.
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func isKw(t token, kw string) bool { return t.kind == tokKeyword && t.kw == kw }

func errorAt(pos Pos, format string, args ...any) *CompileError {
	return &CompileError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// unexpected reports that t is not what the grammar wants here. A lexical
// error token reports its own message.
func unexpected(t token, want string) *CompileError {
	if t.kind == tokError {
		return errorAt(t.pos, "%s", t.text)
	}
	return errorAt(t.pos, "expected %s, found %s", want, t.describe())
}

func (p *parser) expectKw(kw, context string) (token, error) {
	t := p.peek()
	if !isKw(t, kw) {
		return t, unexpected(t, fmt.Sprintf("%q%s", kw, context))
	}
	return p.advance(), nil
}

// program := requireSet ( "or" requireSet )* EOF
func (p *parser) program() (*Program, error) {
	if t := p.peek(); t.kind == tokEOF {
		return nil, errorAt(t.pos, `empty program: expected "require"`)
	}
	prog := &Program{}
	for {
		set, err := p.requireSet()
		if err != nil {
			return nil, err
		}
		prog.Alternatives = append(prog.Alternatives, set)
		t := p.peek()
		switch {
		case t.kind == tokEOF:
			return prog, nil
		case isKw(t, "or"):
			p.advance()
			if nt := p.peek(); !isKw(nt, "require") {
				return nil, unexpected(nt, `"require" after "or"`)
			}
		default:
			return nil, unexpected(t, `"require", "or" or end of input`)
		}
	}
}

// requireSet := require+
func (p *parser) requireSet() (*RequireSet, error) {
	set := &RequireSet{}
	for {
		r, err := p.require()
		if err != nil {
			return nil, err
		}
		set.Requires = append(set.Requires, r)
		if !isKw(p.peek(), "require") {
			return set, nil
		}
	}
}

// require parses one requirement:
//
//	require := "require" ( "node" STRING | "tokenset" STRING
//	         | "all" "arcs" [label] | "at" "least" NUMBER "arcs" [label] ) [when]
func (p *parser) require() (*Require, error) {
	t, err := p.expectKw("require", "")
	if err != nil {
		return nil, err
	}
	r := &Require{Pos: t.pos}
	t = p.peek()
	switch {
	case isKw(t, "node"), isKw(t, "tokenset"):
		p.advance()
		r.Kind = RequireNode
		what := "node name"
		if t.kw == "tokenset" {
			r.Kind = RequireTokenSet
			what = "token set name"
		}
		s := p.peek()
		if s.kind != tokString {
			return nil, unexpected(s, fmt.Sprintf("%s as a quoted string after %q", what, t.text))
		}
		p.advance()
		r.Name = s.text
	case isKw(t, "all"):
		p.advance()
		r.Kind = RequireAllArcs
		if _, err := p.expectKw("arcs", ` after "all"`); err != nil {
			return nil, err
		}
		if err := p.label(r); err != nil {
			return nil, err
		}
	case isKw(t, "at"):
		p.advance()
		r.Kind = RequireAtLeastArcs
		if _, err := p.expectKw("least", ` after "at"`); err != nil {
			return nil, err
		}
		n, err := p.count()
		if err != nil {
			return nil, err
		}
		r.Count = n
		if _, err := p.expectKw("arcs", " after the arc count"); err != nil {
			return nil, err
		}
		if err := p.label(r); err != nil {
			return nil, err
		}
	default:
		return nil, unexpected(t, `"node", "tokenset", "all" or "at" after "require"`)
	}
	if isKw(p.peek(), "when") {
		p.advance()
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		r.When = e
	}
	return r, nil
}

// count := NUMBER, a positive decimal integer without a sign or leading zeros.
func (p *parser) count() (int, error) {
	t := p.peek()
	if t.kind != tokNumber {
		return 0, unexpected(t, `arc count after "at least"`)
	}
	lit := t.text
	if lit[0] == '-' || lit[0] == '0' {
		return 0, errorAt(t.pos, "arc count must be a positive integer without sign or leading zeros, found %s", lit)
	}
	n, err := strconv.ParseInt(lit, 10, 32)
	if err != nil {
		return 0, errorAt(t.pos, "arc count %s is too large", lit)
	}
	p.advance()
	return int(n), nil
}

// label := [ "labelled" ( STRING | "default" ) ]
func (p *parser) label(r *Require) error {
	if !isKw(p.peek(), "labelled") {
		return nil
	}
	kw := p.advance()
	t := p.peek()
	switch {
	case t.kind == tokString:
		r.Label = t.text
	case isKw(t, "default"):
		r.Label = ""
	default:
		return unexpected(t, fmt.Sprintf("arc name as a quoted string or \"default\" after %q", kw.text))
	}
	p.advance()
	r.Labelled = true
	return nil
}

// orExpr := andExpr ( "or" andExpr )*
//
// An "or" followed by "require" is not part of the expression: it separates
// alternatives of the program.
func (p *parser) orExpr() (Expr, error) {
	left, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for isKw(p.peek(), "or") && !isKw(p.peekAt(1), "require") {
		p.advance()
		right, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		left = Or{Left: left, Right: right}
	}
	return left, nil
}

// andExpr := notExpr ( "and" notExpr )*
func (p *parser) andExpr() (Expr, error) {
	left, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for isKw(p.peek(), "and") {
		p.advance()
		right, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		left = And{Left: left, Right: right}
	}
	return left, nil
}

// notExpr := "not" primary | primary
func (p *parser) notExpr() (Expr, error) {
	if !isKw(p.peek(), "not") {
		return p.primary()
	}
	p.advance()
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	return Not{X: x}, nil
}

// primary := ID | "(" orExpr ")"
func (p *parser) primary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokIdent:
		p.advance()
		return Ident{Name: t.text, Pos: t.pos}, nil
	case tokKeyword:
		return nil, errorAt(t.pos, "keyword %q cannot be used as a predicate name", t.text)
	case tokLParen:
		if p.depth >= MaxNesting {
			return nil, errorAt(t.pos, "expression nested too deeply (limit %d levels of parentheses)", MaxNesting)
		}
		p.advance()
		p.depth++
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		p.depth--
		if c := p.peek(); c.kind != tokRParen {
			return nil, unexpected(c, fmt.Sprintf(`")" to close the "(" at %s`, t.pos))
		}
		p.advance()
		return e, nil
	}
	return nil, unexpected(t, `predicate name or "("`)
}
