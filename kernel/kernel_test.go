package kernel

import (
	"errors"
	"testing"
	"time"
)

func TestOneNodeProcessCompletesAtStart(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "one", N{Name: "A", Start: true})
	p := start(t, k, g, nil)
	if p.State != Completed {
		t.Fatalf("state %s, want completed", p.State)
	}
	wantHistory(t, p, `[1 A C F]`)
}

func TestEventOrderTwoNodes(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "two", N{Name: "A", Start: true, Arcs: []string{"B"}}, N{Name: "B"})
	p := start(t, k, g, nil)
	wantEvents(t, p,
		"PROCESS_CREATED", "PROCESS_STARTED", "NODE_TOKEN_CREATED A", "NODE_TOKEN_ACCEPTED A",
		"NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "NODE_TOKEN_EXECUTED A", "ARC_TOKEN_PROCESSED A->B",
		"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_ACCEPTED B", "NODE_TOKEN_COMPLETED B",
		"NODE_TOKEN_EXECUTED B", "PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED")
	wantHistory(t, p, `[1 A C F] (C F 2)
	                   [2 B C F]`)
}

func TestWaitNodesCompletedFromOutside(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "wait", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	wantHistory(t, p, `[1 A I F]`)
	if p.State != Executing {
		t.Fatalf("state %s", p.State)
	}
	p.Events = nil
	complete(t, k, p, "A")
	wantEvents(t, p, "NODE_TOKEN_COMPLETED A", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
		"NODE_TOKEN_CREATED B", "ARC_TOKEN_COMPLETED A->B", "NODE_TOKEN_ACCEPTED B", "NODE_TOKEN_EXECUTED B")
	wantHistory(t, p, `[1 A C F] (C F 2)
	                   [2 B I F]`)
	complete(t, k, p, "B")
	if p.State != Completed {
		t.Fatalf("state %s, want completed", p.State)
	}
}

func TestCompleteAsynchronous(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "async", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	e := k.Engine(t0)
	if err := e.CompleteAsync(token(t, p, "A")); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `[1 A C F] (P F B)`)
	if p.State != Executing {
		t.Fatalf("state %s: a pending arc token keeps the process executing", p.State)
	}
	if err := e.ExecuteQueuedArcTokens(p); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, p, `[1 A C F] (C F 2)
	                   [2 B I F]`)
}

func TestCompletionRefusals(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "r", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	a := token(t, p, "A")
	complete(t, k, p, "A")
	if err := k.Engine(t0).Complete(a); !errors.Is(err, ErrTokenComplete) {
		t.Fatalf("completing a complete token: %v, want token_complete", err)
	}
	b := token(t, p, "B")
	if err := k.Engine(t0).Cancel(p); err != nil {
		t.Fatal(err)
	}
	if p.State != Canceled || b.Complete {
		t.Fatalf("after cancel: state %s, B complete %v", p.State, b.Complete)
	}
	before := p.History()
	if err := k.Engine(t0).Complete(b); !errors.Is(err, ErrProcessNotExecuting) {
		t.Fatalf("completing in a canceled process: %v, want process_not_executing", err)
	}
	if err := k.Engine(t0).Cancel(p); !errors.Is(err, ErrProcessNotExecuting) {
		t.Fatalf("cancelling a canceled process: %v", err)
	}
	if p.History() != before {
		t.Fatal("a refused command changed the history")
	}
}

func TestNoStartNodes(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "none", N{Name: "A"})
	_, err := k.Engine(t0).Start(g, nil)
	if !errors.Is(err, ErrNoStartNodes) {
		t.Fatalf("err = %v, want no_start_nodes", err)
	}
}

// TestEngineReuse: an engine readied for another command runs it at the
// new time with none of the last command's values; an interrupted one
// cannot be readied (its next command would fail at once).
func TestEngineReuse(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "ab", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B"})
	e := k.Engine(t0)
	p, err := e.Start(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.SetValue("k", 1)
	t1 := t0.Add(time.Hour)
	if !e.Reuse(t1) {
		t.Fatal("an engine whose command is over could not be reused")
	}
	if e.Value("k") != nil {
		t.Fatal("a reused engine kept the last command's value")
	}
	if err := e.Complete(token(t, p, "A")); err != nil {
		t.Fatal(err)
	}
	if at := p.Events[len(p.Events)-1].At(); !at.Equal(t1) {
		t.Fatalf("the reused engine's event is at %s, want %s", at, t1)
	}
	e.Interrupt(nil)
	if e.Reuse(t1) {
		t.Fatal("an interrupted engine was reused")
	}
}
