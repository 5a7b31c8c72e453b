package analysis

import (
	"github.com/veena-wf/veena/petri"
)

// wfNet is a workflow net's source and sink place.
type wfNet struct{ source, sink int }

// workflowNet reports whether n is a workflow net: exactly one source
// place (no transition gives to it), exactly one sink place (no
// transition takes from it), and every place and transition on a path
// from the source to the sink. Inhibitor arcs are not part of the
// structure.
func workflowNet(n *petri.Net) *wfNet {
	source, sink := -1, -1
	for i, p := range n.Places {
		if len(p.In) == 0 {
			if source >= 0 {
				return nil
			}
			source = i
		}
		if len(p.Out) == 0 {
			if sink >= 0 {
				return nil
			}
			sink = i
		}
	}
	if source < 0 || sink < 0 || source == sink {
		return nil
	}
	// Nodes numbered places first, then transitions.
	np := len(n.Places)
	succ := func(v int, f func(int)) {
		if v < np {
			for _, t := range n.Places[v].Out {
				f(np + t)
			}
			return
		}
		for _, a := range n.Transitions[v-np].Out {
			f(a.Place)
		}
	}
	pred := func(v int, f func(int)) {
		if v < np {
			for _, t := range n.Places[v].In {
				f(np + t)
			}
			return
		}
		for _, a := range n.Transitions[v-np].In {
			f(a.Place)
		}
	}
	reach := func(from int, next func(int, func(int))) []bool {
		seen := make([]bool, np+len(n.Transitions))
		queue := []int{from}
		seen[from] = true
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			next(v, func(w int) {
				if !seen[w] {
					seen[w] = true
					queue = append(queue, w)
				}
			})
		}
		return seen
	}
	fwd, bwd := reach(source, succ), reach(sink, pred)
	for v := range fwd {
		if !fwd[v] || !bwd[v] {
			return nil
		}
	}
	return &wfNet{source: source, sink: sink}
}

// soundness judges a workflow net (van der Aalst): from the start marking
// (one token in the source, the other places as the net marks them), the
// final marking (the token moved to the sink, the rest as at the start)
// is reachable from every reachable marking (option to complete), no
// reachable marking marks the sink beside other tokens (proper
// completion), and every transition can fire. g is the exploration from
// m0, reused when m0 is the start marking.
func soundness(n *petri.Net, wf *wfNet, m0 petri.Marking, opts Options, r *Result, g *explorer, complete bool) {
	start := m0.Clone()
	start[wf.source], start[wf.sink] = 1, 0
	final := start.Clone()
	final[wf.source], final[wf.sink] = 0, 1
	d := &SoundnessDetails{Source: n.Places[wf.source].ID, Sink: n.Places[wf.sink].ID}
	r.Soundness = d
	same := true
	for i := range start {
		same = same && start[i] == m0[i]
	}
	if !same || opts.NoGraph {
		g = newExplorer(n, opts.MaxStates, true)
		err := g.explore(toInt32(start))
		complete = err == nil
		switch {
		case err == errUnbounded || err == errTokens:
			// A sound workflow net is bounded.
			r.Sound, d.OptionToComplete = ptr(false), nil
			return
		case err != nil:
			return
		}
	}
	if !complete {
		if g.coverable && r.Bounded != nil && !*r.Bounded {
			r.Sound = ptr(false)
		}
		return
	}
	dead := false
	for _, f := range g.fired {
		dead = dead || !f
	}
	d.NoDeadTransitions = ptr(!dead)
	finalID := -1
	if packed := g.pack(toInt32(final)); packed != nil {
		finalID = g.find(packed)
	}
	s := g.components()
	option := finalID >= 0 && s.bottoms == 1 && s.bottom[s.comp[finalID]]
	d.OptionToComplete = ptr(option)
	proper := true
	m := make([]int32, g.places)
	for id := 0; id < g.states(); id++ {
		g.unpack(id, m)
		if m[wf.sink] == 0 || id == finalID {
			continue
		}
		proper = false
		if d.Counterexample == nil && option {
			d.Counterexample = g.names(g.path(id))
		}
		break
	}
	d.ProperCompletion = ptr(proper)
	if !option && d.Counterexample == nil {
		// A marking from which the final marking cannot be reached: one in
		// a bottom component that is not the final marking's.
		for id := 0; id < g.states(); id++ {
			c := s.comp[id]
			if s.bottom[c] && (finalID < 0 || c != s.comp[finalID]) {
				d.Counterexample = g.names(g.path(id))
				break
			}
		}
	}
	if dead && d.Counterexample == nil {
		d.Counterexample = []string{}
	}
	r.Sound = ptr(option && proper && !dead)
}

// pack encodes a marking in the explorer's current layout; a count its
// fields cannot hold gives a marking no state has.
func (g *explorer) pack(m []int32) []uint64 {
	out := make([]uint64, g.stride)
	for i, f := range g.fields {
		if uint64(m[i]) > f.mask {
			return nil
		}
		out[f.word] |= uint64(m[i]) << f.shift
	}
	return out
}

func (g *explorer) names(ts []int) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = g.net.Transitions[t].ID
	}
	return out
}
