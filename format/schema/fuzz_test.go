package schema_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
)

// fuzzLoad: any input loads without panicking; a failure is a
// *graph.LoadError with problems that name the file; a success is a set of
// consistent graphs (one start node each, arcs between their own nodes,
// every node with its schema properties).
func fuzzLoad(t *testing.T, src []byte) {
	gs, err := schema.Load("fuzz", src)
	if err != nil {
		var le *graph.LoadError
		if !errors.As(err, &le) || len(le.Problems) == 0 || le.File != "fuzz" {
			t.Fatalf("error is not a LoadError with problems: %#v", err)
		}
		return
	}
	if len(gs) == 0 {
		t.Fatal("no graphs and no error")
	}
	for _, g := range gs {
		if len(g.StartNodes()) != 1 {
			t.Fatalf("%s: %d start nodes", g.Name, len(g.StartNodes()))
		}
		if _, ok := g.Props.(*schema.Schema); !ok {
			t.Fatalf("%s: props %T", g.Name, g.Props)
		}
		for _, n := range g.Nodes {
			if _, ok := n.Props.(*schema.Node); !ok {
				t.Fatalf("%s: node %s props %T", g.Name, n.Name, n.Props)
			}
		}
		for _, a := range g.Arcs {
			if g.Nodes[a.From.Index] != a.From || g.Nodes[a.To.Index] != a.To {
				t.Fatalf("%s: arc %s between foreign nodes", g.Name, a)
			}
		}
	}
	_ = schema.Describe(gs)
}

func addSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, file := range files {
		if filepath.Ext(file) == ".golden" || filepath.Ext(file) == ".errors" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
}

func FuzzLoadJSON(f *testing.F) {
	addSeeds(f, "testdata/*/*.json")
	f.Fuzz(func(t *testing.T, src []byte) {
		if !schema.IsJSON(src) {
			return
		}
		fuzzLoad(t, src)
	})
}

func FuzzLoadYAML(f *testing.F) {
	addSeeds(f, "testdata/*/*.yaml")
	f.Fuzz(func(t *testing.T, src []byte) {
		if schema.IsJSON(src) {
			return
		}
		fuzzLoad(t, src)
	})
}
