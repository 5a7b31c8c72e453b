// Package joinlang parses JoinLang, the join language of Veena's "joinlang"
// join type, into an abstract syntax tree.
//
// A JoinLang program is one or more alternatives separated by "or". Each
// alternative is a set of requirements that must all hold:
//
//	require node "Review" when needsReview
//	require all arcs labelled "approve"
//	or
//	require at least 2 arcs labelled default when not urgent
//
// Keywords are case-insensitive ("REQUIRE", "Labelled", "OR" ...); predicate
// names and strings are case-sensitive. Whitespace, "//" line comments and
// "/* */" block comments are ignored. A "when" clause is a boolean expression
// over predicate names with "not", "and" and "or" (binding in that order, from
// tightest to loosest) and parentheses. An "or" followed by "require" ends a
// when-expression and starts the next alternative.
//
// This package only compiles programs and evaluates when-expressions against a
// predicate callback; the kernel evaluates the joins themselves.
package joinlang

import (
	"errors"
	"fmt"
)

// Program is a compiled JoinLang program: alternatives that the kernel tries
// from left to right until one of them does not answer "nothing".
type Program struct {
	Alternatives []*RequireSet
}

// RequireSet is one alternative: requirements that must all be met.
type RequireSet struct {
	Requires []*Require
}

// RequireKind says which form a requirement has.
type RequireKind int

// The forms of a requirement.
const (
	RequireNode        RequireKind = iota + 1 // require node "N"
	RequireTokenSet                           // require tokenset "S"
	RequireAllArcs                            // require all arcs [labelled L]
	RequireAtLeastArcs                        // require at least N arcs [labelled L]
)

// String returns a short name of the kind, for diagnostics.
func (k RequireKind) String() string {
	switch k {
	case RequireNode:
		return "node"
	case RequireTokenSet:
		return "tokenset"
	case RequireAllArcs:
		return "all arcs"
	case RequireAtLeastArcs:
		return "at least arcs"
	}
	return fmt.Sprintf("RequireKind(%d)", int(k))
}

// Require is one requirement of a RequireSet.
type Require struct {
	Kind RequireKind
	// Name is the node name (RequireNode) or the token set name
	// (RequireTokenSet); "" for the arc forms.
	Name string
	// Count is N of "at least N arcs" (always >= 1 in a compiled program);
	// 0 for the other forms.
	Count int
	// Labelled reports a "labelled" clause (arc forms only).
	Labelled bool
	// Label is the arc name of the "labelled" clause. With Labelled set, ""
	// means "labelled default": the unnamed (default) arcs. A blank arc name
	// is the default name in Veena, so `labelled ""` compiles to the same.
	Label string
	// When is the condition under which the requirement applies; nil when
	// the requirement has no "when" clause (it always applies).
	When Expr
	// Pos is the position of the "require" keyword.
	Pos Pos
}

// Pos is a position in a JoinLang source: a 0-based byte offset, a 1-based
// line and a 1-based column counted in characters (runes).
type Pos struct{ Offset, Line, Column int }

// String returns "line L, column C".
func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Column) }

// CompileError is the error Compile returns for an invalid program.
type CompileError struct {
	Pos Pos
	Msg string
}

func (e *CompileError) Error() string { return e.Pos.String() + ": " + e.Msg }

// Expr is a boolean when-expression. Its node types are Or, And, Not and
// Ident.
type Expr interface {
	// Eval evaluates the expression, calling pred for each predicate it
	// needs. "and" and "or" evaluate their left operand first and skip the
	// right one when the left decides the result. An error from pred stops
	// the evaluation and is returned unchanged.
	Eval(pred func(name string) (bool, error)) (bool, error)
	// String returns the expression in canonical JoinLang syntax.
	String() string
}

// Or is "Left or Right".
type Or struct{ Left, Right Expr }

// And is "Left and Right".
type And struct{ Left, Right Expr }

// Not is "not X".
type Not struct{ X Expr }

// Ident is a predicate name.
type Ident struct {
	Name string
	Pos  Pos // where the name appears in the source
}

var errIncomplete = errors.New("joinlang: incomplete expression (nil operand)")

// Eval implements Expr.
func (e Or) Eval(pred func(string) (bool, error)) (bool, error) {
	if e.Left == nil || e.Right == nil {
		return false, errIncomplete
	}
	l, err := e.Left.Eval(pred)
	if err != nil {
		return false, err
	}
	if l {
		return true, nil
	}
	return e.Right.Eval(pred)
}

// Eval implements Expr.
func (e And) Eval(pred func(string) (bool, error)) (bool, error) {
	if e.Left == nil || e.Right == nil {
		return false, errIncomplete
	}
	l, err := e.Left.Eval(pred)
	if err != nil || !l {
		return false, err
	}
	return e.Right.Eval(pred)
}

// Eval implements Expr.
func (e Not) Eval(pred func(string) (bool, error)) (bool, error) {
	if e.X == nil {
		return false, errIncomplete
	}
	v, err := e.X.Eval(pred)
	if err != nil {
		return false, err
	}
	return !v, nil
}

// Eval implements Expr: it returns pred(e.Name), or false and the error if
// pred fails.
func (e Ident) Eval(pred func(string) (bool, error)) (bool, error) {
	if pred == nil {
		return false, fmt.Errorf("joinlang: no predicate function to evaluate %q", e.Name)
	}
	v, err := pred(e.Name)
	if err != nil {
		return false, err
	}
	return v, nil
}

func (e Or) String() string    { return exprString(e) }
func (e And) String() string   { return exprString(e) }
func (e Not) String() string   { return exprString(e) }
func (e Ident) String() string { return e.Name }
