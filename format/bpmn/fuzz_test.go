package bpmn_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
)

// FuzzLoad: any input loads without panicking; a failure is a
// *graph.LoadError with problems; a success is a set of consistent graphs.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*")
	for _, file := range files {
		if filepath.Ext(file) == ".golden" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte(proc(`<startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="e"/><endEvent id="e"/>`)))
	f.Fuzz(func(t *testing.T, src []byte) {
		gs, err := bpmn.Load("fuzz.bpmn", src, bpmn.WithMaxElements(5000))
		if err != nil {
			var le *graph.LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			return
		}
		if len(gs) == 0 {
			t.Fatal("no graph and no error")
		}
		for _, g := range gs {
			for i, n := range g.Nodes {
				if n.Index != i || n.Props == nil || n.Type == "" {
					t.Fatalf("node %d inconsistent: %+v", i, n)
				}
			}
			for _, a := range g.Arcs {
				if g.Nodes[a.From.Index] != a.From || g.Nodes[a.To.Index] != a.To {
					t.Fatalf("arc %s joins nodes of another graph", a)
				}
			}
		}
	})
}
