package feel

import (
	"fmt"
	"strconv"
	"strings"
)

type node interface{ pos() int }

type (
	lit struct {
		v   any
		off int
	}
	temporalLit struct {
		text string
		off  int
	}
	nameRef struct {
		name string
		off  int
	}
	pathExpr struct {
		x    node
		name string
		off  int
	}
	filterExpr struct {
		x, cond node
		off     int
	}
	callExpr struct {
		fn    string
		args  []node
		named map[string]node
		off   int
	}
	unaryExpr struct {
		op  string
		x   node
		off int
	}
	binaryExpr struct {
		op   string
		l, r node
		off  int
	}
	betweenExpr struct {
		x, lo, hi node
		off       int
	}
	inExpr struct {
		x     node
		tests []node // each a value, list, range or unaryTest
		off   int
	}
	unaryTest struct { // "> 5" inside "in (...)"
		op  string
		x   node
		off int
	}
	ifExpr struct {
		c, t, e node
		off     int
	}
	iterVar struct {
		name string
		in   node // a list, or a rangeExpr
	}
	forExpr struct {
		vars []iterVar
		ret  node
		off  int
	}
	quantExpr struct {
		every bool
		vars  []iterVar
		cond  node
		off   int
	}
	listLit struct {
		elems []node
		off   int
	}
	contextLit struct {
		keys []string
		vals []node
		off  int
	}
	rangeExpr struct {
		lo, hi         node
		openLo, openHi bool
		off            int
	}
)

func (n *lit) pos() int         { return n.off }
func (n *temporalLit) pos() int { return n.off }
func (n *nameRef) pos() int     { return n.off }
func (n *pathExpr) pos() int    { return n.off }
func (n *filterExpr) pos() int  { return n.off }
func (n *callExpr) pos() int    { return n.off }
func (n *unaryExpr) pos() int   { return n.off }
func (n *binaryExpr) pos() int  { return n.off }
func (n *betweenExpr) pos() int { return n.off }
func (n *inExpr) pos() int      { return n.off }
func (n *unaryTest) pos() int   { return n.off }
func (n *ifExpr) pos() int      { return n.off }
func (n *forExpr) pos() int     { return n.off }
func (n *quantExpr) pos() int   { return n.off }
func (n *listLit) pos() int     { return n.off }
func (n *contextLit) pos() int  { return n.off }
func (n *rangeExpr) pos() int   { return n.off }

type parseError struct {
	off int
	msg string
}

func (e *parseError) Error() string { return e.msg }

type parser struct {
	toks  []token
	i     int
	depth int
}

const maxDepth = 100

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(off int, format string, args ...any) {
	panic(&parseError{off, fmt.Sprintf(format, args...)})
}

func (p *parser) isOp(s string) bool   { t := p.peek(); return t.kind == tOp && t.text == s }
func (p *parser) isName(s string) bool { t := p.peek(); return t.kind == tName && t.text == s }

func (p *parser) expectOp(s string) token {
	t := p.next()
	if t.kind != tOp || t.text != s {
		p.fail(t.off, "expected %q, found %s", s, describe(t))
	}
	return t
}

func (p *parser) expectName(s string) token {
	t := p.next()
	if t.kind != tName || t.text != s {
		p.fail(t.off, "expected %q, found %s", s, describe(t))
	}
	return t
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "the end of the expression"
	case tStr:
		return strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

// parse parses a whole expression.
func parse(src string) (n node, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*parseError)
			if !ok {
				panic(r)
			}
			n, err = nil, pe
		}
	}()
	if p.peek().kind == tEOF {
		p.fail(0, "empty expression")
	}
	n = p.expr()
	if t := p.peek(); t.kind != tEOF {
		p.fail(t.off, "unexpected %s", describe(t))
	}
	return n, nil
}

var keywords = map[string]bool{"if": true, "then": true, "else": true, "for": true, "in": true, "return": true,
	"some": true, "every": true, "satisfies": true, "and": true, "or": true, "between": true, "function": true,
	"instance": true}

func (p *parser) expr() node {
	p.depth++
	if p.depth > maxDepth {
		p.fail(p.peek().off, "expression nested deeper than %d levels", maxDepth)
	}
	defer func() { p.depth-- }()
	t := p.peek()
	if t.kind == tName {
		switch t.text {
		case "if":
			p.next()
			c := p.expr()
			p.expectName("then")
			th := p.expr()
			p.expectName("else")
			el := p.expr()
			return &ifExpr{c, th, el, t.off}
		case "for":
			p.next()
			vars := p.iterVars("return")
			p.expectName("return")
			return &forExpr{vars, p.expr(), t.off}
		case "some", "every":
			p.next()
			vars := p.iterVars("satisfies")
			p.expectName("satisfies")
			return &quantExpr{t.text == "every", vars, p.expr(), t.off}
		case "function":
			p.fail(t.off, "function definitions are not allowed in expressions")
		}
	}
	return p.disjunction()
}

func (p *parser) iterVars(end string) []iterVar {
	var vars []iterVar
	for {
		n := p.next()
		if n.kind != tName || keywords[n.text] {
			p.fail(n.off, "expected a variable name, found %s", describe(n))
		}
		p.expectName("in")
		lo := p.disjunction()
		var in node = lo
		if p.isOp("..") {
			p.next()
			in = &rangeExpr{lo: lo, hi: p.disjunction(), off: lo.pos()}
		}
		vars = append(vars, iterVar{n.text, in})
		if !p.isOp(",") {
			return vars
		}
		p.next()
	}
}

func (p *parser) disjunction() node {
	l := p.conjunction()
	for p.isName("or") {
		t := p.next()
		l = &binaryExpr{"or", l, p.conjunction(), t.off}
	}
	return l
}

func (p *parser) conjunction() node {
	l := p.comparison()
	for p.isName("and") {
		t := p.next()
		l = &binaryExpr{"and", l, p.comparison(), t.off}
	}
	return l
}

func (p *parser) comparison() node {
	l := p.additive()
	t := p.peek()
	switch {
	case t.kind == tOp && (t.text == "=" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
		p.next()
		return &binaryExpr{t.text, l, p.additive(), t.off}
	case t.kind == tName && t.text == "between":
		p.next()
		lo := p.additive()
		p.expectName("and")
		return &betweenExpr{l, lo, p.additive(), t.off}
	case t.kind == tName && t.text == "in":
		p.next()
		return &inExpr{l, p.positiveUnaryTests(), t.off}
	case t.kind == tName && t.text == "instance":
		p.fail(t.off, "instance of is not supported")
	}
	return l
}

// positiveUnaryTests reads the right side of "in": a parenthesised list of
// tests, or one test.
func (p *parser) positiveUnaryTests() []node {
	if p.isOp("(") && !p.looksLikeRange() {
		p.next()
		var tests []node
		for {
			tests = append(tests, p.unaryTestOrValue())
			if !p.isOp(",") {
				break
			}
			p.next()
		}
		p.expectOp(")")
		return tests
	}
	return []node{p.unaryTestOrValue()}
}

// looksLikeRange reports whether "(" starts an interval like (1..5].
func (p *parser) looksLikeRange() bool {
	depth := 0
	for j := p.i; j < len(p.toks); j++ {
		t := p.toks[j]
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return false
			}
		case "..":
			if depth == 1 {
				return true
			}
		case ",":
			if depth == 1 {
				return false
			}
		}
	}
	return false
}

func (p *parser) unaryTestOrValue() node {
	t := p.peek()
	if t.kind == tOp && (t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=" || t.text == "=" || t.text == "!=") {
		p.next()
		return &unaryTest{t.text, p.additive(), t.off}
	}
	return p.additive()
}

func (p *parser) additive() node {
	l := p.multiplicative()
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		l = &binaryExpr{t.text, l, p.multiplicative(), t.off}
	}
	return l
}

func (p *parser) multiplicative() node {
	l := p.power()
	for p.isOp("*") || p.isOp("/") {
		t := p.next()
		l = &binaryExpr{t.text, l, p.power(), t.off}
	}
	return l
}

func (p *parser) power() node {
	l := p.unary()
	for p.isOp("**") {
		t := p.next()
		l = &binaryExpr{"**", l, p.unary(), t.off}
	}
	return l
}

func (p *parser) unary() node {
	if p.isOp("-") {
		t := p.next()
		return &unaryExpr{"-", p.unary(), t.off}
	}
	return p.postfix()
}

func (p *parser) postfix() node {
	x := p.primary()
	for {
		switch {
		case p.isOp("."):
			p.next()
			n := p.next()
			if n.kind != tName {
				p.fail(n.off, "expected a name after \".\", found %s", describe(n))
			}
			x = &pathExpr{x, n.text, n.off}
		case p.isOp("["):
			t := p.next()
			c := p.expr()
			p.expectOp("]")
			x = &filterExpr{x, c, t.off}
		case p.isOp("("):
			// Only named functions are called.
			ref, ok := x.(*nameRef)
			if !ok {
				p.fail(p.peek().off, "only built-in functions can be called")
			}
			x = p.call(ref.name, ref.off)
		default:
			return x
		}
	}
}

func (p *parser) call(name string, off int) node {
	if _, ok := builtins().funcs[name]; !ok {
		p.fail(off, "unknown function %q", name)
	}
	p.expectOp("(")
	c := &callExpr{fn: name, off: off}
	if p.isOp(")") {
		p.next()
		return c
	}
	for {
		// Named argument: name ":" expr
		if t := p.peek(); t.kind == tName && p.peekAt(1).kind == tOp && p.peekAt(1).text == ":" {
			p.next()
			p.next()
			if c.named == nil {
				c.named = map[string]node{}
			}
			c.named[t.text] = p.expr()
		} else {
			if c.named != nil {
				p.fail(p.peek().off, "positional argument after named arguments")
			}
			c.args = append(c.args, p.expr())
		}
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	p.expectOp(")")
	return c
}

// functionName tries to read a multi-word function name (string length,
// date and time) followed by "(".
func (p *parser) functionName() (string, bool) {
	for _, name := range builtins().multiWord {
		words := strings.Split(name, " ")
		ok := true
		for k, w := range words {
			t := p.peekAt(k)
			if t.kind != tName || t.text != w {
				ok = false
				break
			}
		}
		if ok {
			if t := p.peekAt(len(words)); t.kind == tOp && t.text == "(" {
				for range words {
					p.next()
				}
				return name, true
			}
		}
	}
	return "", false
}

func (p *parser) primary() node {
	t := p.peek()
	switch t.kind {
	case tNum:
		p.next()
		if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return &lit{i, t.off}
		}
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			p.fail(t.off, "bad number %q", t.text)
		}
		return &lit{f, t.off}
	case tStr:
		p.next()
		return &lit{t.text, t.off}
	case tTemporal:
		p.next()
		if _, err := parseTemporal(t.text); err != nil {
			p.fail(t.off, "%v", err)
		}
		return &temporalLit{t.text, t.off}
	case tName:
		if name, ok := p.functionName(); ok {
			return p.call(name, t.off)
		}
		p.next()
		switch t.text {
		case "true":
			return &lit{true, t.off}
		case "false":
			return &lit{false, t.off}
		case "null":
			return &lit{nil, t.off}
		case "not":
			if p.isOp("(") {
				return p.call("not", t.off)
			}
		}
		if keywords[t.text] {
			p.fail(t.off, "unexpected %q", t.text)
		}
		// FEEL names may hold spaces: "Vacation Approval Status".
		name := t.text
		for {
			n := p.peek()
			if n.kind != tName || keywords[n.text] || n.text == "true" || n.text == "false" || n.text == "null" {
				break
			}
			p.next()
			name += " " + n.text
		}
		return &nameRef{name, t.off}
	case tOp:
		switch t.text {
		case "(":
			if p.looksLikeRange() {
				return p.rangeLiteral()
			}
			p.next()
			x := p.expr()
			p.expectOp(")")
			return x
		case "[":
			if p.bracketIsRange() {
				return p.rangeLiteral()
			}
			p.next()
			l := &listLit{off: t.off}
			if p.isOp("]") {
				p.next()
				return l
			}
			for {
				l.elems = append(l.elems, p.expr())
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			p.expectOp("]")
			return l
		case "]":
			if p.bracketIsRange() { // ]1..5]
				return p.rangeLiteral()
			}
		case "{":
			p.next()
			c := &contextLit{off: t.off}
			if p.isOp("}") {
				p.next()
				return c
			}
			for {
				k := p.next()
				if k.kind != tName && k.kind != tStr {
					p.fail(k.off, "expected a context key, found %s", describe(k))
				}
				p.expectOp(":")
				c.keys = append(c.keys, k.text)
				c.vals = append(c.vals, p.expr())
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			p.expectOp("}")
			return c
		}
	}
	p.fail(t.off, "unexpected %s", describe(t))
	return nil
}

// bracketIsRange reports whether "[" (or "]") starts an interval [1..5].
func (p *parser) bracketIsRange() bool {
	depth := 0
	for j := p.i; j < len(p.toks); j++ {
		t := p.toks[j]
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case "(", "{":
			depth++
		case ")", "}":
			depth--
		case "[", "]":
			if j == p.i {
				depth = 1
				continue
			}
			if t.text == "[" {
				depth++
			} else {
				depth--
			}
			if depth == 0 {
				return false
			}
		case "..":
			if depth == 1 {
				return true
			}
		case ",":
			if depth == 1 {
				return false
			}
		}
	}
	return false
}

func (p *parser) rangeLiteral() node {
	open := p.next()
	r := &rangeExpr{off: open.off, openLo: open.text != "["}
	r.lo = p.additive()
	p.expectOp("..")
	r.hi = p.additive()
	cl := p.next()
	switch {
	case cl.kind == tOp && cl.text == "]":
	case cl.kind == tOp && (cl.text == ")" || cl.text == "["):
		r.openHi = true
	default:
		p.fail(cl.off, "expected the end of a range, found %s", describe(cl))
	}
	return r
}
