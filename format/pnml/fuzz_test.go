package pnml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/limitrun"
	"github.com/veena-wf/veena/petri"
)

// place and transition write a place (with an initial marking) and a
// transition (with an annotation) of a net.
func place(id, annotation, marking string) string {
	return `<place id="` + id + `"><name><text>` + annotation + `</text></name><initialMarking><text>` + marking + `</text></initialMarking></place>`
}

func transition(id, annotation string) string {
	return `<transition id="` + id + `"><name><text>` + annotation + `</text></name></transition>`
}

func arc(id, from, to, weight string) string {
	return `<arc id="` + id + `" source="` + from + `" target="` + to + `"><inscription><text>` + weight + `</text></inscription></arc>`
}

// runaways are nets that would fire for ever or pile up tokens without
// bound were it not for the step budget, with the code their start (or
// the work after it) fails with under limitrun's limits.
var runaways = []struct {
	name, src, code string
}{
	{"source transition with an action", head + place("pa", "pa", "0") + transition("t", "/pass()") + arc("a", "t", "pa", "1") + tail, "step_budget_exceeded"},
	{"cycle with an action and no event", head + place("pa", "pa", "1") + place("pb", "pb", "0") +
		transition("t1", "/inc(&amp;n)") + transition("t2", "/pass()") +
		arc("a1", "pa", "t1", "1") + arc("a2", "t1", "pb", "1") + arc("a3", "pb", "t2", "1") + arc("a4", "t2", "pa", "1") + tail, "step_budget_exceeded"},
	{"huge weights", head + place("pa", "pa", "1000000000") + place("pb", "pb", "0") + transition("t", "/pass()") +
		arc("a1", "pa", "t", "1") + arc("a2", "t", "pb", "1073741824") + tail, "step_budget_exceeded"},
	{"activity in a cycle", head + place("pa", "ldap(&amp;user)", "1") + place("pb", "pb", "0") + transition("t", "/pass()") +
		arc("a1", "pa", "t", "1") + arc("a2", "t", "pa", "1") + arc("a3", "t", "pb", "1") + tail, ""},
}

// TestRunawayNets: each runaway net fails its command with the step
// budget's stable code, promptly, or (an activity in a cycle) waits for
// its worker at every turn.
func TestRunawayNets(t *testing.T) {
	for _, r := range runaways {
		t.Run(r.name, func(t *testing.T) {
			rep := limitrun.Drive(t, "runaway.pnml", []byte(r.src), "pnml")
			t.Log(rep)
			if rep.Started+len(rep.Codes) == 0 {
				t.Fatalf("nothing started and nothing failed: %s", rep)
			}
			if r.code != "" && rep.Codes[r.code] == 0 {
				t.Fatalf("no command failed with %s: %s", r.code, rep)
			}
			if r.code == "" && len(rep.Codes) != 0 {
				t.Fatalf("commands failed: %s", rep)
			}
		})
	}
}

// FuzzLoad checks that Load never panics, that a refusal is a
// *graph.LoadError with positions inside the file, and that what loads is
// a net whose arcs each join a place and a transition, and that runs
// under small limits (limitrun.Drive): every command ends promptly, in
// success, a wait or an error with a stable code.
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
	for _, r := range runaways {
		f.Add([]byte(r.src))
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
		limitrun.Drive(t, "f.pnml", src, "pnml")
	})
}
