package rubric

import "math"

// reserved reports whether word is spelled as a keyword of Rubric's original
// grammar, where it could never be an identifier. Other spellings of
// keywords are keywords only where the grammar expects a keyword (see the
// package documentation).
func reserved(word string) bool {
	switch word {
	case "and", "AND", "or", "OR", "not", "NOT",
		"Accept", "Discard", "Skip",
		"before", "after", "business",
		"day", "days", "hour", "hours", "week", "weeks":
		return true
	}
	for _, kw := range [...]string{"if", "then", "else", "delay", "until", "second", "seconds", "minute", "minutes"} {
		if isKeyword(word, kw) {
			return true
		}
	}
	return false
}

// isKeyword reports whether word is kw (lower case ASCII) in any case.
func isKeyword(word, kw string) bool {
	if len(word) != len(kw) {
		return false
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != kw[i] {
			return false
		}
	}
	return true
}

func unitOf(word string) (unit, bool) {
	for u := uSecond; u <= uWeek; u++ {
		if isKeyword(word, unitNames[u]) || isKeyword(word, unitNames[u]+"s") {
			return u, true
		}
	}
	return 0, false
}

type parser struct {
	toks  []token
	i     int
	depth int
}

func parse(src string) (*stmt, error) {
	if len(src) > MaxSourceLen {
		l := &lexer{src: src, line: 1, col: 1}
		l.advanceText(src[:MaxSourceLen])
		return nil, errAt(l.here(), "program is longer than %d bytes", MaxSourceLen)
	}
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	if toks[0].kind == tEOF {
		// A blank guard means Accept.
		return &stmt{kind: sAccept, pos: toks[0].pos}, nil
	}
	p := &parser{toks: toks}
	s, err := p.stmt()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected("end of input")
	}
	return s, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
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

// isWord reports whether the next token is the keyword kw, in any case.
func (p *parser) isWord(kw string) bool {
	t := p.peek()
	return t.kind == tWord && isKeyword(t.text, kw)
}

func (p *parser) unexpected(want string) *CompileError {
	t := p.peek()
	return errAt(t.pos, "expected %s, found %s", want, t.describe())
}

func (p *parser) expectWord(kw string) error {
	if !p.isWord(kw) {
		return p.unexpected(`"` + kw + `"`)
	}
	p.next()
	return nil
}

// ident reads an identifier: a word that is not a reserved spelling.
func (p *parser) ident(want string) (string, error) {
	t := p.peek()
	if t.kind != tWord || reserved(t.text) {
		return "", p.unexpected(want)
	}
	p.next()
	return t.text, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return errAt(p.peek().pos, "program is nested deeper than %d levels", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) stmt() (*stmt, error) {
	if !p.isWord("if") {
		return p.result()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	s := &stmt{kind: sIf, pos: p.next().pos}
	var err error
	if s.cond, err = p.orExpr(); err != nil {
		return nil, err
	}
	if err = p.expectWord("then"); err != nil {
		return nil, err
	}
	if s.then, err = p.stmt(); err != nil {
		return nil, err
	}
	if err = p.expectWord("else"); err != nil {
		return nil, err
	}
	if s.els, err = p.stmt(); err != nil {
		return nil, err
	}
	return s, nil
}

const wantResult = `a result (Accept, Discard, Skip, delay until, a number, a string, a date or @function)`

func (p *parser) result() (*stmt, error) {
	t := p.peek()
	s := &stmt{pos: t.pos}
	switch t.kind {
	case tNumber:
		if t.big {
			return nil, errAt(t.pos, "number %s does not fit in 64 bits", t.text)
		}
		p.next()
		s.kind, s.num = sInt, t.num
		return s, nil
	case tString:
		p.next()
		s.kind, s.name = sString, t.text
		return s, nil
	case tLParen:
		p.next()
		s.kind = sDate
		var err error
		if s.date, err = p.dateSpec(); err != nil {
			return nil, err
		}
		if p.peek().kind != tRParen {
			return nil, p.unexpected(`")"`)
		}
		p.next()
		return s, nil
	case tAt:
		p.next()
		s.kind = sStrFunc
		var err error
		if s.name, err = p.ident("a string function name"); err != nil {
			return nil, err
		}
		return s, nil
	case tWord:
		switch {
		case isKeyword(t.text, "accept"):
			p.next()
			s.kind = sAccept
			return s, nil
		case isKeyword(t.text, "discard"):
			p.next()
			s.kind = sDiscard
			return s, nil
		case isKeyword(t.text, "skip"):
			p.next()
			s.kind = sSkip
			switch n := p.peek(); {
			case n.kind == tWord && !reserved(n.text):
				p.next()
				s.name = n.text
			case n.kind == tString:
				p.next()
				s.name, s.quoted = n.text, true
			}
			return s, nil
		case isKeyword(t.text, "delay"):
			p.next()
			if err := p.expectWord("until"); err != nil {
				return nil, err
			}
			s.kind = sDelay
			var err error
			if s.date, err = p.dateSpec(); err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	return nil, p.unexpected(wantResult)
}

func (p *parser) dateSpec() (dateSpec, error) {
	var d dateSpec
	t := p.peek()
	switch {
	case t.kind == tWord && !reserved(t.text):
		p.next()
		d.fn = t.text
		return d, nil
	case t.kind != tNumber:
		return d, p.unexpected("a date function name or a number")
	}
	if t.big || t.num < math.MinInt32 || t.num > math.MaxInt32 {
		return d, errAt(t.pos, "date offset %s does not fit in 32 bits", t.text)
	}
	p.next()
	d.relative, d.offset = true, t.num
	if p.isWord("business") {
		p.next()
		d.business = true
	}
	u := p.peek()
	var ok bool
	if u.kind == tWord {
		d.unit, ok = unitOf(u.text)
	}
	if !ok {
		want := "a time unit (second, minute, hour, day or week)"
		if !d.business {
			want = `"business" or ` + want
		}
		return d, p.unexpected(want)
	}
	p.next()
	switch {
	case p.isWord("before"):
		d.before = true
	case p.isWord("after"):
	default:
		return d, p.unexpected(`"before" or "after"`)
	}
	p.next()
	var err error
	d.fn, err = p.ident("a date function name")
	return d, err
}

func (p *parser) orExpr() (*cond, error) {
	return p.binary(cOr, "or", p.andExpr)
}

func (p *parser) andExpr() (*cond, error) {
	return p.binary(cAnd, "and", p.notExpr)
}

// binary reads operand (kw operand)* into one node with all the operands.
func (p *parser) binary(op condOp, kw string, operand func() (*cond, error)) (*cond, error) {
	x, err := operand()
	if err != nil {
		return nil, err
	}
	if !p.isWord(kw) {
		return x, nil
	}
	c := &cond{op: op}
	c.add(x)
	for p.isWord(kw) {
		p.next()
		if x, err = operand(); err != nil {
			return nil, err
		}
		c.add(x)
	}
	return c, nil
}

// add appends an operand to an and or or node. A parenthesised operand with
// the same operator is spliced in: and and or are associative, and both
// forms evaluate the same operands in the same order.
func (c *cond) add(x *cond) {
	if x.op == c.op {
		c.args = append(c.args, x.args...)
	} else {
		c.args = append(c.args, x)
	}
}

func (p *parser) notExpr() (*cond, error) {
	if !p.atNot() {
		return p.expr()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &cond{op: cNot, args: []*cond{x}}, nil
}

// atNot reports whether the next word is the not operator. "not" and "NOT"
// always are. Another spelling ("Not") is the operator when an operand
// follows it and a predicate name otherwise.
func (p *parser) atNot() bool {
	t := p.peek()
	if t.kind != tWord || !isKeyword(t.text, "not") {
		return false
	}
	if reserved(t.text) {
		return true
	}
	switch n := p.peekAt(1); n.kind {
	case tLParen:
		return true
	case tWord:
		return !isKeyword(n.text, "and") && !isKeyword(n.text, "or") && !isKeyword(n.text, "then")
	}
	return false
}

func (p *parser) expr() (*cond, error) {
	t := p.peek()
	switch {
	case t.kind == tWord && !reserved(t.text):
		p.next()
		return &cond{op: cPred, name: t.text}, nil
	case t.kind == tLParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		c, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if p.peek().kind != tRParen {
			return nil, p.unexpected(`")"`)
		}
		p.next()
		return c, nil
	}
	return nil, p.unexpected(`a predicate name, "not" or "("`)
}
