package kernel

// Conformance: execution listeners and event actions (sarasvati.md §12),
// script nodes (§2, §3) and process states (§4.4).

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type evRecorder struct{ log []string }

func (r *evRecorder) listener(prefix string, actions func(*Event) EventActions) Listener {
	return ListenerFunc(func(e *Engine, ev *Event) EventActions {
		r.log = append(r.log, prefix+" "+ev.String())
		if actions != nil {
			return actions(ev)
		}
		return 0
	})
}

func twoWait() []N {
	return []N{{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, {Name: "B", Type: "wait"}}
}

func TestConformanceListenerLevels(t *testing.T) {
	rec := &evRecorder{}
	h := runScenario(t, confScenario{name: "levels", nodes: twoWait(),
		setup: func(k *Kernel) {
			k.AddGlobalListener("g", rec.listener("global", nil), NodeTokenAccepted)
			k.AddDefinitionListener("levels", "d", rec.listener("definition", nil), NodeTokenAccepted)
			k.AddDefinitionListener("other", "o", rec.listener("other-definition", nil))
			k.RegisterListener("proc", rec.listener("process", nil))
		},
		prep: func(h *confHarness) {
			if err := h.e().AddProcessListener(h.p, "proc", NodeTokenAccepted); err != nil {
				h.t.Fatal(err)
			}
			if err := h.e().AddProcessListener(h.p, "unregistered"); !errors.Is(err, ErrInvalidArgument) {
				h.t.Fatalf("adding an unregistered listener: %v", err)
			}
		},
		steps: []confStep{{desc: "A", do: doneOn("A")}},
	})
	// Start: only global and definition listeners existed for A's acceptance.
	want := []string{
		"definition NODE_TOKEN_ACCEPTED A", "global NODE_TOKEN_ACCEPTED A",
		"definition NODE_TOKEN_ACCEPTED B", "process NODE_TOKEN_ACCEPTED B", "global NODE_TOKEN_ACCEPTED B",
	}
	if strings.Join(rec.log, "|") != strings.Join(want, "|") {
		t.Fatalf("notifications\n have %v\n want %v", rec.log, want)
	}
	_ = h
}

func TestConformanceListenerMasks(t *testing.T) {
	if MaskOf() != AllEvents {
		t.Fatal("no types must mean all events")
	}
	m := MaskOf(NodeTokenAccepted, NodeTokenCompleted)
	if m.Without(NodeTokenAccepted) != MaskOf(NodeTokenCompleted) || m.Without(NodeTokenAccepted).Has(NodeTokenAccepted) {
		t.Fatal("removing a type must clear its bit")
	}
	if AllEvents.Without(ProcessCreated).Has(ProcessCreated) || !AllEvents.Without(ProcessCreated).Has(ProcessStarted) {
		t.Fatal("Without on all events")
	}
	for i, typ := range EventTypes {
		if uint64(typ) != 1<<i {
			t.Fatalf("event %s has bit %d, want 1<<%d", typ, typ, i)
		}
	}

	rec := &evRecorder{}
	k := testKernel()
	k.AddGlobalListener("g", rec.listener("g", nil), NodeTokenAccepted)
	k.AddGlobalListener("g", rec.listener("g", nil), NodeTokenCompleted) // adds the type to the mask
	g := mkGraph(t, "masks", twoWait()...)
	p := start(t, k, g, nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	k.RemoveGlobalListener("g", NodeTokenAccepted)
	complete(t, k, p, "A")
	want := "g NODE_TOKEN_ACCEPTED A|g NODE_TOKEN_COMPLETED A"
	if strings.Join(rec.log, "|") != want {
		t.Fatalf("have %v, want %s", rec.log, want)
	}
	k.RemoveGlobalListener("g", NodeTokenCompleted) // mask 0: the listener goes away
	if len(k.global) != 0 {
		t.Fatalf("listener with mask 0 still registered: %v", k.global)
	}
	complete(t, k, p, "B")
	if strings.Join(rec.log, "|") != want {
		t.Fatalf("a removed listener was notified: %v", rec.log)
	}

	// Process listeners: removing types, then all of them.
	k2 := testKernel()
	rec2 := &evRecorder{}
	k2.RegisterListener("r", rec2.listener("r", nil))
	p2 := start(t, k2, mkGraph(t, "pmask", twoWait()...), nil)
	defer func() { checkNoDoubleCompletion(t, p2.EventList()) }()
	e := k2.Engine(t0)
	if err := e.AddProcessListener(p2, "r", NodeTokenAccepted, NodeTokenCompleted); err != nil {
		t.Fatal(err)
	}
	e.RemoveProcessListener(p2, "r", NodeTokenCompleted)
	if len(p2.Listeners) != 1 || p2.Listeners[0].Mask != MaskOf(NodeTokenAccepted) {
		t.Fatalf("process listeners %v", p2.Listeners)
	}
	complete(t, k2, p2, "A")
	if strings.Join(rec2.log, "|") != "r NODE_TOKEN_ACCEPTED B" {
		t.Fatalf("have %v", rec2.log)
	}
	e.RemoveProcessListener(p2, "r", NodeTokenAccepted)
	if len(p2.Listeners) != 0 {
		t.Fatalf("process listener with mask 0 kept: %v", p2.Listeners)
	}
	// Definition listeners: removing all types removes it.
	k2.AddDefinitionListener("pmask", "d", rec2.listener("d", nil))
	k2.RemoveDefinitionListener("pmask", "d")
	if len(k2.perGraph["pmask"]) != 0 {
		t.Fatal("definition listener kept")
	}
}

func TestConformanceEventActions(t *testing.T) {
	delayB := func(k *Kernel) {
		k.AddGlobalListener("delay", ListenerFunc(func(e *Engine, ev *Event) EventActions {
			if ev.NodeToken().Node.Name == "B" {
				return DelayNodeExecution
			}
			return 0
		}), NodeTokenAccepted)
	}
	pendingComplete := func(k *Kernel) {
		k.AddGlobalListener("hold", ListenerFunc(func(*Engine, *Event) EventActions { return DelayFinalizeComplete }), ProcessPendingComplete)
	}
	pendingCancel := func(k *Kernel) {
		k.AddGlobalListener("hold", ListenerFunc(func(*Engine, *Event) EventActions { return DelayFinalizeCancel }), ProcessPendingCancel)
	}
	linear := []N{{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, {Name: "B", Arcs: []string{"C"}}, {Name: "C"}}
	runScenarios(t, []confScenario{
		{
			name: "delay node execution", nodes: linear, setup: delayB,
			steps: []confStep{
				{desc: "A: B accepted, not executed", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 B I F]`, state: "executing"},
				{desc: "execute B", do: func(h *confHarness) error {
					for _, ev := range h.events {
						if ev.Type == NodeTokenExecuted && ev.NodeToken().Node.Name == "B" {
							h.t.Fatal("B executed although a listener delayed it")
						}
					}
					b, _ := findToken(h.p, "B")
					return h.e().ExecuteNode(b)
				}, want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 C C F]`, state: "completed"},
			},
		},
		{
			name: "delay finalize complete", nodes: linear, setup: pendingComplete,
			steps: []confStep{
				{desc: "A", do: doneOn("A"), state: "pending_completion"},
				{desc: "complete a token of a pending process", do: func(h *confHarness) error { return h.e().Complete(h.p.NodeTokens[0]) }, err: ErrProcessNotExecuting},
				{desc: "cancel a pending process", do: cancelProc, err: ErrProcessNotExecuting},
				{desc: "finalize", do: func(h *confHarness) error { return h.e().FinalizeComplete(h.p) }, state: "completed"},
				{desc: "finalize again", do: func(h *confHarness) error { return h.e().FinalizeComplete(h.p) }, err: ErrInvalidArgument},
			},
		},
		{
			name: "delay finalize cancel", nodes: linear, setup: pendingCancel,
			steps: []confStep{
				{desc: "cancel", do: cancelProc, state: "pending_cancel"},
				{desc: "finalize complete is refused", do: func(h *confHarness) error { return h.e().FinalizeComplete(h.p) }, err: ErrInvalidArgument},
				{desc: "finalize", do: func(h *confHarness) error { return h.e().FinalizeCancel(h.p) }, state: "canceled"},
				{desc: "finalize again", do: func(h *confHarness) error { return h.e().FinalizeCancel(h.p) }, err: ErrInvalidArgument},
			},
		},
	})
}

// TestConformanceProcessStates: created → executing → pending_completion
// → completed, and executing → pending_cancel → canceled, as seen by a
// listener at each process event.
func TestConformanceProcessStates(t *testing.T) {
	var seen []string
	setup := func(k *Kernel) {
		k.AddGlobalListener("states", ListenerFunc(func(e *Engine, ev *Event) EventActions {
			seen = append(seen, ev.Type.String()+"="+ev.Process.State.String())
			return 0
		}), ProcessCreated, ProcessStarted, ProcessPendingComplete, ProcessCompleted, ProcessPendingCancel, ProcessCanceled)
	}
	runScenario(t, confScenario{name: "states", nodes: twoWait(), setup: setup, state: "executing",
		steps: []confStep{{desc: "A", do: doneOn("A"), state: "executing"}, {desc: "B", do: doneOn("B"), state: "completed"}}})
	want := "PROCESS_CREATED=created|PROCESS_STARTED=executing|PROCESS_PENDING_COMPLETE=pending_completion|PROCESS_COMPLETED=completed"
	if strings.Join(seen, "|") != want {
		t.Fatalf("have %v\nwant %s", seen, want)
	}
	seen = nil
	runScenario(t, confScenario{name: "states", nodes: twoWait(), setup: setup,
		steps: []confStep{{desc: "cancel", do: cancelProc, state: "canceled", want: `[1 A I F]`}}})
	want = "PROCESS_CREATED=created|PROCESS_STARTED=executing|PROCESS_PENDING_CANCEL=pending_cancel|PROCESS_CANCELED=canceled"
	if strings.Join(seen, "|") != want {
		t.Fatalf("have %v\nwant %s", seen, want)
	}
	for _, s := range []State{Created, Executing, PendingCompletion, Completed, PendingCancel, Canceled} {
		if got, ok := ParseState(s.String()); !ok || got != s {
			t.Fatalf("ParseState(%s)", s)
		}
	}
	if !PendingCompletion.IsComplete() || !Completed.IsComplete() || Executing.IsComplete() ||
		!PendingCancel.IsCanceled() || !Canceled.IsCanceled() {
		t.Fatal("IsComplete / IsCanceled")
	}
}

func TestConformanceScripts(t *testing.T) {
	script := func(src string) []N {
		return []N{
			{Name: "A", Type: "script", Start: true, Custom: jsCustom(src), Arcs: []string{"B", "C:x"}},
			{Name: "B", Type: "wait"},
			{Name: "C", Type: "wait"},
		}
	}
	runScenarios(t, []confScenario{
		{
			name: "sets token and process attributes, completes on the default arc",
			nodes: script(`token.env().set("count", 3); env.set("flag", true); processEnv.set("p", "x");
			               fullEnv.set("f", "via full"); if (fullEnv.get("start") !== "yes") throw new Error("no start attr");`),
			env:   map[string]any{"start": "yes"},
			start: `[1 A C F] (C F 2) [2 B I F]`, state: "executing",
			check: func(h *confHarness) {
				a := h.p.NodeTokens[0]
				wantAttr(h.t, "A", a.Attr, "count", Int(3))
				wantAttr(h.t, "A", a.Attr, "flag", Bool(true))
				wantAttr(h.t, "A", a.Attr, "f", String("via full"))
				wantAttr(h.t, "process", h.p.Env.Get, "p", String("x"))
				wantAttr(h.t, "process", h.p.Env.Get, "f", Value{})
				wantAttr(h.t, "B inherits", h.p.NodeTokens[1].Attr, "count", Int(3))
			},
		},
		{
			name: "completes on a named arc", nodes: script(`engine.complete(token, "x");`),
			start: `[1 A C F] (C F 2) [2 C I F]`,
		},
		{
			name: "completes on several arcs", nodes: script(`engine.completeMany(token, null, "x");`),
			start: `[1 A C F] (C F 2) (C F 3) [2 B I F] [3 C I F]`,
		},
	})
	for _, c := range []struct{ name, src, want string }{
		{"throws", `throw new Error("boom from script");`, "boom from script"},
		{"completes twice", `engine.complete(token); engine.complete(token);`, "already complete"},
		{"infinite loop", `for (;;) {}`, "50ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			k.ScriptTimeout = 50 * time.Millisecond
			g := mkGraph(t, "script-"+c.name, N{Name: "S", Type: "wait", Start: true, Arcs: []string{"A"}},
				N{Name: "A", Type: "script", Custom: jsCustom(c.src), Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
			p := start(t, k, g, nil)
			defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
			began := time.Now()
			err := k.Engine(t0).Complete(token(t, p, "S"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if time.Since(began) > 5*time.Second {
				t.Fatalf("the script ran %s", time.Since(began))
			}
		})
	}
}

// TestConformanceListenerCompletesOnAccept: a listener may complete a token
// when it is accepted; the node type `node` then does not complete it again
// (Java ignores the second completion silently).
func TestConformanceListenerCompletesOnAccept(t *testing.T) {
	runScenarios(t, []confScenario{{
		name: "listener completes B on x",
		setup: func(k *Kernel) {
			k.AddGlobalListener("c", ListenerFunc(func(e *Engine, ev *Event) EventActions {
				if ev.NodeToken().Node.Name == "B" {
					if err := e.Complete(ev.NodeToken(), "x"); err != nil {
						e.Fail(err)
					}
				}
				return 0
			}), NodeTokenAccepted)
		},
		nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
			{Name: "B", Arcs: []string{"C", "D:x"}},
			{Name: "C", Type: "wait"}, {Name: "D", Type: "wait"},
		},
		steps: []confStep{{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 D I F]`}},
	}})
}
