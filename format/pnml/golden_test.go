package pnml_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the current output")

// dump renders a compiled net graph as stable text for golden files.
func dump(g *graph.Graph) string {
	var b strings.Builder
	n := petri.Compiled(g)
	fmt.Fprintf(&b, "net %s (format %s) driven=%v\n", g.Name, g.Format, n.Driven)
	for _, node := range g.Nodes {
		fmt.Fprintf(&b, "%s %s", node.Kind, node.Name)
		if node.Label != "" {
			fmt.Fprintf(&b, " label=%q", node.Label)
		}
		switch p := node.Props.(type) {
		case *petri.PlaceProps:
			if p.Initial != 0 {
				fmt.Fprintf(&b, " initial=%d", p.Initial)
			}
			if p.Capacity != 0 {
				fmt.Fprintf(&b, " capacity=%d", p.Capacity)
			}
			if p.Activity != nil {
				fmt.Fprintf(&b, " activity=%s", p.Activity)
			}
			if p.Generated {
				b.WriteString(" generated")
			}
		case *petri.TransitionProps:
			if p.Annotation.Event != nil {
				fmt.Fprintf(&b, " event=%s", p.Annotation.Event)
			}
			if p.Annotation.Action != nil {
				fmt.Fprintf(&b, " action=%s", p.Annotation.Action)
			}
		}
		if node.X != 0 || node.Y != 0 {
			fmt.Fprintf(&b, " xy=%d,%d", node.X, node.Y)
		}
		fmt.Fprintf(&b, " at %d:%d\n", node.Pos.Line, node.Pos.Column)
	}
	for _, a := range g.Arcs {
		p := a.Props.(*petri.ArcProps)
		fmt.Fprintf(&b, "arc %s %s -> %s weight=%d", a.Name, a.From.Name, a.To.Name, p.Weight)
		if p.Inhibitor {
			b.WriteString(" inhibitor")
		}
		if len(p.Codes) > 0 {
			fmt.Fprintf(&b, " codes=%s", strings.Join(p.Codes, ","))
		}
		if p.Generated {
			b.WriteString(" generated")
		}
		if len(p.Points) > 0 {
			fmt.Fprintf(&b, " points=%v", p.Points)
		}
		fmt.Fprintf(&b, " at %d:%d\n", a.Pos.Line, a.Pos.Column)
	}
	for _, t := range n.Transitions {
		fmt.Fprintf(&b, "fires %s: in %v out %v inhibit %v autonomous=%v\n", t.ID, arcs(n, t.In), arcs(n, t.Out), arcs(n, t.Inhibit), n.Autonomous(t))
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(&b, "warning %d:%d: %s\n", w.Line, w.Column, w.Message)
	}
	return b.String()
}

func arcs(n *petri.Net, as []petri.Arc) string {
	var parts []string
	for _, a := range as {
		s := fmt.Sprintf("%s*%d", n.Places[a.Place].ID, a.Weight)
		if len(a.Codes) > 0 {
			s += "[" + strings.Join(a.Codes, ",") + "]"
		}
		parts = append(parts, s)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestGolden loads each testdata/golden/*.pnml and compares the compiled
// net with the .golden file beside it.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.pnml")
	if len(files) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := pnml.Load(filepath.Base(f), src)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			got := dump(g)
			golden := strings.TrimSuffix(f, ".pnml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("compiled form differs from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}
