// Package expr evaluates the expressions of process definitions in a
// sandbox: FEEL as Camunda 8 writes it (package expr/feel), UEL's plain
// forms ${x} and ${x > 1} as Camunda 7, Flowable and Activiti write them
// (expr/uel), CEL (cel.dev/cel-go) and XPath over the process data for
// MarkLogic's models (expr/xpath). Every evaluation has a cost limit and a
// time limit, reads only the variables it is given, and has no side
// effects: no I/O, no clock but the one passed in.
package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Language names an expression language.
type Language string

// The languages Veena evaluates.
const (
	FEEL       Language = "feel"
	UEL        Language = "uel"
	CEL        Language = "cel"
	XPath      Language = "xpath"
	JavaScript Language = "javascript"
)

// Default limits of one evaluation.
const (
	DefaultCost    = 100_000
	DefaultTimeout = 100 * time.Millisecond
)

// Vars is what an expression can read: the variables in scope.
type Vars interface {
	// Get returns a variable's value (nil, bool, int64, float64, string,
	// time.Time, Duration, []any or map[string]any) and whether it exists.
	Get(name string) (any, bool)
	// Names lists the variables (for languages that read them all, such as
	// XPath over the process data).
	Names() []string
}

// Map is a Vars backed by a map.
type Map map[string]any

// Get returns m[name].
func (m Map) Get(name string) (any, bool) { v, ok := m[name]; return v, ok }

// Names returns the keys of m, sorted.
func (m Map) Names() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Env is what one evaluation gets: the variables, the time it runs at
// (now() in every language) and its limits (zero: the defaults).
type Env struct {
	Vars    Vars
	Now     time.Time
	Cost    int           // the evaluation's budget of steps
	Timeout time.Duration // wall-clock limit of one evaluation
}

// Program is a compiled expression.
type Program interface {
	// Eval evaluates the expression. Errors are *Error.
	Eval(env Env) (any, error)
	// Source is the expression as written.
	Source() string
	// Language is the language it was written in.
	Language() Language
}

// Error is an expression that failed to compile or to evaluate.
type Error struct {
	Lang   Language
	Source string
	Offset int // byte offset in Source of the problem, -1 if unknown
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	src := e.Source
	if len(src) > 80 {
		src = src[:77] + "..."
	}
	if e.Offset >= 0 {
		return fmt.Sprintf("%s expression %q: at offset %d: %s", e.Lang, src, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s expression %q: %s", e.Lang, src, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errors callers act on.
var (
	// ErrCost: the evaluation used up its budget of steps.
	ErrCost = errors.New("cost limit exceeded")
	// ErrTimeout: the evaluation ran past its time limit.
	ErrTimeout = errors.New("time limit exceeded")
)

// Duration is a FEEL or ISO 8601 duration: a number of months (years and
// months) and a time.Duration (days and time), either of which may be zero.
type Duration struct {
	Months int64
	D      time.Duration
}

// String writes the duration in ISO 8601 (P1Y2M, PT1H30M, P2DT3H).
func (d Duration) String() string {
	var b strings.Builder
	months, dur := d.Months, d.D
	neg := months < 0 || (months == 0 && dur < 0)
	if neg {
		b.WriteByte('-')
		months, dur = -months, -dur
	}
	b.WriteByte('P')
	if y := months / 12; y > 0 {
		fmt.Fprintf(&b, "%dY", y)
	}
	if m := months % 12; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
	}
	days := dur / (24 * time.Hour)
	dur -= days * 24 * time.Hour
	if days > 0 {
		fmt.Fprintf(&b, "%dD", days)
	}
	if dur > 0 {
		b.WriteByte('T')
		if h := dur / time.Hour; h > 0 {
			fmt.Fprintf(&b, "%dH", h)
			dur -= h * time.Hour
		}
		if m := dur / time.Minute; m > 0 {
			fmt.Fprintf(&b, "%dM", m)
			dur -= m * time.Minute
		}
		if dur > 0 {
			s := float64(dur) / float64(time.Second)
			fmt.Fprintf(&b, "%sS", strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.9f", s), "0"), "."))
		}
	}
	if b.Len() == 1 || (neg && b.Len() == 2) {
		b.WriteString("T0S")
	}
	return b.String()
}

// AddTo returns t moved by the duration.
func (d Duration) AddTo(t time.Time) time.Time { return t.AddDate(0, int(d.Months), 0).Add(d.D) }

// Normalize converts a value read from a process environment (json.Number
// inside JSON arrays and objects, int and other integer types) into the
// value model of this package: nil, bool, int64, float64, string,
// time.Time, Duration, []any, map[string]any.
func Normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string, time.Time, Duration:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case time.Duration:
		return Duration{D: x}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

// ToJSON converts a value of this package's model into what encoding/json
// writes as JSON (dates as RFC 3339 strings, durations in ISO 8601).
func ToJSON(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case Duration:
		return x.String()
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ToJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ToJSON(e)
		}
		return out
	}
	return v
}

// TypeName names a value's type for messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case time.Time:
		return "date and time"
	case Duration:
		return "duration"
	case []any:
		return "list"
	case map[string]any:
		return "context"
	}
	return fmt.Sprintf("%T", v)
}

// Budget counts the steps of one evaluation and watches its clock. The
// language evaluators call Step for every node they evaluate and every
// element they iterate. The clock starts at its first reading, after
// clockSteps steps: most evaluations (a condition, a mapping) take fewer
// and never read it.
type Budget struct {
	left     int
	checks   int
	timeout  time.Duration
	deadline time.Time // zero until the clock's first reading
}

// clockSteps is how many steps go between readings of the clock.
const clockSteps = 256

// NewBudget starts the budget of one evaluation.
func NewBudget(env Env) Budget {
	cost := env.Cost
	if cost <= 0 {
		cost = DefaultCost
	}
	timeout := env.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return Budget{left: cost, timeout: timeout}
}

// Step spends n steps; it fails once the budget or the time is used up.
func (b *Budget) Step(n int) error {
	b.left -= n
	if b.left < 0 {
		return ErrCost
	}
	b.checks += n
	if b.checks >= clockSteps {
		b.checks = 0
		now := time.Now()
		switch {
		case b.deadline.IsZero():
			b.deadline = now.Add(b.timeout)
		case now.After(b.deadline):
			return ErrTimeout
		}
	}
	return nil
}

// Truth reads the result of a condition: it must be a boolean (Camunda 8:
// a condition that is not boolean is an incident).
func Truth(p Program, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, &Error{Lang: p.Language(), Source: p.Source(), Offset: -1,
			Msg: fmt.Sprintf("a condition must be a boolean, not %s (%v)", TypeName(v), v)}
	}
	return b, nil
}
