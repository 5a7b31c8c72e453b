// Package uel evaluates the Unified Expression Language as BPMN models for
// Camunda 7, Flowable and Activiti write it: ${approved}, ${amount > 1000},
// ${order.total >= 10 && !rush}, ${empty comment}, and text with
// expressions inside ("Dear ${name}"). Veena runs no Java, so method
// calls are refused when the expression is compiled, with one exception
// models use to read a variable: execution.getVariable("name").
// Evaluation has a budget of steps and no side effects.
package uel

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/expr"
)

// Program is a compiled UEL expression or template.
type Program struct {
	src   string
	parts []part
}

type part struct {
	text string // literal text (x == nil)
	x    node
}

// Source is the expression as written.
func (p *Program) Source() string { return p.src }

// Language is UEL.
func (p *Program) Language() expr.Language { return expr.UEL }

// IsUEL reports whether s holds a UEL expression (${…} or #{…}).
func IsUEL(s string) bool { return strings.Contains(s, "${") || strings.Contains(s, "#{") }

// Compile parses a template: text with ${…} or #{…} expressions in it.
func Compile(src string) (*Program, error) {
	p := &Program{src: src}
	rest, off := src, 0
	for {
		i := strings.Index(rest, "${")
		if j := strings.Index(rest, "#{"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			if rest != "" {
				p.parts = append(p.parts, part{text: rest})
			}
			break
		}
		if i > 0 {
			p.parts = append(p.parts, part{text: rest[:i]})
		}
		end := closing(rest, i+2)
		if end < 0 {
			return nil, &expr.Error{Lang: expr.UEL, Source: src, Offset: off + i, Msg: "unterminated ${ expression"}
		}
		x, err := parseExpr(rest[i+2:end], off+i+2)
		if err != nil {
			var pe *parseError
			if errors.As(err, &pe) {
				return nil, &expr.Error{Lang: expr.UEL, Source: src, Offset: pe.off, Msg: pe.msg}
			}
			return nil, &expr.Error{Lang: expr.UEL, Source: src, Offset: -1, Msg: err.Error()}
		}
		p.parts = append(p.parts, part{x: x})
		off += end + 1
		rest = rest[end+1:]
	}
	return p, nil
}

// closing finds the "}" that ends an expression starting at i, skipping
// string literals.
func closing(s string, i int) int {
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '}':
			return i
		}
	}
	return -1
}

// Eval evaluates the expression; a template of one expression gives its
// value, a mixed template a string.
func (p *Program) Eval(env expr.Env) (out any, err error) {
	ev := &evaluator{budget: expr.NewBudget(env), vars: env.Vars}
	defer func() {
		if r := recover(); r != nil {
			ee, ok := r.(*evalError)
			if !ok {
				panic(r)
			}
			out, err = nil, &expr.Error{Lang: expr.UEL, Source: p.src, Offset: ee.off, Msg: ee.msg, Err: ee.err}
		}
	}()
	if len(p.parts) == 1 && p.parts[0].x != nil {
		return ev.eval(p.parts[0].x), nil
	}
	var b strings.Builder
	for _, pt := range p.parts {
		if pt.x == nil {
			b.WriteString(pt.text)
			continue
		}
		v := ev.eval(pt.x)
		if v != nil {
			b.WriteString(text(v))
		}
	}
	return b.String(), nil
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// ---- parsing

type node interface{ pos() int }

type (
	lit struct {
		v   any
		off int
	}
	ident struct {
		name string
		off  int
	}
	member struct {
		x   node
		key node // a string literal for x.name
		off int
	}
	unary struct {
		op  string
		x   node
		off int
	}
	binary struct {
		op   string
		l, r node
		off  int
	}
	cond struct {
		c, t, e node
		off     int
	}
	getVariable struct {
		name node
		off  int
	}
)

func (n *lit) pos() int         { return n.off }
func (n *ident) pos() int       { return n.off }
func (n *member) pos() int      { return n.off }
func (n *unary) pos() int       { return n.off }
func (n *binary) pos() int      { return n.off }
func (n *cond) pos() int        { return n.off }
func (n *getVariable) pos() int { return n.off }

type parseError struct {
	off int
	msg string
}

func (e *parseError) Error() string { return e.msg }

type tok struct {
	kind byte // 'n' number, 's' string, 'i' identifier, 'o' operator, 0 end
	text string
	off  int
}

func tokenize(s string, base int) ([]tok, error) {
	var out []tok
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9':
			st := i
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
				i++
			}
			out = append(out, tok{'n', s[st:i], base + st})
		case c == '\'' || c == '"':
			var b strings.Builder
			st := i
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			if i >= len(s) {
				return nil, &parseError{base + st, "unterminated string"}
			}
			i++
			out = append(out, tok{'s', b.String(), base + st})
		case c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			st := i
			for i < len(s) && (s[i] == '_' || s[i] == '$' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
				i++
			}
			out = append(out, tok{'i', s[st:i], base + st})
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", "[", "]", "(", ")", ","} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, &parseError{base + i, fmt.Sprintf("unexpected character %q", c)}
			}
			out = append(out, tok{'o', op, base + i})
			i += len(op)
		}
	}
	return append(out, tok{0, "", base + len(s)}), nil
}

type parser struct {
	toks  []tok
	i     int
	depth int
}

func (p *parser) peek() tok { return p.toks[p.i] }
func (p *parser) next() tok {
	t := p.toks[p.i]
	if t.kind != 0 {
		p.i++
	}
	return t
}
func (p *parser) fail(off int, format string, args ...any) {
	panic(&parseError{off, fmt.Sprintf(format, args...)})
}
func (p *parser) is(kind byte, texts ...string) bool {
	t := p.peek()
	if t.kind != kind {
		return false
	}
	for _, s := range texts {
		if t.text == s {
			return true
		}
	}
	return false
}

func parseExpr(s string, base int) (n node, err error) {
	toks, err := tokenize(s, base)
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
	if p.peek().kind == 0 {
		p.fail(base, "empty expression")
	}
	n = p.ternary()
	if t := p.peek(); t.kind != 0 {
		p.fail(t.off, "unexpected %q", t.text)
	}
	return n, nil
}

func (p *parser) ternary() node {
	p.depth++
	if p.depth > 100 {
		p.fail(p.peek().off, "expression nested too deeply")
	}
	defer func() { p.depth-- }()
	c := p.or()
	if p.is('o', "?") {
		t := p.next()
		a := p.ternary()
		if !p.is('o', ":") {
			p.fail(p.peek().off, "expected \":\"")
		}
		p.next()
		return &cond{c, a, p.ternary(), t.off}
	}
	return c
}

func (p *parser) or() node {
	l := p.and()
	for p.is('o', "||") || p.is('i', "or") {
		t := p.next()
		l = &binary{"||", l, p.and(), t.off}
	}
	return l
}

func (p *parser) and() node {
	l := p.equality()
	for p.is('o', "&&") || p.is('i', "and") {
		t := p.next()
		l = &binary{"&&", l, p.equality(), t.off}
	}
	return l
}

var opAlias = map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "div": "/", "mod": "%"}

func (p *parser) equality() node {
	l := p.relational()
	for p.is('o', "==", "!=") || p.is('i', "eq", "ne") {
		t := p.next()
		op := t.text
		if a, ok := opAlias[op]; ok {
			op = a
		}
		l = &binary{op, l, p.relational(), t.off}
	}
	return l
}

func (p *parser) relational() node {
	l := p.additive()
	for p.is('o', "<", "<=", ">", ">=") || p.is('i', "lt", "le", "gt", "ge") {
		t := p.next()
		op := t.text
		if a, ok := opAlias[op]; ok {
			op = a
		}
		l = &binary{op, l, p.additive(), t.off}
	}
	return l
}

func (p *parser) additive() node {
	l := p.multiplicative()
	for p.is('o', "+", "-") {
		t := p.next()
		l = &binary{t.text, l, p.multiplicative(), t.off}
	}
	return l
}

func (p *parser) multiplicative() node {
	l := p.unaryExpr()
	for p.is('o', "*", "/", "%") || p.is('i', "div", "mod") {
		t := p.next()
		op := t.text
		if a, ok := opAlias[op]; ok {
			op = a
		}
		l = &binary{op, l, p.unaryExpr(), t.off}
	}
	return l
}

func (p *parser) unaryExpr() node {
	switch {
	case p.is('o', "!", "-") || p.is('i', "not", "empty"):
		t := p.next()
		op := t.text
		if op == "not" {
			op = "!"
		}
		return &unary{op, p.unaryExpr(), t.off}
	}
	return p.postfix()
}

func (p *parser) postfix() node {
	x := p.primary()
	for {
		switch {
		case p.is('o', "."):
			p.next()
			n := p.next()
			if n.kind != 'i' {
				p.fail(n.off, "expected a property name")
			}
			if p.is('o', "(") {
				if id, ok := x.(*ident); ok && id.name == "execution" && n.text == "getVariable" {
					p.next()
					arg := p.ternary()
					if !p.is('o', ")") {
						p.fail(p.peek().off, "expected \")\"")
					}
					p.next()
					x = &getVariable{arg, n.off}
					continue
				}
				p.fail(n.off, "method calls (%s) are not supported: Veena runs no Java", n.text)
			}
			x = &member{x, &lit{n.text, n.off}, n.off}
		case p.is('o', "["):
			t := p.next()
			k := p.ternary()
			if !p.is('o', "]") {
				p.fail(p.peek().off, "expected \"]\"")
			}
			p.next()
			x = &member{x, k, t.off}
		case p.is('o', "("):
			p.fail(p.peek().off, "function calls are not supported")
		default:
			return x
		}
	}
}

func (p *parser) primary() node {
	t := p.next()
	switch t.kind {
	case 'n':
		if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return &lit{i, t.off}
		}
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			p.fail(t.off, "bad number %q", t.text)
		}
		return &lit{f, t.off}
	case 's':
		return &lit{t.text, t.off}
	case 'i':
		switch t.text {
		case "true":
			return &lit{true, t.off}
		case "false":
			return &lit{false, t.off}
		case "null":
			return &lit{nil, t.off}
		}
		return &ident{t.text, t.off}
	case 'o':
		if t.text == "(" {
			x := p.ternary()
			if !p.is('o', ")") {
				p.fail(p.peek().off, "expected \")\"")
			}
			p.next()
			return x
		}
	}
	if t.kind == 0 {
		p.fail(t.off, "unexpected end of the expression")
	}
	p.fail(t.off, "unexpected %q", t.text)
	return nil
}

// ---- evaluation

type evalError struct {
	off int
	msg string
	err error
}

func (e *evalError) Error() string { return e.msg }

type evaluator struct {
	budget expr.Budget
	vars   expr.Vars
}

func (ev *evaluator) fail(n node, format string, args ...any) {
	panic(&evalError{off: n.pos(), msg: fmt.Sprintf(format, args...)})
}

func (ev *evaluator) lookup(n node, name string) any {
	if ev.vars != nil {
		if v, ok := ev.vars.Get(name); ok {
			return expr.Normalize(v)
		}
	}
	// Camunda 7 and Flowable fail on an unknown variable.
	ev.fail(n, "unknown property %q", name)
	return nil
}

func (ev *evaluator) eval(n node) any {
	if err := ev.budget.Step(1); err != nil {
		panic(&evalError{off: n.pos(), msg: err.Error(), err: err})
	}
	switch x := n.(type) {
	case *lit:
		return x.v
	case *ident:
		return ev.lookup(x, x.name)
	case *getVariable:
		name, ok := ev.eval(x.name).(string)
		if !ok {
			ev.fail(x, "getVariable needs a name")
		}
		if ev.vars != nil {
			if v, ok := ev.vars.Get(name); ok {
				return expr.Normalize(v)
			}
		}
		return nil
	case *member:
		base := ev.eval(x.x)
		k := ev.eval(x.key)
		switch b := base.(type) {
		case map[string]any:
			key, ok := k.(string)
			if !ok {
				ev.fail(x, "a map key must be a string")
			}
			return b[key]
		case []any:
			i, ok := k.(int64)
			if !ok || i < 0 || int(i) >= len(b) {
				ev.fail(x, "index %v out of range", k)
			}
			return b[i]
		case nil:
			ev.fail(x, "cannot read property %v of null", k)
		}
		ev.fail(x, "cannot read property %v of a %s", k, expr.TypeName(base))
	case *unary:
		v := ev.eval(x.x)
		switch x.op {
		case "!":
			b, ok := v.(bool)
			if !ok {
				ev.fail(x, "! needs a boolean, not %s", expr.TypeName(v))
			}
			return !b
		case "empty":
			switch y := v.(type) {
			case nil:
				return true
			case string:
				return y == ""
			case []any:
				return len(y) == 0
			case map[string]any:
				return len(y) == 0
			}
			return false
		case "-":
			switch y := v.(type) {
			case int64:
				return -y
			case float64:
				return -y
			}
			ev.fail(x, "cannot negate a %s", expr.TypeName(v))
		}
	case *cond:
		c, ok := ev.eval(x.c).(bool)
		if !ok {
			ev.fail(x, "the condition of ?: must be a boolean")
		}
		if c {
			return ev.eval(x.t)
		}
		return ev.eval(x.e)
	case *binary:
		return ev.binary(x)
	}
	ev.fail(n, "cannot evaluate %T", n)
	return nil
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func (ev *evaluator) binary(x *binary) any {
	switch x.op {
	case "&&", "||":
		l, ok := ev.eval(x.l).(bool)
		if !ok {
			ev.fail(x, "%s needs booleans", x.op)
		}
		if x.op == "&&" && !l || x.op == "||" && l {
			return l
		}
		r, ok := ev.eval(x.r).(bool)
		if !ok {
			ev.fail(x, "%s needs booleans", x.op)
		}
		return r
	}
	l, r := ev.eval(x.l), ev.eval(x.r)
	switch x.op {
	case "==", "!=":
		eq := equal(l, r)
		if x.op == "==" {
			return eq
		}
		return !eq
	case "<", "<=", ">", ">=":
		var c int
		if ls, ok := l.(string); ok {
			rs, ok := r.(string)
			if !ok {
				ev.fail(x, "cannot compare a string and a %s", expr.TypeName(r))
			}
			c = strings.Compare(ls, rs)
		} else {
			a, ok1 := num(l)
			b, ok2 := num(r)
			if !ok1 || !ok2 {
				ev.fail(x, "cannot compare a %s and a %s", expr.TypeName(l), expr.TypeName(r))
			}
			switch {
			case a < b:
				c = -1
			case a > b:
				c = 1
			}
		}
		switch x.op {
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		}
		return c >= 0
	case "+":
		if ls, ok := l.(string); ok {
			if rs, ok := r.(string); ok {
				return ls + rs
			}
		}
	}
	li, lInt := l.(int64)
	ri, rInt := r.(int64)
	if lInt && rInt {
		switch x.op {
		case "+":
			return li + ri
		case "-":
			return li - ri
		case "*":
			return li * ri
		case "/":
			if ri == 0 {
				ev.fail(x, "division by zero")
			}
			if li%ri == 0 {
				return li / ri
			}
			return float64(li) / float64(ri)
		case "%":
			if ri == 0 {
				ev.fail(x, "division by zero")
			}
			return li % ri
		}
	}
	a, ok1 := num(l)
	b, ok2 := num(r)
	if !ok1 || !ok2 {
		ev.fail(x, "cannot apply %s to a %s and a %s", x.op, expr.TypeName(l), expr.TypeName(r))
	}
	var v float64
	switch x.op {
	case "+":
		v = a + b
	case "-":
		v = a - b
	case "*":
		v = a * b
	case "/":
		v = a / b
	case "%":
		v = math.Mod(a, b)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		ev.fail(x, "the result of %s is not a number", x.op)
	}
	return v
}

func equal(l, r any) bool {
	if l == nil || r == nil {
		return l == nil && r == nil
	}
	if a, ok := num(l); ok {
		if _, isStr := l.(string); !isStr {
			if b, ok := num(r); ok {
				return a == b
			}
		}
	}
	switch a := l.(type) {
	case string:
		b, ok := r.(string)
		return ok && a == b
	case bool:
		b, ok := r.(bool)
		return ok && a == b
	}
	return fmt.Sprint(l) == fmt.Sprint(r)
}
