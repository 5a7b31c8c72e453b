// Package celexpr evaluates CEL (cel.dev/cel-go) expressions over process
// variables, with cel-go's cost limit and an interrupt at the time limit.
// Variables are read by name at evaluation; a name that is not defined is
// an error, as CEL has it.
package celexpr

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/veena-wf/veena/expr"
)

// Program is a compiled CEL expression.
type Program struct {
	src string
	prg cel.Program
}

// celEnv is the CEL environment every expression compiles in, made at the
// first compilation: a program that never reads CEL does not keep it.
var celEnv = sync.OnceValue(func() *cel.Env {
	env, err := cel.NewEnv(cel.OptionalTypes())
	if err != nil {
		panic(err)
	}
	return env
})

// Compile parses a CEL expression. Names are resolved at evaluation (the
// variables of a process are not known in advance).
func Compile(src string) (*Program, error) {
	env := celEnv()
	ast, iss := env.Parse(src)
	if iss != nil && iss.Err() != nil {
		off := -1
		if errs := iss.Errors(); len(errs) > 0 {
			off = int(errs[0].Location.Column())
		}
		return nil, &expr.Error{Lang: expr.CEL, Source: src, Offset: off, Msg: strings.TrimSpace(iss.Err().Error())}
	}
	prg, err := env.Program(ast,
		cel.EvalOptions(cel.OptTrackCost),
		cel.CostLimit(uint64(expr.DefaultCost)),
		cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &expr.Error{Lang: expr.CEL, Source: src, Offset: -1, Msg: err.Error()}
	}
	return &Program{src: src, prg: prg}, nil
}

// Source is the expression as written.
func (p *Program) Source() string { return p.src }

// Language is CEL.
func (p *Program) Language() expr.Language { return expr.CEL }

// activation resolves CEL names from process variables.
type activation struct{ vars expr.Vars }

func (a activation) ResolveName(name string) (any, bool) {
	if a.vars == nil {
		return nil, false
	}
	v, ok := a.vars.Get(name)
	if !ok {
		return nil, false
	}
	return toCEL(expr.Normalize(v)), true
}

func (a activation) Parent() interpreter.Activation { return nil }

func toCEL(v any) any {
	switch x := v.(type) {
	case expr.Duration:
		if x.Months == 0 {
			return x.D
		}
		return x.String()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toCEL(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toCEL(e)
		}
		return out
	}
	return v
}

// Eval evaluates the expression.
func (p *Program) Eval(e expr.Env) (any, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = expr.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, det, err := p.prg.ContextEval(ctx, activation{e.Vars})
	if err != nil {
		msg := err.Error()
		var cause error
		switch {
		case strings.Contains(msg, "cost limit"):
			cause = expr.ErrCost
		case strings.Contains(msg, "interrupted") || ctx.Err() != nil:
			cause = expr.ErrTimeout
		}
		return nil, &expr.Error{Lang: expr.CEL, Source: p.src, Offset: -1, Msg: msg, Err: cause}
	}
	if det != nil && e.Cost > 0 {
		if c := det.ActualCost(); c != nil && *c > uint64(e.Cost) {
			return nil, &expr.Error{Lang: expr.CEL, Source: p.src, Offset: -1, Msg: fmt.Sprintf("cost %d over %d", *c, e.Cost), Err: expr.ErrCost}
		}
	}
	v, err := fromCEL(out)
	if err != nil {
		return nil, &expr.Error{Lang: expr.CEL, Source: p.src, Offset: -1, Msg: err.Error()}
	}
	return v, nil
}

var anyList = reflect.TypeOf([]any{})
var anyMap = reflect.TypeOf(map[string]any{})

func fromCEL(v ref.Val) (any, error) {
	switch v.Type() {
	case types.NullType:
		return nil, nil
	case types.BoolType, types.IntType, types.DoubleType, types.StringType:
		return expr.Normalize(v.Value()), nil
	case types.UintType:
		return int64(v.Value().(uint64)), nil
	case types.TimestampType:
		t, err := v.ConvertToNative(reflect.TypeOf(time.Time{}))
		if err != nil {
			return nil, err
		}
		return t.(time.Time).UTC(), nil
	case types.DurationType:
		d, err := v.ConvertToNative(reflect.TypeOf(time.Duration(0)))
		if err != nil {
			return nil, err
		}
		return expr.Duration{D: d.(time.Duration)}, nil
	case types.ListType:
		l, err := v.ConvertToNative(anyList)
		if err != nil {
			return nil, err
		}
		return normalizeNative(l), nil
	case types.MapType:
		m, err := v.ConvertToNative(anyMap)
		if err != nil {
			return nil, err
		}
		return normalizeNative(m), nil
	}
	if types.IsError(v) {
		return nil, errors.New(fmt.Sprint(v))
	}
	return nil, fmt.Errorf("a CEL %s is not a value Veena keeps", v.Type().TypeName())
}

func normalizeNative(v any) any {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			x[i] = normalizeNative(e)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNative(e)
		}
		return x
	case ref.Val:
		y, err := fromCEL(x)
		if err != nil {
			return nil
		}
		return y
	case uint64:
		return int64(x)
	}
	return expr.Normalize(v)
}
