package feel

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/veena-wf/veena/expr"
)

// Program is a compiled FEEL expression.
type Program struct {
	src  string
	root node
}

// Compile parses a FEEL expression (without Camunda's leading "=").
func Compile(src string) (*Program, error) {
	n, err := parse(src)
	if err != nil {
		var le *lexError
		var pe *parseError
		switch {
		case errors.As(err, &le):
			return nil, &expr.Error{Lang: expr.FEEL, Source: src, Offset: le.off, Msg: le.msg}
		case errors.As(err, &pe):
			return nil, &expr.Error{Lang: expr.FEEL, Source: src, Offset: pe.off, Msg: pe.msg}
		}
		return nil, &expr.Error{Lang: expr.FEEL, Source: src, Offset: -1, Msg: err.Error()}
	}
	return &Program{src: src, root: n}, nil
}

// Source is the expression as written.
func (p *Program) Source() string { return p.src }

// Language is FEEL.
func (p *Program) Language() expr.Language { return expr.FEEL }

// evalError is a failure at a node.
type evalError struct {
	off int
	msg string
	err error
}

func (e *evalError) Error() string { return e.msg }

type scope struct {
	vars   expr.Vars
	local  map[string]any
	parent *scope
}

func (s *scope) get(name string) (any, bool) {
	for c := s; c != nil; c = c.parent {
		if c.local != nil {
			if v, ok := c.local[name]; ok {
				return v, true
			}
		}
		if c.vars != nil {
			if v, ok := c.vars.Get(name); ok {
				return expr.Normalize(v), true
			}
		}
	}
	return nil, false
}

type evaluator struct {
	budget expr.Budget
	now    time.Time
}

// Eval evaluates the expression.
func (p *Program) Eval(env expr.Env) (out any, err error) {
	ev := &evaluator{budget: expr.NewBudget(env), now: env.Now}
	if ev.now.IsZero() {
		ev.now = time.Now().UTC()
	}
	defer func() {
		if r := recover(); r != nil {
			ee, ok := r.(*evalError)
			if !ok {
				panic(r)
			}
			out, err = nil, &expr.Error{Lang: expr.FEEL, Source: p.src, Offset: ee.off, Msg: ee.msg, Err: ee.err}
		}
	}()
	v := ev.eval(p.root, &scope{vars: env.Vars})
	if r, ok := v.(*rangeVal); ok {
		return nil, &expr.Error{Lang: expr.FEEL, Source: p.src, Offset: -1, Msg: fmt.Sprintf("a range (%v) is not a value", r)}
	}
	if t, ok := v.(timeOfDay); ok {
		return expr.Duration{D: t.d}, nil
	}
	return v, nil
}

func (ev *evaluator) fail(n node, format string, args ...any) {
	panic(&evalError{off: n.pos(), msg: fmt.Sprintf(format, args...)})
}

func (ev *evaluator) step(n node, k int) {
	if err := ev.budget.Step(k); err != nil {
		panic(&evalError{off: n.pos(), msg: err.Error(), err: err})
	}
}

type rangeVal struct {
	lo, hi         any
	openLo, openHi bool
}

func (r *rangeVal) String() string {
	l, h := "[", "]"
	if r.openLo {
		l = "("
	}
	if r.openHi {
		h = ")"
	}
	return fmt.Sprintf("%s%v..%v%s", l, r.lo, r.hi, h)
}

func (ev *evaluator) eval(n node, sc *scope) any {
	ev.step(n, 1)
	switch x := n.(type) {
	case *lit:
		return x.v
	case *temporalLit:
		v, _ := parseTemporal(x.text)
		return v
	case *nameRef:
		v, _ := sc.get(x.name)
		return v
	case *pathExpr:
		return ev.path(ev.eval(x.x, sc), x.name)
	case *filterExpr:
		return ev.filter(x, sc)
	case *callExpr:
		return ev.call(x, sc)
	case *unaryExpr:
		v := ev.eval(x.x, sc)
		switch y := v.(type) {
		case nil:
			return nil
		case int64:
			if y == math.MinInt64 {
				return -float64(y)
			}
			return -y
		case float64:
			return -y
		case expr.Duration:
			return expr.Duration{Months: -y.Months, D: -y.D}
		}
		ev.fail(x, "cannot negate a %s", expr.TypeName(v))
	case *binaryExpr:
		return ev.binary(x, sc)
	case *betweenExpr:
		v, lo, hi := ev.eval(x.x, sc), ev.eval(x.lo, sc), ev.eval(x.hi, sc)
		a, ok1 := compare(v, lo)
		b, ok2 := compare(v, hi)
		if !ok1 || !ok2 {
			return nil
		}
		return a >= 0 && b <= 0
	case *inExpr:
		v := ev.eval(x.x, sc)
		for _, t := range x.tests {
			r := ev.test(v, t, sc)
			if r == true {
				return true
			}
		}
		return false
	case *ifExpr:
		if ev.eval(x.c, sc) == true {
			return ev.eval(x.t, sc)
		}
		return ev.eval(x.e, sc)
	case *forExpr:
		var out []any
		ev.iterate(x.vars, sc, func(inner *scope) bool {
			out = append(out, ev.eval(x.ret, inner))
			return true
		})
		if out == nil {
			out = []any{}
		}
		return out
	case *quantExpr:
		result := x.every
		ev.iterate(x.vars, sc, func(inner *scope) bool {
			c := ev.eval(x.cond, inner) == true
			if x.every && !c {
				result = false
				return false
			}
			if !x.every && c {
				result = true
				return false
			}
			return true
		})
		return result
	case *listLit:
		out := make([]any, 0, len(x.elems))
		for _, e := range x.elems {
			out = append(out, ev.eval(e, sc))
		}
		return out
	case *contextLit:
		out := make(map[string]any, len(x.keys))
		inner := &scope{local: out, parent: sc}
		for i, k := range x.keys {
			out[k] = ev.eval(x.vals[i], inner)
		}
		return out
	case *rangeExpr:
		return &rangeVal{ev.eval(x.lo, sc), ev.eval(x.hi, sc), x.openLo, x.openHi}
	case *unaryTest:
		ev.fail(x, "a unary test outside \"in\"")
	}
	ev.fail(n, "cannot evaluate %T", n)
	return nil
}

// iterate runs fn for every combination of the iteration variables.
func (ev *evaluator) iterate(vars []iterVar, sc *scope, fn func(*scope) bool) {
	var rec func(i int, sc *scope) bool
	rec = func(i int, sc *scope) bool {
		if i == len(vars) {
			return fn(sc)
		}
		v := vars[i]
		items := ev.eval(v.in, sc)
		switch it := items.(type) {
		case *rangeVal:
			lo, ok1 := it.lo.(int64)
			hi, ok2 := it.hi.(int64)
			if !ok1 || !ok2 {
				ev.fail(v.in, "a range to iterate needs whole numbers, not %v", it)
			}
			stepBy := int64(1)
			if hi < lo {
				stepBy = -1
			}
			for k := lo; ; k += stepBy {
				ev.step(v.in, 1)
				if !rec(i+1, &scope{local: map[string]any{v.name: k}, parent: sc}) {
					return false
				}
				if k == hi {
					break
				}
			}
		case []any:
			for _, e := range it {
				ev.step(v.in, 1)
				if !rec(i+1, &scope{local: map[string]any{v.name: e}, parent: sc}) {
					return false
				}
			}
		case nil:
		default:
			ev.fail(v.in, "cannot iterate over a %s", expr.TypeName(items))
		}
		return true
	}
	rec(0, sc)
}

func (ev *evaluator) path(v any, name string) any {
	switch x := v.(type) {
	case map[string]any:
		return x[name]
	case []any: // a path on a list maps over its contexts
		out := make([]any, 0, len(x))
		for _, e := range x {
			out = append(out, ev.path(e, name))
		}
		return out
	case time.Time:
		switch name {
		case "year":
			return int64(x.Year())
		case "month":
			return int64(x.Month())
		case "day":
			return int64(x.Day())
		case "hour":
			return int64(x.Hour())
		case "minute":
			return int64(x.Minute())
		case "second":
			return int64(x.Second())
		case "weekday":
			wd := int64(x.Weekday())
			if wd == 0 {
				wd = 7
			}
			return wd
		}
	case expr.Duration:
		switch name {
		case "years":
			return x.Months / 12
		case "months":
			return x.Months % 12
		case "days":
			return int64(x.D / (24 * time.Hour))
		case "hours":
			return int64(x.D % (24 * time.Hour) / time.Hour)
		case "minutes":
			return int64(x.D % time.Hour / time.Minute)
		case "seconds":
			return int64(x.D % time.Minute / time.Second)
		}
	}
	return nil
}

func (ev *evaluator) filter(x *filterExpr, sc *scope) any {
	v := ev.eval(x.x, sc)
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		list = []any{v} // a single value filters as a list of one
	}
	// A number selects by 1-based position (negative from the end).
	if idx := ev.tryIndex(x.cond, sc); idx != nil {
		i := *idx
		switch {
		case i > 0 && int(i) <= len(list):
			return list[i-1]
		case i < 0 && int(-i) <= len(list):
			return list[len(list)+int(i)]
		}
		return nil
	}
	out := []any{}
	for _, e := range list {
		ev.step(x, 1)
		local := map[string]any{"item": e}
		if m, ok := e.(map[string]any); ok {
			for k, v := range m {
				local[k] = v
			}
		}
		if ev.eval(x.cond, &scope{local: local, parent: sc}) == true {
			out = append(out, e)
		}
	}
	return out
}

// tryIndex evaluates a filter's expression as an index if it does not
// refer to the item (a literal, or a name in scope that holds a number).
func (ev *evaluator) tryIndex(n node, sc *scope) *int64 {
	switch c := n.(type) {
	case *lit:
		if i, ok := c.v.(int64); ok {
			return &i
		}
	case *unaryExpr:
		if l, ok := c.x.(*lit); ok {
			if i, ok := l.v.(int64); ok {
				i = -i
				return &i
			}
		}
	case *nameRef:
		if v, ok := sc.get(c.name); ok {
			if i, ok := v.(int64); ok {
				return &i
			}
		}
	case *binaryExpr:
		if c.op == "+" || c.op == "-" || c.op == "*" {
			v := ev.eval(c, sc)
			if i, ok := v.(int64); ok {
				return &i
			}
		}
	}
	return nil
}

// test applies one test of "in" to v.
func (ev *evaluator) test(v any, t node, sc *scope) any {
	switch u := t.(type) {
	case *unaryTest:
		r := ev.eval(u.x, sc)
		return compareOp(u.op, v, r)
	}
	r := ev.eval(t, sc)
	switch x := r.(type) {
	case *rangeVal:
		return inRange(v, x)
	case []any:
		for _, e := range x {
			if equal(v, e) {
				return true
			}
		}
		return false
	}
	return equal(v, r)
}

func inRange(v any, r *rangeVal) any {
	a, ok1 := compare(v, r.lo)
	b, ok2 := compare(v, r.hi)
	if !ok1 || !ok2 {
		return nil
	}
	lo := a > 0 || (a == 0 && !r.openLo)
	hi := b < 0 || (b == 0 && !r.openHi)
	return lo && hi
}

func (ev *evaluator) binary(x *binaryExpr, sc *scope) any {
	switch x.op {
	case "and":
		l := ev.eval(x.l, sc)
		if l == false {
			return false
		}
		r := ev.eval(x.r, sc)
		if r == false {
			return false
		}
		if l == true && r == true {
			return true
		}
		return nil
	case "or":
		l := ev.eval(x.l, sc)
		if l == true {
			return true
		}
		r := ev.eval(x.r, sc)
		if r == true {
			return true
		}
		if l == false && r == false {
			return false
		}
		return nil
	}
	l, r := ev.eval(x.l, sc), ev.eval(x.r, sc)
	switch x.op {
	case "=", "!=", "<", "<=", ">", ">=":
		return compareOp(x.op, l, r)
	}
	if l == nil || r == nil {
		return nil
	}
	v, err := arith(x.op, l, r)
	if err != nil {
		ev.fail(x, "%v", err)
	}
	if s, ok := v.(string); ok {
		ev.step(x, len(s)/64)
	}
	return v
}

func compareOp(op string, l, r any) any {
	switch op {
	case "=":
		return equal(l, r)
	case "!=":
		return !equal(l, r)
	}
	c, ok := compare(l, r)
	if !ok {
		return nil
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// compare orders two values of the same type.
func compare(l, r any) (int, bool) {
	switch a := l.(type) {
	case int64:
		if b, ok := r.(int64); ok {
			return cmp3(a < b, a > b), true
		}
		if b, ok := r.(float64); ok {
			return cmp3(float64(a) < b, float64(a) > b), true
		}
	case float64:
		if b, ok := toFloat(r); ok {
			return cmp3(a < b, a > b), true
		}
	case string:
		if b, ok := r.(string); ok {
			return strings.Compare(a, b), true
		}
	case time.Time:
		if b, ok := r.(time.Time); ok {
			return cmp3(a.Before(b), a.After(b)), true
		}
	case expr.Duration:
		if b, ok := r.(expr.Duration); ok {
			if a.Months != b.Months {
				return cmp3(a.Months < b.Months, a.Months > b.Months), true
			}
			return cmp3(a.D < b.D, a.D > b.D), true
		}
	case timeOfDay:
		if b, ok := r.(timeOfDay); ok {
			return cmp3(a.d < b.d, a.d > b.d), true
		}
	}
	return 0, false
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

func equal(l, r any) bool {
	if l == nil || r == nil {
		return l == nil && r == nil
	}
	if c, ok := compare(l, r); ok {
		return c == 0
	}
	switch a := l.(type) {
	case bool:
		b, ok := r.(bool)
		return ok && a == b
	case []any:
		b, ok := r.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := r.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(l, r)
}

func arith(op string, l, r any) (any, error) {
	switch a := l.(type) {
	case int64:
		if b, ok := r.(int64); ok {
			switch op {
			case "+":
				if s := a + b; (s > a) == (b > 0) {
					return s, nil
				}
				return float64(a) + float64(b), nil
			case "-":
				if s := a - b; (s < a) == (b > 0) {
					return s, nil
				}
				return float64(a) - float64(b), nil
			case "*":
				if a == 0 || b == 0 {
					return int64(0), nil
				}
				if s := a * b; s/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64) {
					return s, nil
				}
				return float64(a) * float64(b), nil
			case "/":
				if b == 0 {
					return nil, nil
				}
				if a%b == 0 {
					return a / b, nil
				}
				return float64(a) / float64(b), nil
			case "**":
				f := math.Pow(float64(a), float64(b))
				if b >= 0 && math.Abs(f) < 1<<53 {
					return int64(f), nil
				}
				return f, nil
			}
		}
		if b, ok := r.(float64); ok {
			return arith(op, float64(a), b)
		}
		if b, ok := r.(expr.Duration); ok && op == "*" {
			return expr.Duration{Months: b.Months * a, D: b.D * time.Duration(a)}, nil
		}
	case float64:
		if b, ok := toFloat(r); ok {
			var v float64
			switch op {
			case "+":
				v = a + b
			case "-":
				v = a - b
			case "*":
				v = a * b
			case "/":
				if b == 0 {
					return nil, nil
				}
				v = a / b
			case "**":
				v = math.Pow(a, b)
			}
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, nil
			}
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				// FEEL numbers are decimals: a whole result is an integer.
				return int64(v), nil
			}
			return v, nil
		}
	case string:
		if b, ok := r.(string); ok && op == "+" {
			return a + b, nil
		}
	case time.Time:
		switch b := r.(type) {
		case expr.Duration:
			switch op {
			case "+":
				return b.AddTo(a), nil
			case "-":
				return expr.Duration{Months: -b.Months, D: -b.D}.AddTo(a), nil
			}
		case time.Time:
			if op == "-" {
				return expr.Duration{D: a.Sub(b)}, nil
			}
		}
	case expr.Duration:
		switch b := r.(type) {
		case expr.Duration:
			switch op {
			case "+":
				return expr.Duration{Months: a.Months + b.Months, D: a.D + b.D}, nil
			case "-":
				return expr.Duration{Months: a.Months - b.Months, D: a.D - b.D}, nil
			}
		case time.Time:
			if op == "+" {
				return a.AddTo(b), nil
			}
		case int64:
			switch op {
			case "*":
				return expr.Duration{Months: a.Months * b, D: a.D * time.Duration(b)}, nil
			case "/":
				if b == 0 {
					return nil, nil
				}
				return expr.Duration{Months: a.Months / b, D: a.D / time.Duration(b)}, nil
			}
		case float64:
			if op == "*" {
				return expr.Duration{Months: int64(float64(a.Months) * b), D: time.Duration(float64(a.D) * b)}, nil
			}
		}
	}
	return nil, fmt.Errorf("cannot apply %s to a %s and a %s", op, expr.TypeName(l), expr.TypeName(r))
}

func (ev *evaluator) call(x *callExpr, sc *scope) any {
	b := builtins().funcs[x.fn]
	var args []any
	if x.named != nil {
		args = make([]any, len(b.params))
		for name, n := range x.named {
			i := indexOf(b.params, name)
			if i < 0 {
				ev.fail(x, "%s() has no parameter %q", x.fn, name)
			}
			args[i] = ev.eval(n, sc)
		}
	} else {
		args = make([]any, 0, len(x.args))
		for _, a := range x.args {
			args = append(args, ev.eval(a, sc))
		}
	}
	if len(args) < b.min || (!b.variadic && len(args) > len(b.params)) {
		if b.variadic {
			ev.fail(x, "%s() takes at least %d arguments, not %d", x.fn, b.min, len(args))
		}
		ev.fail(x, "%s() takes %d to %d arguments, not %d", x.fn, b.min, len(b.params), len(args))
	}
	for _, a := range args {
		if l, ok := a.([]any); ok {
			ev.step(x, len(l))
		}
	}
	v, err := b.fn(ev, args)
	if err != nil {
		ev.fail(x, "%s(): %v", x.fn, err)
	}
	if l, ok := v.([]any); ok {
		ev.step(x, len(l))
	}
	return v
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// sortAny sorts numbers, strings and dates in ascending order.
func sortAny(list []any) error {
	var bad error
	sort.SliceStable(list, func(i, j int) bool {
		c, ok := compare(list[i], list[j])
		if !ok && bad == nil {
			bad = fmt.Errorf("cannot order a %s and a %s", expr.TypeName(list[i]), expr.TypeName(list[j]))
		}
		return c < 0
	})
	return bad
}
