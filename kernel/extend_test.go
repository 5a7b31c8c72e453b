package kernel

import (
	"errors"
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// scopeNode is a node type built only from the extension points: its token
// stays active, opens a token set of one member and creates a token at the
// node named by its Custom "inner" (no arc leads there); a settler
// completes it once no member of its set is active.
type scopeNode struct{ inner string }

func (s scopeNode) Execute(e *Engine, t *NodeToken) error {
	set, err := e.NewTokenSet(t.Process, t.Node.Name, 1, t.Sets, nil, nil)
	if err != nil {
		return err
	}
	e.SetNote(t, "scope", set.Name)
	_, err = e.CreateToken(t.Process, t.Process.Graph.Node(s.inner), append(t.Sets, Membership{Set: set}), t.Env, map[string]string{"in": t.Node.Name})
	return err
}

func scopeSettler(e *Engine, p *Process) error {
	for _, t := range p.ActiveNodeTokens() {
		if t.Note("scope") == "" {
			continue
		}
		busy := false
		for _, u := range p.NodeTokens {
			if u.Active() && u != t {
				for _, m := range u.Sets {
					if m.Set.Name == t.Note("scope") {
						busy = true
					}
				}
			}
		}
		if !busy {
			if err := e.CompleteDirect(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// gateNode lets a command complete its token only on the arc "ok".
type gateNode struct{}

func (gateNode) Execute(*Engine, *NodeToken) error { return nil }
func (gateNode) HandleComplete(e *Engine, t *NodeToken, names []string, _ *Env) error {
	if len(names) != 1 || names[0] != "ok" {
		return errors.New("gate opens on ok only")
	}
	return e.CompleteDirect(t, "ok")
}

func extKernel() *Kernel {
	k := testKernel()
	k.RegisterNodeType("scope", func(n *graph.Node) (NodeType, error) {
		return scopeNode{inner: n.Custom.Flatten()["inner"]}, nil
	})
	k.RegisterNodeType("gate", func(*graph.Node) (NodeType, error) { return gateNode{}, nil })
	k.RegisterSettler(scopeSettler)
	return k
}

func custom(kv ...string) *graph.Element {
	e := &graph.Element{Name: "custom"}
	for i := 0; i < len(kv); i += 2 {
		e.Children = append(e.Children, &graph.Element{Name: kv[i], Text: kv[i+1]})
	}
	return e
}

func TestScopeBuiltFromExtensionPoints(t *testing.T) {
	k := extKernel()
	g := mkGraph(t, "scoped",
		N{Name: "start", Start: true, Arcs: []string{"sub"}},
		N{Name: "sub", Type: "scope", Custom: custom("inner", "in1"), Arcs: []string{"after"}},
		N{Name: "in1", Arcs: []string{"a", "b"}},
		N{Name: "a", Type: "wait", Arcs: []string{"join"}},
		N{Name: "b", Arcs: []string{"join"}},
		N{Name: "join", Join: graph.JoinAnd},
		N{Name: "after", Type: "wait"},
	)
	p, err := k.Engine(t0).Start(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[1 start C F]
  (C F 2)
[2 sub I F]
[3 in1 C F sub 0]
  (C F 4)
  (C F 5)
[4 a I F sub 0]
[5 b C F sub 0]
  (I F join)
`
	if got := p.History(); got != want {
		t.Fatalf("after start:\n%s\nwant\n%s", got, want)
	}
	if p.NodeTokens[2].Note("in") != "sub" || p.NodeTokens[1].Note("scope") != "sub" {
		t.Fatalf("notes: %v %v", p.NodeTokens[2].Notes, p.NodeTokens[1].Notes)
	}
	if err := k.Engine(t0).Complete(p.NodeTokens[3]); err != nil {
		t.Fatal(err)
	}
	want = `[1 start C F]
  (C F 2)
[2 sub C F]
  (C F 7)
[3 in1 C F sub 0]
  (C F 4)
  (C F 5)
[4 a C F sub 0]
  (C F 6)
[5 b C F sub 0]
  (C F 6)
[6 join C F sub 0]
[7 after I F]
`
	if got := p.History(); got != want {
		t.Fatalf("after completing a:\n%s\nwant\n%s", got, want)
	}
}

func TestWithdrawDiscardAndCompleteHandler(t *testing.T) {
	k := extKernel()
	g := mkGraph(t, "w",
		N{Name: "start", Start: true, Arcs: []string{"x", "y", "gate"}},
		N{Name: "x", Type: "wait", Arcs: []string{"join"}},
		N{Name: "y", Arcs: []string{"join"}},
		N{Name: "join", Join: graph.JoinAnd},
		N{Name: "gate", Type: "gate", Arcs: []string{"end:ok", "end:no"}},
		N{Name: "end"},
	)
	e := k.Engine(t0)
	p, err := e.Start(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate := p.NodeTokens[len(p.NodeTokens)-1]
	if gate.Node.Name != "gate" {
		t.Fatalf("last token is on %s", gate.Node.Name)
	}
	if err := e.Complete(gate, "no"); err == nil || !strings.Contains(err.Error(), "ok only") {
		t.Fatalf("complete on no: %v", err)
	}
	// A failed command is discarded by its caller; start again.
	p, _ = e.Start(g, nil)
	gate = p.NodeTokens[len(p.NodeTokens)-1]
	if err := e.Complete(gate, "ok"); err != nil {
		t.Fatal(err)
	}
	x := p.NodeTokens[1]
	if err := e.Withdraw(x); err != nil {
		t.Fatal(err)
	}
	waiting := p.ActiveArcTokens()
	if len(waiting) != 1 || waiting[0].Arc.From.Name != "y" {
		t.Fatalf("waiting arc tokens: %v", waiting)
	}
	if p.State != Executing {
		t.Fatalf("process is %s with a token waiting at the join", p.State)
	}
	if err := e.DiscardArcToken(waiting[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.ExecuteQueuedArcTokens(p); err != nil {
		t.Fatal(err)
	}
	if p.State != Completed {
		t.Fatalf("state %s, want completed:\n%s", p.State, p.History())
	}
	if x.Complete != true || len(x.Children) != 0 {
		t.Fatalf("withdrawn token: complete %v, children %d", x.Complete, len(x.Children))
	}
	if a := p.NodeTokens[2].Children[0]; !a.Complete || a.Child != nil {
		t.Fatalf("discarded arc token: complete %v child %v", a.Complete, a.Child)
	}
}

func TestStartAt(t *testing.T) {
	k := extKernel()
	g := mkGraph(t, "s",
		N{Name: "none", Start: true, Arcs: []string{"w"}},
		N{Name: "msg", Arcs: []string{"w"}},
		N{Name: "w", Type: "wait"},
	)
	p, err := k.Engine(t0).StartAt(g, nil, g.Node("msg"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.History(), "[1 msg C F]\n  (C F 2)\n[2 w I F]\n"; got != want {
		t.Fatalf("history:\n%s\nwant\n%s", got, want)
	}
	other := mkGraph(t, "o", N{Name: "z", Start: true})
	if _, err := k.Engine(t0).StartAt(g, nil, other.Node("z")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a node of another graph: %v", err)
	}
}
