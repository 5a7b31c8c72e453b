package translate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/translate"
)

func sarasvati(t *testing.T, body string) *graph.Graph {
	t.Helper()
	src := `<process-definition name="p" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">` + body + `</process-definition>`
	g, err := wfxml.Load("p.wf.xml", []byte(src), func(string) *graph.Graph { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func show(p *bool) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// TestAndJoins: whether an AND join can wait for ever, on the shapes that
// make it so and those that do not.
func TestAndJoins(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		stuck []string // "node <- arc after sequence"
		sound bool
	}{
		{"parallel split then AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`, nil, true},
		{"choice then AND join", `
			<node name="A" type="wait" isStart="true"><arc to="B" name="left"/><arc to="C" name="right"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`,
			[]string{"D <- B->D after [A leaves 'left' B from A->B 'left' B leaves]", "D <- C->D after [A leaves 'right' C from A->C 'right' C leaves]"}, false},
		{"a guard that may discard before the AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B"><guard>if ok then Accept else Discard</guard><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`,
			[]string{"D <- C->D after [A leaves B from A->B B ends C from A->C C leaves]"}, false},
		{"choice then OR join", `
			<node name="A" type="wait" isStart="true"><arc to="B" name="left"/><arc to="C" name="right"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D"/>`, nil, true},
		{"label AND join waits for its label only", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/><arc to="E"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="E" type="wait"><arc to="D" name="y"/></node>
			<node name="D" joinType="labelAnd"/>`, nil, true},
		{"label AND join whose label can be missing", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B" type="wait"><arc to="D" name="x"/></node>
			<node name="C"><arc to="D" name="x"/></node>
			<node name="D" joinType="labelAnd"/>`,
			[]string{"D <- B->D 'x' after [A leaves B from A->B B leaves 'x' C from A->C C ends]"}, false},
		{"a loop back into an AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B" type="wait"><arc to="D"/><arc to="B" name="again"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := translate.Analyze(sarasvati(t, c.body), analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Complete {
				t.Fatalf("incomplete: %s", rep.Reason)
			}
			var got []string
			for _, s := range rep.StuckJoins {
				got = append(got, fmt.Sprintf("%s <- %s after %v", s.Node, s.Arc, s.Sequence))
			}
			if !slices.Equal(got, c.stuck) {
				t.Errorf("stuck joins:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.stuck, "\n"))
			}
			if !rep.WorkflowNet || rep.Sound == nil || *rep.Sound != c.sound {
				t.Errorf("sound %s, want %v (completes %s, quasi-live %s, dead %v)", show(rep.Sound), c.sound, show(rep.Completes), show(rep.QuasiLive), rep.DeadTransitions)
			}
		})
	}
}

// TestApproximations names the joins the translation reads loosely.
func TestApproximations(t *testing.T) {
	rep, err := translate.Analyze(sarasvati(t, `
		<node name="A" isStart="true"><arc to="B"/></node>
		<node name="B" joinType="tokenSet"><join>ts</join></node>`), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Approximations) != 1 || !strings.Contains(rep.Approximations[0], "B: its tokenSet join depends on run-time data") {
		t.Errorf("approximations %v", rep.Approximations)
	}
}
