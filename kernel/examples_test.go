package kernel_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// task is the manual's custom node type: properties bound from <custom>,
// waiting for someone to complete it.
type task struct {
	TaskName string
	TaskDesc string
}

func (*task) Execute(*kernel.Engine, *kernel.NodeToken) error { return nil }

// TestManualExamplesLoadAndRun loads every example of the reference manual
// (format/wfxml/testdata/manual) through the importer, then starts each one
// that has start nodes and completes its waiting tokens until it finishes.
func TestManualExamplesLoadAndRun(t *testing.T) {
	repo := graph.NewRepository()
	k := kernel.New()
	var out bytes.Buffer
	k.ScriptOutput = &out
	k.Definitions = repo.Latest
	k.RegisterNodeStruct("task", &task{})
	k.RegisterNodeType("helloWorld", func(*graph.Node) (kernel.NodeType, error) {
		return kernel.NodeTypeFunc(func(e *kernel.Engine, tok *kernel.NodeToken) error {
			tok.Process.Env.Set("greeting", kernel.String("Hello, World!"))
			return e.Complete(tok)
		}), nil
	})
	l := &wfxml.Loader{Repo: repo, Add: func(g *graph.Graph) (*graph.Graph, bool, error) {
		if err := k.Prepare(g); err != nil {
			return nil, false, err
		}
		return repo.Add(g)
	}}
	loaded, err := l.LoadDir(filepath.Join("..", "format", "wfxml", "testdata", "manual"))
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) < 10 {
		t.Fatalf("loaded %d manual examples, want 10", len(loaded))
	}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	ran := 0
	for _, g := range repo.Latests() {
		if len(g.StartNodes()) == 0 {
			continue
		}
		p, err := k.Engine(now).Start(g, nil)
		if err != nil {
			t.Fatalf("%s: start: %v", g.Name, err)
		}
		for i := 0; p.State == kernel.Executing && i < 100; i++ {
			active := p.ActiveNodeTokens()
			if len(active) == 0 {
				break
			}
			if err := k.Engine(now).Complete(active[0]); err != nil {
				t.Fatalf("%s: complete %s: %v", g.Name, active[0].Node.QualifiedName(), err)
			}
		}
		if p.State != kernel.Completed {
			t.Errorf("%s: state %s, want completed:\n%s", g.Name, p.State, p.History())
		}
		ran++
	}
	if ran < 6 {
		t.Fatalf("ran %d examples", ran)
	}
	// The task type got its properties from <custom>.
	if n := repo.Latest("example1").Node("1"); n == nil || !strings.Contains(n.Custom.Flatten()["taskName"], "Enter order") {
		t.Fatalf("example1 node 1 custom: %v", n)
	}
	if g := repo.Latest("hello-world"); g == nil {
		t.Fatal("hello-world not loaded")
	}
	// external-env-three embeds external-env-two (which embeds
	// external-env-one with foo=hello, bar=world) and overrides foo: the
	// manual says the script then sees foo=goodbye and bar=world.
	if want := "two:A: foo: goodbye\ntwo:A: bar: world\n"; out.String() != want {
		t.Fatalf("external-env script printed %q, want %q", out.String(), want)
	}
}
