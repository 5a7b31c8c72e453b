package kernel

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/veena-wf/veena/graph"
)

// scriptNode runs JavaScript (<custom><execute type="js">…</execute></custom>)
// with engine, token and the environments bound, then completes the token on
// the default arc unless the script completed it.
type scriptNode struct {
	prog *goja.Program
}

func newScriptNode(n *graph.Node) (NodeType, error) {
	var src, lang string
	if n.Custom != nil {
		for _, c := range n.Custom.Children {
			if c.Name != "execute" {
				continue
			}
			src = c.Text
			lang = "js"
			for _, a := range c.Attrs {
				if a.Name == "type" {
					lang = a.Value
				}
			}
		}
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New(`a script node needs <custom><execute type="js">…</execute></custom>`)
	}
	switch strings.ToLower(lang) {
	case "js", "javascript", "ecmascript":
	default:
		return nil, fmt.Errorf("script type %q is not supported (use js)", lang)
	}
	prog, err := goja.Compile(n.QualifiedName(), src, true)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return &scriptNode{prog: prog}, nil
}

func (s *scriptNode) Execute(e *Engine, t *NodeToken) error {
	vm := goja.New()
	vm.SetFieldNameMapper(goja.UncapFieldNameMapper())
	b := scriptBinding{e: e, vm: vm}
	println := func(c goja.FunctionCall) goja.Value {
		parts := make([]string, len(c.Arguments))
		for i, a := range c.Arguments {
			parts[i] = a.String()
		}
		if w := e.k.ScriptOutput; w != nil {
			fmt.Fprintf(w, "%s: %s\n", t.Node.QualifiedName(), strings.Join(parts, " "))
		}
		return goja.Undefined()
	}
	for name, v := range map[string]any{
		"engine":     b.engine(),
		"token":      b.token(t),
		"env":        b.tokenEnv(t),
		"processEnv": b.processEnv(t.Process),
		"fullEnv":    b.fullEnv(t),
		"console":    map[string]any{"log": println},
		"System":     map[string]any{"out": map[string]any{"println": println, "print": println}},
	} {
		if err := vm.Set(name, v); err != nil {
			return err
		}
	}
	timer := time.AfterFunc(e.k.ScriptTimeout, func() {
		vm.Interrupt(fmt.Sprintf("script ran longer than %s", e.k.ScriptTimeout))
	})
	_, err := vm.RunProgram(s.prog)
	timer.Stop()
	if err != nil {
		var ab *abortError
		if errors.As(err, &ab) {
			return ab.err
		}
		var ex *goja.Exception
		if errors.As(err, &ex) {
			if ab, ok := ex.Value().Export().(*abortError); ok {
				return ab.err
			}
			return fmt.Errorf("script failed: %s", ex.Value().String())
		}
		return fmt.Errorf("script failed: %w", err)
	}
	if !t.Complete {
		return e.Complete(t)
	}
	return nil
}

// abortError carries a command failure raised inside a script out of it.
type abortError struct{ err error }

func (a *abortError) Error() string { return a.err.Error() }

type scriptBinding struct {
	e  *Engine
	vm *goja.Runtime
}

// call runs an engine operation from a script, turning a failure into a
// JavaScript exception that ends the script and fails the command.
func (b scriptBinding) call(fn func() error) {
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				if a, ok := r.(abort); ok {
					err = a.err
					return
				}
				panic(r)
			}
		}()
		err = fn()
	}()
	if err != nil {
		panic(b.vm.NewGoError(&abortError{err}))
	}
}

func (b scriptBinding) engine() map[string]any {
	tok := func(v goja.Value) *NodeToken {
		if t, ok := v.Export().(*jsToken); ok {
			return t.t
		}
		panic(b.vm.NewTypeError("expected a token"))
	}
	names := func(args []goja.Value) []string {
		out := []string{}
		for _, a := range args {
			if goja.IsUndefined(a) || goja.IsNull(a) {
				out = append(out, "")
				continue
			}
			if arr, ok := a.Export().([]any); ok {
				for _, x := range arr {
					if x == nil {
						out = append(out, "")
					} else {
						out = append(out, fmt.Sprint(x))
					}
				}
				continue
			}
			out = append(out, a.String())
		}
		return out
	}
	return map[string]any{
		"complete": func(c goja.FunctionCall) goja.Value {
			t := tok(c.Argument(0))
			n := names(c.Arguments[1:])
			if len(n) == 0 {
				n = defaultArcs
			}
			b.call(func() error { return b.e.Complete(t, n...) })
			return goja.Undefined()
		},
		"completeMany": func(c goja.FunctionCall) goja.Value {
			t := tok(c.Argument(0))
			n := names(c.Arguments[1:])
			b.call(func() error { return b.e.Complete(t, n...) })
			return goja.Undefined()
		},
		"completeAsynchronous": func(c goja.FunctionCall) goja.Value {
			t := tok(c.Argument(0))
			n := names(c.Arguments[1:])
			if len(n) == 0 {
				n = defaultArcs
			}
			b.call(func() error { return b.e.CompleteAsync(t, n...) })
			return goja.Undefined()
		},
		"now": func() goja.Value {
			v, _ := b.vm.New(b.vm.Get("Date"), b.vm.ToValue(b.e.now.UnixMilli()))
			return v
		},
	}
}

// jsToken is the token as a script sees it. Both short names and the
// bean-style names of the reference manual work: token.node() and
// token.getNode().getName(), token.env().get("x") and
// token.getEnv().getAttribute("x"), engine.complete(token, "arc").
type jsToken struct {
	t *NodeToken
	b scriptBinding
}

func (j *jsToken) Id() int                    { return j.t.ID }
func (j *jsToken) Node() string               { return j.t.Node.Name }
func (j *jsToken) External() string           { return j.t.Node.ExternalName() }
func (j *jsToken) Process() string            { return j.t.Process.ID }
func (j *jsToken) IsComplete() bool           { return j.t.Complete }
func (j *jsToken) Env() map[string]any        { return j.b.tokenEnv(j.t) }
func (j *jsToken) GetEnv() map[string]any     { return j.b.tokenEnv(j.t) }
func (j *jsToken) FullEnv() map[string]any    { return j.b.fullEnv(j.t) }
func (j *jsToken) GetFullEnv() map[string]any { return j.b.fullEnv(j.t) }
func (j *jsToken) GetNode() map[string]any {
	n := j.t.Node
	ext := n.ExternalEnv()
	return map[string]any{
		"getName":        func() string { return n.Name },
		"getType":        func() string { return n.Type },
		"getExternalEnv": func() map[string]any { return j.b.readOnly(ext) },
	}
}
func (j *jsToken) GetProcess() map[string]any {
	p := j.t.Process
	return map[string]any{
		"getId":  func() string { return p.ID },
		"getEnv": func() map[string]any { return j.b.processEnv(p) },
	}
}

func (b scriptBinding) token(t *NodeToken) *jsToken { return &jsToken{t: t, b: b} }

func (b scriptBinding) tokenEnv(t *NodeToken) map[string]any {
	return b.env(t.writableEnv, func() *Env { return t.Env })
}

func (b scriptBinding) processEnv(p *Process) map[string]any {
	return b.env(func() *Env { p.Dirty = true; return p.Env }, func() *Env { return p.Env })
}

// env is an environment object; writes go through write, reads through read.
func (b scriptBinding) env(write func() *Env, read func() *Env) map[string]any {
	get := func(name string) any { return b.toJS(read(), name) }
	set := func(name string, v goja.Value) { b.setAttr(write(), name, v) }
	remove := func(name string) { write().Remove(name) }
	has := func(name string) bool { return read().Has(name) }
	names := func() []string { return read().Names() }
	return map[string]any{
		"get": get, "set": set, "remove": remove, "has": has, "names": names,
		"getAttribute": get, "setAttribute": set, "removeAttribute": remove,
		"hasAttribute": has, "getAttributeNames": names,
	}
}

// readOnly is an environment object over fixed string values (an external's env).
func (b scriptBinding) readOnly(m map[string]string) map[string]any {
	get := func(name string) any {
		if v, ok := m[name]; ok {
			return v
		}
		return nil
	}
	has := func(name string) bool { _, ok := m[name]; return ok }
	return map[string]any{"get": get, "getAttribute": get, "has": has, "hasAttribute": has}
}

func (b scriptBinding) fullEnv(t *NodeToken) map[string]any {
	get := func(name string) any {
		v, ok := t.FullEnv().Get(name)
		if !ok {
			return nil
		}
		return b.jsValue(v)
	}
	set := func(name string, v goja.Value) { b.setAttr(t.writableEnv(), name, v) }
	remove := func(name string) { t.FullEnv().Remove(name) }
	has := func(name string) bool { return t.FullEnv().Has(name) }
	return map[string]any{
		"get": get, "set": set, "remove": remove, "has": has,
		"getAttribute": get, "setAttribute": set, "removeAttribute": remove, "hasAttribute": has,
	}
}

func (b scriptBinding) toJS(env *Env, name string) any {
	v, ok := env.Get(name)
	if !ok {
		return nil
	}
	return b.jsValue(v)
}

func (b scriptBinding) jsValue(v Value) any {
	if d, ok := v.DateValue(); ok && v.Kind() == KindDate {
		obj, _ := b.vm.New(b.vm.Get("Date"), b.vm.ToValue(d.UnixMilli()))
		return obj
	}
	return v.Any()
}

func (b scriptBinding) setAttr(env *Env, name string, v goja.Value) {
	if goja.IsUndefined(v) || goja.IsNull(v) {
		env.Remove(name)
		return
	}
	switch x := v.Export().(type) {
	case time.Time:
		env.Set(name, Date(x))
	case int64:
		env.Set(name, Int(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			env.Set(name, Int(int64(x)))
		} else {
			env.Set(name, Float(x))
		}
	case bool:
		env.Set(name, Bool(x))
	case string:
		env.Set(name, String(x))
	default:
		env.Set(name, String(v.String()))
	}
}
