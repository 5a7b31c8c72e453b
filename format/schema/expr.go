package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"

	"github.com/veena-wf/veena/graph"
)

// Expressions are CEL (cel.dev/cel-go), run in a sandbox: they see only the
// variables below, call only CEL's standard functions and the string, math
// and list extensions, and stop with an error once they have spent
// CostLimit (CEL's measure of work) or produced a value larger than
// MaxValueSize.
//
// Variables: almanac (the instance's almanac, a map), context (its context
// pairs), event ({"name", "context", "payload"} of the event being handled;
// in the root node the event or request that created the instance; null
// where there is none), now (the time of the step) and instance ({"id",
// "schema", "node"}).
const (
	// CostLimit bounds the work of one evaluation.
	CostLimit = 1_000_000
	// MaxExprLength bounds the source of one expression, in bytes.
	MaxExprLength = 8192
	// MaxValueSize bounds what one evaluation may produce, as JSON bytes.
	MaxValueSize = 1 << 20
	// MaxExprTotal bounds the source of all the expressions of one file,
	// so that loading a file cannot take long compiling them.
	MaxExprTotal = 64 << 10
)

// Vars are the variables an expression sees.
type Vars struct {
	Almanac  map[string]any
	Context  map[string]string
	Event    map[string]any // nil: no event
	Now      time.Time
	Instance map[string]any
}

func (v *Vars) activation() map[string]any {
	ctx := make(map[string]any, len(v.Context))
	for k, x := range v.Context {
		ctx[k] = x
	}
	alm := v.Almanac
	if alm == nil {
		alm = map[string]any{}
	}
	inst := v.Instance
	if inst == nil {
		inst = map[string]any{}
	}
	var ev any
	if v.Event != nil {
		ev = v.Event
	}
	return map[string]any{"almanac": alm, "context": ctx, "event": ev, "now": v.Now.UTC(), "instance": inst}
}

var (
	envOnce sync.Once
	celEnv  *cel.Env
	envErr  error
)

func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		celEnv, envErr = cel.NewEnv(
			cel.Variable("almanac", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("context", cel.MapType(cel.StringType, cel.StringType)),
			cel.Variable("event", cel.DynType),
			cel.Variable("now", cel.TimestampType),
			cel.Variable("instance", cel.MapType(cel.StringType, cel.DynType)),
			cel.CrossTypeNumericComparisons(true),
			cel.ParserRecursionLimit(100),
			cel.ParserExpressionSizeLimit(MaxExprLength),
			ext.Strings(),
			ext.Math(),
			ext.Lists(),
		)
	})
	return celEnv, envErr
}

// Expr is a compiled CEL expression with its source and position. It is
// safe for concurrent use.
type Expr struct {
	Source string
	Pos    graph.Pos
	prog   cel.Program
}

// CompileExpr compiles a CEL expression (without the leading '=' of
// argument expressions).
func CompileExpr(src string, pos graph.Pos) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("the expression is empty")
	}
	if len(src) > MaxExprLength {
		return nil, fmt.Errorf("the expression is %d bytes long; at most %d", len(src), MaxExprLength)
	}
	env, err := environment()
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%s", oneLine(iss.Err().Error()))
	}
	prog, err := env.Program(ast,
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, fmt.Errorf("%s", oneLine(err.Error()))
	}
	return &Expr{Source: src, Pos: pos, prog: prog}, nil
}

func oneLine(s string) string {
	s = strings.TrimPrefix(s, "ERROR: <input>:")
	lines := strings.Split(s, "\n")
	return strings.TrimSpace(lines[0])
}

// Eval evaluates the expression and returns its value as plain Go data
// (string, int64, float64, bool, nil, map[string]any, []any; timestamps
// as RFC 3339 strings, durations as Go duration strings).
func (x *Expr) Eval(v *Vars) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("expression %q failed: %v", x.Source, r)
		}
	}()
	out, _, err := x.prog.Eval(v.activation())
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", x.Source, err)
	}
	g, err := goValue(out, 0)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", x.Source, err)
	}
	if b, err := json.Marshal(g); err != nil {
		return nil, fmt.Errorf("expression %q: %w", x.Source, err)
	} else if len(b) > MaxValueSize {
		return nil, fmt.Errorf("expression %q produced %d bytes; at most %d", x.Source, len(b), MaxValueSize)
	}
	return g, nil
}

// Bool evaluates a condition.
func (x *Expr) Bool(v *Vars) (bool, error) {
	r, err := x.Eval(v)
	if err != nil {
		return false, err
	}
	b, ok := r.(bool)
	if !ok {
		return false, fmt.Errorf("condition %q gave %s, not a boolean", x.Source, typeName(r))
	}
	return b, nil
}

func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", x)
}

// goValue converts a CEL value into plain Go data.
func goValue(v ref.Val, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("the value is nested too deep")
	}
	switch v.Type() {
	case types.NullType:
		return nil, nil
	case types.BoolType:
		return bool(v.(types.Bool)), nil
	case types.IntType:
		return int64(v.(types.Int)), nil
	case types.UintType:
		u := uint64(v.(types.Uint))
		if u > math.MaxInt64 {
			return nil, fmt.Errorf("unsigned integer %d is too large", u)
		}
		return int64(u), nil
	case types.DoubleType:
		f := float64(v.(types.Double))
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%v is not a number a schema can hold", f)
		}
		return f, nil
	case types.StringType:
		return string(v.(types.String)), nil
	case types.BytesType:
		return string(v.(types.Bytes)), nil
	case types.TimestampType:
		return v.(types.Timestamp).Time.UTC().Format(time.RFC3339Nano), nil
	case types.DurationType:
		return v.(types.Duration).Duration.String(), nil
	case types.ErrType:
		return nil, v.(*types.Err)
	}
	if l, ok := v.(traits.Lister); ok {
		n := int(l.Size().(types.Int))
		out := make([]any, 0, n)
		it := l.Iterator()
		for it.HasNext() == types.True {
			x, err := goValue(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key must be a string, not %s", k.Type().TypeName())
			}
			x, err := goValue(m.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %s cannot be kept", v.Type().TypeName())
}

// Arg is an argument template: literal JSON whose strings that begin with
// '=' are expressions, evaluated when the action runs. "==" at the start
// escapes a literal '='.
type Arg struct {
	lit  any // a literal (when expr, obj and list are nil and isObj/isList false)
	expr *Expr
	obj  []argEntry
	list []*Arg

	isObj, isList bool
	Pos           graph.Pos
}

type argEntry struct {
	Key string
	Val *Arg
}

// Eval builds the argument's value.
func (a *Arg) Eval(v *Vars) (any, error) {
	switch {
	case a == nil:
		return nil, nil
	case a.expr != nil:
		return a.expr.Eval(v)
	case a.isObj:
		m := make(map[string]any, len(a.obj))
		for _, e := range a.obj {
			x, err := e.Val.Eval(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Key, err)
			}
			m[e.Key] = x
		}
		return m, nil
	case a.isList:
		l := make([]any, len(a.list))
		for i, e := range a.list {
			x, err := e.Eval(v)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = x
		}
		return l, nil
	}
	return a.lit, nil
}

// Field returns the member key of an object argument, or nil.
func (a *Arg) Field(key string) *Arg {
	if a == nil || !a.isObj {
		return nil
	}
	for _, e := range a.obj {
		if e.Key == key {
			return e.Val
		}
	}
	return nil
}

// Keys are the member names of an object argument in file order.
func (a *Arg) Keys() []string {
	if a == nil || !a.isObj {
		return nil
	}
	out := make([]string, len(a.obj))
	for i, e := range a.obj {
		out[i] = e.Key
	}
	return out
}

// IsObject reports whether the argument is an object.
func (a *Arg) IsObject() bool { return a != nil && a.isObj }

// Literal returns the argument's value if it holds no expression.
func (a *Arg) Literal() (any, bool) {
	if a == nil {
		return nil, true
	}
	if a.expr != nil {
		return nil, false
	}
	if a.isObj || a.isList {
		var walk func(*Arg) bool
		walk = func(x *Arg) bool {
			if x.expr != nil {
				return false
			}
			for _, e := range x.obj {
				if !walk(e.Val) {
					return false
				}
			}
			for _, e := range x.list {
				if !walk(e) {
					return false
				}
			}
			return true
		}
		if !walk(a) {
			return nil, false
		}
		v, _ := a.Eval(&Vars{})
		return v, true
	}
	return a.lit, true
}

// String renders the argument template as JSON-like text (expressions as
// "=source"), keys in file order, for golden files and the console.
func (a *Arg) String() string {
	var b strings.Builder
	a.write(&b)
	return b.String()
}

// Template returns the argument template as plain data: expressions as
// "=source" strings.
func (a *Arg) Template() any {
	switch {
	case a == nil:
		return nil
	case a.expr != nil:
		return "=" + a.expr.Source
	case a.isObj:
		m := make(map[string]any, len(a.obj))
		for _, e := range a.obj {
			m[e.Key] = e.Val.Template()
		}
		return m
	case a.isList:
		l := make([]any, len(a.list))
		for i, e := range a.list {
			l[i] = e.Template()
		}
		return l
	}
	if s, ok := a.lit.(string); ok && strings.HasPrefix(s, "=") {
		return "=" + s
	}
	return a.lit
}

func (a *Arg) write(b *strings.Builder) {
	switch {
	case a == nil:
		b.WriteString("null")
	case a.expr != nil:
		q, _ := json.Marshal("=" + a.expr.Source)
		b.Write(q)
	case a.isObj:
		b.WriteByte('{')
		for i, e := range a.obj {
			if i > 0 {
				b.WriteString(", ")
			}
			q, _ := json.Marshal(e.Key)
			b.Write(q)
			b.WriteString(": ")
			e.Val.write(b)
		}
		b.WriteByte('}')
	case a.isList:
		b.WriteByte('[')
		for i, e := range a.list {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte(']')
	default:
		q, _ := json.Marshal(a.Template())
		b.Write(q)
	}
}

// compileArg builds an argument template from a file value, compiling
// its expressions; problems are added to lerr.
func compileArg(v *value, lerr *graph.LoadError, budget *int) *Arg {
	a := &Arg{Pos: v.pos}
	switch v.kind {
	case kString:
		s := v.str
		switch {
		case strings.HasPrefix(s, "=="):
			a.lit = s[1:]
		case strings.HasPrefix(s, "="):
			src := strings.TrimSpace(s[1:])
			if *budget -= len(src); *budget < 0 {
				if *budget+len(src) >= 0 {
					lerr.Add(v.pos, "the file's expressions hold more than %d bytes in all", MaxExprTotal)
				}
				return a
			}
			x, err := CompileExpr(src, v.pos)
			if err != nil {
				lerr.Add(v.pos, "expression %q: %v", src, err)
				return a
			}
			a.expr = x
		default:
			a.lit = s
		}
	case kObject:
		a.isObj = true
		for _, e := range v.keys {
			a.obj = append(a.obj, argEntry{Key: e.key, Val: compileArg(e.val, lerr, budget)})
		}
	case kList:
		a.isList = true
		for _, x := range v.list {
			a.list = append(a.list, compileArg(x, lerr, budget))
		}
	default:
		a.lit = literal(v)
	}
	return a
}

// literal converts a scalar file value into plain data (numbers as int64
// or float64).
func literal(v *value) any {
	switch v.kind {
	case kString:
		return v.str
	case kBool:
		return v.b
	case kNumber:
		return Number(json.Number(v.str))
	case kObject:
		m := map[string]any{}
		for _, e := range v.keys {
			m[e.key] = literal(e.val)
		}
		return m
	case kList:
		l := make([]any, len(v.list))
		for i, x := range v.list {
			l[i] = literal(x)
		}
		return l
	}
	return nil
}

// Number converts a JSON number into int64 when it is an integer in
// range, else float64.
func Number(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, err := n.Float64()
	if err != nil {
		return string(n)
	}
	return f
}

// Normalize converts decoded JSON (json.Number, nested maps and lists) or
// other plain Go values into the forms expressions and almanacs use:
// int64, float64, string, bool, nil, map[string]any, []any.
func Normalize(x any) any {
	switch v := x.(type) {
	case json.Number:
		return Number(v)
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = Normalize(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = Normalize(e)
		}
		return l
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return x
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
