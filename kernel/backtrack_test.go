package kernel

import (
	"errors"
	"testing"
)

func linearWait(t *testing.T) (*Kernel, *Process) {
	k := testKernel()
	g := mkGraph(t, "linear",
		N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}},
		N{Name: "B", Type: "wait", Arcs: []string{"C"}},
		N{Name: "C", Type: "wait"})
	p := start(t, k, g, nil)
	complete(t, k, p, "A")
	complete(t, k, p, "B")
	return k, p
}

func TestBacktrackLinearEventOrder(t *testing.T) {
	k, p := linearWait(t)
	p.Events = nil
	if _, err := k.Engine(t0).Backtrack(p.NodeTokens[0]); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, p,
		"NODE_TOKEN_COMPLETED C", "NODE_TOKEN_BACKTRACKED C",
		"ARC_TOKEN_BACKTRACKED B->C", "ARC_TOKEN_CREATED B->C", "ARC_TOKEN_PROCESSED B->C",
		"NODE_TOKEN_BACKTRACKED B", "NODE_TOKEN_CREATED B", "ARC_TOKEN_BACKTRACKED B->C", "ARC_TOKEN_COMPLETED B->C",
		"NODE_TOKEN_SKIPPED B", "ARC_TOKEN_BACKTRACKED A->B", "ARC_TOKEN_CREATED A->B", "ARC_TOKEN_PROCESSED A->B",
		"NODE_TOKEN_BACKTRACKED B", "NODE_TOKEN_COMPLETED B",
		"NODE_TOKEN_BACKTRACKED A", "NODE_TOKEN_CREATED A", "ARC_TOKEN_BACKTRACKED A->B", "ARC_TOKEN_COMPLETED A->B",
		"NODE_TOKEN_ACCEPTED A", "NODE_TOKEN_EXECUTED A")
	wantHistory(t, p, `
		[1 A C FB] (C FB 2)
		[2 B C FB] (C FB 3)
		[3 C C FB] (C B 4)
		[4 B C B]  (C B 5)
		[5 A I F]`)
}

func TestBacktrackRefusals(t *testing.T) {
	k, p := linearWait(t)
	before := p.History()
	cases := []struct {
		name string
		tok  *NodeToken
	}{
		{"incomplete destination", p.NodeTokens[2]},
	}
	for _, c := range cases {
		if _, err := k.Engine(t0).Backtrack(c.tok); !errors.Is(err, ErrBacktrackNotAllowed) {
			t.Errorf("%s: %v, want backtrack_not_allowed", c.name, err)
		}
	}
	if _, err := k.Engine(t0).Backtrack(p.NodeTokens[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Engine(t0).Backtrack(p.NodeTokens[1]); !errors.Is(err, ErrBacktrackNotAllowed) {
		t.Errorf("already backtracked: %v", err)
	}
	_ = before
}
