package kernel

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/graph"
)

// N describes a node for mkGraph. Arcs are "B" (default arc to B) or "B:x"
// (arc named x to B).
type N struct {
	Name, Type string
	Start      bool
	Join       graph.JoinType
	Param      string
	Guard      string
	Arcs       []string
	Custom     *graph.Element
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func mkGraph(t testing.TB, name string, nodes ...N) *graph.Graph {
	t.Helper()
	g := &graph.Graph{Name: name, Version: 1, Format: "sarasvati"}
	byName := map[string]*graph.Node{}
	for _, n := range nodes {
		typ := n.Type
		if typ == "" {
			typ = graph.TypeNode
		}
		join := n.Join
		if join == "" {
			join = graph.JoinOr
		}
		gn := &graph.Node{Name: n.Name, Type: typ, IsStart: n.Start, Join: join, JoinParam: n.Param, Guard: n.Guard, Custom: n.Custom}
		g.Nodes = append(g.Nodes, gn)
		byName[n.Name] = gn
	}
	for _, n := range nodes {
		for _, a := range n.Arcs {
			to, arcName, _ := strings.Cut(a, ":")
			target := byName[to]
			if target == nil {
				t.Fatalf("arc %s -> %s: no such node", n.Name, to)
			}
			g.Arcs = append(g.Arcs, &graph.Arc{From: byName[n.Name], To: target, Name: arcName})
		}
	}
	g.Finish()
	return g
}

// testKernel returns a kernel with deterministic process ids.
func testKernel() *Kernel {
	k := New()
	n := 0
	k.NewID = func() string { n++; return fmt.Sprintf("p%d", n) }
	return k
}

func start(t testing.TB, k *Kernel, g *graph.Graph, env *Env) *Process {
	t.Helper()
	p, err := k.Engine(t0).Start(g, env)
	if err != nil {
		t.Fatalf("start %s: %v", g.Name, err)
	}
	return p
}

// token returns the only incomplete node token on the named node.
func token(t testing.TB, p *Process, node string) *NodeToken {
	t.Helper()
	var found *NodeToken
	for _, nt := range p.NodeTokens {
		if nt.Node.QualifiedName() == node && !nt.Complete {
			if found != nil {
				t.Fatalf("more than one active token on %s:\n%s", node, p.History())
			}
			found = nt
		}
	}
	if found == nil {
		t.Fatalf("no active token on %s:\n%s", node, p.History())
	}
	return found
}

func complete(t testing.TB, k *Kernel, p *Process, node string, arcs ...string) {
	t.Helper()
	if err := k.Engine(t0).Complete(token(t, p, node), arcs...); err != nil {
		t.Fatalf("complete %s: %v", node, err)
	}
}

func wantHistory(t testing.TB, p *Process, spec string) {
	t.Helper()
	if err := MatchHistory(p, spec); err != nil {
		t.Fatal(err)
	}
}

func eventLog(p *Process) []string {
	var out []string
	for _, ev := range p.EventList() {
		out = append(out, ev.String())
	}
	return out
}

func wantEvents(t testing.TB, p *Process, want ...string) {
	t.Helper()
	have := eventLog(p)
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n  have %s\n  want %s", strings.Join(have, ", "), strings.Join(want, ", "))
	}
}
