package wfxml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
)

// FuzzParse: any input is parsed without panicking; a failure is always a
// *graph.LoadError with at least one problem; a success compiles (with every
// external resolving to a small fixed graph) into a consistent graph.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.wf.xml")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	pair, err := wfxml.Load("pair.wf.xml", []byte(`<process-definition name="pair"><node name="A" isStart="true"><arc to="B"/></node><node name="B"/></process-definition>`), nil)
	if err != nil {
		f.Fatal(err)
	}
	pair.Version = 1
	resolve := func(name string) *graph.Graph {
		if name == "missing" {
			return nil
		}
		return pair
	}
	checkErr := func(t *testing.T, err error) {
		var le *graph.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("error %T is not a *graph.LoadError: %v", err, err)
		}
		if len(le.Problems) == 0 || le.File != "fuzz.wf.xml" {
			t.Fatalf("LoadError without problems or file: %#v", le)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := wfxml.Parse("fuzz.wf.xml", src)
		if err != nil {
			checkErr(t, err)
			return
		}
		if d.Name() == "" || len(d.Nodes) == 0 {
			t.Fatalf("parsed a document without name or nodes")
		}
		g, err := wfxml.Compile(d, resolve)
		if err != nil {
			checkErr(t, err)
			return
		}
		if g.Name != d.Name() || len(g.Nodes) < len(d.Nodes) || g.Hash == "" {
			t.Fatalf("graph %q with %d nodes from %d declared", g.Name, len(g.Nodes), len(d.Nodes))
		}
		inGraph := map[*graph.Node]bool{}
		for i, n := range g.Nodes {
			if n.Index != i {
				t.Fatalf("node %s has index %d at %d", n, n.Index, i)
			}
			inGraph[n] = true
		}
		for _, a := range g.Arcs {
			if !inGraph[a.From] || !inGraph[a.To] {
				t.Fatalf("arc %s leaves the graph", a)
			}
		}
		for _, n := range g.StartNodes() {
			if n.External != nil {
				t.Fatalf("imported node %s starts the composite", n)
			}
		}
	})
}
