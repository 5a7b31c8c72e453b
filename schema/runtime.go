// Package schema runs schemas (seed 004) on Veena's kernel: it registers
// the node types of the five schema node kinds, runs their ordered
// actions (the built-ins, actions registered from Go, jobs for outside
// programs), keeps each instance's almanac (its process environment), its
// node and action instances and its queued events, routes incoming events
// to instances by context, creates instances from triggers, and starts
// child schemas as detached nested processes of their parent.
//
// Every action's completion is a step of its own wherever it has effects
// outside the instance: a registered action runs outside the kernel after
// the step that reached it has committed, and its result comes back in a
// step of its own (kernel.Wake), so that an engine killed between two
// actions leaves the next engine to go on with the next action, never
// running a completed one again. Built-in actions change only the
// instance tree and run inside the step that reaches them.
//
// Use: make a Runtime, register actions (Action), Register it on the
// kernel before opening the engine, then Attach it to the engine.
package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	veena "github.com/veena-wf/veena"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// RunnerName is the engine runner that runs schema actions outside the kernel.
const RunnerName = "schema"

// ActionFunc is an action registered from Go. It runs outside any
// transaction, possibly more than once if an engine dies before its
// result is stored (make it idempotent, or use Call.Key); its result (any
// JSON-able value) goes to the almanac key the action names. An error
// fails the attempt; wrap it with veena.Permanent to skip the retries.
type ActionFunc func(ctx context.Context, call *Call) (any, error)

// Call is one attempt of a registered action.
type Call struct {
	Process string            // the schema instance
	Schema  string            // its definition
	Node    string            // the node whose action this is
	Action  string            // the action's id
	Do      string            // the action's name
	Attempt int               // 1 for the first attempt
	Args    any               // the evaluated "with" (nil if none)
	Context map[string]string // the instance's context
	// Key identifies this action instance across attempts and engines
	// (process, node token, action): an idempotency key for the systems
	// the action calls.
	Key string
}

// Arg returns the argument of that name (Args being an object), or nil.
func (c *Call) Arg(name string) any {
	m, _ := c.Args.(map[string]any)
	return m[name]
}

// Runtime runs schemas: register it on a kernel, then attach it to the
// engine that uses that kernel.
type Runtime struct {
	mu      sync.RWMutex
	actions map[string]ActionFunc
	engine  *veena.Engine
	routes  routeIndex

	// AcceptUnknownActions makes loading accept actions nobody registered
	// (they wait for ever if they run): for tools that check schema files
	// without the program that registers their actions (veena check).
	AcceptUnknownActions bool
}

// New returns a runtime with no registered actions.
func New() *Runtime { return &Runtime{actions: map[string]ActionFunc{}} }

// Action registers an action under a name that schemas use in "do".
// Register actions before definitions that use them are loaded: loading
// refuses an action nobody registered.
func (r *Runtime) Action(name string, fn ActionFunc) {
	if schemaformat.Builtin(name) {
		panic(fmt.Sprintf("schema: %q is a built-in action", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions[name] = fn
}

func (r *Runtime) action(name string) ActionFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.actions[name]
}

// Register puts the schema node types and the schema event receiver on a
// kernel. Do it before the engine opens.
func (r *Runtime) Register(k *kernel.Kernel) {
	for _, kind := range []string{schemaformat.KindRoot, schemaformat.KindExecution, schemaformat.KindEvent, schemaformat.KindTimer, schemaformat.KindTerminator} {
		k.RegisterNodeType(schemaformat.NodeType(kind), r.nodeType)
	}
	k.RegisterReceiver(schemaformat.Format, receiver{r})
}

// Attach connects the runtime to the engine whose kernel it is
// registered on: the engine runs registered actions through it, and
// events are routed through that engine.
func (r *Runtime) Attach(e *veena.Engine) {
	r.mu.Lock()
	r.engine = e
	r.mu.Unlock()
	e.RegisterRunner(RunnerName, r.run)
}

func (r *Runtime) eng() (*veena.Engine, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.engine == nil {
		return nil, errors.New("the schema runtime is not attached to an engine")
	}
	return r.engine, nil
}

// nodeType makes the behaviour of one schema node, checking that its
// actions exist.
func (r *Runtime) nodeType(n *graph.Node) (kernel.NodeType, error) {
	sn, ok := n.Props.(*schemaformat.Node)
	if !ok {
		return nil, fmt.Errorf("node %s has no schema properties (was it loaded from a schema file?)", n.Name)
	}
	for _, a := range sn.Actions {
		if a.Do != "" && !schemaformat.Builtin(a.Do) && r.action(a.Do) == nil && !r.AcceptUnknownActions {
			return nil, fmt.Errorf("action %q (line %d): no action %q is registered; register it from Go, or write \"job\": %q for a job done by outside programs", a.ID, a.Pos.Line, a.Do, a.Do)
		}
	}
	return &nodeType{rt: r, n: sn}, nil
}

// workInput is what the runner gets for an action attempt.
type workInput struct {
	Process string            `json:"process"`
	Token   int               `json:"token"`
	Schema  string            `json:"schema"`
	Node    string            `json:"node"`
	Action  string            `json:"action"`
	Do      string            `json:"do"`
	Attempt int               `json:"attempt"`
	Args    any               `json:"args,omitempty"`
	Context map[string]string `json:"context,omitempty"`
}

// run is the engine runner: it runs one attempt of a registered action,
// or sends an event emitted by context.
func (r *Runtime) run(ctx context.Context, req veena.RunRequest) ([]byte, error) {
	var in workInput
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, veena.Permanent(fmt.Errorf("schema action input: %w", err))
	}
	key := fmt.Sprintf("%s/%d/%s", in.Process, in.Token, in.Action)
	if in.Do == schemaformat.ActEmit {
		args, _ := in.Args.(map[string]any)
		ev := Event{Payload: args["payload"], ID: "emit:" + key}
		ev.Name, _ = args["event"].(string)
		ev.Context = in.Context
		if c, ok := args["context"].(map[string]any); ok {
			ev.Context = map[string]string{}
			for k, v := range c {
				ev.Context[k] = fmt.Sprint(v)
			}
		}
		res, err := r.Send(ctx, ev)
		if err != nil {
			if veena.Code(err) == veena.ErrNotFound.Code {
				return nil, veena.Permanent(err)
			}
			return nil, err
		}
		out := map[string]any{"process": nil, "started": res.Started}
		if res.Process != nil {
			out["process"] = res.Process.ID
		}
		return json.Marshal(out)
	}
	fn := r.action(in.Do)
	if fn == nil {
		return nil, fmt.Errorf("no action %q is registered in this engine", in.Do)
	}
	res, err := fn(ctx, &Call{Process: in.Process, Schema: in.Schema, Node: in.Node, Action: in.Action, Do: in.Do,
		Attempt: in.Attempt, Args: in.Args, Context: in.Context, Key: key})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(schemaformat.Normalize(res))
	if err != nil {
		return nil, veena.Permanent(fmt.Errorf("action %s returned a result that is not JSON: %w", in.Do, err))
	}
	if len(b) > schemaformat.MaxValueSize {
		return nil, veena.Permanent(fmt.Errorf("action %s returned %d bytes; a result may have at most %d", in.Do, len(b), schemaformat.MaxValueSize))
	}
	return b, nil
}
