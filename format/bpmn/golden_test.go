package bpmn_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the current output")

func exprString(x *bpmn.Expr) string {
	if x == nil {
		return "-"
	}
	if x.Program == nil {
		return fmt.Sprintf("%q", x.Text)
	}
	return fmt.Sprintf("%s(%q)@%d:%d", x.Lang, x.Program.Source(), x.Pos.Line, x.Pos.Column)
}

// dump renders compiled graphs as stable text: a file in, this beside it.
func dump(gs []*graph.Graph) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "definition %s label=%q format=%s\n", g.Name, g.Label, g.Format)
		props := g.Props.(*bpmn.Props)
		var starts []string
		for _, n := range g.StartNodes() {
			starts = append(starts, n.Name)
		}
		fmt.Fprintf(&b, "  start nodes: %s\n", strings.Join(starts, ", "))
		var other []string
		for _, e := range props.StartEvents {
			other = append(other, e.ID+"("+string(e.Event.Kind)+")")
		}
		if len(other) > 0 {
			fmt.Fprintf(&b, "  event starts: %s\n", strings.Join(other, ", "))
		}
		var scopes []string
		for s := range props.Listeners {
			scopes = append(scopes, s)
		}
		sort.Strings(scopes)
		for _, s := range scopes {
			fmt.Fprintf(&b, "  event sub-processes of %q: %s\n", s, strings.Join(props.Listeners[s], ", "))
		}
		fmt.Fprintf(&b, "  scopes: %v\n", props.HasScopes)
		b.WriteString("  nodes:\n")
		for _, n := range g.Nodes {
			el := n.Props.(*bpmn.Element)
			fmt.Fprintf(&b, "    %d %s type=%s kind=%s", n.Index, n.Name, n.Type, n.Kind)
			if n.Label != "" {
				fmt.Fprintf(&b, " label=%q", n.Label)
			}
			if n.IsStart {
				b.WriteString(" isStart")
			}
			if n.Join != graph.JoinOr {
				fmt.Fprintf(&b, " join=%s", n.Join)
				if n.JoinParam != "" {
					fmt.Fprintf(&b, "(%s)", n.JoinParam)
				}
			}
			fmt.Fprintf(&b, " at %d:%d", n.Pos.Line, n.Pos.Column)
			if el.Scope != nil {
				fmt.Fprintf(&b, " in=%s", el.Scope.ID)
			}
			if ev := el.Event; ev != nil && (ev.Kind != bpmn.EventNone || el.Kind != "startEvent" && el.Kind != "endEvent") {
				fmt.Fprintf(&b, " event=%s", ev.Kind)
				if ev.Name != "" {
					fmt.Fprintf(&b, "(%q)", ev.Name)
				}
				if ev.CorrelationKey != nil {
					fmt.Fprintf(&b, " key=%s", exprString(ev.CorrelationKey))
				}
				if ev.Timer != nil {
					fmt.Fprintf(&b, " timer=%s:%s", ev.TimerKind, exprString(ev.Timer))
				}
			}
			if el.Kind == "boundaryEvent" {
				fmt.Fprintf(&b, " attachedTo=%s interrupting=%v", el.AttachedTo, el.Interrupting)
			}
			if el.Kind == "startEvent" && el.Scope != nil && el.Scope.TriggeredByEvent {
				fmt.Fprintf(&b, " interrupting=%v", el.Interrupting)
			}
			if len(el.Boundaries) > 0 {
				fmt.Fprintf(&b, " boundaries=%v", el.Boundaries)
			}
			if el.Default != "" {
				fmt.Fprintf(&b, " default=%s", el.Default)
			}
			if el.JobType != nil {
				fmt.Fprintf(&b, " job=%s retries=%d", exprString(el.JobType), el.Retries)
			}
			if len(el.Headers) > 0 {
				fmt.Fprintf(&b, " headers=%v", el.Headers)
			}
			if a := el.Assignment; a != nil {
				fmt.Fprintf(&b, " assignee=%s users=%s groups=%s", exprString(a.Assignee), exprString(a.CandidateUsers), exprString(a.CandidateGroups))
				if a.Queue != "" {
					fmt.Fprintf(&b, " queue=%q", a.Queue)
				}
				if a.DueDate != nil {
					fmt.Fprintf(&b, " due=%s", exprString(a.DueDate))
				}
				if a.Priority != nil {
					fmt.Fprintf(&b, " priority=%s", exprString(a.Priority))
				}
				if a.FormKey != "" {
					fmt.Fprintf(&b, " form=%q", a.FormKey)
				}
			}
			for _, m := range el.Inputs {
				fmt.Fprintf(&b, " in[%s]=%s", m.Target, exprString(m.Source))
			}
			for _, m := range el.Outputs {
				fmt.Fprintf(&b, " out[%s]=%s", m.Target, exprString(m.Source))
			}
			if el.ScriptProgram != nil || el.Script != "" {
				fmt.Fprintf(&b, " script=%s:%s result=%s", el.ScriptLang, exprString(el.ScriptProgram), el.ResultVariable)
			}
			if el.CalledElement != nil {
				fmt.Fprintf(&b, " calls=%s propagateAll=%v", exprString(el.CalledElement), el.PropagateAll)
			}
			if l := el.Loop; l != nil {
				if l.MultiInstance {
					fmt.Fprintf(&b, " multiInstance(sequential=%v cardinality=%s collection=%s element=%q output=%q/%s completion=%s)",
						l.Sequential, exprString(l.Cardinality), exprString(l.Collection), l.ElementVariable, l.OutputCollection,
						exprString(l.OutputElement), exprString(l.CompletionCondition))
				} else {
					fmt.Fprintf(&b, " loop(condition=%s testBefore=%v max=%d)", exprString(l.Condition), l.TestBefore, l.Maximum)
				}
			}
			if el.TriggeredByEvent {
				b.WriteString(" eventSubProcess")
			}
			b.WriteString("\n")
		}
		b.WriteString("  arcs:\n")
		for _, a := range g.Arcs {
			fmt.Fprintf(&b, "    %d %s", a.Index, a)
			if f := props.Process.Flow(a.Name); f != nil && f.Condition != nil {
				fmt.Fprintf(&b, " if %s", exprString(f.Condition))
			}
			fmt.Fprintf(&b, " at %d:%d\n", a.Pos.Line, a.Pos.Column)
		}
		for _, w := range g.Warnings {
			fmt.Fprintf(&b, "  warning %d:%d: %s\n", w.Line, w.Column, w.Message)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := bpmn.Load(filepath.Base(f), src)
			if err != nil {
				t.Fatal(err)
			}
			got := dump(gs)
			golden := f + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s compiles to\n%s\nwant (%s)\n%s", f, got, golden, want)
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d golden files", n)
	}
}
