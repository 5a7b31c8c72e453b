package rubric

import (
	"strconv"
	"strings"
)

// pos is where a token starts in the source.
type pos struct{ off, line, col int }

type stmtKind uint8

const (
	sIf      stmtKind = iota + 1
	sAccept           // Accept
	sDiscard          // Discard
	sSkip             // Skip [name]
	sDelay            // delay until date
	sInt              // NUMBER
	sString           // STRING
	sDate             // ( date )
	sStrFunc          // @name
)

// stmt is an if statement or a result.
type stmt struct {
	kind stmtKind
	pos  pos

	cond      *cond // sIf
	then, els *stmt // sIf

	name   string   // sSkip arc name, sStrFunc function name, sString value
	quoted bool     // sSkip: the arc name was written as a string
	num    int64    // sInt
	date   dateSpec // sDate, sDelay
}

type unit uint8

const (
	uSecond unit = iota + 1
	uMinute
	uHour
	uDay
	uWeek
)

var unitNames = [...]string{uSecond: "second", uMinute: "minute", uHour: "hour", uDay: "day", uWeek: "week"}

// dateSpec is a date function, or a date relative to one.
type dateSpec struct {
	fn       string // the date function (the base of a relative date)
	relative bool
	offset   int64 // as written; negated for before when evaluated
	business bool  // kept and printed, no effect on evaluation
	unit     unit
	before   bool
}

type condOp uint8

const (
	cPred condOp = iota + 1
	cNot
	cAnd
	cOr
)

// cond is a boolean expression. And and or hold two or more operands, in
// source order; not holds one.
type cond struct {
	op   condOp
	name string // cPred
	args []*cond
}

func (s *stmt) resultKind() ValueKind {
	switch s.kind {
	case sAccept, sDiscard, sSkip, sDelay:
		return KindGuard
	case sInt:
		return KindInt
	case sString, sStrFunc:
		return KindString
	case sDate:
		return KindDate
	}
	return 0
}

// walkLeaves calls f for every result in source order until f returns false.
func (s *stmt) walkLeaves(f func(*stmt) bool) bool {
	if s.kind == sIf {
		return s.then.walkLeaves(f) && s.els.walkLeaves(f)
	}
	return f(s)
}

// String returns the program in canonical form: keywords in their original
// spelling, single spaces, parentheses only where the structure needs them,
// no comments. Compiling it gives the same program.
func (p *Program) String() string {
	var b strings.Builder
	p.top().print(&b)
	return b.String()
}

func (s *stmt) print(b *strings.Builder) {
	switch s.kind {
	case sIf:
		b.WriteString("if ")
		s.cond.print(b)
		b.WriteString(" then ")
		s.then.print(b)
		b.WriteString(" else ")
		s.els.print(b)
	case sAccept:
		b.WriteString("Accept")
	case sDiscard:
		b.WriteString("Discard")
	case sSkip:
		b.WriteString("Skip")
		if s.quoted {
			b.WriteByte(' ')
			writeString(b, s.name)
		} else if s.name != "" {
			b.WriteByte(' ')
			b.WriteString(s.name)
		}
	case sDelay:
		b.WriteString("delay until ")
		s.date.print(b)
	case sInt:
		b.WriteString(strconv.FormatInt(s.num, 10))
	case sString:
		writeString(b, s.name)
	case sDate:
		b.WriteByte('(')
		s.date.print(b)
		b.WriteByte(')')
	case sStrFunc:
		b.WriteByte('@')
		b.WriteString(s.name)
	}
}

// writeString writes v as a Rubric string literal. Only quotes need an
// escape; a value never ends in a backslash (see the lexer), so the closing
// quote cannot be mistaken for an escaped one.
func writeString(b *strings.Builder, v string) {
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(v, `"`, `\"`))
	b.WriteByte('"')
}

func (d *dateSpec) print(b *strings.Builder) {
	if !d.relative {
		b.WriteString(d.fn)
		return
	}
	b.WriteString(strconv.FormatInt(d.offset, 10))
	b.WriteByte(' ')
	if d.business {
		b.WriteString("business ")
	}
	b.WriteString(unitNames[d.unit])
	if d.offset != 1 && d.offset != -1 {
		b.WriteByte('s')
	}
	if d.before {
		b.WriteString(" before ")
	} else {
		b.WriteString(" after ")
	}
	b.WriteString(d.fn)
}

func (c *cond) print(b *strings.Builder) {
	switch c.op {
	case cPred:
		b.WriteString(c.name)
	case cNot:
		b.WriteString("not ")
		c.args[0].printOperand(b, cPred)
	case cAnd, cOr:
		sep := " and "
		if c.op == cOr {
			sep = " or "
		}
		for i, x := range c.args {
			if i > 0 {
				b.WriteString(sep)
			}
			// An operand needs parentheses if it binds no tighter than c.
			x.printOperand(b, c.op)
		}
	}
}

// printOperand prints c as an operand of an operator of kind parent,
// parenthesised unless c binds tighter than parent. Binding strength:
// a name, then not, then and, then or; the operand of not must be a name or
// parenthesised.
func (c *cond) printOperand(b *strings.Builder, parent condOp) {
	if c.op < parent || c.op == cPred {
		c.print(b)
		return
	}
	b.WriteByte('(')
	c.print(b)
	b.WriteByte(')')
}
