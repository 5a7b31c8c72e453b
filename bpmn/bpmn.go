// Package bpmn runs BPMN 2.0 processes on Veena's kernel: the node types,
// the inclusive join strategy and the settler that format/bpmn's graphs
// name. Register adds them to a kernel.
//
// How BPMN maps onto the token game:
//   - every flow element is a node; every sequence flow an arc named after
//     its id; a node type decides which arcs its token takes (conditions,
//     defaults, gateways);
//   - a scope (an embedded or event sub-process instance, the instances of
//     a multi-instance activity) is a token set opened by the token of the
//     sub-process or activity; the tokens inside are its members, so joins
//     inside a scope only join tokens of that instance; the owner
//     completes when no member is active any more (the settler);
//   - an event that listens beside an activity (a boundary event), or in a
//     scope (an event sub-process's start), is a token created at its node
//     without an arc; it waits for its message or signal, or is delayed to
//     its timer's due time, and is withdrawn when the activity or scope
//     ends;
//   - variables are the process environment; input mappings, the element
//     of a multi-instance instance and loop counters are local: kept in the
//     token's own environment and handed down the flow.
package bpmn

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/bpmn/timer"
	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// Register adds the BPMN node types, the inclusive join and the settler to
// a kernel.
func Register(k *kernel.Kernel) {
	for typ, f := range map[string]func(n *graph.Node) kernel.NodeType{
		bpmn.TypeStart:        func(n *graph.Node) kernel.NodeType { return &startNode{el: elementOf(n)} },
		bpmn.TypeEnd:          func(n *graph.Node) kernel.NodeType { return &endNode{el: elementOf(n)} },
		bpmn.TypeCatch:        func(n *graph.Node) kernel.NodeType { return newCatchNode(elementOf(n)) },
		bpmn.TypeThrow:        func(n *graph.Node) kernel.NodeType { return &throwNode{el: elementOf(n)} },
		bpmn.TypeBoundary:     func(n *graph.Node) kernel.NodeType { return newBoundaryNode(elementOf(n)) },
		bpmn.TypeTask:         func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindTask} },
		bpmn.TypeUserTask:     func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindWait} },
		bpmn.TypeJob:          func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindWait} },
		bpmn.TypeReceive:      func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindReceive} },
		bpmn.TypeScript:       func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindScript} },
		bpmn.TypeCall:         func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindCall} },
		bpmn.TypeSubProcess:   func(n *graph.Node) kernel.NodeType { return &activity{el: elementOf(n), kind: kindSubProcess} },
		bpmn.TypeEventSub:     func(n *graph.Node) kernel.NodeType { return newEventSubProcess(elementOf(n)) },
		bpmn.TypeExclusive:    func(n *graph.Node) kernel.NodeType { return &gateway{el: elementOf(n)} },
		bpmn.TypeParallel:     func(n *graph.Node) kernel.NodeType { return &gateway{el: elementOf(n)} },
		bpmn.TypeInclusive:    func(n *graph.Node) kernel.NodeType { return &gateway{el: elementOf(n)} },
		bpmn.TypeEventGateway: func(n *graph.Node) kernel.NodeType { return &gateway{el: elementOf(n)} },
	} {
		f := f
		typ := typ
		k.RegisterNodeType(typ, func(n *graph.Node) (kernel.NodeType, error) {
			if _, ok := n.Props.(*bpmn.Element); !ok {
				return nil, fmt.Errorf("node %s of type %s has no BPMN element (load it with format/bpmn)", n.Name, typ)
			}
			return f(n), nil
		})
	}
	k.RegisterJoinStrategy(bpmn.JoinInclusive, inclusiveJoin{})
	k.RegisterSettler(settle)
}

func elementOf(n *graph.Node) *bpmn.Element {
	el, _ := n.Props.(*bpmn.Element)
	return el
}

func propsOf(g *graph.Graph) *bpmn.Props {
	p, _ := g.Props.(*bpmn.Props)
	return p
}

// Error codes of failures that become incidents (API.md "Jobs").
const (
	CodeConditionFailed = "condition_failed"
	CodeNoRoute         = "no_route"
	CodeUncaughtError   = "uncaught_error"
)

// Failure is a step that cannot go on: an expression that fails, a
// gateway with no route, an error nobody catches. The command fails with
// it and nothing changes.
type Failure struct {
	Code    string
	Node    string
	Message string
	Err     error
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %s", f.Node, f.Message) }
func (f *Failure) Unwrap() error { return f.Err }

// incident is a failure on its way to become an incident on its token
// (see guard).
type incident struct {
	t    *kernel.NodeToken
	code string
	msg  string
}

// fail stops the node type's work on token t: an incident opens on t (an
// operator fixes the variables and resolves it, which runs the step
// again), and the token waits. Nothing the failing step would have done
// after this point happens.
func fail(e *kernel.Engine, t *kernel.NodeToken, code, format string, args ...any) {
	panic(&incident{t: t, code: code, msg: fmt.Sprintf(format, args...)})
}

// guard runs one entry point of a node type (Execute, a completion, the
// settler), turning a failure (fail) into an incident on its token. A
// token that cannot hold an incident (it is not active) fails the command
// instead.
func guard(e *kernel.Engine, fn func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		inc, ok := r.(*incident)
		if !ok {
			panic(r)
		}
		t := inc.t
		if t.Complete || !t.Active() || t.Process.State != kernel.Executing {
			err = &kernel.Error{Code: inc.code, Msg: fmt.Sprintf("%s %s: %s", t.Node.Kind, t.Node.Name, inc.msg),
				Err: &Failure{Code: inc.code, Node: t.Node.Name, Message: inc.msg}}
			return
		}
		err = e.RaiseIncident(t, kernel.IncidentSpec{Kind: inc.code, Message: inc.msg})
	}()
	fn()
	return nil
}

// ---- variables

// vars is what an expression at a token reads: its local variables (the
// token's own environment, handed down the flow) over the process's.
type vars struct {
	t     *kernel.NodeToken
	extra map[string]any
}

func (v vars) Get(name string) (any, bool) {
	if x, ok := v.extra[name]; ok {
		return x, true
	}
	val, ok := v.t.FullEnv().Get(name)
	if !ok {
		return nil, false
	}
	return fromValue(val), true
}

func (v vars) Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range v.t.Env.Names() {
		seen[n] = true
		out = append(out, n)
	}
	for _, n := range v.t.Process.Env.Names() {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for n := range v.extra {
		if !seen[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func fromValue(v kernel.Value) any {
	if v.Kind() == kernel.KindDate {
		d, _ := v.DateValue()
		return d
	}
	return expr.Normalize(v.Any())
}

// toValue converts an expression's value into an attribute value.
func toValue(x any) (kernel.Value, error) {
	switch v := x.(type) {
	case nil:
		return kernel.Value{}, nil
	case expr.Duration:
		return kernel.String(v.String()), nil
	case []any, map[string]any:
		return kernel.ValueOf(expr.ToJSON(v))
	}
	return kernel.ValueOf(x)
}

// eval evaluates an expression at a token; a static value is its text.
func eval(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, extra map[string]any) (any, error) {
	if x == nil {
		return nil, nil
	}
	if x.Program == nil {
		return x.Text, nil
	}
	var vs expr.Vars = tokenVars{t}
	if extra != nil {
		vs = vars{t, extra}
	}
	return x.Program.Eval(expr.Env{Vars: vs, Now: e.Now()})
}

// tokenVars are the variables at a token with no others over them: vars
// as a single pointer, which an interface holds without an allocation.
type tokenVars struct{ t *kernel.NodeToken }

func (v tokenVars) Get(name string) (any, bool) { return vars{t: v.t}.Get(name) }
func (v tokenVars) Names() []string             { return vars{t: v.t}.Names() }

// mustEval is eval failing the step with condition_failed.
func mustEval(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, what string, extra map[string]any) any {
	v, err := eval(e, t, x, extra)
	if err != nil {
		fail(e, t, CodeConditionFailed, "%s (line %d): %v", what, x.Pos.Line, err)
	}
	return v
}

// condition evaluates a condition: it must give a boolean.
func condition(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, what string, extra map[string]any) bool {
	b, err := truth(e, t, x, extra)
	if err != nil {
		fail(e, t, CodeConditionFailed, "%s (line %d): %v", what, x.Pos.Line, err)
	}
	return b
}

// truth is condition returning its failure (of the evaluation, or a value
// that is not a boolean) for the caller to describe.
func truth(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, extra map[string]any) (bool, error) {
	v, err := eval(e, t, x, extra)
	if err != nil {
		return false, err
	}
	return expr.Truth(x.Program, v)
}

// text evaluates an expression to a string (static text as is).
func text(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, what string) string {
	if x != nil && x.Program == nil {
		return x.Text // static text (a job type, a queue): no evaluation
	}
	v := mustEval(e, t, x, what, nil)
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case int64:
		return strconv.FormatInt(s, 10)
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64)
	case time.Time:
		return s.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// isLocal reports whether writes of a token stay in its own environment:
// a variable it already holds locally, or any variable of a
// multi-instance instance (a member keeps its own).
func isLocal(t *kernel.NodeToken, name string) bool {
	if t.Env.Has(name) {
		return true
	}
	return inInstance(t)
}

// inInstance reports whether the token runs inside a multi-instance
// instance.
func inInstance(t *kernel.NodeToken) bool {
	for _, m := range t.Sets {
		if strings.HasPrefix(m.Set.Name, miPrefix) {
			return true
		}
	}
	return false
}

// setVar writes a variable where BPMN puts it: locally (see isLocal), else
// in the process. A dotted name sets a field of a context.
func setVar(e *kernel.Engine, t *kernel.NodeToken, name string, x any) {
	if i := strings.IndexByte(name, '.'); i > 0 {
		root, rest := name[:i], name[i+1:]
		cur, _ := vars{t: t}.Get(root)
		m, ok := cur.(map[string]any)
		if !ok {
			m = map[string]any{}
		} else {
			m = copyMap(m)
		}
		setPath(m, rest, x)
		setVar(e, t, root, m)
		return
	}
	v, err := toValue(x)
	if err != nil {
		fail(e, t, CodeConditionFailed, "variable %s: %v", name, err)
	}
	if isLocal(t, name) {
		if v.IsNone() {
			t.RemoveAttr(name)
		} else {
			t.SetAttr(name, v)
		}
		return
	}
	if v.IsNone() {
		t.Process.Env.Remove(name)
	} else {
		t.Process.Env.Set(name, v)
	}
	t.Process.Dirty = true
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func setPath(m map[string]any, path string, x any) {
	if i := strings.IndexByte(path, '.'); i > 0 {
		sub, ok := m[path[:i]].(map[string]any)
		if !ok {
			sub = map[string]any{}
		} else {
			sub = copyMap(sub)
		}
		setPath(sub, path[i+1:], x)
		m[path[:i]] = sub
		return
	}
	m[path] = x
}

// setLocal writes a variable into the token's own environment.
func setLocal(e *kernel.Engine, t *kernel.NodeToken, name string, x any) {
	v, err := toValue(x)
	if err != nil {
		fail(e, t, CodeConditionFailed, "variable %s: %v", name, err)
	}
	if v.IsNone() {
		t.RemoveAttr(name)
		return
	}
	t.SetAttr(name, v)
}

// ---- tokens and scopes

// scopeOf is the innermost token set of a token (its scope instance), nil
// at process level.
func scopeOf(ms []kernel.Membership) *kernel.TokenSet {
	var best *kernel.TokenSet
	for _, m := range ms {
		if best == nil || m.Set.Level > best.Level {
			best = m.Set
		}
	}
	return best
}

func hasSet(ms []kernel.Membership, s *kernel.TokenSet) bool {
	for _, m := range ms {
		if m.Set == s {
			return true
		}
	}
	return false
}

func tokenID(t *kernel.NodeToken) string { return strconv.Itoa(t.ID) }

func tokenByID(p *kernel.Process, id string) *kernel.NodeToken {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(p.NodeTokens) {
		return nil
	}
	return p.NodeTokens[i]
}

func setNotes(e *kernel.Engine, t *kernel.NodeToken, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		e.SetNote(t, kv[i], kv[i+1])
	}
}

// create makes a token at node id of the token's process.
func create(e *kernel.Engine, p *kernel.Process, id string, sets []kernel.Membership, env *kernel.Env, notes map[string]string) *kernel.NodeToken {
	n := p.Graph.Node(id)
	if n == nil {
		e.Fail(&kernel.Error{Code: kernel.ErrExecutionFailed.Code, Msg: fmt.Sprintf("no node %q in %s", id, p.Graph)})
	}
	t, err := e.CreateToken(p, n, sets, env, notes)
	if err != nil {
		e.Fail(err)
	}
	return t
}

func complete(e *kernel.Engine, t *kernel.NodeToken, names ...string) {
	if t.Complete {
		return
	}
	if names == nil {
		names = []string{}
	}
	if err := e.CompleteDirect(t, names...); err != nil {
		e.Fail(err)
	}
}

func withdraw(e *kernel.Engine, t *kernel.NodeToken) {
	if t.Complete || !t.Active() {
		return
	}
	if err := e.Withdraw(t); err != nil {
		e.Fail(err)
	}
}

var errNoRoute = errors.New("no route")

// StartEvent is a start event of a process that something other than a
// plain start triggers: a message, a signal or a timer.
type StartEvent struct {
	Kind string // message, signal or timer
	Name string // the message or signal name
	Node string // the start event's id
}

// StartEvents lists a definition's message, signal and timer start events
// (none for a graph that is not BPMN).
func StartEvents(g *graph.Graph) []StartEvent {
	p := propsOf(g)
	if p == nil {
		return nil
	}
	var out []StartEvent
	for _, el := range p.StartEvents {
		out = append(out, StartEvent{Kind: string(el.Event.Kind), Name: el.Event.Name, Node: el.ID})
	}
	return out
}

// StartTimer reads the timer of a timer start event of g: its expression
// is evaluated with no variables (as when the definition is deployed), at
// now.
func StartTimer(g *graph.Graph, node string, now time.Time) (*timer.Timer, error) {
	n := g.Node(node)
	if n == nil {
		return nil, fmt.Errorf("definition %s has no node %s", g.Name, node)
	}
	el := elementOf(n)
	if el == nil || el.Event == nil || el.Event.Kind != bpmn.EventTimer || el.Scope != nil {
		return nil, fmt.Errorf("%s is not a timer start event of %s", node, g.Name)
	}
	ev := el.Event
	var text string
	if ev.Timer != nil && ev.Timer.Program != nil {
		v, err := ev.Timer.Program.Eval(expr.Env{Vars: noVars{}, Now: now})
		if err != nil {
			return nil, fmt.Errorf("timer %q of %s (line %d): %w", ev.Timer.Text, node, ev.Timer.Pos.Line, err)
		}
		switch x := v.(type) {
		case string:
			text = x
		case time.Time:
			return &timer.Timer{Kind: timer.Date, At: x}, nil
		case interface{ String() string }:
			text = x.String()
		default:
			return nil, fmt.Errorf("timer %q of %s gives a %T, not a date, duration or cycle", ev.Timer.Text, node, v)
		}
	} else if ev.Timer != nil {
		text = ev.Timer.Text
	}
	tm, err := timer.Parse(timer.Kind(ev.TimerKind), text)
	if err != nil {
		return nil, fmt.Errorf("timer %q of %s: %w", text, node, err)
	}
	return tm, nil
}

// noVars are the variables of an expression evaluated outside any
// process: none.
type noVars struct{}

func (noVars) Get(string) (any, bool) { return nil, false }
func (noVars) Names() []string        { return nil }

// FirstStart is when a timer start event armed at now fires first; zero if
// it never fires (a cycle of no repetitions).
func FirstStart(tm *timer.Timer, now time.Time) time.Time {
	if tm.Kind == timer.Cycle && tm.Repeat == 0 {
		return time.Time{}
	}
	return tm.First(now)
}

// NextStart is when a timer start event that fired for the fired-th time
// at its due time fires next; zero once it is done. A cycle fired late
// (its engines were down) does not catch up on the times it missed: it
// fires next one interval after now.
func NextStart(tm *timer.Timer, due time.Time, fired int, now time.Time) time.Time {
	if tm.Kind != timer.Cycle || (tm.Repeat >= 0 && fired >= tm.Repeat) {
		return time.Time{}
	}
	next, ok := tm.Next(due)
	if !ok {
		return time.Time{}
	}
	if !next.After(now) {
		next, _ = tm.Next(now)
	}
	return next
}
