package feel

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/veena-wf/veena/expr"
)

type builtin struct {
	params   []string
	min      int
	variadic bool
	fn       func(ev *evaluator, args []any) (any, error)
}

// builtinTable is the built-in functions by name, with the names that have
// spaces (string length, date and time) longest first, so that "date and
// time" wins over "date". It is made at the first parse: a program that
// never reads FEEL does not keep it on the heap.
type builtinTable struct {
	funcs     map[string]builtin
	multiWord []string
}

var builtins = sync.OnceValue(makeBuiltins)

func makeBuiltins() *builtinTable {
	b := map[string]builtin{}
	def := func(name string, params []string, min int, fn func(ev *evaluator, args []any) (any, error)) {
		b[name] = builtin{params: params, min: min, fn: fn}
	}
	vdef := func(name string, fn func(ev *evaluator, args []any) (any, error)) {
		b[name] = builtin{params: []string{"list"}, min: 1, variadic: true, fn: fn}
	}
	// booleans and conversions
	def("not", []string{"negand"}, 1, func(_ *evaluator, a []any) (any, error) {
		if v, ok := a[0].(bool); ok {
			return !v, nil
		}
		return nil, nil
	})
	def("string", []string{"from"}, 1, func(_ *evaluator, a []any) (any, error) { return toString(a[0]), nil })
	def("number", []string{"from", "grouping separator", "decimal separator"}, 1, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		if !ok {
			if _, ok := toFloat(a[0]); ok {
				return a[0], nil
			}
			return nil, nil
		}
		if len(a) > 1 {
			if g, ok := a[1].(string); ok {
				s = strings.ReplaceAll(s, g, "")
			}
		}
		if len(a) > 2 {
			if d, ok := a[2].(string); ok {
				s = strings.ReplaceAll(s, d, ".")
			}
		}
		s = strings.TrimSpace(s)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, nil
		}
		return nil, nil
	})
	def("is defined", []string{"value"}, 1, func(_ *evaluator, a []any) (any, error) { return a[0] != nil, nil })
	def("get or else", []string{"value", "default"}, 2, func(_ *evaluator, a []any) (any, error) {
		if a[0] == nil {
			return a[1], nil
		}
		return a[0], nil
	})
	// strings
	def("string length", []string{"string"}, 1, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		if !ok {
			return nil, nil
		}
		return int64(utf8.RuneCountInString(s)), nil
	})
	def("substring", []string{"string", "start position", "length"}, 2, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		start, ok2 := a[1].(int64)
		if !ok || !ok2 {
			return nil, nil
		}
		r := []rune(s)
		if start < 0 {
			start = int64(len(r)) + start + 1
		}
		if start < 1 {
			start = 1
		}
		if start > int64(len(r)) {
			return "", nil
		}
		end := int64(len(r))
		if len(a) > 2 && a[2] != nil {
			n, ok := a[2].(int64)
			if !ok {
				return nil, nil
			}
			end = min(end, start-1+max(n, 0))
		}
		return string(r[start-1 : end]), nil
	})
	str1 := func(name string, f func(string) any) {
		def(name, []string{"string"}, 1, func(_ *evaluator, a []any) (any, error) {
			s, ok := a[0].(string)
			if !ok {
				return nil, nil
			}
			return f(s), nil
		})
	}
	str1("upper case", func(s string) any { return strings.ToUpper(s) })
	str1("lower case", func(s string) any { return strings.ToLower(s) })
	str1("trim", func(s string) any { return strings.TrimSpace(s) })
	str2 := func(name, p2 string, f func(a, b string) any) {
		def(name, []string{"string", p2}, 2, func(_ *evaluator, a []any) (any, error) {
			s, ok := a[0].(string)
			t, ok2 := a[1].(string)
			if !ok || !ok2 {
				return nil, nil
			}
			return f(s, t), nil
		})
	}
	str2("substring before", "match", func(s, m string) any {
		i := strings.Index(s, m)
		if i < 0 {
			return ""
		}
		return s[:i]
	})
	str2("substring after", "match", func(s, m string) any {
		i := strings.Index(s, m)
		if i < 0 {
			return ""
		}
		return s[i+len(m):]
	})
	str2("contains", "match", func(s, m string) any { return strings.Contains(s, m) })
	str2("starts with", "match", func(s, m string) any { return strings.HasPrefix(s, m) })
	str2("ends with", "match", func(s, m string) any { return strings.HasSuffix(s, m) })
	def("matches", []string{"input", "pattern", "flags"}, 2, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		re, err := pattern(a[1], a)
		if !ok || err != nil {
			return nil, err
		}
		return re.MatchString(s), nil
	})
	def("replace", []string{"input", "pattern", "replacement", "flags"}, 3, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		rep, ok2 := a[2].(string)
		re, err := pattern(a[1], append(a[:2:2], a[3:]...))
		if !ok || !ok2 || err != nil {
			return nil, err
		}
		return re.ReplaceAllString(s, rep), nil
	})
	def("split", []string{"string", "delimiter"}, 2, func(_ *evaluator, a []any) (any, error) {
		s, ok := a[0].(string)
		re, err := pattern(a[1], nil)
		if !ok || err != nil {
			return nil, err
		}
		out := []any{}
		for _, p := range re.Split(s, 10000) {
			out = append(out, p)
		}
		return out, nil
	})
	def("string join", []string{"list", "delimiter"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		sep := ""
		if len(a) > 1 && a[1] != nil {
			sep, _ = a[1].(string)
		}
		var parts []string
		for _, e := range l {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			} else if e != nil {
				return nil, nil
			}
		}
		return strings.Join(parts, sep), nil
	})
	// lists
	listArg := func(a []any) ([]any, bool) {
		if len(a) == 1 {
			if l, ok := a[0].([]any); ok {
				return l, true
			}
		}
		return a, true
	}
	def("list contains", []string{"list", "element"}, 2, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		for _, e := range l {
			if equal(e, a[1]) {
				return true, nil
			}
		}
		return false, nil
	})
	def("count", []string{"list"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		return int64(len(l)), nil
	})
	minmax := func(name string, less bool) {
		vdef(name, func(_ *evaluator, a []any) (any, error) {
			l, _ := listArg(a)
			if len(l) == 0 {
				return nil, nil
			}
			best := l[0]
			for _, e := range l[1:] {
				c, ok := compare(e, best)
				if !ok {
					return nil, nil
				}
				if (less && c < 0) || (!less && c > 0) {
					best = e
				}
			}
			return best, nil
		})
	}
	minmax("min", true)
	minmax("max", false)
	vdef("sum", func(_ *evaluator, a []any) (any, error) {
		l, _ := listArg(a)
		var s any = int64(0)
		for _, e := range l {
			v, err := arith("+", s, e)
			if err != nil || v == nil {
				return nil, nil
			}
			s = v
		}
		return s, nil
	})
	vdef("mean", func(_ *evaluator, a []any) (any, error) {
		l, _ := listArg(a)
		if len(l) == 0 {
			return nil, nil
		}
		s := 0.0
		for _, e := range l {
			f, ok := toFloat(e)
			if !ok {
				return nil, nil
			}
			s += f
		}
		return arith("/", s, float64(len(l)))
	})
	vdef("all", func(_ *evaluator, a []any) (any, error) {
		l, _ := listArg(a)
		r := any(true)
		for _, e := range l {
			switch e {
			case false:
				return false, nil
			case true:
			default:
				r = nil
			}
		}
		return r, nil
	})
	vdef("any", func(_ *evaluator, a []any) (any, error) {
		l, _ := listArg(a)
		r := any(false)
		for _, e := range l {
			switch e {
			case true:
				return true, nil
			case false:
			default:
				r = nil
			}
		}
		return r, nil
	})
	def("sublist", []string{"list", "start position", "length"}, 2, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		start, ok2 := a[1].(int64)
		if !ok || !ok2 {
			return nil, nil
		}
		if start < 0 {
			start = int64(len(l)) + start + 1
		}
		if start < 1 || start > int64(len(l)) {
			return []any{}, nil
		}
		end := int64(len(l))
		if len(a) > 2 && a[2] != nil {
			n, _ := a[2].(int64)
			end = min(end, start-1+max(n, 0))
		}
		return append([]any{}, l[start-1:end]...), nil
	})
	b["append"] = builtin{params: []string{"list", "item"}, min: 1, variadic: true, fn: func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		return append(append([]any{}, l...), a[1:]...), nil
	}}
	vdef("concatenate", func(_ *evaluator, a []any) (any, error) {
		out := []any{}
		for _, e := range a {
			l, ok := e.([]any)
			if !ok {
				return nil, nil
			}
			out = append(out, l...)
		}
		return out, nil
	})
	def("insert before", []string{"list", "position", "newItem"}, 3, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		pos, ok2 := a[1].(int64)
		if !ok || !ok2 || pos < 1 || pos > int64(len(l))+1 {
			return nil, nil
		}
		out := append([]any{}, l[:pos-1]...)
		out = append(out, a[2])
		return append(out, l[pos-1:]...), nil
	})
	def("remove", []string{"list", "position"}, 2, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		pos, ok2 := a[1].(int64)
		if !ok || !ok2 || pos < 1 || pos > int64(len(l)) {
			return nil, nil
		}
		return append(append([]any{}, l[:pos-1]...), l[pos:]...), nil
	})
	def("reverse", []string{"list"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		out := make([]any, len(l))
		for i, e := range l {
			out[len(l)-1-i] = e
		}
		return out, nil
	})
	def("index of", []string{"list", "match"}, 2, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		out := []any{}
		for i, e := range l {
			if equal(e, a[1]) {
				out = append(out, int64(i+1))
			}
		}
		return out, nil
	})
	distinct := func(l []any) []any {
		out := []any{}
		for _, e := range l {
			dup := false
			for _, o := range out {
				if equal(e, o) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, e)
			}
		}
		return out
	}
	vdef("union", func(_ *evaluator, a []any) (any, error) {
		var all []any
		for _, e := range a {
			l, ok := e.([]any)
			if !ok {
				return nil, nil
			}
			all = append(all, l...)
		}
		return distinct(all), nil
	})
	def("distinct values", []string{"list"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		return distinct(l), nil
	})
	def("flatten", []string{"list"}, 1, func(ev *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		out := []any{}
		var walk func(l []any, depth int) error
		walk = func(l []any, depth int) error {
			if depth > maxDepth {
				return errors.New("lists nested too deeply")
			}
			for _, e := range l {
				if ev.budget.Step(1) != nil {
					return expr.ErrCost
				}
				if sub, ok := e.([]any); ok {
					if err := walk(sub, depth+1); err != nil {
						return err
					}
				} else {
					out = append(out, e)
				}
			}
			return nil
		}
		return out, walk(l, 0)
	})
	def("sort", []string{"list"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		out := append([]any{}, l...)
		return out, sortAny(out)
	})
	def("is empty", []string{"list"}, 1, func(_ *evaluator, a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, nil
		}
		return len(l) == 0, nil
	})
	// numbers
	num1 := func(name string, f func(float64) float64) {
		def(name, []string{"n"}, 1, func(_ *evaluator, a []any) (any, error) {
			switch x := a[0].(type) {
			case int64:
				r := f(float64(x))
				if r == math.Trunc(r) && math.Abs(r) < 1<<53 {
					return int64(r), nil
				}
				return r, nil
			case float64:
				r := f(x)
				if r == math.Trunc(r) && math.Abs(r) < 1<<53 && name != "sqrt" {
					return int64(r), nil
				}
				return r, nil
			}
			return nil, nil
		})
	}
	num1("abs", math.Abs)
	num1("floor", math.Floor)
	num1("ceiling", math.Ceil)
	num1("sqrt", math.Sqrt)
	def("decimal", []string{"n", "scale"}, 2, func(_ *evaluator, a []any) (any, error) {
		f, ok := toFloat(a[0])
		s, ok2 := a[1].(int64)
		if !ok || !ok2 || s < 0 || s > 15 {
			return nil, nil
		}
		p := math.Pow(10, float64(s))
		r := math.RoundToEven(f*p) / p
		if r == math.Trunc(r) && math.Abs(r) < 1<<53 {
			return int64(r), nil
		}
		return r, nil
	})
	def("modulo", []string{"dividend", "divisor"}, 2, func(_ *evaluator, a []any) (any, error) {
		if x, ok := a[0].(int64); ok {
			if y, ok := a[1].(int64); ok {
				if y == 0 {
					return nil, nil
				}
				m := x % y
				if m != 0 && (m < 0) != (y < 0) {
					m += y
				}
				return m, nil
			}
		}
		x, ok := toFloat(a[0])
		y, ok2 := toFloat(a[1])
		if !ok || !ok2 || y == 0 {
			return nil, nil
		}
		return x - y*math.Floor(x/y), nil
	})
	def("odd", []string{"number"}, 1, func(_ *evaluator, a []any) (any, error) {
		if x, ok := a[0].(int64); ok {
			return x%2 != 0, nil
		}
		return nil, nil
	})
	def("even", []string{"number"}, 1, func(_ *evaluator, a []any) (any, error) {
		if x, ok := a[0].(int64); ok {
			return x%2 == 0, nil
		}
		return nil, nil
	})
	// dates, times, durations
	temporal := func(name string, want func(any) bool) {
		def(name, []string{"from"}, 1, func(_ *evaluator, a []any) (any, error) {
			switch x := a[0].(type) {
			case string:
				v, err := parseTemporal(x)
				if err != nil {
					return nil, err
				}
				if !want(v) {
					return nil, fmt.Errorf("%q is not a %s", x, name)
				}
				return v, nil
			case time.Time:
				if name == "date" {
					return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC), nil
				}
				if name == "date and time" {
					return x, nil
				}
			case expr.Duration:
				if name == "duration" {
					return x, nil
				}
			}
			return nil, nil
		})
	}
	isTime := func(v any) bool { _, ok := v.(time.Time); return ok }
	temporal("date and time", isTime)
	temporal("date", isTime)
	temporal("time", func(v any) bool { _, ok := v.(timeOfDay); return ok })
	temporal("duration", func(v any) bool { _, ok := v.(expr.Duration); return ok })
	def("now", nil, 0, func(ev *evaluator, _ []any) (any, error) { return ev.now, nil })
	def("today", nil, 0, func(ev *evaluator, _ []any) (any, error) {
		return time.Date(ev.now.Year(), ev.now.Month(), ev.now.Day(), 0, 0, 0, 0, time.UTC), nil
	})
	def("years and months duration", []string{"from", "to"}, 2, func(_ *evaluator, a []any) (any, error) {
		f, ok := a[0].(time.Time)
		t, ok2 := a[1].(time.Time)
		if !ok || !ok2 {
			return nil, nil
		}
		m := int64(t.Year()-f.Year())*12 + int64(t.Month()-f.Month())
		if t.Day() < f.Day() {
			m--
		}
		return expr.Duration{Months: m}, nil
	})
	def("day of week", []string{"date"}, 1, func(_ *evaluator, a []any) (any, error) {
		t, ok := a[0].(time.Time)
		if !ok {
			return nil, nil
		}
		return t.Weekday().String(), nil
	})
	def("month of year", []string{"date"}, 1, func(_ *evaluator, a []any) (any, error) {
		t, ok := a[0].(time.Time)
		if !ok {
			return nil, nil
		}
		return t.Month().String(), nil
	})
	// contexts
	def("get value", []string{"m", "key"}, 2, func(_ *evaluator, a []any) (any, error) {
		m, ok := a[0].(map[string]any)
		k, ok2 := a[1].(string)
		if !ok || !ok2 {
			return nil, nil
		}
		return m[k], nil
	})
	def("get entries", []string{"m"}, 1, func(_ *evaluator, a []any) (any, error) {
		m, ok := a[0].(map[string]any)
		if !ok {
			return nil, nil
		}
		keys := make([]any, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		_ = sortAny(keys)
		out := []any{}
		for _, k := range keys {
			out = append(out, map[string]any{"key": k, "value": m[k.(string)]})
		}
		return out, nil
	})
	def("context put", []string{"context", "key", "value"}, 3, func(_ *evaluator, a []any) (any, error) {
		m, ok := a[0].(map[string]any)
		k, ok2 := a[1].(string)
		if !ok || !ok2 {
			return nil, nil
		}
		out := make(map[string]any, len(m)+1)
		for key, v := range m {
			out[key] = v
		}
		out[k] = a[2]
		return out, nil
	})
	vdef("context merge", func(_ *evaluator, a []any) (any, error) {
		l, _ := listArg(a)
		out := map[string]any{}
		for _, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, nil
			}
			for k, v := range m {
				out[k] = v
			}
		}
		return out, nil
	})
	t := &builtinTable{funcs: b}
	for name := range b {
		if strings.Contains(name, " ") {
			t.multiWord = append(t.multiWord, name)
		}
	}
	for i := range t.multiWord {
		for j := i + 1; j < len(t.multiWord); j++ {
			if len(t.multiWord[j]) > len(t.multiWord[i]) {
				t.multiWord[i], t.multiWord[j] = t.multiWord[j], t.multiWord[i]
			}
		}
	}
	return t
}

// pattern compiles a regular expression argument (RE2: linear time, so a
// pattern cannot make an evaluation run away).
func pattern(p any, args []any) (*regexp.Regexp, error) {
	s, ok := p.(string)
	if !ok {
		return nil, nil
	}
	if len(s) > 1000 {
		return nil, errors.New("pattern longer than 1000 characters")
	}
	if len(args) > 2 {
		if f, ok := args[2].(string); ok && f != "" {
			flags := ""
			for _, c := range f {
				switch c {
				case 'i', 's', 'm':
					flags += string(c)
				}
			}
			if flags != "" {
				s = "(?" + flags + ")" + s
			}
		}
	}
	return regexp.Compile(s)
}

// toString converts a value to text as FEEL's string() does.
func toString(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case expr.Duration:
		return x.String()
	case timeOfDay:
		d := x.d
		return fmt.Sprintf("%02d:%02d:%02d", d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s := toString(e)
			if str, ok := e.(string); ok {
				s = strconv.Quote(str)
			}
			if s == nil {
				s = "null"
			}
			parts[i] = s.(string)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]any, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		_ = sortAny(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s := toString(x[k.(string)])
			if str, ok := x[k.(string)].(string); ok {
				s = strconv.Quote(str)
			}
			if s == nil {
				s = "null"
			}
			parts[i] = k.(string) + ":" + s.(string)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}
