package pnml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
)

// FuzzLoad checks that Load never panics, that a refusal is a
// *graph.LoadError with positions inside the file, and that what loads is
// a net whose arcs each join a place and a transition.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/golden/*.pnml", "testdata/errors/*.pnml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte(head + `<place id="a"><name><text>a(&amp;x)</text></name></place><transition id="t"><name><text>e(&amp;x)/f(x)</text></name></transition><arc id="x" source="a" target="t"><name><text>ok</text></name></arc>` + tail))
	f.Fuzz(func(t *testing.T, src []byte) {
		g, err := pnml.Load("f.pnml", src, pnml.WithMaxNodes(1000), pnml.WithMaxArcs(1000))
		if err != nil {
			var le *graph.LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("error %T %v, want a *graph.LoadError with problems", err, err)
			}
			for _, p := range le.Problems {
				if p.Line < 0 || p.Column < 0 {
					t.Fatalf("problem at %d:%d", p.Line, p.Column)
				}
			}
			return
		}
		n := petri.Compiled(g)
		if n == nil {
			t.Fatal("loaded graph has no compiled net")
		}
		for _, a := range g.Arcs {
			if (a.From.Kind == petri.KindPlace) == (a.To.Kind == petri.KindPlace) {
				t.Fatalf("arc %s joins %s and %s", a.Name, a.From.Kind, a.To.Kind)
			}
		}
		m := n.InitialMarking()
		for t0 := range n.Transitions {
			if n.Enabled(m, t0) {
				n.Fire(m, t0)
				break
			}
		}
		for _, v := range m {
			if v < 0 {
				t.Fatalf("firing made a negative marking %v", m)
			}
		}
	})
}
