package veena

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/annotation"
	"github.com/veena-wf/veena/petri/netproc"
	"github.com/veena-wf/veena/petri/translate"
)

// Petri nets run on their own firing kernel (package petri) over the same
// graph model, store and API: a net's graph is prepared by compiling its
// net, not by the token kernel.

// prepareGraph readies a graph for the runtime of its format (once).
func (e *Engine) prepareGraph(g *graph.Graph) error {
	if g.Format == pnml.Format {
		if _, err := petri.Prepare(g); err != nil {
			return err
		}
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

// netRuntime returns the Petri net runtime of a kernel, registering one if
// the kernel has none.
func netRuntime(k *kernel.Kernel) *netproc.Runtime {
	if r, ok := k.ProcessRunner(netproc.Format).(*netproc.Runtime); ok {
		return r
	}
	r := netproc.New()
	r.Register(k)
	return r
}

// RegisterAction makes a Go function the action of the transitions
// annotated "/name(…)" (or "event/name(…)"). It runs inside the step that
// fires the transition, with the step's time, and must be quick and
// transactional: Success fires the transition and keeps what it wrote to
// its binding arguments; Failure leaves the net as it was and opens an
// incident (action_failed) on the transition, tried again when it is
// resolved; Defer-by-N tries it again after N through a durable timer,
// telling it how often it was deferred before. Register actions before the
// engine runs commands; the built-ins are petri.Builtins.
func (e *Engine) RegisterAction(name string, f petri.ActionFunc) { e.nets.RegisterAction(name, f) }

// The ops of Petri net processes.
const (
	opFire      opKind = "fire"       // Node: the transition
	opNetEvent  opKind = "net_event"  // Node: the event's name; Env: its arguments
	opJobResult opKind = "job_result" // Args: an intermediate result of an activity's job
)

func (k opKind) isNet() bool { return k == opFire || k == opNetEvent || k == opJobResult }

// net runs a Petri net op on process p.
func (o *op) net(ke *kernel.Engine, p *kernel.Process, c *cmd, res *outcome) error {
	r, ok := ke.Kernel().ProcessRunner(netproc.Format).(*netproc.Runtime)
	if !ok {
		return &kernel.Error{Code: netproc.ErrNotANet.Code, Msg: "this engine runs no Petri nets"}
	}
	if petri.Compiled(p.Graph) == nil {
		return &kernel.Error{Code: netproc.ErrNotANet.Code, Msg: fmt.Sprintf("process %s of %s is not a Petri net process", p.ID, p.Graph)}
	}
	if p.State != kernel.Executing {
		return &kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not executing", p.ID, p.State)}
	}
	switch o.Kind {
	case opFire:
		return r.Fire(ke, p, o.Node)
	case opNetEvent:
		args := map[string]kernel.Value{}
		for k, v := range o.Env {
			if v != nil {
				args[k] = *v
			}
		}
		fired, err := r.Event(ke, p, o.Node, args)
		res.Fired = fired
		return err
	case opJobResult:
		a := o.Args
		if a == nil {
			return invalid("command %s has no arguments", o.Kind)
		}
		row, err := c.rows.Job(c.ctx, a.Work)
		if err != nil {
			return storeError("read job", err)
		}
		if row.Process != p.ID {
			return notFound("job %q", a.Work)
		}
		if !leasedBy(row, a.Worker) {
			return &kernel.Error{Code: ErrJobNotLeased.Code, Msg: fmt.Sprintf("job %s is %s and not leased to %s", row.ID, row.State, a.Worker)}
		}
		tok, err := activeToken(p, row.Token)
		if err != nil {
			return err
		}
		env := map[string]kernel.Value{}
		for k, v := range a.Data {
			if v != nil {
				env[k] = *v
			}
		}
		return r.Intermediate(ke, tok, a.Result, env)
	}
	return invalid("unknown command %q", o.Kind)
}

// FireTransition fires one transition of a net process if it is enabled
// (transition_not_enabled otherwise, and nothing changes), then lets the
// transitions that fire by themselves fire; it returns the process
// afterwards. It replays traces and drives nets without annotations.
func (e *Engine) FireTransition(ctx context.Context, processID, transition, idempotencyKey string) (*Process, error) {
	if transition == "" {
		return nil, invalid("name the transition to fire (transition)")
	}
	return e.onProcess(ctx, &op{Kind: opFire, Process: processID, Node: transition}, idempotencyKey)
}

// TransitionEventResult is what an event did to a net process.
type TransitionEventResult struct {
	Fired   []string `json:"fired"`
	Process *Process `json:"process"`
}

// SendTransitionEvent delivers an event (seed 003) to a net process: the
// enabled transitions whose event annotation welcomes it fire, in document
// order, each if still enabled (match-all). A value argument x welcomes it
// when args[x] equals the variable x; a binding argument &x copies args[x]
// into x. An event no transition takes is recorded (EVENT_IGNORED).
func (e *Engine) SendTransitionEvent(ctx context.Context, processID, name string, args map[string]any, idempotencyKey string) (*TransitionEventResult, error) {
	ev, err := eventName(name)
	if err != nil {
		return nil, err
	}
	vals, err := valuesOf(args)
	if err != nil {
		return nil, err
	}
	for k, v := range vals {
		if v == nil {
			return nil, invalid("event argument %s is null", k)
		}
	}
	out, err := e.submit(ctx, &op{Kind: opNetEvent, Process: processID, Node: ev, Env: vals}, idempotencyKey)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	fired := out.Fired
	if fired == nil {
		fired = []string{}
	}
	return &TransitionEventResult{Fired: fired, Process: out.Process}, nil
}

// eventName reads an event's name: "dawn" or "dawn()".
func eventName(s string) (string, error) {
	name := strings.TrimSpace(s)
	name = strings.TrimSuffix(name, "()")
	name = strings.TrimSpace(name)
	if !annotation.IsIdentifier(name) {
		return "", invalid("event name %q: want an identifier (a letter or _, then letters, digits or _), optionally followed by ()", s)
	}
	return name, nil
}

// JobResultRequest reports an intermediate result of a Petri net
// activity's job: the code chooses the arcs of the activity's place, Env
// goes into the net's variables, and the job runs on.
type JobResultRequest struct {
	Worker         string
	Result         string
	Env            map[string]any
	IdempotencyKey string
}

// ReportJobResult delivers an intermediate result of an activity with
// several outputs (seed 003): its token carries the code until a transition
// takes it; the job stays leased to the worker, who completes it when the
// activity ends.
func (e *Engine) ReportJobResult(ctx context.Context, jobID string, req JobResultRequest) (*Process, error) {
	env, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	out, err := e.jobOp(ctx, opJobResult, jobID, workArgs{Worker: req.Worker, Data: env, Result: req.Result}, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, errors.New("job result had no process")
	}
	return out.Process, nil
}

// Marking is a net process's marking as the API shows it.
type Marking struct {
	Places     map[string]int    `json:"places"`
	Enabled    []string          `json:"enabled"`
	Variables  map[string]Value  `json:"variables"`
	Activities []MarkingActivity `json:"activities"`
	Deferred   map[string]string `json:"deferred,omitempty"` // transition -> when its action is tried again (RFC 3339)
	Blocked    map[string]string `json:"blocked,omitempty"`  // transition -> why its action failed (an incident is open)
	State      string            `json:"state"`
}

// MarkingActivity is a running activity of a net process.
type MarkingActivity struct {
	Place     string `json:"place"`
	Job       string `json:"job"`
	NodeToken string `json:"nodeToken"`
	State     string `json:"state"`
}

// NetMarking returns the marking of a net process: tokens per place, the
// enabled transitions, the variables and the running activities.
func (e *Engine) NetMarking(ctx context.Context, processID string) (*Marking, error) {
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	if petri.Compiled(p.Graph) == nil {
		return nil, &kernel.Error{Code: netproc.ErrNotANet.Code, Msg: fmt.Sprintf("process %s of %s is not a Petri net process", p.ID, p.Graph)}
	}
	v, err := e.nets.View(p)
	if err != nil {
		return nil, err
	}
	m := &Marking{Places: v.Places, Enabled: v.Enabled, Variables: p.Env.Map(), Activities: []MarkingActivity{}, State: p.State.String()}
	for _, a := range v.Activities {
		x := MarkingActivity{Place: a.Place, NodeToken: nodeTokenID(p.ID, a.Token), State: a.State}
		if a.Job > 0 {
			x.Job = workID(p.ID, 'j', a.Job)
		}
		m.Activities = append(m.Activities, x)
	}
	for t, due := range v.Deferred {
		if m.Deferred == nil {
			m.Deferred = map[string]string{}
		}
		m.Deferred[t] = time.Unix(0, due).UTC().Format(time.RFC3339Nano)
	}
	if len(v.Blocked) > 0 {
		m.Blocked = v.Blocked
	}
	return m, nil
}
