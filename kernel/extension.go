package kernel

import (
	"fmt"
	"time"

	"github.com/veena-wf/veena/graph"
)

// This file holds the kernel's extension points for definition formats
// whose node types keep state of their own, receive named events and wait
// for work done outside the kernel. The kernel knows no format: it stores
// a format's state with the process (Extension), hands events to the
// format's Receiver, and lets node types name the wakes their tokens wait
// for, which the engine turns into durable timers and runs.

// Extension is state a format keeps with a process beyond tokens and
// environments (a schema instance's action instances, its queued events).
// The kernel stores its encoding with the process and never looks inside;
// after a process is read back, ExtData holds the stored bytes until the
// format decodes them and sets Ext.
type Extension interface {
	// EncodeExt encodes the state for the store.
	EncodeExt() ([]byte, error)
}

// EncodedExt returns the bytes to store for the process's extension: the
// encoding of Ext, or ExtData as read if it was never decoded.
func (p *Process) EncodedExt() ([]byte, error) {
	if p.Ext != nil {
		b, err := p.Ext.EncodeExt()
		if err != nil {
			return nil, fmt.Errorf("process %s: encode its %s state: %w", p.ID, p.Graph.Format, err)
		}
		return b, nil
	}
	return p.ExtData, nil
}

// Message is a named event sent to a process (or that starts one): its
// name, the context it came with, and its payload (plain JSON data).
type Message struct {
	Name    string            `json:"name"`
	Context map[string]string `json:"context,omitempty"`
	Payload any               `json:"payload,omitempty"`
	// From is the process that emitted it, "" for one from outside.
	From string `json:"from,omitempty"`
}

// Receiver is a format's handling of the messages sent to its processes.
type Receiver interface {
	// Receive delivers m to p, inside a command.
	Receive(e *Engine, p *Process, m *Message) error
}

// RegisterReceiver makes r receive the messages sent to processes of
// graphs of that format.
func (k *Kernel) RegisterReceiver(format string, r Receiver) {
	if k.receivers == nil {
		k.receivers = map[string]Receiver{}
	}
	k.receivers[format] = r
}

// Receive delivers a message to p through its format's receiver, then runs
// the arc tokens it queued, as one command.
func (e *Engine) Receive(p *Process, m *Message) error {
	return e.run(p, func() {
		if p.State != Executing {
			e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", p.ID, p.State))
		}
		e.receive(p, m)
	})
}

// Deliver is Receive for node types and receivers inside a running
// command: the message goes to p at once (another process of the tree).
func (e *Engine) Deliver(p *Process, m *Message) {
	if e.depth == 0 {
		e.Fail(refuse(ErrInvalidArgument, "Deliver is for use inside a command"))
	}
	e.enter(p)
	e.receive(p, m)
}

func (e *Engine) receive(p *Process, m *Message) {
	r := e.k.receivers[p.Graph.Format]
	if r == nil {
		e.Fail(refuse(ErrInvalidArgument, "processes of definition %s (format %s) do not receive events", p.Graph, p.Graph.Format))
	}
	if err := r.Receive(e, p, m); err != nil {
		e.Fail(failed(err, "process %s: event %s", p.ID, m.Name))
	}
	if p.State == Executing && !p.inLoop {
		e.executeQueuedArcTokens(p)
	}
}

// StartWith creates a process of g with a copy of env and the given
// context, lets setup prepare it (a format's initial state; nil: none) and
// starts it. Setup runs before the start nodes do. A process of a format
// with a ProcessRunner is started by the runner instead.
func (e *Engine) StartWith(g *graph.Graph, env *Env, context map[string]string, setup func(p *Process) error) (p *Process, err error) {
	if err := e.k.Prepare(g); err != nil {
		return nil, err
	}
	runner := e.k.runners[g.Format]
	if len(g.StartNodes()) == 0 && runner == nil {
		return nil, refuse(ErrNoStartNodes, "definition %s has no start nodes", g)
	}
	err = e.run(nil, func() {
		p = e.newProcess(g, env, nil, nil)
		p.Context = context
		if setup != nil {
			if err := setup(p); err != nil {
				e.Fail(failed(err, "prepare process of %s", g))
			}
		}
		if runner != nil {
			e.beginOwn(p, runner)
			return
		}
		e.startProcess(p)
	})
	return p, err
}

// StartChild starts a detached nested process of g under parent, inside a
// running command: no token of the parent waits for it, it runs on its
// own, and it ends with its parent: cancelling the parent cancels it, and
// so does the parent's completion if it still runs then. Setup runs as for
// StartWith.
func (e *Engine) StartChild(parent *Process, g *graph.Graph, env *Env, context map[string]string, setup func(p *Process) error) *Process {
	if e.depth == 0 {
		e.Fail(refuse(ErrInvalidArgument, "StartChild is for use inside a command"))
	}
	if err := e.k.Prepare(g); err != nil {
		e.Fail(err)
	}
	if len(g.StartNodes()) == 0 {
		e.Fail(refuse(ErrNoStartNodes, "definition %s has no start nodes", g))
	}
	p := e.newProcess(g, env, parent, nil)
	p.Context = context
	if setup != nil {
		if err := setup(p); err != nil {
			e.Fail(failed(err, "prepare process of %s", g))
		}
	}
	e.startProcess(p)
	return p
}

// Wake is something a node token waits for apart from a command: a time,
// and optionally a piece of work for a runner outside the kernel (an
// action's I/O). The engine keeps a durable timer for it: at Due an engine
// takes it up, runs the runner if there is one, and hands the outcome to
// the node type (Waker.Woken) in a command of its own. A node type gives
// its tokens' wakes from its own state (Waker.Wake). (Tasks and jobs of
// the work layer are another thing: rows people and workers act on.)
type Wake struct {
	// Key names this wake among the token's; an outcome whose key is no
	// longer the token's wake is stale and dropped.
	Key string
	// Due is when an engine takes the wake up.
	Due time.Time
	// Runner names the engine's runner that does the work; "" wakes the
	// node type at Due with no result (a timer).
	Runner string
	// Input is given to the runner.
	Input []byte
	// RunNow asks the engine that commits the step creating this wake to
	// run it at once; Due is then when another engine may try, if that
	// one has not finished by then.
	RunNow bool
}

// WakeResult is the outcome of a wake.
type WakeResult struct {
	Key    string
	Output []byte // the runner's result (JSON), nil for a timer
	Err    string // the runner's failure, "" on success
	// Permanent marks a failure that retrying cannot mend.
	Permanent bool
}

// Waker is implemented by node types whose tokens wait for wakes.
type Waker interface {
	// Wake returns what an active token of this node waits for, nil if
	// nothing. It must not change anything.
	Wake(t *NodeToken) *Wake
	// Woken receives the outcome of the token's wake.
	Woken(e *Engine, t *NodeToken, r WakeResult) error
}

// WakeOf returns what an active node token waits for, nil if nothing.
func (k *Kernel) WakeOf(t *NodeToken) *Wake {
	if !t.active || t.Complete {
		return nil
	}
	rt, ok := t.Node.Runtime.(*nodeRuntime)
	if !ok {
		return nil
	}
	w, ok := rt.typ.(Waker)
	if !ok {
		return nil
	}
	return w.Wake(t)
}

// Woken hands the outcome of a token's wake to its node type, as a
// command, and runs the arc tokens that queued. An outcome for a wake the
// token no longer waits for changes nothing (ErrStaleWake).
func (e *Engine) Woken(t *NodeToken, r WakeResult) error {
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		w, ok := e.runtime(t.Node).typ.(Waker)
		if !ok {
			e.Fail(refuse(ErrInvalidArgument, "node %s does not wait for wakes", t.Node.QualifiedName()))
		}
		if cur := w.Wake(t); cur == nil || cur.Key != r.Key {
			e.Fail(refuse(ErrStaleWake, "node token %s no longer waits for %q", t.Label(), r.Key))
		}
		if err := w.Woken(e, t, r); err != nil {
			e.Fail(failed(err, "node %s", t.Node.QualifiedName()))
		}
		if !t.Process.inLoop {
			e.executeQueuedArcTokens(t.Process)
		}
	})
}

// ErrStaleWake: an outcome for a wake the token no longer waits for.
var ErrStaleWake = &Error{Code: "stale_wake", Msg: "the node token no longer waits for this"}

// Value returns a value a node type stored for the running command (see
// SetValue), nil if none.
func (e *Engine) Value(key any) any { return e.values[key] }

// SetValue stores a value for the rest of the running command: scratch
// space for node types (a budget, a queue of deliveries), dropped with the
// command.
func (e *Engine) SetValue(key, v any) {
	if e.values == nil {
		e.values = map[any]any{}
	}
	e.values[key] = v
}

// SetContext replaces a process's context (the pairs that route events to
// it) inside a command, undone with the command if it fails.
func (e *Engine) SetContext(p *Process, c map[string]string) {
	e.mutP(p)
	p.Context = c
	p.Dirty = true
}

// SaveProcess tells the running command that a node type is about to
// change fields of p directly (its Ext, say): the command's undo journal
// keeps p as it is, so that a failed command restores it. Formats that
// change their Extension in place give p a fresh copy after saving.
func (e *Engine) SaveProcess(p *Process) { e.mutP(p) }
