package translate

import (
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/petri/analysis"
)

// Report is the analysis of a definition: of its net for a Petri net, of
// its translation for a process graph of another format.
type Report struct {
	*analysis.Result
	// For process graphs only:
	// StuckJoins are the joins where an arc token can wait for ever,
	// each with a shortest firing sequence (of the translation) that
	// leaves it there.
	StuckJoins []StuckJoin `json:"stuckJoins,omitempty"`
	// Approximations lists where the translation is not exact.
	Approximations []string `json:"approximations,omitempty"`
	// Net says how large the analysed net is.
	Net NetSize `json:"net"`
}

// NetSize counts the places and transitions of the analysed net.
type NetSize struct {
	Places      int  `json:"places"`
	Transitions int  `json:"transitions"`
	Translated  bool `json:"translated"` // a process graph's translation, not a Petri net of its own
}

// StuckJoin is an arc whose token can wait for ever at a join.
type StuckJoin struct {
	Node     string   `json:"node"`
	Arc      string   `json:"arc"`
	Join     string   `json:"join"` // the join type
	Sequence []string `json:"sequence"`
}

// Analyze analyses a definition. For a Petri net it is the analysis of the
// net. For a process graph of another format it is the analysis of its
// translation, judged as a workflow: a process finishes when no token is
// left (the empty marking), and it is sound when every run can still
// finish from wherever it is, no arc token can be stranded at a join, and
// every join and completion can happen.
func Analyze(g *graph.Graph, opts analysis.Options) (*Report, error) {
	tr, err := Translate(g)
	if err != nil {
		return nil, err
	}
	rep := &Report{Net: NetSize{Places: len(tr.Net.Places), Transitions: len(tr.Net.Transitions), Translated: g.Format != "pnml"}}
	if g.Format == "pnml" {
		rep.Result = analysis.Analyze(tr.Net, opts)
		return rep, nil
	}
	opts.Final = make(petri.Marking, len(tr.Net.Places))
	for p := range tr.Bookkeeping {
		opts.Final[p] = -1
	}
	opts.Initial = nil
	opts.DeadStranded = true
	r := analysis.Analyze(tr.Net, opts)
	rep.Result = r
	rep.Approximations = tr.Approximations
	byPlace := map[string]*graph.Arc{}
	for _, a := range g.Arcs {
		byPlace[tr.Net.Places[tr.ArcPlace[a.Index]].ID] = a
	}
	for _, s := range r.Stranded {
		a := byPlace[s.Place]
		if a == nil {
			continue
		}
		rep.StuckJoins = append(rep.StuckJoins, StuckJoin{Node: a.To.QualifiedName(), Arc: s.Place, Join: string(a.To.Join), Sequence: s.Sequence})
	}
	// The translation's bookkeeping transitions are no steps of the
	// process: that they never fire says nothing.
	if r.DeadTransitions != nil && len(tr.Auxiliary) > 0 {
		dead := []string{}
		for _, t := range r.DeadTransitions {
			if !tr.Auxiliary[t] {
				dead = append(dead, t)
			}
		}
		r.DeadTransitions = dead
		r.QuasiLive = ptr(len(dead) == 0)
	}
	// A process graph is read as a workflow: it starts at its start nodes
	// and finishes when every token is gone.
	r.WorkflowNet = true
	r.Soundness = nil
	starts := false
	for _, p := range tr.Net.Places {
		starts = starts || p.Initial > 0
	}
	if !starts {
		r.Sound, r.Completes = nil, nil
		r.Reason = "the definition has no start node: it runs only imported as an external or nested, and is analysed there"
		return rep, nil
	}
	if r.Completes != nil && r.QuasiLive != nil {
		r.Sound = ptr(*r.Completes && *r.QuasiLive && len(rep.StuckJoins) == 0)
	} else {
		r.Sound = nil
	}
	return rep, nil
}

func ptr[T any](v T) *T { return &v }
