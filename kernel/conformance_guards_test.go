package kernel

// Conformance: guard actions and their event orders (sarasvati.md §4.2,
// §12.2; decisions 7, 13, 15).

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/graph"
)

// guarded: A (start, wait) leads to B with the given guard; B leads to C by
// the default arc and to D by arc x. B counts its executions.
func guarded(guard string) []N {
	return []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "counted", Guard: guard, Arcs: []string{"C", "D:x"}},
		{Name: "C", Type: "wait"},
		{Name: "D", Type: "wait"},
	}
}

// countedType completes its token on the default arc and counts executions.
func countedType(n *int) func(*Kernel) {
	return func(k *Kernel) {
		k.RegisterNodeType("counted", func(*graph.Node) (NodeType, error) {
			return NodeTypeFunc(func(e *Engine, t *NodeToken) error { *n++; return e.Complete(t) }), nil
		})
	}
}

func TestConformanceGuardActions(t *testing.T) {
	type row struct {
		name, guard string
		want        string
		events      []string
		state       string
		executed    int
	}
	rows := []row{
		{name: "accept (blank guard)", guard: "", executed: 1, state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 C I F]`,
			events: []string{"NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
				"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_ACCEPTED B", "NODE_TOKEN_COMPLETED B",
				"ARC_TOKEN_CREATED B->C", "NODE_TOKEN_EXECUTED B", "ARC_TOKEN_PROCESSED B->C", "NODE_TOKEN_CREATED C",
				"ARC_TOKEN_COMPLETED B->C", "NODE_TOKEN_ACCEPTED C", "NODE_TOKEN_EXECUTED C"}},
		{name: "accept keyword, any case (decision 12)", guard: "ACCEPT", executed: 1, state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 C I F]`},
		{name: "discard: no accept, no execute, no arcs", guard: "Discard", state: "completed",
			want: `[1 A C F] (C F 2) [2 B C F]`,
			events: []string{"NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
				"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_DISCARDED B", "NODE_TOKEN_COMPLETED B",
				"PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED"}},
		{name: "skip: default arc, execute not called", guard: "Skip", state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 C I F]`,
			events: []string{"NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
				"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_SKIPPED B", "NODE_TOKEN_COMPLETED B",
				"ARC_TOKEN_CREATED B->C", "ARC_TOKEN_PROCESSED B->C", "NODE_TOKEN_CREATED C", "ARC_TOKEN_COMPLETED B->C",
				"NODE_TOKEN_ACCEPTED C", "NODE_TOKEN_EXECUTED C"}},
		{name: "skip to a named arc", guard: "Skip x", state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 D I F]`},
		{name: "skip to a quoted name", guard: `Skip "x"`, state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 D I F]`},
		{name: "skip to a name with no arc finishes the process", guard: "Skip nowhere", state: "completed",
			want: `[1 A C F] (C F 2) [2 B C F]`},
		{name: "if/else on a process attribute", guard: "if go then Skip x else Discard", state: "executing",
			want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 D I F]`},
		{name: "delay", guard: "delay until 1 hour after now", state: "executing",
			want: `[1 A C F] (C F 2) [2 B I F]`,
			events: []string{"NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
				"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_DELAYED B"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var n int
			h := runScenario(t, confScenario{name: "guard", nodes: guarded(r.guard), setup: countedType(&n),
				env: map[string]any{"go": true}})
			i := len(h.events)
			if err := doneOn("A")(h); err != nil {
				t.Fatal(err)
			}
			h.collect()
			h.history("after A", r.want)
			h.wantState("after A", r.state)
			if r.events != nil {
				h.wantEventsSince(i, r.events...)
			}
			if n != r.executed {
				t.Fatalf("B executed %d times, want %d", n, r.executed)
			}
			if b := h.p.NodeTokens[1]; r.guard != "" && b.GuardAction.String() != strings.ToLower(strings.Fields(r.guard)[0]) &&
				!strings.HasPrefix(r.guard, "if") && r.guard != "ACCEPT" {
				t.Fatalf("guard action %s for guard %q", b.GuardAction, r.guard)
			}
		})
	}
}

// TestConformanceDelay: NODE_TOKEN_DELAYED, DelayedTokens, re-delaying
// (DelayCount 2), acceptance on re-evaluation completing the process
// (decision 7) and ErrNotDelayed.
func TestConformanceDelay(t *testing.T) {
	var n int
	nodes := []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "counted", Guard: "if ready then Accept else delay until 1 hour after now", Arcs: []string{"C"}},
		{Name: "C"},
	}
	delayed := func(count int) func(*confHarness) {
		return func(h *confHarness) {
			ds := h.p.DelayedTokens()
			if len(ds) != 1 || ds[0].Node.Name != "B" {
				h.t.Fatalf("delayed tokens %v, want B", ds)
			}
			if ds[0].DelayCount != count || !ds[0].DelayUntil().Equal(t0.Add(time.Hour)) {
				h.t.Fatalf("B delay count %d until %s, want %d until %s", ds[0].DelayCount, ds[0].DelayUntil(), count, t0.Add(time.Hour))
			}
		}
	}
	reeval := func(h *confHarness) error {
		t, err := findToken(h.p, "B")
		if err != nil {
			return err
		}
		return h.e().ReevaluateDelayedToken(t)
	}
	runScenarios(t, []confScenario{{
		name: "delay", nodes: nodes, setup: countedType(&n), env: map[string]any{"ready": false},
		steps: []confStep{
			{desc: "A: B is delayed", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 B I F]`, state: "executing"},
			{desc: "re-evaluating the complete A is refused", do: func(h *confHarness) error {
				delayed(1)(h)
				b := h.p.NodeTokens[0]
				return h.e().ReevaluateDelayedToken(b)
			}, err: ErrTokenComplete},
			{desc: "re-evaluate: delayed again", do: reeval, want: `[1 A C F] (C F 2) [2 B I F]`, state: "executing"},
			{desc: "ready; re-evaluate: accepted, completes, process completes", do: func(h *confHarness) error {
				delayed(2)(h)
				h.p.Env.Set("ready", Bool(true))
				return reeval(h)
			}, want: `[1 A C F] (C F 2) [2 B C F] (C F 3) [3 C C F]`, state: "completed"},
		},
		check: func(h *confHarness) {
			if n != 1 {
				h.t.Fatalf("B executed %d times, want 1", n)
			}
			if len(h.p.DelayedTokens()) != 0 || len(h.p.ActiveNodeTokens()) != 0 {
				h.t.Fatalf("after acceptance: delayed %v, active %v", h.p.DelayedTokens(), h.p.ActiveNodeTokens())
			}
		},
	}})

	// ErrNotDelayed: an accepted, active token is not delayed.
	k := testKernel()
	p := start(t, k, mkGraph(t, "nd", N{Name: "A", Type: "wait", Start: true}), nil)
	defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
	if err := k.Engine(t0).ReevaluateDelayedToken(token(t, p, "A")); !errors.Is(err, ErrNotDelayed) {
		t.Fatalf("err = %v, want token_not_delayed", err)
	}
}

// TestConformanceDelayEvents: re-evaluation events, §12.2.
func TestConformanceDelayEvents(t *testing.T) {
	var n int
	h := runScenario(t, confScenario{name: "delay-events", setup: countedType(&n), env: map[string]any{"ready": false},
		nodes: []N{
			{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
			{Name: "B", Type: "counted", Guard: "if ready then Accept else delay until 1 hour after now"},
		},
		steps: []confStep{{desc: "A", do: doneOn("A")}}})
	i := len(h.events)
	b, _ := findToken(h.p, "B")
	if err := h.e().ReevaluateDelayedToken(b); err != nil {
		t.Fatal(err)
	}
	h.collect()
	h.wantEventsSince(i, "NODE_TOKEN_DELAYED B")
	i = len(h.events)
	h.p.Env.Set("ready", Bool(true))
	if err := h.e().ReevaluateDelayedToken(b); err != nil {
		t.Fatal(err)
	}
	h.collect()
	h.wantEventsSince(i, "NODE_TOKEN_ACCEPTED B", "NODE_TOKEN_COMPLETED B", "NODE_TOKEN_EXECUTED B",
		"PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED")
}

// TestConformanceGuardErrors: a guard that fails to evaluate fails the
// command with an error naming the symbol (decisions 13, 15).
func TestConformanceGuardErrors(t *testing.T) {
	for _, c := range []struct{ guard, name string }{
		{"if noSuchPredicate then Accept else Discard", "noSuchPredicate"},
		{"delay until noSuchDate", "noSuchDate"},
		{"if count then Accept else Discard", "count"}, // an attribute of the wrong kind
	} {
		k := testKernel()
		g := mkGraph(t, "guard-err", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Guard: c.guard})
		p := start(t, k, g, mustEnv(t, map[string]any{"count": 3}))
		defer func() { checkNoDoubleCompletion(t, p.EventList()) }()
		err := k.Engine(t0).Complete(token(t, p, "A"))
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Fatalf("guard %q: err = %v, want an error naming %s", c.guard, err, c.name)
		}
		if !errors.Is(err, ErrExecutionFailed) {
			t.Fatalf("guard %q: err code %v, want execution_failed", c.guard, err)
		}
		// At start too.
		g2 := mkGraph(t, "guard-err-start", N{Name: "A", Start: true, Guard: c.guard})
		if _, err := k.Engine(t0).Start(g2, mustEnv(t, map[string]any{"count": 3})); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Fatalf("guard %q at start: err = %v", c.guard, err)
		}
	}
}

// TestConformanceGuardPredicates: registered predicates win over
// attributes of the same name (decision 13); a predicate error fails the command.
func TestConformanceGuardPredicates(t *testing.T) {
	var n int
	h := runScenario(t, confScenario{name: "pred", nodes: guarded("if go then Skip x else Discard"),
		setup: func(k *Kernel) {
			countedType(&n)(k)
			k.RegisterPredicate("go", constPred(false))
		},
		env:   map[string]any{"go": true},
		steps: []confStep{{desc: "A", do: doneOn("A"), want: `[1 A C F] (C F 2) [2 B C F]`, state: "completed"}},
	})
	_ = h
}

func mustEnv(t testing.TB, m map[string]any) *Env {
	t.Helper()
	e, err := EnvFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestConformanceEventPayloads: NODE_TOKEN_COMPLETED and NODE_TOKEN_SKIPPED
// carry the exit arc names, NODE_TOKEN_COMPLETED the number of exit arcs.
func TestConformanceEventPayloads(t *testing.T) {
	var n int
	h := runScenario(t, confScenario{name: "payloads", nodes: guarded("Skip x"), setup: countedType(&n)})
	i := len(h.events)
	if err := doneOn("A", "", "nowhere")(h); err != nil {
		t.Fatal(err)
	}
	h.collect()
	var got []string
	for _, ev := range h.events[i:] {
		if ev.Type == NodeTokenCompleted || ev.Type == NodeTokenSkipped {
			got = append(got, ev.String()+" "+strings.Join(ev.ArcNames(), ",")+" "+string(rune('0'+ev.ExitArcs)))
		}
	}
	want := []string{"NODE_TOKEN_COMPLETED A ,nowhere 1", "NODE_TOKEN_SKIPPED B x 0", "NODE_TOKEN_COMPLETED B x 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("have %q\nwant %q", got, want)
	}
}
