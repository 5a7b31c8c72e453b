// Package analysis answers the standard questions about a place/transition
// net by exploring its state space: the reachability graph up to a state
// limit (and the Karp–Miller coverability graph when the net turns out
// unbounded), boundedness and the bound, safeness, deadlocks with a
// shortest firing sequence reaching each, dead transitions,
// quasi-liveness, liveness, reversibility, whether a place keeps its
// marking (the contest's stable marking) and, for workflow nets, van der
// Aalst's soundness.
//
// The questions are those of the Model Checking Contest, and the answers
// agree with its oracles on the instances in the corpus. Result codes and
// activities are not looked at: analysis sees the P/T net, where any
// result may come, which is the freedom the runtime relies on.
package analysis

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/veena-wf/veena/petri"
)

// DefaultMaxStates is the state limit of Analyze unless Options says
// otherwise.
const DefaultMaxStates = 1_000_000

// maxDeadlocks is how many dead markings a result shows.
const maxDeadlocks = 10

// Options tune Analyze.
type Options struct {
	// MaxStates stops the exploration once it has found this many states
	// (default DefaultMaxStates).
	MaxStates int
	// Initial is the marking to explore from; nil means the net's own.
	Initial petri.Marking
	// NoGraph leaves out what needs the whole graph kept in memory
	// (liveness, reversibility, soundness, stranded tokens, completion),
	// which roughly halves the memory an exploration takes.
	NoGraph bool
	// DeadStranded reports tokens left in dead markings as stranded too
	// (translated process graphs: a token waiting at a join when nothing
	// else can happen); by default only tokens stranded while the net runs
	// on are, dead markings being listed as deadlocks already.
	DeadStranded bool
	// Final, if set, is a marking the net should be able to reach from
	// every reachable marking (Result.Completes): for a translated process
	// graph, the empty marking of a finished process. A count of -1 leaves
	// a place out of the comparison.
	Final petri.Marking
}

// Result is what Analyze found. A nil pointer is a question it could not
// answer (the state limit was reached first, or the net is unbounded and
// the question is undecidable from its coverability graph).
type Result struct {
	// Complete says the whole state space (or, for an unbounded net, its
	// coverability graph) was explored; Reason says why not, if not.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`

	States *int64 `json:"states"` // reachable markings; null for an unbounded net
	Edges  *int64 `json:"edges"`  // firings between them

	Bounded         *bool    `json:"bounded"`
	Bound           *int     `json:"bound"` // most tokens in one place
	Safe            *bool    `json:"safe"`  // bound ≤ 1
	UnboundedPlaces []string `json:"unboundedPlaces,omitempty"`
	// MaxTokensPerMarking is the most tokens in one reachable marking.
	MaxTokensPerMarking *int64 `json:"maxTokensPerMarking"`
	// StableMarking says some place has the same number of tokens in
	// every reachable marking.
	StableMarking *bool `json:"stableMarking"`

	// DeadlockFree is false when a reachable marking enables nothing.
	DeadlockFree *bool `json:"deadlockFree"`
	// Deadlocks holds, for up to 10 dead markings, a shortest firing
	// sequence (transition ids) reaching it, with the marking.
	Deadlocks        [][]string        `json:"deadlocks"`
	DeadlockMarkings []map[string]int  `json:"deadlockMarkings,omitempty"`
	QuasiLive        *bool             `json:"quasiLive"`
	DeadTransitions  []string          `json:"deadTransitions"`
	Live             *bool             `json:"live"`
	Reversible       *bool             `json:"reversible"`
	WorkflowNet      bool              `json:"workflowNet"`
	Sound            *bool             `json:"sound"`
	Soundness        *SoundnessDetails `json:"soundness,omitempty"`
	// Stranded lists the places where a token can be left for ever: a
	// reachable marking marks the place and no transition that takes from
	// it can fire again while others still can (sinks, which nothing takes
	// from, are left out; so are dead markings unless Options.DeadStranded).
	Stranded []Stranded `json:"stranded,omitempty"`
	// Completes says Options.Final is reachable from every reachable
	// marking (only when Options.Final is given).
	Completes *bool `json:"completes,omitempty"`

	// What the exploration cost.
	Elapsed       time.Duration `json:"-"`
	BytesPerState float64       `json:"-"`
}

// Stranded is a place where a token can be left for ever, with a shortest
// firing sequence to a marking that leaves it there.
type Stranded struct {
	Place    string         `json:"place"`
	Sequence []string       `json:"sequence"`
	Marking  map[string]int `json:"marking"`
}

// SoundnessDetails says why a workflow net is or is not sound.
type SoundnessDetails struct {
	Source string `json:"source"` // the source place i
	Sink   string `json:"sink"`   // the sink place o
	// OptionToComplete: from every reachable marking the final marking
	// (the sink marked, locks returned) is reachable.
	OptionToComplete *bool `json:"optionToComplete"`
	// ProperCompletion: no reachable marking marks the sink beside other
	// tokens.
	ProperCompletion *bool `json:"properCompletion"`
	// NoDeadTransitions: every transition can fire.
	NoDeadTransitions *bool `json:"noDeadTransitions"`
	// Counterexample is a firing sequence to a marking that breaks the
	// first property that fails, when one does.
	Counterexample []string `json:"counterexample,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// Analyze explores the net and answers every question it can.
func Analyze(n *petri.Net, opts Options) *Result {
	if opts.MaxStates <= 0 {
		opts.MaxStates = DefaultMaxStates
	}
	begin := time.Now()
	m0 := opts.Initial
	if m0 == nil {
		m0 = n.InitialMarking()
	}
	r := &Result{Deadlocks: [][]string{}, DeadTransitions: []string{}}
	g := newExplorer(n, opts.MaxStates, !opts.NoGraph)
	g.final = opts.Final
	err := g.explore(toInt32(m0))
	r.BytesPerState = g.bytesPerState()
	switch {
	case err == nil:
		r.Complete = true
		g.finish(r, m0, opts)
	case errors.Is(err, errUnbounded) && n.Inhibitors:
		// Karp and Miller's graph is unsound with inhibitor arcs: report
		// the repeatable sequence found, and what was seen before it.
		g.partial(r)
		r.Bounded, r.Safe = ptr(false), ptr(false)
		for _, p := range g.growing {
			r.UnboundedPlaces = append(r.UnboundedPlaces, n.Places[p].ID)
		}
		r.Reason = fmt.Sprintf("the net is unbounded: a firing sequence that can be repeated for ever adds tokens to %s; with inhibitor arcs, the rest is undecidable in general", strings.Join(r.UnboundedPlaces, ", "))
	case errors.Is(err, errUnbounded), errors.Is(err, errTokens):
		coverability(n, m0, opts.MaxStates, r)
	case errors.Is(err, errLimit):
		r.Reason = fmt.Sprintf("the state space has more than %d states", opts.MaxStates)
		most, at := int32(0), 0
		for p, v := range g.most {
			if v > most {
				most, at = v, p
			}
		}
		if most > 1 {
			r.Reason += fmt.Sprintf(" (the most tokens seen in one place: %d in %s)", most, n.Places[at].ID)
		}
		g.partial(r)
		if g.coverable && !n.Inhibitors {
			// The coverability graph may still show the net unbounded.
			c := &Result{}
			coverability(n, m0, opts.MaxStates, c)
			if c.Bounded != nil && !*c.Bounded {
				r.Bounded, r.Bound, r.Safe, r.UnboundedPlaces = c.Bounded, nil, ptr(false), c.UnboundedPlaces
			}
		}
	}
	if wf := workflowNet(n); wf != nil {
		r.WorkflowNet = true
		soundness(n, wf, m0, opts, r, g, err == nil)
	}
	r.Elapsed = time.Since(begin)
	return r
}

func toInt32(m petri.Marking) []int32 {
	out := make([]int32, len(m))
	for i, v := range m {
		out[i] = int32(v)
	}
	return out
}

// finish fills r from a complete exploration.
func (g *explorer) finish(r *Result, m0 petri.Marking, opts Options) {
	g.foldNarrow()
	n := g.net
	states := int64(g.states())
	r.States, r.Edges = &states, ptr(g.edges)
	bound := 0
	stable := false
	for i := range g.most {
		bound = max(bound, int(g.most[i]))
		if g.most[i] == g.fewest[i] {
			stable = true
		}
	}
	r.Bounded, r.Bound, r.Safe = ptr(true), &bound, ptr(bound <= 1)
	r.MaxTokensPerMarking = ptr(g.mostTotal)
	r.StableMarking = &stable
	r.DeadlockFree = ptr(g.deadSeen == 0)
	g.deadlocks(r)
	for t, f := range g.fired {
		if !f {
			r.DeadTransitions = append(r.DeadTransitions, n.Transitions[t].ID)
		}
	}
	r.QuasiLive = ptr(len(r.DeadTransitions) == 0)
	if !g.keepEdges {
		return
	}
	s := g.components()
	r.Reversible = ptr(s.bottoms == 1 && s.bottom[s.comp[0]])
	r.Live = ptr(g.live(s))
	strand := g.stranded(s, opts.DeadStranded)
	for p := range n.Places {
		if v, ok := strand[p]; ok {
			r.Stranded = append(r.Stranded, Stranded{Place: n.Places[p].ID, Sequence: g.names(g.path(v)), Marking: g.markingMap(v)})
		}
	}
	if g.final != nil {
		r.Completes = ptr(g.completes(s))
	}
}

// completes reports whether from every reachable marking one matching
// g.final (a count per place, -1: any) is reachable: every marking reaches
// a bottom component, and inside one every marking reaches every other,
// so it holds iff every bottom component holds a matching marking.
func (g *explorer) completes(s *sccs) bool {
	has := make([]bool, s.count)
	m := make([]int32, g.places)
	for id := 0; id < g.states(); id++ {
		c := s.comp[id]
		if !s.bottom[c] || has[c] {
			continue
		}
		g.unpack(id, m)
		match := true
		for p, want := range g.final {
			if want >= 0 && int(m[p]) != want {
				match = false
				break
			}
		}
		has[c] = match
	}
	for c, b := range s.bottom {
		if b && !has[c] {
			return false
		}
	}
	return true
}

// partial fills r from an exploration that hit the state limit: only what
// is already certain.
func (g *explorer) partial(r *Result) {
	g.foldNarrow()
	n := g.net
	if g.deadSeen > 0 {
		r.DeadlockFree = ptr(false)
		g.deadlocks(r)
		r.Live = ptr(len(n.Transitions) == 0)
	}
	bound := 0
	for _, v := range g.most {
		bound = max(bound, int(v))
	}
	if bound > 1 {
		r.Safe = ptr(false)
	}
	all := true
	for _, f := range g.fired {
		all = all && f
	}
	if all {
		r.QuasiLive = ptr(true)
	}
	r.DeadTransitions = nil
}

func (g *explorer) deadlocks(r *Result) {
	for _, id := range g.dead {
		seq := []string{}
		for _, t := range g.path(int(id)) {
			seq = append(seq, g.net.Transitions[t].ID)
		}
		r.Deadlocks = append(r.Deadlocks, seq)
		r.DeadlockMarkings = append(r.DeadlockMarkings, g.markingMap(int(id)))
	}
}

func (g *explorer) markingMap(id int) map[string]int {
	m := make([]int32, g.places)
	g.unpack(id, m)
	out := map[string]int{}
	for i, v := range m {
		if v != 0 {
			out[g.net.Places[i].ID] = int(v)
		}
	}
	return out
}
