package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/veena-wf/veena/graph"
	"modernc.org/quickjs"
)

// Script nodes (<custom><execute type="js">…</execute></custom>) run
// JavaScript with engine, token, env (the token's environment), processEnv,
// fullEnv, console and System bound, then complete the token on the
// default arc unless the script completed it.
//
// Scripts run in QuickJS (modernc.org/quickjs, pure Go), which bounds both
// what a script may allocate (Kernel.ScriptMemory) and how long it may run
// (Kernel.ScriptTimeout, checked as the script runs: a loop, a regular
// expression or a huge sort is stopped at the limit). A script that goes
// beyond either fails its command, which then changes nothing.
//
// Creating a JavaScript realm costs about 130 µs, twenty times the run of
// a small script, so realms are reused: each is hardened once (every
// object reachable from the global object, and the hidden intrinsics, are
// frozen) and each script is a strict-mode function of its bindings, so
// that nothing a script does survives it; a realm whose script failed is
// thrown away, and every realm is replaced after scriptUses runs.

// DefaultScriptMemory is the memory a script may use unless
// Kernel.ScriptMemory says otherwise.
const DefaultScriptMemory = 64 << 20

// scriptUses is how many scripts one realm runs before it is replaced.
const scriptUses = 1000

// scriptNode is a script node's compiled program.
type scriptNode struct {
	bytecode []byte
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
	r, err := realms.get()
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	defer realms.put(r, true)
	// The script is the body of a strict function of its bindings, on the
	// first line so that line numbers stay the script's own.
	code := `__veena_run(function(engine, token, env, processEnv, fullEnv, console, System) {"use strict";` + src + "\n});"
	bc, err := r.vm.Compile(code, quickjs.EvalGlobal)
	if err != nil {
		return nil, fmt.Errorf("script: %s", scriptError(err))
	}
	return &scriptNode{bytecode: bc}, nil
}

// scriptFailure says why a script that took took failed: its time limit,
// its memory limit, or an error of its own.
func scriptFailure(err error, took, timeout time.Duration, mem int64) error {
	switch {
	case took >= timeout:
		return fmt.Errorf("script ran longer than %s (Kernel.ScriptTimeout)", timeout)
	case strings.Contains(err.Error(), "out of memory") || strings.Contains(err.Error(), "string too long") || strings.Contains(err.Error(), "invalid array length"):
		return fmt.Errorf("script used more memory than its limit of %d MiB (Kernel.ScriptMemory): %s", mem>>20, scriptError(err))
	default:
		return fmt.Errorf("script failed: %s", scriptError(err))
	}
}

// scriptError renders a JavaScript error as "Name: message (at line)".
func scriptError(err error) string {
	var je *quickjs.Error
	if !errors.As(err, &je) {
		return err.Error()
	}
	msg := je.Message
	if je.Name != "" {
		msg = je.Name + ": " + msg
	}
	if je.LineNumber > 0 {
		msg = fmt.Sprintf("%s (line %d)", msg, je.LineNumber)
	} else if at := firstFrame(je.Stack); at != "" {
		msg += " (" + at + ")"
	}
	return msg
}

// firstFrame is the location of the innermost frame of a stack trace that
// is the script's own.
func firstFrame(stack string) string {
	for _, line := range strings.Split(stack, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "at "))
		if line == "" || strings.Contains(line, "__veena") || strings.HasPrefix(line, "<anonymous>") && !strings.Contains(line, ":") {
			continue
		}
		return line
	}
	return ""
}

func (s *scriptNode) Execute(e *Engine, t *NodeToken) error {
	if stop := e.stop.Load(); stop != nil {
		return *stop
	}
	r, err := realms.get()
	if err != nil {
		return fmt.Errorf("script: %w", err)
	}
	run := &scriptRun{e: e, t: t}
	r.run = run
	mem := e.k.ScriptMemory
	if mem <= 0 {
		mem = DefaultScriptMemory
	}
	r.vm.SetMemoryLimit(uintptr(mem))
	timeout := e.k.ScriptTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	_ = r.vm.SetEvalTimeout(timeout)
	rn := &running{stopFn: r.vm.Interrupt}
	e.script.Store(rn)
	began := time.Now()
	_, err = r.vm.EvalBytecode(s.bytecode)
	took := time.Since(began)
	rn.end()
	e.script.Store(nil)
	r.run = nil
	// A realm whose script failed may be left in any state: drop it. Its
	// memory limit goes back up so that cleaning up cannot fail.
	r.vm.SetMemoryLimit(^uintptr(0))
	realms.put(r, err == nil && run.err == nil)
	switch {
	case run.err != nil:
		// An engine operation the script called failed: the command
		// fails, even if the script caught the exception.
		return &abortError{run.err}
	case err == nil:
	case e.stop.Load() != nil:
		return *e.stop.Load()
	default:
		return scriptFailure(err, took, timeout, mem)
	}
	if !t.Complete {
		return e.Complete(t)
	}
	return nil
}

// TakesAtOnce: a script completes its token when it ends, on any arc.
func (s *scriptNode) TakesAtOnce(*graph.Node, *graph.Arc) bool { return true }

// abortError carries a command failure raised inside a script out of it.
type abortError struct{ err error }

func (a *abortError) Error() string { return a.err.Error() }
func (a *abortError) Unwrap() error { return a.err }

// scriptRun is one run of a script: what its bindings act on.
type scriptRun struct {
	e   *Engine
	t   *NodeToken
	err error // the first engine operation that failed
}

// realm is a hardened QuickJS realm with Veena's bindings.
type realm struct {
	vm   *quickjs.VM
	uses int
	run  *scriptRun
}

// realmPool keeps idle realms.
type realmPool struct {
	mu   sync.Mutex
	idle []*realm
}

var realms realmPool

// freshRealms makes every script run in a new realm (for the benchmark
// that measures what reusing them saves).
var freshRealms bool

// maxIdleRealms bounds the realms kept idle.
const maxIdleRealms = 8

func (p *realmPool) get() (*realm, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return r, nil
	}
	p.mu.Unlock()
	return newRealm()
}

// put gives a realm back after a run; a realm that failed or has run its
// share is closed.
func (p *realmPool) put(r *realm, ok bool) {
	r.uses++
	if ok && r.uses < scriptUses && !freshRealms {
		p.mu.Lock()
		if len(p.idle) < maxIdleRealms {
			p.idle = append(p.idle, r)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	_ = r.vm.Close()
}

func newRealm() (*realm, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	r := &realm{vm: vm}
	vm.SetMaxStackSize(20000)
	if err := vm.RegisterHostFunc("__veena", r.host); err != nil {
		_ = vm.Close()
		return nil, err
	}
	if _, err := vm.Eval(prelude, quickjs.EvalGlobal); err != nil {
		_ = vm.Close()
		return nil, fmt.Errorf("script prelude: %w", err)
	}
	return r, nil
}

// prelude builds the bindings over __veena (the host) and hardens the
// realm. Values cross as strings, numbers, booleans and null; a date as
// {"$date": milliseconds}.
const prelude = `
(function (host) {
  "use strict";
  const toHost = (v) => {
    if (v === undefined || v === null) return null;
    if (v instanceof Date) return {"$date": v.getTime()};
    const t = typeof v;
    if (t === "string" || t === "number" || t === "boolean") return v;
    return String(v);
  };
  const fromHost = (v) => (v !== null && typeof v === "object" && "$date" in v) ? new Date(v["$date"]) : v;
  const envObject = (target, writable) => {
    const get = (name) => fromHost(host("get", target, String(name)));
    const has = (name) => host("has", target, String(name));
    const o = { get, has, getAttribute: get, hasAttribute: has };
    if (writable) {
      const set = (name, v) => { host("set", target, String(name), toHost(v)); };
      const remove = (name) => { host("remove", target, String(name)); };
      const names = () => host("names", target);
      Object.assign(o, { set, remove, names, setAttribute: set, removeAttribute: remove, getAttributeNames: names });
    }
    return Object.freeze(o);
  };
  const names = (args) => {
    const out = [];
    for (const a of args) {
      if (a === undefined || a === null) { out.push(null); continue; }
      if (Array.isArray(a)) { for (const x of a) out.push(x === undefined || x === null ? null : String(x)); continue; }
      out.push(String(a));
    }
    return out;
  };
  const print = (...args) => { host("print", args.map((a) => String(a)).join(" ")); };
  // The bindings hold no state (the host knows the running script's
  // token): they are made once per realm, frozen, and passed to every
  // script.
  const env = envObject("t", true), processEnv = envObject("p", true), fullEnv = envObject("f", true);
  const token = Object.freeze({
    id: () => host("token", "id"), node: () => host("token", "node"), external: () => host("token", "external"),
    process: () => host("token", "process"), isComplete: () => host("token", "complete"),
    env: () => env, getEnv: () => env, fullEnv: () => fullEnv, getFullEnv: () => fullEnv,
    getNode: () => Object.freeze({
      getName: () => host("token", "node"), getType: () => host("token", "type"),
      getExternalEnv: () => envObject("x", false),
    }),
    getProcess: () => Object.freeze({ getId: () => host("token", "process"), getEnv: () => processEnv }),
  });
  const own = (t) => { if (t !== token) throw new TypeError("expected the script's token"); };
  const engine = Object.freeze({
    complete: (t, ...n) => { own(t); host("complete", "one", names(n)); },
    completeMany: (t, ...n) => { own(t); host("complete", "many", names(n)); },
    completeAsynchronous: (t, ...n) => { own(t); host("complete", "async", names(n)); },
    now: () => new Date(host("now")),
  });
  const console = Object.freeze({ log: print, info: print, warn: print, error: print });
  const System = Object.freeze({ out: Object.freeze({ println: print, print: print }) });
  const run = (fn) => { fn(engine, token, env, processEnv, fullEnv, console, System); };
  Object.defineProperty(globalThis, "__veena_run", { value: run });
  // Harden: freeze everything a script can reach that outlives it.
  const seen = new Set();
  const harden = (o) => {
    if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) return;
    seen.add(o);
    Object.freeze(o);
    harden(Object.getPrototypeOf(o));
    for (const k of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (d === undefined) continue;
      if ("value" in d) harden(d.value); else { harden(d.get); harden(d.set); }
    }
  };
  const hidden = [
    function* () {}, async function () {}, async function* () {},
    [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](), ""[Symbol.iterator](),
    "x".matchAll(/x/g), (function* () {})(), (async function* () {})(), Object.getPrototypeOf(Int8Array),
    (function () { "use strict"; return Object.getOwnPropertyDescriptor(arguments, "callee").get; })(),
  ];
  for (const h of hidden) harden(h);
  harden(globalThis);
})(__veena);
`

// host serves the prelude's calls into the engine.
func (r *realm) host(args []any) (any, error) {
	run := r.run
	if run == nil || len(args) == 0 {
		return nil, errors.New("no script is running")
	}
	if run.err != nil {
		return nil, run.err
	}
	op, _ := args[0].(string)
	arg := func(i int) string {
		if i < len(args) {
			if s, ok := args[i].(string); ok {
				return s
			}
		}
		return ""
	}
	t, e := run.t, run.e
	switch op {
	case "get", "has", "names":
		target, name := arg(1), arg(2)
		var v Value
		var ok bool
		switch target {
		case "t":
			v, ok = t.Env.Get(name)
			if op == "has" {
				return t.Env.Has(name), nil
			}
			if op == "names" {
				return nonNil(t.Env.Names()), nil
			}
		case "p":
			v, ok = t.Process.Env.Get(name)
			if op == "has" {
				return t.Process.Env.Has(name), nil
			}
			if op == "names" {
				return nonNil(t.Process.Env.Names()), nil
			}
		case "f":
			v, ok = t.FullEnv().Get(name)
			if op == "has" {
				return t.FullEnv().Has(name), nil
			}
		case "x":
			s, found := t.Node.ExternalEnv()[name]
			if op == "has" {
				return found, nil
			}
			if !found {
				return nil, nil
			}
			return s, nil
		}
		if !ok {
			return nil, nil
		}
		return jsValue(v), nil
	case "set", "remove":
		target, name := arg(1), arg(2)
		var v Value
		if op == "set" && len(args) > 3 {
			var err error
			if v, err = fromJS(args[3]); err != nil {
				return nil, fmt.Errorf("attribute %q: %w", name, err)
			}
		}
		switch target {
		case "t", "f":
			if v.IsNone() {
				t.RemoveAttr(name)
			} else {
				t.SetAttr(name, v)
			}
		case "p":
			t.Process.Dirty = true
			t.Process.Env.Set(name, v) // the zero Value removes
		}
		return nil, nil
	case "token":
		switch arg(1) {
		case "id":
			return t.ID, nil
		case "node":
			return t.Node.Name, nil
		case "external":
			return t.Node.ExternalName(), nil
		case "process":
			return t.Process.ID, nil
		case "complete":
			return t.Complete, nil
		case "type":
			return t.Node.Type, nil
		}
	case "complete":
		names, err := arcNames(args[2:])
		if err != nil {
			return nil, err
		}
		mode := arg(1)
		if len(names) == 0 && mode != "many" {
			names = defaultArcs
		}
		err = callEngine(func() error {
			if mode == "async" {
				return e.CompleteAsync(t, names...)
			}
			return e.Complete(t, names...)
		})
		if err != nil {
			run.err = err
			return nil, err
		}
		return nil, nil
	case "now":
		return float64(e.now.UnixMilli()), nil
	case "print":
		if w := e.k.ScriptOutput; w != nil {
			fmt.Fprintf(w, "%s: %s\n", t.Node.QualifiedName(), arg(1))
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown script operation %q", op)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// callEngine runs an engine operation from a script, turning the failure
// of the command into an error.
func callEngine(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abort); ok {
				err = a.err
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// arcNames reads the arc names the prelude passes (a JSON array of strings
// and nulls; null names the default arcs).
func arcNames(args []any) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	o, ok := args[0].(*quickjs.Object)
	if !ok {
		return nil, fmt.Errorf("arc names: unexpected %T", args[0])
	}
	var raw []*string
	if err := o.Into(&raw); err != nil {
		return nil, fmt.Errorf("arc names: %w", err)
	}
	out := make([]string, len(raw))
	for i, n := range raw {
		if n != nil {
			out[i] = *n
		}
	}
	return out, nil
}

// jsValue is an attribute as the prelude receives it.
func jsValue(v Value) any {
	if v.Kind() == KindDate {
		d, _ := v.DateValue()
		return map[string]int64{"$date": d.UnixMilli()}
	}
	return v.Any()
}

// fromJS is a value the prelude sends as an attribute. A whole number is an
// integer (as JavaScript cannot tell them apart), other numbers floats.
func fromJS(x any) (Value, error) {
	switch v := x.(type) {
	case nil, quickjs.Undefined:
		return Value{}, nil
	case string:
		return String(v), nil
	case bool:
		return Bool(v), nil
	case int:
		return Int(int64(v)), nil
	case int64:
		return Int(v), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return Int(int64(v)), nil
		}
		return Float(v), nil
	case *quickjs.Object:
		var d struct {
			Date *float64 `json:"$date"`
		}
		if err := json.Unmarshal([]byte(v.String()), &d); err == nil && d.Date != nil {
			return Date(time.UnixMilli(int64(*d.Date))), nil
		}
		return String(v.String()), nil
	}
	return String(fmt.Sprint(x)), nil
}
