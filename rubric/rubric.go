package rubric

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Limits on what Compile accepts.
const (
	// MaxSourceLen is the longest source, in bytes, that Compile accepts.
	MaxSourceLen = 64 << 10
	// MaxDepth is the deepest nesting of if statements, parentheses and not
	// operators that Compile accepts.
	MaxDepth = 200
)

// GuardAction is what a guard decides for a node token.
type GuardAction int

// The guard actions.
const (
	Accept GuardAction = iota + 1
	Discard
	Skip
	Delay
)

// String returns "accept", "discard", "skip" or "delay".
func (a GuardAction) String() string {
	switch a {
	case Accept:
		return "accept"
	case Discard:
		return "discard"
	case Skip:
		return "skip"
	case Delay:
		return "delay"
	}
	return "GuardAction(" + strconv.Itoa(int(a)) + ")"
}

// GuardResult is the outcome of a guard.
type GuardResult struct {
	Action GuardAction
	// ArcName is the arc a Skip leaves on; "" means the default arcs.
	ArcName string
	// Until is the date a Delay waits for.
	Until time.Time
}

// String describes the result: "accept", "discard", "skip", `skip "arc"` or
// "delay until <RFC 3339 date>".
func (g GuardResult) String() string {
	switch g.Action {
	case Skip:
		if g.ArcName != "" {
			return "skip " + strconv.Quote(g.ArcName)
		}
	case Delay:
		return "delay until " + g.Until.Format(time.RFC3339Nano)
	}
	return g.Action.String()
}

// ValueKind is the type of a program's result.
type ValueKind int

// The kinds of value a program can produce.
const (
	KindGuard ValueKind = iota + 1
	KindInt
	KindString
	KindDate
)

// String returns "guard result", "integer", "string" or "date".
func (k ValueKind) String() string {
	switch k {
	case KindGuard:
		return "guard result"
	case KindInt:
		return "integer"
	case KindString:
		return "string"
	case KindDate:
		return "date"
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the result of evaluating a program: exactly one of a guard
// result, an integer, a string or a date, as Kind says.
type Value struct {
	Kind  ValueKind
	Guard GuardResult
	Int   int64
	Str   string
	Date  time.Time
}

// String describes the value with its kind, for messages.
func (v Value) String() string {
	switch v.Kind {
	case KindGuard:
		return "guard result " + v.Guard.String()
	case KindInt:
		return "integer " + strconv.FormatInt(v.Int, 10)
	case KindString:
		return "string " + strconv.Quote(v.Str)
	case KindDate:
		return "date " + v.Date.Format(time.RFC3339Nano)
	}
	return "invalid value"
}

// Env is what a program reads while it runs. Implementations return an
// error for a name they do not know, preferably one wrapping
// ErrUnknownName.
type Env interface {
	Predicate(name string) (bool, error)
	DateFunction(name string) (time.Time, error)
	StringFunction(name string) (string, error)
}

// ErrUnknownName is what MapEnv returns for a name it does not hold.
// Evaluation wraps it with the kind and name of the symbol, for example
// `predicate "isUrgent": unknown name`.
var ErrUnknownName = errors.New("unknown name")

// ErrNotGuard is wrapped by the error EvalGuard returns when a program
// produces something other than a guard result.
var ErrNotGuard = errors.New("not a guard result")

// CompileError is a syntax or type error in a Rubric source, with where it is.
type CompileError struct {
	Offset int // byte offset in the source, from 0
	Line   int // line, from 1
	Column int // column in characters, from 1
	Msg    string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Program is a compiled Rubric program. It is immutable and safe for
// concurrent use. The zero Program behaves as the blank program (Accept).
type Program struct {
	root *stmt
}

var blankStmt = &stmt{kind: sAccept, pos: pos{line: 1, col: 1}}

// top returns the program's root statement.
func (p *Program) top() *stmt {
	if p.root == nil {
		return blankStmt
	}
	return p.root
}

// Compile parses src into a Program. Errors are of type *CompileError.
func Compile(src string) (*Program, error) {
	root, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Program{root: root}, nil
}

// MustCompile is Compile for sources known to be valid; it panics on error.
func MustCompile(src string) *Program {
	p, err := Compile(src)
	if err != nil {
		panic("rubric: " + err.Error())
	}
	return p
}

// CompileGuard compiles src and checks that every result it can produce is
// a guard result, as a node guard must.
func CompileGuard(src string) (*Program, error) {
	p, err := Compile(src)
	if err != nil {
		return nil, err
	}
	k, err := p.ResultKind()
	if err != nil {
		return nil, err
	}
	if k != KindGuard {
		l := p.firstLeaf()
		return nil, &CompileError{Offset: l.pos.off, Line: l.pos.line, Column: l.pos.col,
			Msg: "a guard must produce a guard result (Accept, Discard, Skip or delay until), but this program produces a result of kind " + k.String()}
	}
	return p, nil
}

// ResultKind checks statically that every result the program can produce is
// of one kind and returns that kind. A program whose results mix kinds (a
// guard result in one branch, a number in another) gives a *CompileError at
// the first result that differs from the first one.
func (p *Program) ResultKind() (ValueKind, error) {
	first := p.firstLeaf()
	want := first.resultKind()
	var bad *stmt
	p.top().walkLeaves(func(s *stmt) bool {
		if s.resultKind() != want {
			bad = s
			return false
		}
		return true
	})
	if bad != nil {
		return 0, &CompileError{Offset: bad.pos.off, Line: bad.pos.line, Column: bad.pos.col,
			Msg: fmt.Sprintf("results mix kinds: %s here, %s at line %d, column %d",
				bad.resultKind(), want, first.pos.line, first.pos.col)}
	}
	return want, nil
}

func (p *Program) firstLeaf() *stmt {
	s := p.top()
	for s.kind == sIf {
		s = s.then
	}
	return s
}

// SkipArcNames returns the arc names that the program's Skip results name,
// without repeats, in source order. Plain Skip (the default arcs) is not
// included.
func (p *Program) SkipArcNames() []string {
	var names []string
	seen := map[string]bool{}
	p.top().walkLeaves(func(s *stmt) bool {
		if s.kind == sSkip && s.name != "" && !seen[s.name] {
			seen[s.name] = true
			names = append(names, s.name)
		}
		return true
	})
	return names
}

// Symbols returns the names the program refers to, each without repeats and
// in source order: predicates, date functions (including the bases of
// relative dates) and string functions.
func (p *Program) Symbols() (predicates, dateFuncs, stringFuncs []string) {
	seen := [3]map[string]bool{{}, {}, {}}
	add := func(list *[]string, i int, name string) {
		if !seen[i][name] {
			seen[i][name] = true
			*list = append(*list, name)
		}
	}
	var walkCond func(c *cond)
	walkCond = func(c *cond) {
		switch c.op {
		case cPred:
			add(&predicates, 0, c.name)
		default:
			for _, x := range c.args {
				walkCond(x)
			}
		}
	}
	var walk func(s *stmt)
	walk = func(s *stmt) {
		switch s.kind {
		case sIf:
			walkCond(s.cond)
			walk(s.then)
			walk(s.els)
		case sDate, sDelay:
			add(&dateFuncs, 1, s.date.fn)
		case sStrFunc:
			add(&stringFuncs, 2, s.name)
		}
	}
	walk(p.top())
	return predicates, dateFuncs, stringFuncs
}
