package kernel

// Harness for the execution-semantics conformance tables
// (conformance_*_test.go). A scenario is a graph built with mkGraph, an
// optional kernel setup and start environment, and steps: each step runs one
// command and states the expected token history (TestProcess notation),
// the expected error and the expected process state afterwards. After every
// step the events of the whole process tree are collected and checked for
// the global invariant of the reference test suite: no node or arc token
// gets *_COMPLETED or *_BACKTRACKED twice.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

type confScenario struct {
	name  string
	nodes []N
	env   map[string]any     // start environment, nil for none
	setup func(*Kernel)      // extra kernel configuration
	start string             // expected history after the start ("" = not checked)
	state string             // expected state after the start ("" = not checked)
	steps []confStep         // commands after the start
	check func(*confHarness) // final checks
	defs  map[string][]N     // other definitions (nested processes), by name
	prep  func(*confHarness) // runs after the start, before the steps
}

type confStep struct {
	desc  string
	do    func(h *confHarness) error
	want  string // expected history after the step ("" = not checked)
	err   error  // expected error (errors.Is), nil = must succeed
	state string // expected process state ("" = not checked)
}

type confHarness struct {
	t      *testing.T
	k      *Kernel
	g      *graph.Graph
	p      *Process
	events []Event // every event of the tree so far, in firing order per process
}

func runScenarios(t *testing.T, scs []confScenario) {
	t.Helper()
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func runScenario(t *testing.T, sc confScenario) *confHarness {
	t.Helper()
	k := testKernel()
	defs := map[string]*graph.Graph{}
	for name, nodes := range sc.defs {
		defs[name] = mkGraph(t, name, nodes...)
	}
	k.Definitions = func(name string) *graph.Graph { return defs[name] }
	if sc.setup != nil {
		sc.setup(k)
	}
	h := &confHarness{t: t, k: k, g: mkGraph(t, sc.name, sc.nodes...)}
	var env *Env
	if sc.env != nil {
		var err error
		if env, err = EnvFromMap(sc.env); err != nil {
			t.Fatal(err)
		}
	}
	p, err := k.Engine(t0).Start(h.g, env)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	h.p = p
	h.collect()
	if sc.start != "" {
		h.history("after start", sc.start)
	}
	if sc.state != "" {
		h.wantState("after start", sc.state)
	}
	if sc.prep != nil {
		sc.prep(h)
	}
	for i, st := range sc.steps {
		label := fmt.Sprintf("step %d (%s)", i+1, st.desc)
		err := st.do(h)
		h.collect()
		switch {
		case st.err == nil && err != nil:
			t.Fatalf("%s: unexpected error: %v\n%s", label, err, h.p.History())
		case st.err != nil && !errors.Is(err, st.err):
			t.Fatalf("%s: error %v, want %v", label, err, st.err)
		}
		if st.want != "" {
			h.history(label, st.want)
		}
		if st.state != "" {
			h.wantState(label, st.state)
		}
	}
	if sc.check != nil {
		sc.check(h)
	}
	return h
}

// collect moves the events of the whole tree into h.events and checks the
// no-double-completion invariant.
func (h *confHarness) collect() {
	h.p.Root().Walk(func(q *Process) {
		h.events = append(h.events, q.EventList()...)
		q.Events = nil
	})
	checkNoDoubleCompletion(h.t, h.events)
}

// checkNoDoubleCompletion is the reference suite's DuplicateEventDetector:
// a token never gets *_COMPLETED twice, nor *_BACKTRACKED twice.
func checkNoDoubleCompletion(t testing.TB, events []Event) {
	t.Helper()
	type key struct {
		typ EventType
		tok any
	}
	seen := map[key]bool{}
	for _, ev := range events {
		var tok any
		switch ev.Type {
		case NodeTokenCompleted, NodeTokenBacktracked:
			tok = ev.NodeToken()
		case ArcTokenCompleted, ArcTokenBacktracked:
			tok = ev.ArcToken()
		default:
			continue
		}
		k := key{ev.Type, tok}
		if seen[k] {
			t.Fatalf("%s fired twice for the same token (%s)", ev.Type, &ev)
		}
		seen[k] = true
	}
}

func (h *confHarness) history(label, spec string) {
	h.t.Helper()
	if err := MatchHistory(h.p, spec); err != nil {
		h.t.Fatalf("%s: %v", label, err)
	}
}

func (h *confHarness) wantState(label, state string) {
	h.t.Helper()
	if h.p.State.String() != state {
		h.t.Fatalf("%s: process state %s, want %s\n%s", label, h.p.State, state, h.p.History())
	}
}

// eventsSince renders the events collected from index i on.
func (h *confHarness) eventsSince(i int) []string {
	var out []string
	for _, ev := range h.events[i:] {
		out = append(out, ev.String())
	}
	return out
}

func (h *confHarness) wantEventsSince(i int, want ...string) {
	h.t.Helper()
	have := h.eventsSince(i)
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		h.t.Fatalf("events:\n  have %s\n  want %s", strings.Join(have, ", "), strings.Join(want, ", "))
	}
}

func (h *confHarness) e() *Engine { return h.k.Engine(t0) }

// find returns the oldest incomplete node token on node in p whose
// memberships include every (set, member) pair given.
func findToken(p *Process, node string, sets ...any) (*NodeToken, error) {
outer:
	for _, nt := range p.NodeTokens {
		if nt.Node.QualifiedName() != node || nt.Complete {
			continue
		}
		for i := 0; i+1 < len(sets); i += 2 {
			m, ok := nt.Membership(sets[i].(string))
			if !ok || m.Member != sets[i+1].(int) {
				continue outer
			}
		}
		return nt, nil
	}
	return nil, fmt.Errorf("no active token on %s %v:\n%s", node, sets, p.History())
}

// Step constructors.

// done completes the oldest active token on node: no arcs given means the
// default arcs.
func doneOn(node string, arcs ...string) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node)
		if err != nil {
			return err
		}
		return h.e().Complete(t, arcs...)
	}
}

// doneNone completes the token on an empty list of arc names.
func doneNone(node string) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node)
		if err != nil {
			return err
		}
		return h.e().Complete(t, []string{}...)
	}
}

// doneMember completes the active token on node that is member m of set.
func doneMember(node, set string, m int, arcs ...string) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node, set, m)
		if err != nil {
			return err
		}
		return h.e().Complete(t, arcs...)
	}
}

func doneAsync(node string, arcs ...string) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node)
		if err != nil {
			return err
		}
		return h.e().CompleteAsync(t, arcs...)
	}
}

func runQueue(h *confHarness) error { return h.e().ExecuteQueuedArcTokens(h.p) }

func cancelProc(h *confHarness) error { return h.e().Cancel(h.p) }

// doneSet completes the token on node with a new token set.
func doneSet(node, arc, set string, n int, env map[string]any, members map[string][]Value) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node)
		if err != nil {
			return err
		}
		var e *Env
		if env != nil {
			if e, err = EnvFromMap(env); err != nil {
				return err
			}
		}
		_, err = h.e().CompleteWithNewTokenSet(t, arc, set, n, e, members)
		return err
	}
}

// setAttr sets an attribute on the oldest active token on node.
func setAttr(node, name string, v Value) func(*confHarness) error {
	return func(h *confHarness) error {
		t, err := findToken(h.p, node)
		if err != nil {
			return err
		}
		t.SetAttr(name, v)
		return nil
	}
}

// seq runs several actions as one step.
func inOrder(fns ...func(*confHarness) error) func(*confHarness) error {
	return func(h *confHarness) error {
		for _, f := range fns {
			if err := f(h); err != nil {
				return err
			}
		}
		return nil
	}
}

// tokenSetNode is a node type that completes its token with a new token set
// of n members on the default arcs.
func tokenSetNode(set string, n int, env map[string]any, members map[string][]Value) NodeTypeFactory {
	return func(*graph.Node) (NodeType, error) {
		return NodeTypeFunc(func(e *Engine, t *NodeToken) error {
			var se *Env
			if env != nil {
				var err error
				if se, err = EnvFromMap(env); err != nil {
					return err
				}
			}
			_, err := e.CompleteWithNewTokenSet(t, "", set, n, se, members)
			return err
		}), nil
	}
}

// js builds the <custom> element of a script node.
func jsCustom(src string) *graph.Element {
	return &graph.Element{Name: "custom", Children: []*graph.Element{{
		Name: "execute", Attrs: []graph.Attr{{Name: "type", Value: "js"}}, Text: src,
	}}}
}

// nested builds the <custom> element of a nested node.
func nestedCustom(def string) *graph.Element {
	return &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "graphName", Text: def}}}
}

func strs(v ...string) []Value {
	out := make([]Value, len(v))
	for i, s := range v {
		out[i] = String(s)
	}
	return out
}
