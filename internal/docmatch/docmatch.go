// Package docmatch evaluates the conditions of subscriptions over incoming
// documents: CEL expressions (cel.dev/cel-go) that see the document's uri
// (a string), collections (a list of strings) and content (its JSON), and
// must give a boolean. They are checked when the subscription is made
// (unknown names, wrong types) and run with a cost limit and a time limit.
package docmatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// Limits of one evaluation.
const (
	CostLimit = 100_000
	Timeout   = 100 * time.Millisecond
	// MaxSource bounds the length of a condition.
	MaxSource = 4096
)

// celEnv is the environment conditions compile in, made at the first
// compilation: a program with no document subscriptions does not keep it.
var celEnv = sync.OnceValue(func() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("uri", cel.StringType),
		cel.Variable("collections", cel.ListType(cel.StringType)),
		cel.Variable("content", cel.DynType),
	)
	if err != nil {
		panic(err)
	}
	return e
})

// Matcher is a compiled condition.
type Matcher struct {
	src string
	prg cel.Program
}

// Compile checks and compiles a condition.
func Compile(src string) (*Matcher, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("the condition is empty (true matches every document)")
	}
	if len(src) > MaxSource {
		return nil, fmt.Errorf("the condition is %d bytes long; the limit is %d", len(src), MaxSource)
	}
	env := celEnv()
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("the condition does not compile: %s", strings.TrimSpace(iss.Err().Error()))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("the condition gives a %s, not a boolean", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("the condition does not compile: %w", err)
	}
	return &Matcher{src: src, prg: prg}, nil
}

// Source is the condition as written.
func (m *Matcher) Source() string { return m.src }

// Match evaluates the condition for a document; content is its decoded
// JSON (maps, lists, strings, numbers, booleans, nil).
func (m *Matcher) Match(uri string, collections []string, content any) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if collections == nil {
		collections = []string{}
	}
	out, _, err := m.prg.ContextEval(ctx, map[string]any{"uri": uri, "collections": collections, "content": content})
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("the condition ran longer than %s", Timeout)
		}
		return false, fmt.Errorf("the condition failed: %w", err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %v (%s), not a boolean", out.Value(), out.Type().TypeName())
	}
	return b, nil
}

// MaxCached bounds the compiled conditions Cached keeps: conditions come
// from API callers, and a cache without a bound would keep every one ever
// checked, subscriptions deleted or refused included.
const MaxCached = 1024

// cache holds compiled conditions by source, up to MaxCached of them;
// when full, a new condition takes the place of one picked at random.
var cache struct {
	sync.Mutex
	m map[string]*Matcher
}

// Cached is Compile with the compiled conditions kept for the next call
// with the same source; errors are not kept.
func Cached(src string) (*Matcher, error) {
	cache.Lock()
	m, ok := cache.m[src]
	cache.Unlock()
	if ok {
		return m, nil
	}
	m, err := Compile(src)
	if err != nil {
		return nil, err
	}
	cache.Lock()
	defer cache.Unlock()
	if cache.m == nil {
		cache.m = map[string]*Matcher{}
	}
	if len(cache.m) >= MaxCached {
		for k := range cache.m { // map order: an entry at random
			delete(cache.m, k)
			break
		}
	}
	cache.m[src] = m
	return m, nil
}
