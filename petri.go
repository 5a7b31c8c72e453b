package veena

import (
	"context"
	"sync"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/translate"
)

// Petri nets run on their own firing kernel (package petri) over the same
// graph model, store and API: a net's graph is prepared by compiling its
// net, not by the token kernel.

// prepareGraph readies a graph for the runtime of its format (once).
func (e *Engine) prepareGraph(g *graph.Graph) error {
	if g.Format == pnml.Format {
		_, err := petri.Prepare(g)
		return err
	}
	return e.k.Prepare(g)
}

// AnalyseOptions tune AnalyseDefinition.
type AnalyseOptions struct {
	// MaxStates stops the exploration after this many states (default
	// analysis.DefaultMaxStates).
	MaxStates int
}

// Analysis is what the analysis of a definition found (see
// translate.Report): for a Petri net, its own state space; for a process
// graph of another format, its translation's.
type Analysis = translate.Report

// AnalyseDefinition explores the state space of a definition version (0:
// the latest) and answers the standard questions about it: boundedness,
// deadlocks with a shortest firing sequence, dead transitions, liveness,
// reversibility, soundness, and for process graphs whether an AND join can
// wait for ever.
//
// Explorations run one at a time per engine (an exploration may take
// hundreds of megabytes); the last few results are kept, a definition
// version never changing.
func (e *Engine) AnalyseDefinition(ctx context.Context, name string, version int, opts AnalyseOptions) (*Analysis, error) {
	g, err := e.definitionGraph(ctx, name, version)
	if err != nil {
		return nil, err
	}
	if opts.MaxStates <= 0 {
		opts.MaxStates = analysis.DefaultMaxStates
	}
	if opts.MaxStates > MaxAnalysisStates {
		return nil, invalid("maxStates %d is more than %d", opts.MaxStates, MaxAnalysisStates)
	}
	key := analysisKey{name: g.Name, version: g.Version, max: opts.MaxStates}
	if rep := e.analyses.get(key); rep != nil {
		return rep, nil
	}
	select {
	case e.analysing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.analysing }()
	if rep := e.analyses.get(key); rep != nil {
		return rep, nil
	}
	rep, err := translate.Analyze(g, analysis.Options{MaxStates: opts.MaxStates})
	if err != nil {
		return nil, definitionError(err)
	}
	e.analyses.put(key, rep)
	return rep, nil
}

// MaxAnalysisStates is the largest state limit AnalyseDefinition accepts.
const MaxAnalysisStates = 20_000_000

type analysisKey struct {
	name         string
	version, max int
}

// analysisCache keeps the last results of AnalyseDefinition.
type analysisCache struct {
	mu    sync.Mutex
	keys  []analysisKey
	items map[analysisKey]*Analysis
}

const analysesKept = 32

func (c *analysisCache) get(k analysisKey) *Analysis {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[k]
}

func (c *analysisCache) put(k analysisKey, a *Analysis) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[analysisKey]*Analysis{}
	}
	if _, ok := c.items[k]; ok {
		return
	}
	if len(c.keys) == analysesKept {
		delete(c.items, c.keys[0])
		c.keys = c.keys[1:]
	}
	c.keys = append(c.keys, k)
	c.items[k] = a
}

// NetView is a Petri net definition as the API shows it, for drawing and
// for clients that fire transitions and send events.
type NetView struct {
	// Driven: the net drives work (it has an action or an activity), so
	// its transitions without an event fire by themselves.
	Driven      bool            `json:"driven"`
	Places      []NetPlace      `json:"places"`
	Transitions []NetTransition `json:"transitions"`
	Arcs        []NetArc        `json:"arcs"`
}

// NetPlace is a place of a net.
type NetPlace struct {
	ID        string `json:"id"`
	Label     string `json:"label,omitempty"`
	Initial   int    `json:"initial"`
	Capacity  int    `json:"capacity,omitempty"`
	Activity  string `json:"activity,omitempty"` // the activity annotation, canonical
	JobType   string `json:"jobType,omitempty"`  // the type of the jobs it offers
	Generated bool   `json:"generated,omitempty"`
	X         int    `json:"x"`
	Y         int    `json:"y"`
}

// NetTransition is a transition of a net.
type NetTransition struct {
	ID         string `json:"id"`
	Label      string `json:"label,omitempty"`
	Event      string `json:"event,omitempty"`  // the event annotation, canonical
	Action     string `json:"action,omitempty"` // the action annotation, canonical
	Autonomous bool   `json:"autonomous"`       // fires by itself when enabled
	X          int    `json:"x"`
	Y          int    `json:"y"`
}

// NetArc is an arc of a net.
type NetArc struct {
	ID        string   `json:"id"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Weight    int      `json:"weight"`
	Inhibitor bool     `json:"inhibitor,omitempty"`
	Codes     []string `json:"codes,omitempty"`
	Generated bool     `json:"generated,omitempty"`
	Points    [][2]int `json:"points,omitempty"`
}

// netViewOf renders a Petri net graph, nil for other formats.
func netViewOf(g *graph.Graph) *NetView {
	n := petri.Compiled(g)
	if n == nil {
		return nil
	}
	v := &NetView{Driven: n.Driven, Places: []NetPlace{}, Transitions: []NetTransition{}, Arcs: []NetArc{}}
	for _, p := range n.Places {
		x := NetPlace{ID: p.ID, Label: p.Label, Initial: p.Initial, Capacity: p.Capacity, Generated: p.Generated, X: p.Node.X, Y: p.Node.Y}
		if p.Activity != nil {
			x.Activity, x.JobType = p.Activity.String(), p.Activity.Name
		}
		v.Places = append(v.Places, x)
	}
	for _, t := range n.Transitions {
		x := NetTransition{ID: t.ID, Label: t.Label, Autonomous: n.Autonomous(t), X: t.Node.X, Y: t.Node.Y}
		if t.Event != nil {
			x.Event = t.Event.String()
		}
		if t.Action != nil {
			x.Action = t.Action.String()
		}
		v.Transitions = append(v.Transitions, x)
	}
	for _, a := range g.Arcs {
		x := NetArc{ID: a.Name, From: a.From.Name, To: a.To.Name, Weight: 1}
		if p, ok := a.Props.(*petri.ArcProps); ok {
			x.Weight, x.Inhibitor, x.Codes, x.Generated, x.Points = p.Weight, p.Inhibitor, p.Codes, p.Generated, p.Points
		}
		v.Arcs = append(v.Arcs, x)
	}
	return v
}
