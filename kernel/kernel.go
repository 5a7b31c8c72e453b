// Package kernel is Veena's token game: the execution semantics of
// Sarasvati graphs as a pure state machine. A command (start, complete,
// backtrack, cancel, a due delayed token) takes a process tree and the
// current time, runs until every token waits, and leaves the new state and
// the events it fired on the processes. It does no I/O and keeps no state
// between commands: a store persists the processes, and any engine can load
// them and run the next command.
package kernel

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veena-wf/veena/graph"
)

// Kernel holds what every command needs: node types, join strategies, guard
// functions, listeners and how to find definitions. Configure it before use;
// afterwards it is read-only and safe to share.
type Kernel struct {
	nodeTypes   map[string]NodeTypeFactory
	joins       map[string]JoinStrategy
	predicates  map[string]Predicate
	dateFuncs   map[string]DateFunc
	stringFuncs map[string]StringFunc
	global      []listenerEntry
	perGraph    map[string][]listenerEntry
	listened    bool // some global or definition listener is subscribed
	named       map[string]Listener
	receivers   map[string]Receiver
	settlers    []Settler
	runners     map[string]ProcessRunner
	ids         idGen // names processes when NewID is nil
	prepMu      sync.Mutex
	effective   atomic.Pointer[Limits] // Limits with defaults, fixed at first use

	// Definitions returns the latest version of a definition; nested nodes
	// use it. Nil means nested processes cannot start.
	Definitions func(name string) *graph.Graph
	// NewID makes process ids; nil (the default) makes UUIDv7 strings
	// stamped with the time of the command that starts the process.
	NewID func() string
	// ScriptTimeout bounds a script node's run (default 5 s); the script
	// is stopped when it is reached.
	ScriptTimeout time.Duration
	// ScriptMemory bounds what a script node's run may allocate, in bytes
	// (default DefaultScriptMemory, 64 MiB).
	ScriptMemory int64
	// Limits bound the work of a command and the size of a process
	// (zero fields: DefaultLimits).
	Limits Limits
	// ScriptOutput receives what scripts print (console.log,
	// System.out.println), one line per call prefixed with the node; nil
	// discards it.
	ScriptOutput io.Writer
}

type listenerEntry struct {
	name string
	l    Listener
	mask EventMask
}

// New returns a kernel with the built-in node types (node, wait, script,
// nested), join strategies and the date function "now".
func New() *Kernel {
	k := &Kernel{
		nodeTypes:     map[string]NodeTypeFactory{},
		joins:         map[string]JoinStrategy{},
		predicates:    map[string]Predicate{},
		dateFuncs:     map[string]DateFunc{},
		stringFuncs:   map[string]StringFunc{},
		perGraph:      map[string][]listenerEntry{},
		named:         map[string]Listener{},
		ScriptTimeout: 5 * time.Second,
	}
	k.registerBuiltins()
	return k
}

// Predicate is a guard function returning a boolean.
type Predicate func(e *Engine, t *NodeToken) (bool, error)

// DateFunc is a guard function returning a date.
type DateFunc func(e *Engine, t *NodeToken) (time.Time, error)

// StringFunc is a guard function returning a string (used as @name).
type StringFunc func(e *Engine, t *NodeToken) (string, error)

// RegisterPredicate makes a predicate available to guards and JoinLang.
func (k *Kernel) RegisterPredicate(name string, f Predicate) { k.predicates[name] = f }

// RegisterDateFunction makes a date function available to guards.
func (k *Kernel) RegisterDateFunction(name string, f DateFunc) { k.dateFuncs[name] = f }

// RegisterStringFunction makes a string function available to guards.
func (k *Kernel) RegisterStringFunction(name string, f StringFunc) { k.stringFuncs[name] = f }

// RegisterJoinStrategy makes a join strategy available to nodes with
// joinType="class" and that name as join parameter.
func (k *Kernel) RegisterJoinStrategy(name string, s JoinStrategy) { k.joins[name] = s }

// RegisterListener names a listener so that processes can subscribe to it
// (AddProcessListener); only the name is stored with the process.
func (k *Kernel) RegisterListener(name string, l Listener) { k.named[name] = l }

// Listener returns a registered listener.
func (k *Kernel) Listener(name string) (Listener, bool) {
	l, ok := k.named[name]
	return l, ok
}

// AddGlobalListener subscribes l to the given events (none means all) of
// every process. Adding the same name again adds the types to its mask.
func (k *Kernel) AddGlobalListener(name string, l Listener, types ...EventType) {
	k.global = addListener(k.global, name, l, MaskOf(types...))
	k.listenersChanged()
}

// RemoveGlobalListener unsubscribes the named listener from the types (none
// means all); it goes away when no type is left.
func (k *Kernel) RemoveGlobalListener(name string, types ...EventType) {
	k.global = removeListener(k.global, name, types)
	k.listenersChanged()
}

// AddDefinitionListener subscribes l to events of processes of the named definition.
func (k *Kernel) AddDefinitionListener(definition, name string, l Listener, types ...EventType) {
	k.perGraph[definition] = addListener(k.perGraph[definition], name, l, MaskOf(types...))
	k.listenersChanged()
}

// RemoveDefinitionListener unsubscribes a definition-level listener.
func (k *Kernel) RemoveDefinitionListener(definition, name string, types ...EventType) {
	k.perGraph[definition] = removeListener(k.perGraph[definition], name, types)
	k.listenersChanged()
}

// listenersChanged notes whether any global or definition listener is
// left, so that events of a kernel without them skip looking for them.
func (k *Kernel) listenersChanged() {
	k.listened = len(k.global) > 0
	for _, ls := range k.perGraph {
		k.listened = k.listened || len(ls) > 0
	}
}

func addListener(ls []listenerEntry, name string, l Listener, mask EventMask) []listenerEntry {
	for i := range ls {
		if ls[i].name == name {
			ls[i].mask |= mask
			ls[i].l = l
			return ls
		}
	}
	return append(ls, listenerEntry{name: name, l: l, mask: mask})
}

func removeListener(ls []listenerEntry, name string, types []EventType) []listenerEntry {
	for i := range ls {
		if ls[i].name != name {
			continue
		}
		if len(types) == 0 {
			ls[i].mask = 0
		} else {
			ls[i].mask = ls[i].mask.Without(types...)
		}
		if ls[i].mask == 0 {
			return append(ls[:i], ls[i+1:]...)
		}
		return ls
	}
	return ls
}

// Error is a refusal with a stable code, as the HTTP API reports it.
type Error struct {
	Code string
	Msg  string
	Err  error // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches errors with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors for the conditions callers act on; match with errors.Is.
var (
	ErrTokenComplete         = &Error{Code: "token_complete", Msg: "the node token is already complete"}
	ErrProcessNotExecuting   = &Error{Code: "process_not_executing", Msg: "the process is not executing"}
	ErrBacktrackNotAllowed   = &Error{Code: "backtrack_not_allowed", Msg: "backtracking is not allowed"}
	ErrJoinNotMember         = &Error{Code: "join_not_member", Msg: "a token outside every token set reached a tokenSet join"}
	ErrNoStartNodes          = &Error{Code: "no_start_nodes", Msg: "the definition has no start nodes"}
	ErrExecutionFailed       = &Error{Code: "execution_failed", Msg: "execution failed"}
	ErrInvalidArgument       = &Error{Code: "invalid_argument", Msg: "invalid argument"}
	ErrNotDelayed            = &Error{Code: "token_not_delayed", Msg: "the node token is not delayed"}
	ErrDefinitionNotFound    = &Error{Code: "definition_not_found", Msg: "definition not found"}
	ErrDefinitionNotPrepared = &Error{Code: "definition_invalid", Msg: "definition invalid"}
	ErrNestedProcessActive   = &Error{Code: "nested_process_active", Msg: "the node token's nested process is still running"}
)

func refuse(base *Error, format string, args ...any) *Error {
	return &Error{Code: base.Code, Msg: fmt.Sprintf(format, args...)}
}

// failed wraps an execution failure (a guard, script or join that failed).
func failed(err error, format string, args ...any) *Error {
	var ke *Error
	if errors.As(err, &ke) && ke.Code != ErrExecutionFailed.Code {
		return ke
	}
	return &Error{Code: ErrExecutionFailed.Code, Msg: fmt.Sprintf(format, args...) + ": " + err.Error(), Err: err}
}

// abort carries a failure up to the command boundary.
type abort struct{ err error }

// Engine runs commands at one moment in time. Make one per command with
// Kernel.Engine; node types and listeners receive it to act on the process.
//
// A command that fails leaves the process tree exactly as it was (decision
// 15: a failed step keeps nothing; see journal.go).
type Engine struct {
	k     *Kernel
	now   time.Time
	at    int64 // now in Unix nanoseconds, as events hold it
	depth int
	j     journal  // the undo journal of the running command
	root  *Process // the root of the tree it runs on (nil: a new tree)
	// fresh are the roots of the trees the running command made: like
	// root, they point to the journal until the command ends.
	fresh []*Process

	tokens    int                     // node and arc tokens the running command created
	nextCheck int                     // the count of tokens at which created looks at the budgets next
	budgetOf  *Process                // the process whose size nextCheck allows for
	stop      atomic.Pointer[error]   // set by Interrupt
	script    atomic.Pointer[running] // the script the command runs, if any

	backtracking bool // undoing tokens: completions are not dead ends

	values map[any]any // node types' scratch space for the command
}

// Engine returns an engine for commands at time now.
func (k *Kernel) Engine(now time.Time) *Engine {
	return &Engine{k: k, now: now.UTC(), at: now.UnixNano()}
}

// Reuse readies an engine for commands at time now, keeping the buffers
// its journal grew, and reports whether it could: an engine that was
// interrupted cannot be (Interrupt is for good). It must not be running a
// command, and what it was given during the last one (node types'
// Values) is gone.
func (e *Engine) Reuse(now time.Time) bool {
	if e.depth != 0 || e.stop.Load() != nil || e.script.Load() != nil {
		return false
	}
	e.now, e.at = now.UTC(), TimeNs(now)
	e.root, e.backtracking = nil, false
	e.startBudget()
	clear(e.values)
	return true
}

// Now is the command's time.
func (e *Engine) Now() time.Time { return e.now }

// Kernel returns the kernel the engine belongs to.
func (e *Engine) Kernel() *Kernel { return e.k }

// Fail aborts the running command with err.
func (e *Engine) Fail(err error) {
	panic(abort{err})
}

// run executes fn as a command on the tree of p (nil for a new tree), or as
// part of the running command. Failures inside a command unwind to its
// outermost call, which undoes everything the command changed.
func (e *Engine) run(p *Process, fn func()) (err error) {
	if e.depth > 0 {
		e.enter(p)
		e.depth++
		defer func() { e.depth-- }()
		fn()
		return nil
	}
	e.depth = 1
	e.startBudget()
	e.j.begin()
	if p != nil {
		e.root = p.Root()
		e.root.journal = &e.j
		e.enter(p)
	}
	defer e.finish(&err)
	if s := e.stop.Load(); s != nil {
		e.Fail(*s)
	}
	fn()
	return nil
}

// finish ends the running command (deferred by run): a command that failed,
// or was interrupted, even after its last step, gives back everything it
// changed and returns its error.
func (e *Engine) finish(err *error) {
	r := recover()
	e.depth = 0
	if r == nil {
		if s := e.stop.Load(); s != nil {
			r = abort{*s}
		}
	}
	if r != nil {
		e.j.rollback()
	}
	if e.root != nil {
		e.root.journal = nil
		e.root = nil
	}
	for i, p := range e.fresh {
		p.journal, e.fresh[i] = nil, nil
	}
	e.fresh = e.fresh[:0]
	e.j.end()
	if r != nil {
		a, ok := r.(abort)
		if !ok {
			panic(r)
		}
		*err = a.err
	}
}

// Start creates a process of g with a copy of env and starts it. It fails
// with ErrNoStartNodes, creating nothing, if g has no start nodes.
func (e *Engine) Start(g *graph.Graph, env *Env) (p *Process, err error) {
	if err := e.k.Prepare(g); err != nil {
		return nil, err
	}
	if len(g.StartNodes()) == 0 {
		return nil, refuse(ErrNoStartNodes, "definition %s has no start nodes", g)
	}
	err = e.run(nil, func() {
		p = e.newProcess(g, env, nil, nil)
		e.startProcess(p)
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Engine) newProcess(g *graph.Graph, env *Env, parent *Process, parentToken *NodeToken) *Process {
	// The process and its environment are made in one allocation.
	pe := &struct {
		p   Process
		env Env
	}{}
	p := &pe.p
	if e.k.NewID != nil {
		p.ID = e.k.NewID()
	} else {
		p.ID = e.k.ids.make(e.now)
	}
	p.Graph, p.State, p.Parent, p.ParentToken = g, Created, parent, parentToken
	p.CreatedAt, p.UpdatedAt, p.Dirty, p.epoch = e.now, e.now, true, e.j.epoch
	if d := env.data(); d != nil {
		d.share() // a copy of env, made when either is written
		pe.env.d = d
	}
	p.Env = pe.env.adopt(p, e.j.epoch)
	if parent == nil && e.j.epoch != 0 {
		p.journal = &e.j // a new tree: its environments find the journal here
		e.fresh = append(e.fresh, p)
	}
	gr := e.runtime(g.Nodes[0]).graph
	p.Events = make([]EventRecord, 0, gr.eventHint())
	p.NodeTokens = make([]*NodeToken, 0, gr.nodeHint())
	if n := gr.arcHint(); n > 0 {
		p.ArcTokens = make([]*ArcToken, 0, n)
	}
	if parent != nil {
		e.mutP(parent)
		parent.Nested = append(parent.Nested, p)
		parent.Dirty = true
	}
	e.fire(p, ProcessCreated, nil, nil, nil, 0)
	return p
}

func (e *Engine) startProcess(p *Process) {
	starts := p.Graph.StartNodes()
	if len(starts) == 0 {
		e.Fail(refuse(ErrNoStartNodes, "definition %s has no start nodes", p.Graph))
	}
	e.startProcessAt(p, starts)
}

func (e *Engine) startProcessAt(p *Process, starts []*graph.Node) {
	e.saved(p)
	p.State = Executing
	e.fire(p, ProcessStarted, nil, nil, nil, 0)
	was := p.inLoop
	p.inLoop = true
	for _, n := range starts {
		t := e.newNodeToken(p, n, nil, Forward, nil)
		e.fire(p, NodeTokenCreated, t, nil, nil, 0)
		e.executeNode(t)
	}
	p.inLoop = was
	e.executeQueuedArcTokens(p)
	e.runtime(p.Graph.Nodes[0]).graph.observe(p)
}

// newNodeToken creates a node token. Its environment comes from envFrom's
// parent node tokens, in order (last wins); its memberships from the
// parents' memberships, except in the terminating sets.
func (e *Engine) newNodeToken(p *Process, n *graph.Node, parents []*ArcToken, x ExecutionType, terminating []*TokenSet) *NodeToken {
	e.saved(p)
	e.created(p)
	p.Seq++
	t := p.allocNodeToken() // zero: only the fields a new token has are set
	t.ID, t.Seq, t.Process, t.Node, t.Parents = len(p.NodeTokens), p.Seq, p, n, parents
	t.ExecType, t.CreatedNs, t.epoch = x, e.at, e.j.epoch
	t.Env = inheritEnv(parents).adopt(p, e.j.epoch)
	for _, a := range parents {
		t.Sets = appendMemberships(t.Sets, a, terminating)
	}
	p.NodeTokens = append(p.NodeTokens, t)
	p.Dirty = true
	return t
}

// inheritEnv gives a new token the environment of the parent node tokens of
// its parent arc tokens, imported in order. A single non-empty source is
// shared copy-on-write (see Env.Share).
func inheritEnv(parents []*ArcToken) *Env {
	var src *Env
	n := 0
	for _, a := range parents {
		if !a.Parent.Env.IsEmpty() {
			if src != a.Parent.Env {
				n++
			}
			src = a.Parent.Env
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return src.Share()
	}
	env := NewEnv()
	for _, a := range parents {
		env.Import(a.Parent.Env)
	}
	return env
}

// appendMemberships adds the memberships of arc token a that are not in
// the terminating sets and not in ms already.
func appendMemberships(ms []Membership, a *ArcToken, terminating []*TokenSet) []Membership {
	for _, m := range a.Sets {
		if containsSet(terminating, m.Set) || hasSet(ms, m.Set) {
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

func containsSet(sets []*TokenSet, s *TokenSet) bool {
	for _, x := range sets {
		if x == s {
			return true
		}
	}
	return false
}

func hasSet(ms []Membership, s *TokenSet) bool {
	for _, m := range ms {
		if m.Set == s {
			return true
		}
	}
	return false
}

func (e *Engine) newArcToken(p *Process, arc *graph.Arc, parent *NodeToken, x ExecutionType, sets []Membership) *ArcToken {
	e.saved(p)
	e.mutN(parent)
	e.created(p)
	p.Seq++
	a := p.allocArcToken() // zero: only the fields a new token has are set
	a.ID, a.Seq, a.Process, a.Arc, a.Parent = len(p.ArcTokens), p.Seq, p, arc, parent
	a.Pending, a.ExecType, a.CreatedNs, a.epoch = true, x, e.at, e.j.epoch
	if len(sets) > 0 {
		a.Sets = append([]Membership(nil), sets...)
	}
	parent.Children = append(parent.Children, a)
	p.ArcTokens = append(p.ArcTokens, a)
	p.Dirty = true
	return a
}

// executeNode runs the node's guard, then acts on its result.
func (e *Engine) executeNode(t *NodeToken) {
	p := t.Process
	rt := e.runtime(t.Node)
	res, err := rt.guard(e, t)
	if err != nil {
		e.Fail(failed(err, "guard of node %s", t.Node.QualifiedName()))
	}
	e.mutN(t)
	t.GuardAction = res.Action
	switch res.Action {
	case Accept:
		e.addActive(t)
		if e.fire(p, NodeTokenAccepted, t, nil, nil, 0)&DelayNodeExecution == 0 {
			e.execute(rt, t)
		}
	case Discard:
		e.markComplete(t, false)
		e.fire(p, NodeTokenDiscarded, t, nil, nil, 0)
		e.fire(p, NodeTokenCompleted, t, nil, nil, 0)
	case Skip:
		e.addActive(t)
		names := []string{res.ArcName}
		e.fire(p, NodeTokenSkipped, t, nil, names, 0)
		e.complete(t, names, false)
	case Delay:
		e.addActive(t)
		t.DelayUntilNs = TimeNs(res.Until)
		t.DelayCount++
		e.fire(p, NodeTokenDelayed, t, nil, nil, 0)
	default:
		e.Fail(refuse(ErrExecutionFailed, "guard of node %s gave no guard action", t.Node.QualifiedName()))
	}
}

func (e *Engine) execute(rt *nodeRuntime, t *NodeToken) {
	if err := rt.typ.Execute(e, t); err != nil {
		e.Fail(failed(err, "node %s", t.Node.QualifiedName()))
	}
	e.fire(t.Process, NodeTokenExecuted, t, nil, nil, 0)
}

// ExecuteNode runs the node of an accepted token whose execution a listener
// delayed (DelayNodeExecution).
func (e *Engine) ExecuteNode(t *NodeToken) error {
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		if t.GuardAction != Accept {
			e.Fail(refuse(ErrInvalidArgument, "node token %s was not accepted", t.Label()))
		}
		e.execute(e.runtime(t.Node), t)
		if !t.Process.inLoop {
			e.executeQueuedArcTokens(t.Process)
		}
	})
}

// markComplete marks a node token complete at the command's time and gives
// it a completion sequence number. Work the token holds ends with it (see
// endWork): completed if forward (it left on at least one arc), else
// cancelled.
func (e *Engine) markComplete(t *NodeToken, forward bool) {
	p := t.Process
	e.saved(p)
	e.mutN(t)
	p.Seq++
	t.Complete = true
	t.CompleteSeq = p.Seq
	t.CompletedNs = e.at
	p.Dirty = true
	if t.Work != 0 {
		e.endWork(t, forward && !e.backtracking)
	}
}

// endToken takes an active node token off the active list and marks it
// complete (markComplete).
func (e *Engine) endToken(t *NodeToken, forward bool) {
	e.mutN(t)
	if t.active {
		e.saved(t.Process)
		t.active = false
		t.Process.activeNodes--
	}
	e.markComplete(t, forward)
}

// addActive makes t active; the caller saved t (executeNode).
func (e *Engine) addActive(t *NodeToken) {
	e.savedN(t)
	if !t.active {
		e.saved(t.Process)
		t.active = true
		t.Process.activeNodes++
	}
}

func (e *Engine) removeActive(t *NodeToken) {
	if t.active {
		e.saved(t.Process)
		e.mutN(t)
		t.active = false
		t.Process.activeNodes--
	}
}

// enqueue adds an arc token to its process's execution queue.
func (e *Engine) enqueue(p *Process, a *ArcToken) {
	e.saved(p)
	p.enqueue(a)
}

func (e *Engine) checkCompletable(t *NodeToken) {
	if t.Process.State != Executing {
		e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", t.Process.ID, t.Process.State))
	}
	if t.Complete {
		e.Fail(refuse(ErrTokenComplete, "node token %s is already complete", t.Label()))
	}
	if c := t.runningNested(); c != nil {
		e.Fail(refuse(ErrNestedProcessActive, "node token %s waits for its nested process %s (%s, %s); completing it would leave that process running on its own: cancel it, or let it finish",
			t.Label(), c.ID, c.Graph, c.State))
	}
}

// runningNested returns the nested process t started that has not ended
// (completed or canceled), or nil.
func (t *NodeToken) runningNested() *Process {
	for _, c := range t.Process.Nested {
		if c.ParentToken == t && c.State != Completed && c.State != Canceled {
			return c
		}
	}
	return nil
}

// Complete completes a node token on the arcs with the given names ("" is
// the default arcs; no names at all means the default arcs) and runs the
// process on until every token waits. Each arc is taken once; a name that
// matches no arc ends that branch.
func (e *Engine) Complete(t *NodeToken, names ...string) error {
	if names == nil {
		names = defaultArcs
	}
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		e.completeVia(t, names, nil)
	})
}

// CompleteAsync completes a node token but leaves its arc tokens pending in
// the queue, for ExecuteQueuedArcTokens to run later.
func (e *Engine) CompleteAsync(t *NodeToken, names ...string) error {
	if names == nil {
		names = defaultArcs
	}
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		e.complete(t, names, true)
	})
}

var defaultArcs = []string{""}

// named reports whether the arc's name is one of names.
func named(arc *graph.Arc, names []string) bool {
	for _, n := range names {
		if arc.Name == n {
			return true
		}
	}
	return false
}

func (e *Engine) complete(t *NodeToken, names []string, async bool) {
	p := t.Process
	if p.State != Executing || t.Complete {
		return
	}
	out := t.Node.OutArcs()
	exits := 0
	for _, arc := range out {
		if named(arc, names) {
			exits++
		}
	}
	e.endToken(t, exits > 0)
	e.fire(p, NodeTokenCompleted, t, nil, names, exits)
	e.savedN(t) // by endToken
	switch {
	case t.Children != nil:
	case exits == 1:
		t.Children = t.child1[:0:1]
	case exits > 1:
		t.Children = make([]*ArcToken, 0, exits)
	}
	for _, arc := range out {
		if !named(arc, names) {
			continue
		}
		a := e.newArcToken(p, arc, t, Forward, t.Sets)
		e.fire(p, ArcTokenCreated, nil, a, nil, 0)
		if async && p.inLoop {
			e.saved(p)
			p.asyncQueue = append(p.asyncQueue, a)
		} else {
			e.enqueue(p, a)
		}
	}
	if !async && p.State == Executing && !p.inLoop {
		e.executeQueuedArcTokens(p)
	}
}

// ExecuteQueuedArcTokens runs the arc tokens waiting in the process queue
// (after asynchronous completions), then checks whether the process is done.
func (e *Engine) ExecuteQueuedArcTokens(p *Process) error {
	return e.run(p, func() {
		if p.State != Executing {
			e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", p.ID, p.State))
		}
		e.executeQueuedArcTokens(p)
	})
}

func (e *Engine) executeQueuedArcTokens(p *Process) {
	e.saved(p)
	was := p.inLoop
	p.inLoop = true
	for {
		for p.State == Executing && p.queued() > 0 {
			e.executeArc(p.dequeue())
		}
		if len(e.k.settlers) == 0 || !e.settle(p) {
			break
		}
	}
	p.inLoop = was
	e.checkCompletion(p)
	if len(p.asyncQueue) > 0 {
		e.saved(p)
		for _, a := range p.asyncQueue {
			p.enqueue(a)
		}
		p.asyncQueue = nil
	}
}

func (e *Engine) executeArc(a *ArcToken) {
	if !a.Pending || a.Complete {
		return
	}
	p := a.Process
	e.mutA(a)
	a.Pending = false
	e.fire(p, ArcTokenProcessed, nil, a, nil, 0)
	e.addActiveArc(a)
	if !e.retry(a) {
		e.fire(p, ArcTokenIncompleteJoin, nil, a, nil, 0)
	}
}

// RetryIncompleteArcToken evaluates the join of an arc token waiting at its
// end node again; it reports whether the join fired.
func (e *Engine) RetryIncompleteArcToken(a *ArcToken) (fired bool, err error) {
	err = e.run(a.Process, func() {
		if a.Process.State != Executing {
			e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", a.Process.ID, a.Process.State))
		}
		if a.Pending && !a.Complete {
			// Not yet at its join: it waits in the queue (ExecuteQueuedArcTokens).
			e.Fail(refuse(ErrInvalidArgument, "arc token %s is pending, not waiting at a join", a.Label()))
		}
		fired = e.retry(a)
		if !a.Process.inLoop {
			e.executeQueuedArcTokens(a.Process)
		}
	})
	return fired, err
}

func (e *Engine) retry(a *ArcToken) bool {
	if a.Complete {
		return false
	}
	rt := e.runtime(a.Arc.To)
	res, err := rt.join.Join(e, a)
	if err != nil {
		e.Fail(failed(err, "join at node %s", a.Arc.To.QualifiedName()))
	}
	switch res.Action {
	case JoinComplete:
		e.completeJoin(a.Arc.To, res)
		return true
	case joinCompleteOne:
		e.completeOne(a)
		return true
	case JoinMerge:
		e.merge(res)
		return true
	}
	return false
}

func (e *Engine) completeJoin(n *graph.Node, res JoinResult) {
	if len(res.ArcTokens) == 0 {
		e.Fail(refuse(ErrExecutionFailed, "join at node %s completed with no arc tokens", n.QualifiedName()))
	}
	p := res.ArcTokens[0].Process
	t := e.newNodeToken(p, n, res.ArcTokens, Forward, res.Terminating)
	e.fire(p, NodeTokenCreated, t, nil, nil, 0)
	for _, a := range res.ArcTokens {
		e.completeArc(a, t)
	}
	e.executeNode(t)
}

// completeOne creates the node token of an or join: the arriving arc token
// is its only parent, kept inline.
func (e *Engine) completeOne(a *ArcToken) {
	p := a.Process
	t := e.newNodeToken(p, a.Arc.To, nil, Forward, nil)
	t.parent1[0] = a
	t.Parents = t.parent1[:1:1]
	t.Env = inheritEnv(t.Parents).adopt(p, e.j.epoch)
	t.Sets = appendMemberships(t.Sets, a, nil)
	e.fire(p, NodeTokenCreated, t, nil, nil, 0)
	e.completeArc(a, t)
	e.executeNode(t)
}

// completeArc takes an arc token off its waiting list and completes it into child.
func (e *Engine) completeArc(a *ArcToken, child *NodeToken) {
	e.removeActiveArc(a)
	e.completeArcInto(a, child)
}

// completeArcInto completes an arc token into child without touching the
// active lists.
func (e *Engine) completeArcInto(a *ArcToken, child *NodeToken) {
	e.mutA(a)
	a.Pending = false
	a.Complete = true
	a.CompletedNs = e.at
	a.Child = child
	child.Process.Dirty = true
	e.fire(a.Process, ArcTokenCompleted, nil, a, nil, 0)
}

func (e *Engine) merge(res JoinResult) {
	target := res.MergeTarget
	for _, a := range res.ArcTokens {
		e.mutN(target)
		e.mutA(a)
		target.Parents = append(target.Parents, a)
		e.removeActiveArc(a)
		if a.Pending {
			a.Pending = false
			e.fire(a.Process, ArcTokenProcessed, nil, a, nil, 0)
		}
		a.Complete = true
		a.CompletedNs = e.at
		a.Child = target
		a.Process.Dirty = true
		e.fire(a.Process, ArcTokenCompleted, nil, a, nil, 0)
		e.fire(a.Process, ArcTokenMerged, nil, a, nil, 0)
	}
}

// addActiveArc puts a processed arc token on its arc's waiting list.
func (e *Engine) addActiveArc(a *ArcToken) {
	if a.active {
		return
	}
	p := a.Process
	e.saved(p)
	e.mutA(a)
	a.active = true
	p.activeArcs++
	if a.Arc.To.Join == graph.JoinOr {
		return // an or join fires at once: nothing ever waits there
	}
	if p.waiting == nil {
		p.waiting = make([]waitList, len(p.Graph.Arcs))
		p.readyArcs = make([]int, len(p.Graph.Nodes))
	}
	w := &p.waiting[a.Arc.Index]
	a.nextWaiting = nil
	if w.tail == nil {
		w.head = a
	} else {
		e.mutA(w.tail)
		w.tail.nextWaiting = a
	}
	w.tail = a
	if len(a.Sets) == 0 {
		w.free++
		if w.free == 1 {
			p.readyArcs[a.Arc.To.Index]++
		}
	}
}

// removeActiveArc takes an arc token off its arc's waiting list.
func (e *Engine) removeActiveArc(a *ArcToken) {
	if !a.active {
		return
	}
	p := a.Process
	e.saved(p)
	e.mutA(a)
	a.active = false
	p.activeArcs--
	if a.Arc.To.Join == graph.JoinOr {
		return
	}
	w := &p.waiting[a.Arc.Index]
	var prev *ArcToken
	for x := w.head; x != nil; prev, x = x, x.nextWaiting {
		if x != a {
			continue
		}
		if prev == nil {
			w.head = a.nextWaiting
		} else {
			e.mutA(prev)
			prev.nextWaiting = a.nextWaiting
		}
		if w.tail == a {
			w.tail = prev
		}
		a.nextWaiting = nil
		break
	}
	if len(a.Sets) == 0 {
		w.free--
		if w.free == 0 {
			p.readyArcs[a.Arc.To.Index]--
		}
	}
}

// waitList is the arc tokens waiting on one arc, in arrival order, linked
// through the tokens themselves; free counts those outside every token set.
type waitList struct {
	head, tail *ArcToken
	free       int
}

// WaitingAt returns the active arc tokens on an arc, in arrival order.
func (p *Process) WaitingAt(arc *graph.Arc) []*ArcToken {
	var out []*ArcToken
	for a := p.firstWaiting(arc); a != nil; a = a.nextWaiting {
		out = append(out, a)
	}
	return out
}

// firstWaiting is the first arc token waiting on an arc, or nil.
func (p *Process) firstWaiting(arc *graph.Arc) *ArcToken {
	if p.waiting == nil {
		return nil
	}
	return p.waiting[arc.Index].head
}

func (e *Engine) checkCompletion(p *Process) {
	if p.State == Executing && p.activeNodes == 0 && p.activeArcs == 0 && p.queued() == 0 && len(p.asyncQueue) == 0 && !e.keptOpen(p) {
		e.saved(p)
		p.State = PendingCompletion
		p.Dirty = true
		if e.fire(p, ProcessPendingComplete, nil, nil, nil, 0)&DelayFinalizeComplete == 0 {
			e.finalizeComplete(p)
		}
	}
}

// FinalizeComplete completes a process left pending by a listener.
func (e *Engine) FinalizeComplete(p *Process) error {
	return e.run(p, func() {
		if p.State != PendingCompletion {
			e.Fail(refuse(ErrInvalidArgument, "process %s is %s, not pending completion", p.ID, p.State))
		}
		e.finalizeComplete(p)
	})
}

func (e *Engine) finalizeComplete(p *Process) {
	if len(p.Nested) > 0 {
		e.endChildren(p)
	}
	e.saved(p)
	p.State = Completed
	p.Dirty = true
	e.fire(p, ProcessCompleted, nil, nil, nil, 0)
	if rt, ok := p.Graph.Nodes[0].Runtime.(*nodeRuntime); ok {
		rt.graph.observeEnd(p)
	}
	if t := p.ParentToken; t != nil && t.Process.State == Executing && !t.Complete {
		e.completeVia(t, defaultArcs, nil)
	}
}

// endChildren cancels the detached nested processes (StartChild) of a
// process that completes and are still running, theirs with them: a child
// is a part of its parent and does not outlive it.
func (e *Engine) endChildren(p *Process) {
	for _, c := range p.Nested {
		if c.ParentToken == nil && (c.State == Created || c.State == Executing) {
			e.cancel(c)
		}
	}
}

// Cancel cancels a process, first cancelling the nested processes its active
// node tokens started. The tokens stay as they are.
func (e *Engine) Cancel(p *Process) error {
	return e.run(p, func() {
		if p.State != Executing {
			e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", p.ID, p.State))
		}
		e.cancel(p)
	})
}

func (e *Engine) cancel(p *Process) {
	for _, c := range p.Nested {
		// A detached nested process (no parent token, see StartChild) is
		// cancelled with its parent, as is one whose parent token waits.
		if (c.ParentToken == nil || c.ParentToken.active) && (c.State == Created || c.State == Executing) {
			e.cancel(c)
		}
	}
	e.mutP(p)
	p.State = PendingCancel
	p.Dirty = true
	if e.fire(p, ProcessPendingCancel, nil, nil, nil, 0)&DelayFinalizeCancel == 0 {
		e.finalizeCancel(p)
	}
}

// FinalizeCancel cancels a process left pending by a listener.
func (e *Engine) FinalizeCancel(p *Process) error {
	return e.run(p, func() {
		if p.State != PendingCancel {
			e.Fail(refuse(ErrInvalidArgument, "process %s is %s, not pending cancel", p.ID, p.State))
		}
		e.finalizeCancel(p)
	})
}

func (e *Engine) finalizeCancel(p *Process) {
	e.mutP(p)
	p.State = Canceled
	p.Dirty = true
	for _, t := range p.NodeTokens {
		if t.active && t.Work != 0 {
			e.endWork(t, false) // the token stays as it is; its work ends
		}
	}
	e.fire(p, ProcessCanceled, nil, nil, nil, 0)
}

// ReevaluateDelayedToken runs the guard of a delayed token again (when its
// time has come) and acts on the new result.
func (e *Engine) ReevaluateDelayedToken(t *NodeToken) error {
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		if t.GuardAction != Delay {
			e.Fail(refuse(ErrNotDelayed, "node token %s is not delayed", t.Label()))
		}
		e.removeActive(t)
		p := t.Process
		e.mutP(p)
		was := p.inLoop
		p.inLoop = true
		e.executeNode(t)
		p.inLoop = was
		e.executeQueuedArcTokens(p)
	})
}

// DelayedTokens returns the tokens of the tree's executing processes that
// wait for a delay to pass.
func (p *Process) DelayedTokens() []*NodeToken {
	var out []*NodeToken
	p.Walk(func(q *Process) {
		if q.State != Executing {
			return
		}
		for _, t := range q.NodeTokens {
			if t.active && t.GuardAction == Delay && !t.Complete {
				out = append(out, t)
			}
		}
	})
	return out
}

// CompleteWithNewTokenSet completes a node token on the arcs named arcName
// and places count arc tokens on each, members 0..count-1 of a new token set
// with set environment env and per-member attributes memberEnv (element i of
// each list goes to member i). The process then runs on.
func (e *Engine) CompleteWithNewTokenSet(t *NodeToken, arcName, setName string, count int, env *Env, memberEnv map[string][]Value) (set *TokenSet, err error) {
	return e.completeWithNewTokenSet(t, arcName, setName, count, env, memberEnv, false)
}

// CompleteWithNewTokenSetAsync is CompleteWithNewTokenSet that leaves the
// set's arc tokens pending in the queue, for ExecuteQueuedArcTokens to run
// later (Sarasvati's asynchronous completion with a new token set).
func (e *Engine) CompleteWithNewTokenSetAsync(t *NodeToken, arcName, setName string, count int, env *Env, memberEnv map[string][]Value) (set *TokenSet, err error) {
	return e.completeWithNewTokenSet(t, arcName, setName, count, env, memberEnv, true)
}

func (e *Engine) completeWithNewTokenSet(t *NodeToken, arcName, setName string, count int, env *Env, memberEnv map[string][]Value, async bool) (set *TokenSet, err error) {
	err = e.run(t.Process, func() {
		e.checkCompletable(t)
		if count < 1 {
			e.Fail(refuse(ErrInvalidArgument, "a token set needs at least one member, not %d", count))
		}
		if setName == "" {
			e.Fail(refuse(ErrInvalidArgument, "a token set needs a name"))
		}
		e.checkTokenSet(count)
		p := t.Process
		names := []string{arcName}
		exits := t.Node.OutArcsNamed(arcName)
		e.endToken(t, len(exits) > 0)
		e.fire(p, NodeTokenCompleted, t, nil, names, len(exits))
		if len(exits) > 0 {
			level := 0
			for _, m := range t.Sets {
				level = max(level, m.Set.Level)
			}
			set = &TokenSet{ID: len(p.TokenSets), Name: setName, MaxMemberIndex: count - 1, Level: level + 1, Env: env.Clone().adopt(p, e.j.epoch)}
			set.members = make([]*Env, count)
			for i := range set.members {
				set.members[i] = NewEnv().adopt(p, e.j.epoch)
			}
			for name, vals := range memberEnv {
				set.MemberEnv().setList(name, vals)
			}
			e.saved(p)
			p.TokenSets = append(p.TokenSets, set)
			for member := 0; member < count; member++ {
				for _, arc := range exits {
					sets := append(append(make([]Membership, 0, len(t.Sets)+1), t.Sets...), Membership{Set: set, Member: member})
					a := e.newArcToken(p, arc, t, Forward, nil)
					a.Sets = sets
					e.fire(p, ArcTokenCreated, nil, a, nil, 0)
					if async && p.inLoop {
						e.saved(p)
						p.asyncQueue = append(p.asyncQueue, a)
					} else {
						e.enqueue(p, a)
					}
				}
			}
		}
		if !async && p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
	return set, err
}

// fire records an event and tells the listeners (see notify). It returns
// the OR of their actions. It runs for every event of every process, so
// its common path (room in the list, no names, nobody to tell) is short,
// and the rest is in functions of their own.
func (e *Engine) fire(p *Process, typ EventType, t *NodeToken, a *ArcToken, names []string, exits int) EventActions {
	e.saved(p)
	n := len(p.Events)
	if n == 0 || n == cap(p.Events) {
		e.roomForEvent(p)
	}
	p.EventSeq++
	ev := grow(&p.Events)
	*ev = newEventRecord(typ, exits, e.at)
	if t != nil {
		ev.node = int32(t.ID + 1)
	}
	if a != nil {
		ev.arc = int32(a.ID + 1)
	}
	if names != nil {
		ev.names = e.recordNames(p, names)
	}
	if p.UpdatedAt != e.now { // once a command: writing it costs a write barrier
		p.UpdatedAt = e.now
	}
	p.Dirty = true
	if e.k.listened || len(p.Listeners) > 0 || typ == NodeTokenCompleted && exits == 0 && len(t.Sets) > 0 {
		return e.tell(p, t)
	}
	return 0
}

// roomForEvent makes room in p.Events for one more event. An empty list
// is a new process's, or one whose events the caller has taken (their
// names go with them); a full one grows, and the graph's next command
// sizes its list for this many.
func (e *Engine) roomForEvent(p *Process) {
	n := len(p.Events)
	if n == 0 {
		if p.Events == nil {
			p.Events = make([]EventRecord, 0, e.runtime(p.Graph.Nodes[0]).graph.commandEventHint())
		}
		p.eventNames = p.eventNames[:0]
	}
	if n == cap(p.Events) {
		if n < maxCommandEvents {
			raise(&e.runtime(p.Graph.Nodes[0]).graph.commandEvents, n+1)
		}
		p.Events = slices.Grow(p.Events, 1)
	}
}

// recordNames keeps the arc names of the event being recorded and returns
// what its record holds: -1 for the one name "", else the names' place in
// p.eventNames, from 1.
func (e *Engine) recordNames(p *Process, names []string) int32 {
	if len(names) == 1 && names[0] == "" {
		return -1
	}
	if p.eventNames == nil {
		hint := 4
		if p.EventSeq == int64(len(p.Events)) { // the process's whole list, sized as the last one's
			hint = e.runtime(p.Graph.Nodes[0]).graph.namesHint()
		}
		p.eventNames = make([][]string, 0, hint)
	}
	p.eventNames = append(p.eventNames, names)
	return int32(len(p.eventNames))
}

// tell tells the listeners of the event just recorded, or, with none,
// retries a token-set member's dead end (see notify).
func (e *Engine) tell(p *Process, t *NodeToken) EventActions {
	if e.k.listened || len(p.Listeners) > 0 {
		ev := p.Event(len(p.Events) - 1) // a copy: listeners may fire more events
		return e.notify(p, &ev, e.k.perGraph[p.Graph.Name])
	}
	e.retryTokenSetDeadEnd(t)
	return 0
}

// notify tells the listeners of an event: those of the definition, those of
// the process, the kernel's own token-set dead-end retry, then the global ones.
func (e *Engine) notify(p *Process, ev *Event, perGraph []listenerEntry) EventActions {
	var actions EventActions
	typ := ev.Type
	for _, l := range perGraph {
		if l.mask.Has(typ) {
			actions |= l.l.Notify(e, ev)
		}
	}
	for _, ref := range p.Listeners {
		if ref.Mask.Has(typ) {
			if l, ok := e.k.named[ref.Name]; ok {
				actions |= l.Notify(e, ev)
			}
		}
	}
	if t := ev.NodeToken(); typ == NodeTokenCompleted && ev.ExitArcs == 0 && len(t.Sets) > 0 {
		e.retryTokenSetDeadEnd(t)
	}
	for _, l := range e.k.global {
		if l.mask.Has(typ) {
			actions |= l.l.Notify(e, ev)
		}
	}
	return actions
}

// AddProcessListener subscribes a registered listener to events of p.
func (e *Engine) AddProcessListener(p *Process, name string, types ...EventType) error {
	if _, ok := e.k.named[name]; !ok {
		return refuse(ErrInvalidArgument, "no listener is registered as %q", name)
	}
	mask := MaskOf(types...)
	for i := range p.Listeners {
		if p.Listeners[i].Name == name {
			p.Listeners[i].Mask |= mask
			p.Dirty = true
			return nil
		}
	}
	p.Listeners = append(p.Listeners, ListenerRef{Name: name, Mask: mask})
	p.Dirty = true
	return nil
}

// RemoveProcessListener unsubscribes a process listener from the types (none means all).
func (e *Engine) RemoveProcessListener(p *Process, name string, types ...EventType) {
	for i := range p.Listeners {
		if p.Listeners[i].Name != name {
			continue
		}
		if len(types) == 0 {
			p.Listeners[i].Mask = 0
		} else {
			p.Listeners[i].Mask = p.Listeners[i].Mask.Without(types...)
		}
		if p.Listeners[i].Mask == 0 {
			p.Listeners = append(p.Listeners[:i], p.Listeners[i+1:]...)
		}
		p.Dirty = true
		return
	}
}

// retryTokenSetDeadEnd lets tokenSet joins fire when a member token ends
// without producing an arc token: each arc token of its sets waiting at a
// tokenSet join is tried again.
func (e *Engine) retryTokenSetDeadEnd(t *NodeToken) {
	if e.backtracking {
		// A token completed by a backtrack is undone, not ended: its
		// member runs again from the backtrack's new token.
		return
	}
	p := t.Process
	for _, m := range t.Sets {
		for _, a := range p.ArcTokens {
			if a.active && a.Arc.To.Join == graph.JoinTokenSet && hasSet(a.Sets, m.Set) {
				e.retry(a)
			}
		}
	}
}
