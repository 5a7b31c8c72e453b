package joinlang

import (
	"strconv"
	"strings"
)

// String returns the program in canonical JoinLang: lowercase keywords, one
// requirement per line, and "or" on a line of its own between alternatives.
// For a program returned by Compile, Compile(p.String()) gives an equal
// program (positions aside). A program built by hand round-trips as long as
// it is one Compile could return: at least one alternative and requirement,
// counts of at least 1, predicate names that are identifiers and not
// keywords, and no name or label ending in a backslash (the string syntax
// cannot express one).
func (p *Program) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for i, set := range p.Alternatives {
		if i > 0 {
			b.WriteString("\nor\n")
		}
		if set == nil {
			continue
		}
		for j, r := range set.Requires {
			if j > 0 {
				b.WriteByte('\n')
			}
			writeRequire(&b, r)
		}
	}
	return b.String()
}

// String returns the requirement in canonical JoinLang.
func (r *Require) String() string {
	var b strings.Builder
	writeRequire(&b, r)
	return b.String()
}

func writeRequire(b *strings.Builder, r *Require) {
	if r == nil {
		return
	}
	b.WriteString("require ")
	switch r.Kind {
	case RequireNode:
		b.WriteString("node ")
		writeQuoted(b, r.Name)
	case RequireTokenSet:
		b.WriteString("tokenset ")
		writeQuoted(b, r.Name)
	case RequireAllArcs:
		b.WriteString("all arcs")
		writeLabel(b, r)
	case RequireAtLeastArcs:
		b.WriteString("at least ")
		b.WriteString(strconv.Itoa(r.Count))
		b.WriteString(" arcs")
		writeLabel(b, r)
	default:
		// Not valid JoinLang, on purpose: there is no such form.
		b.WriteString(r.Kind.String())
	}
	if r.When != nil {
		b.WriteString(" when ")
		b.WriteString(r.When.String())
	}
}

func writeLabel(b *strings.Builder, r *Require) {
	if !r.Labelled {
		return
	}
	b.WriteString(" labelled ")
	if r.Label == "" {
		b.WriteString("default")
		return
	}
	writeQuoted(b, r.Label)
}

// writeQuoted writes s as a JoinLang string: quotes become \" and every
// other character stands for itself.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(s, `"`, `\"`))
	b.WriteByte('"')
}

// Precedence levels of expression nodes, loosest first.
const (
	precOr = iota + 1
	precAnd
	precNot
	precAtom
)

func precOf(e Expr) int {
	switch e.(type) {
	case Or, *Or:
		return precOr
	case And, *And:
		return precAnd
	case Not, *Not:
		return precNot
	case Ident, *Ident:
		return precAtom
	}
	return 0 // unknown: always parenthesized
}

func exprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e, 0)
	return b.String()
}

// writeExpr writes e, in parentheses if it binds more loosely than min.
// Operators associate to the left, so the right operand of an "or" that is
// itself an "or" gets parentheses (and likewise for "and"), and the operand
// of "not" must be a predicate name or parenthesized.
func writeExpr(b *strings.Builder, e Expr, min int) {
	if e == nil {
		b.WriteString("<nil>")
		return
	}
	if precOf(e) < min {
		b.WriteByte('(')
		writeExpr(b, e, 0)
		b.WriteByte(')')
		return
	}
	switch x := e.(type) {
	case Or:
		writeBinary(b, x.Left, " or ", x.Right, precOr)
	case *Or:
		writeBinary(b, x.Left, " or ", x.Right, precOr)
	case And:
		writeBinary(b, x.Left, " and ", x.Right, precAnd)
	case *And:
		writeBinary(b, x.Left, " and ", x.Right, precAnd)
	case Not:
		b.WriteString("not ")
		writeExpr(b, x.X, precAtom)
	case *Not:
		b.WriteString("not ")
		writeExpr(b, x.X, precAtom)
	default:
		b.WriteString(e.String())
	}
}

func writeBinary(b *strings.Builder, l Expr, op string, r Expr, prec int) {
	writeExpr(b, l, prec)
	b.WriteString(op)
	writeExpr(b, r, prec+1)
}

// Predicates returns every predicate name used in the program's when
// clauses, each once, in order of first appearance in the source. It
// returns nil when there is none.
func Predicates(p *Program) []string {
	if p == nil {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case Ident:
			if !seen[x.Name] {
				seen[x.Name] = true
				names = append(names, x.Name)
			}
		case *Ident:
			if x != nil {
				walk(*x)
			}
		case Or:
			walk(x.Left)
			walk(x.Right)
		case *Or:
			if x != nil {
				walk(x.Left)
				walk(x.Right)
			}
		case And:
			walk(x.Left)
			walk(x.Right)
		case *And:
			if x != nil {
				walk(x.Left)
				walk(x.Right)
			}
		case Not:
			walk(x.X)
		case *Not:
			if x != nil {
				walk(x.X)
			}
		}
	}
	for _, set := range p.Alternatives {
		if set == nil {
			continue
		}
		for _, r := range set.Requires {
			if r != nil && r.When != nil {
				walk(r.When)
			}
		}
	}
	return names
}
