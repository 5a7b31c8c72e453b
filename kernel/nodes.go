package kernel

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/joinlang"
	"github.com/veena-wf/veena/rubric"
)

// NodeType is what a node does when a token is accepted there. Execute may
// complete the token (e.Complete) or leave it waiting for a command.
type NodeType interface {
	Execute(e *Engine, t *NodeToken) error
}

// Guarder is implemented by node types with their own guard; the default
// guard evaluates the node's Rubric program (see Engine.EvalGuard).
type Guarder interface {
	Guard(e *Engine, t *NodeToken) (GuardResult, error)
}

// Backtracker is implemented by node types that take part in backtracking:
// IsBacktrackable may refuse it, Backtrack undoes the node's effects.
type Backtracker interface {
	IsBacktrackable(e *Engine, t *NodeToken) bool
	Backtrack(e *Engine, t *NodeToken) error
}

// NodeTypeFactory makes the behaviour of one node of a graph.
type NodeTypeFactory func(n *graph.Node) (NodeType, error)

// NodeTypeFunc adapts a function to a NodeType.
type NodeTypeFunc func(e *Engine, t *NodeToken) error

// Execute calls f.
func (f NodeTypeFunc) Execute(e *Engine, t *NodeToken) error { return f(e, t) }

// RegisterNodeType makes a node type available to definitions.
func (k *Kernel) RegisterNodeType(name string, f NodeTypeFactory) { k.nodeTypes[name] = f }

// RegisterNodeStruct registers a node type whose properties live in a
// struct: proto is a pointer to a struct implementing NodeType. Each node of
// that type gets its own copy with the node's <custom> content bound onto it
// (see graph.Element.Bind).
func (k *Kernel) RegisterNodeStruct(name string, proto NodeType) {
	typ := reflect.TypeOf(proto)
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("kernel: RegisterNodeStruct(%q): want a pointer to a struct, have %T", name, proto))
	}
	k.RegisterNodeType(name, func(n *graph.Node) (NodeType, error) {
		v := reflect.New(typ.Elem())
		v.Elem().Set(reflect.ValueOf(proto).Elem())
		if n.Custom != nil {
			if err := n.Custom.Bind(v.Interface()); err != nil {
				return nil, err
			}
		}
		return v.Interface().(NodeType), nil
	})
}

// HasNodeType reports whether a node type is registered.
func (k *Kernel) HasNodeType(name string) bool {
	_, ok := k.nodeTypes[name]
	return ok
}

// graphRuntime is what the kernel learns about a graph while running it:
// how many events and tokens its last process made by its end (or, until
// one ends, the most a start made), to size the next process's lists at
// once instead of growing them.
type graphRuntime struct {
	events, nodeTokens, arcTokens atomic.Int64
	// names is how many of those events had a list of named exit arcs
	// (Process.eventNames): a BPMN node's completion names its flows.
	names atomic.Int64
	// commandEvents is the most events a command fired on a process whose
	// events its caller had taken (Process.Events nil), up to
	// maxCommandEvents: the size of the next such command's list.
	commandEvents atomic.Int64
	// effects is the most effects a process's list held before its
	// caller took them, up to maxEffectsHint: the size of the next list.
	effects atomic.Int64
}

// maxEffectsHint bounds the effects hint, as maxCommandEvents does events.
const maxEffectsHint = 64

func (g *graphRuntime) effectHint() int { return int(min(max(g.effects.Load(), 1), maxEffectsHint)) }

// maxCommandEvents bounds commandEvents, so that one long command does
// not make every later one allocate for as many events.
const maxCommandEvents = 32

func (g *graphRuntime) commandEventHint() int { return int(max(g.commandEvents.Load(), 8)) }

func (g *graphRuntime) eventHint() int { return int(min(max(g.events.Load(), 4), 1<<16)) }
func (g *graphRuntime) nodeHint() int  { return int(min(max(g.nodeTokens.Load(), 1), 1<<12)) }
func (g *graphRuntime) arcHint() int   { return int(min(g.arcTokens.Load(), 1<<12)) }
func (g *graphRuntime) namesHint() int { return int(min(max(g.names.Load(), 4), 1<<16)) }

// observe notes the lists of a process at the end of its start: a process
// that waits has more to come, so this only raises the hints.
func (g *graphRuntime) observe(p *Process) {
	raise(&g.events, len(p.Events))
	raise(&g.names, len(p.eventNames))
	raise(&g.nodeTokens, len(p.NodeTokens))
	raise(&g.arcTokens, len(p.ArcTokens))
}

// observeEnd notes the lists of a process that completed: what the next
// one will likely need in all. Events its caller took along the way (the
// list holds fewer than it fired) do not tell how many it fired in all:
// the events hint then stays as its start left it.
func (g *graphRuntime) observeEnd(p *Process) {
	if int64(len(p.Events)) == p.EventSeq {
		g.events.Store(int64(len(p.Events)))
		g.names.Store(int64(len(p.eventNames)))
	}
	g.nodeTokens.Store(int64(len(p.NodeTokens)))
	g.arcTokens.Store(int64(len(p.ArcTokens)))
}

func raise(v *atomic.Int64, n int) {
	if int64(n) > v.Load() {
		v.Store(int64(n))
	}
}

// nodeRuntime is a node's prepared behaviour.
type nodeRuntime struct {
	graph     *graphRuntime
	typ       NodeType
	guarder   Guarder
	completer CompleteHandler
	program   *rubric.Program
	join      JoinStrategy
	lang      *joinlang.Program
}

func (rt *nodeRuntime) guard(e *Engine, t *NodeToken) (GuardResult, error) {
	if rt.guarder != nil {
		return rt.guarder.Guard(e, t)
	}
	if rt.program == nil {
		return GuardResult{Action: Accept}, nil
	}
	return e.evalGuard(rt.program, t)
}

// runtime returns the prepared behaviour of a node.
func (e *Engine) runtime(n *graph.Node) *nodeRuntime {
	if rt, ok := n.Runtime.(*nodeRuntime); ok {
		return rt
	}
	e.unprepared(n)
	return nil
}

// unprepared fails the command on a node of a graph never prepared.
func (e *Engine) unprepared(n *graph.Node) {
	e.Fail(refuse(ErrDefinitionNotPrepared, "node %s is not prepared", n.QualifiedName()))
}

// Prepare checks a graph against the kernel and compiles what its nodes
// need: node types, guards, join strategies and JoinLang programs. Problems
// are reported as a *graph.LoadError naming the node's position. A graph is
// prepared once; preparing it again does nothing.
func (k *Kernel) Prepare(g *graph.Graph) error {
	k.prepMu.Lock()
	defer k.prepMu.Unlock()
	if len(g.Nodes) > 0 {
		if _, ok := g.Nodes[0].Runtime.(*nodeRuntime); ok {
			return nil
		}
	}
	lerr := &graph.LoadError{File: g.File}
	rts := make([]*nodeRuntime, len(g.Nodes))
	gr := &graphRuntime{}
	for i, n := range g.Nodes {
		rt, err := k.prepareNode(n)
		if err != nil {
			pos := n.Pos
			var pe *graph.PosError
			if errors.As(err, &pe) {
				pos = pe.Pos
			}
			lerr.Add(pos, "node %s: %v", n.QualifiedName(), err)
			continue
		}
		rt.graph = gr
		rts[i] = rt
	}
	if err := lerr.OrNil(); err != nil {
		return err
	}
	for i, n := range g.Nodes {
		n.Runtime = rts[i]
	}
	return nil
}

func (k *Kernel) prepareNode(n *graph.Node) (*nodeRuntime, error) {
	rt := &nodeRuntime{}
	f, ok := k.nodeTypes[n.Type]
	if !ok {
		return nil, fmt.Errorf("unknown node type %q", n.Type)
	}
	typ, err := f(n)
	if err != nil {
		return nil, fmt.Errorf("type %s: %w", n.Type, err)
	}
	rt.typ = typ
	if g, ok := typ.(Guarder); ok {
		rt.guarder = g
	}
	if c, ok := typ.(CompleteHandler); ok {
		rt.completer = c
	}
	if strings.TrimSpace(n.Guard) != "" {
		prog, err := rubric.CompileGuard(n.Guard)
		if err != nil {
			return nil, fmt.Errorf("guard: %w", err)
		}
		rt.program = prog
	}
	switch n.Join {
	case graph.JoinOr, "":
		rt.join = orJoin{}
	case graph.JoinAnd:
		rt.join = andJoin{}
	case graph.JoinLabelAnd:
		rt.join = andJoin{label: true}
	case graph.JoinFirst:
		rt.join = firstJoin{}
	case graph.JoinTokenSet:
		rt.join = tokenSetJoin{}
	case graph.JoinTokenSetOr:
		rt.join = tokenSetJoin{or: true}
	case graph.JoinClass:
		s, ok := k.joins[n.JoinParam]
		if !ok {
			return nil, fmt.Errorf("join strategy %q is not registered", n.JoinParam)
		}
		rt.join = s
	case graph.JoinLang:
		lang, err := joinlang.Compile(n.JoinParam)
		if err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		rt.lang = lang
		rt.join = joinLangJoin{lang}
	default:
		return nil, fmt.Errorf("unknown join type %q", n.Join)
	}
	return rt, nil
}

// EvalGuard evaluates the node's Rubric guard for t (blank means Accept).
func (e *Engine) EvalGuard(t *NodeToken) (GuardResult, error) {
	rt := e.runtime(t.Node)
	return e.evalGuard(rt.program, t)
}

func (e *Engine) evalGuard(p *rubric.Program, t *NodeToken) (GuardResult, error) {
	if p == nil {
		return GuardResult{Action: Accept}, nil
	}
	r, err := p.EvalGuard(rubricEnv{e, t})
	if err != nil {
		return GuardResult{}, err
	}
	switch r.Action {
	case rubric.Accept:
		return GuardResult{Action: Accept}, nil
	case rubric.Discard:
		return GuardResult{Action: Discard}, nil
	case rubric.Skip:
		return GuardResult{Action: Skip, ArcName: r.ArcName}, nil
	case rubric.Delay:
		return GuardResult{Action: Delay, Until: r.Until}, nil
	}
	return GuardResult{}, fmt.Errorf("guard gave unknown action %v", r.Action)
}

// rubricEnv resolves Rubric names for a token: registered functions first,
// then the token's full environment.
type rubricEnv struct {
	e *Engine
	t *NodeToken
}

var errUnknownName = errors.New("not a registered function nor an attribute")

// unset is the error of a guard name that is neither a registered function
// nor an attribute: it names what to set, and where.
func unset(name, kind, example string) error { return unsetError{name, kind, example} }

type unsetError struct{ name, kind, example string }

func (e unsetError) Error() string {
	return fmt.Sprintf("not set: there is no attribute %q on the token or the process, nor a registered %s of that name; "+
		"set %s on the process (in its environment at start, or by changing the process environment, e.g. %s=%s) or on the token",
		e.name, e.kind, e.name, e.name, e.example)
}

func (e unsetError) Unwrap() error { return errUnknownName }

// mistyped is the error of an attribute a guard reads as another type.
func mistyped(v Value, want string) error {
	shown := v.String()
	if b, err := v.MarshalJSON(); err == nil {
		shown = string(b)
	}
	return fmt.Errorf("the attribute is %s %s, not %s", article(v.Kind().String()), shown, want)
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

func (r rubricEnv) Predicate(name string) (bool, error) {
	if f, ok := r.e.k.predicates[name]; ok {
		return f(r.e, r.t)
	}
	v, ok := r.t.FullEnv().Get(name)
	if !ok {
		return false, unset(name, "predicate", "true")
	}
	if v.Kind() != KindBool {
		return false, mistyped(v, "a boolean (true or false)")
	}
	return v.BoolValue(), nil
}

func (r rubricEnv) DateFunction(name string) (time.Time, error) {
	if f, ok := r.e.k.dateFuncs[name]; ok {
		return f(r.e, r.t)
	}
	v, ok := r.t.FullEnv().Get(name)
	if !ok {
		return time.Time{}, unset(name, "date function", `{"date": "2026-05-01T08:00:00Z"}`)
	}
	d, ok := v.DateValue()
	if !ok {
		return time.Time{}, mistyped(v, `a date ({"date": "2026-05-01T08:00:00Z"})`)
	}
	return d, nil
}

func (r rubricEnv) StringFunction(name string) (string, error) {
	if f, ok := r.e.k.stringFuncs[name]; ok {
		return f(r.e, r.t)
	}
	v, ok := r.t.FullEnv().Get(name)
	if !ok {
		return "", unset(name, "string function", "text")
	}
	if v.Kind() != KindString {
		return "", mistyped(v, "a string")
	}
	return v.Str(), nil
}

func (k *Kernel) registerBuiltins() {
	k.RegisterNodeType(graph.TypeNode, func(*graph.Node) (NodeType, error) { return plainNode{}, nil })
	k.RegisterNodeType(graph.TypeWait, newWaitNode)
	k.RegisterNodeType(graph.TypeNested, newNestedNode)
	k.RegisterNodeType(graph.TypeScript, newScriptNode)
	k.RegisterDateFunction("now", func(e *Engine, _ *NodeToken) (time.Time, error) { return e.now, nil })
}

// nestedNode starts a process of another definition and completes its token
// when that process completes.
type nestedNode struct{ graphName string }

func newNestedNode(n *graph.Node) (NodeType, error) {
	name := strings.TrimSpace(n.Custom.Flatten()["graphName"])
	if name == "" {
		return nil, errors.New(`a nested node needs <custom><graphName>…</graphName></custom> (or <graph name="…"/>)`)
	}
	return nestedNode{name}, nil
}

func (nn nestedNode) Execute(e *Engine, t *NodeToken) error {
	if e.k.Definitions == nil {
		return refuse(ErrDefinitionNotFound, "nested definition %q: no definitions are available", nn.graphName)
	}
	g := e.k.Definitions(nn.graphName)
	if g == nil {
		return refuse(ErrDefinitionNotFound, "nested definition %q is not loaded", nn.graphName)
	}
	if err := e.k.Prepare(g); err != nil {
		return err
	}
	if len(g.StartNodes()) == 0 {
		return refuse(ErrNoStartNodes, "nested definition %s has no start nodes", g)
	}
	e.checkNesting(t.Process, g.Name)
	child := e.newProcess(g, t.FullEnv().Copy(), t.Process, t)
	e.startProcess(child)
	return nil
}

// plainNode is the node type "node": it completes its token on the default
// arcs at once.
type plainNode struct{}

func (plainNode) Execute(e *Engine, t *NodeToken) error {
	if t.Complete { // a listener completed it already
		return nil
	}
	return e.Complete(t)
}

// TakesAtOnce: the default arcs, and any other a Skip guard may name.
func (plainNode) TakesAtOnce(n *graph.Node, a *graph.Arc) bool {
	return a.Name == "" || strings.TrimSpace(n.Guard) != ""
}

// Immediate is implemented by node types that complete a token as soon as
// it is accepted, without waiting for a command: TakesAtOnce reports
// whether a node of the type may leave on arc a that way. The check for
// cycles without a wait state (RunawayWarnings) relies on it; node types
// that do not implement it are taken to wait.
type Immediate interface {
	TakesAtOnce(n *graph.Node, a *graph.Arc) bool
}

// RunawayWarnings describes the cycles of g that a token can go round
// without reaching a wait state (see graph.RunawayCycles), for a graph the
// kernel has prepared; nil if it is not prepared.
func (k *Kernel) RunawayWarnings(g *graph.Graph) []graph.Problem {
	if err := k.Prepare(g); err != nil {
		return nil
	}
	return graph.RunawayWarnings(g, func(n *graph.Node, a *graph.Arc) bool {
		rt, ok := n.Runtime.(*nodeRuntime)
		if !ok {
			return false
		}
		im, ok := rt.typ.(Immediate)
		return ok && im.TakesAtOnce(n, a)
	})
}
