package analysis_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
)

// build makes a net from a small text: lines "places: a=1 b c=2" and
// "t: a b*2 !c*3 -> d" (inputs with weights, inhibitors after "!",
// outputs after "->").
func build(t testing.TB, spec string) *petri.Net {
	t.Helper()
	g := &graph.Graph{Name: "test", Format: "pnml"}
	places := map[string]*graph.Node{}
	place := func(name string) *graph.Node {
		n := places[name]
		if n == nil {
			t.Fatalf("unknown place %s", name)
		}
		return n
	}
	for _, line := range strings.Split(strings.TrimSpace(spec), "\n") {
		line = strings.TrimSpace(line)
		name, rest, _ := strings.Cut(line, ":")
		if name == "places" {
			for _, f := range strings.Fields(rest) {
				id, v, _ := strings.Cut(f, "=")
				init := 0
				if v != "" {
					init, _ = strconv.Atoi(v)
				}
				n := &graph.Node{Name: id, Kind: petri.KindPlace, Type: petri.KindPlace, Props: &petri.PlaceProps{Initial: init}}
				places[id] = n
				g.Nodes = append(g.Nodes, n)
			}
			continue
		}
		tr := &graph.Node{Name: name, Kind: petri.KindTransition, Type: petri.KindTransition, Props: &petri.TransitionProps{}}
		g.Nodes = append(g.Nodes, tr)
		in, out, _ := strings.Cut(rest, "->")
		arc := func(f string) (string, int) {
			id, w, _ := strings.Cut(f, "*")
			weight := 1
			if w != "" {
				weight, _ = strconv.Atoi(w)
			}
			return id, weight
		}
		for _, f := range strings.Fields(in) {
			inh := strings.HasPrefix(f, "!")
			id, w := arc(strings.TrimPrefix(f, "!"))
			g.Arcs = append(g.Arcs, &graph.Arc{From: place(id), To: tr, Props: &petri.ArcProps{Weight: w, Inhibitor: inh}})
		}
		for _, f := range strings.Fields(out) {
			id, w := arc(f)
			g.Arcs = append(g.Arcs, &graph.Arc{From: tr, To: place(id), Props: &petri.ArcProps{Weight: w}})
		}
	}
	g.Finish()
	n, err := petri.Prepare(g)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
