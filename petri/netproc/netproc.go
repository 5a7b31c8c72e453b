// Package netproc runs Petri net processes on the kernel: the marking
// kernel (package petri) decides what fires; the kernel holds the process,
// its environment (the net's variables), its events and the node tokens
// that hold outside work, so that net processes are stored, queued,
// resumed, cancelled and audited like every other process, and their
// activities are jobs of the work layer.
//
// A net process keeps its state (marking, activities, deferrals, blocked
// transitions) in Process.Ext. A running activity is an active node token
// on its place holding the job; a transition whose action failed is a
// token on the transition holding an incident; a deferred action is a
// token on the transition whose wake is the deferral's time. The process
// completes when no transition is enabled and no activity runs.
package netproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri"
)

// Format is the format of Petri net graphs.
const Format = "pnml"

// Token notes.
const (
	noteActivity = "activity" // the activity id a place token holds the job of
	noteJob      = "job"      // the sequence number of its JOB_CREATED event
	noteRole     = "role"     // "incident" or "deferral" on a transition token
)

// Errors of net commands, with the API's codes.
var (
	ErrNotANet           = &kernel.Error{Code: "not_a_net", Msg: "the process is not a Petri net process"}
	ErrTransitionUnknown = &kernel.Error{Code: "not_found", Msg: "no such transition"}
	ErrNotEnabled        = &kernel.Error{Code: "transition_not_enabled", Msg: "the transition is not enabled"}
	ErrActionFailed      = &kernel.Error{Code: "action_failed", Msg: "the transition's action failed"}
	ErrBudget            = &kernel.Error{Code: "step_budget_exceeded", Msg: "the step fired more transitions than its budget allows"}
)

// Runtime runs net processes: register it on a kernel, then start
// processes with the kernel's StartWith and send them commands with its
// methods inside kernel commands.
type Runtime struct {
	mu      sync.RWMutex
	actions map[string]petri.ActionFunc
	// Budget is how many transitions one step may fire (0: petri.DefaultBudget).
	Budget int
}

// New returns a runtime with the built-in actions.
func New() *Runtime { return &Runtime{actions: map[string]petri.ActionFunc{}} }

// RegisterAction makes an action available to transitions annotated
// "/name(…)"; it replaces a built-in of that name.
func (r *Runtime) RegisterAction(name string, f petri.ActionFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions[name] = f
}

func (r *Runtime) action(name string) (petri.ActionFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.actions[name]
	return f, ok
}

// Register installs the runtime on a kernel: the node types "place" and
// "transition" and the process runner of the pnml format.
func (r *Runtime) Register(k *kernel.Kernel) {
	k.RegisterNodeType(petri.KindPlace, func(n *graph.Node) (kernel.NodeType, error) {
		if n.Kind != petri.KindPlace {
			return nil, fmt.Errorf("node type %s is for the places of Petri nets", petri.KindPlace)
		}
		return &placeType{r: r}, nil
	})
	k.RegisterNodeType(petri.KindTransition, func(n *graph.Node) (kernel.NodeType, error) {
		if n.Kind != petri.KindTransition {
			return nil, fmt.Errorf("node type %s is for the transitions of Petri nets", petri.KindTransition)
		}
		return &transitionType{r: r}, nil
	})
	k.RegisterProcessRunner(Format, r)
}

// state is a net process's Ext.
type state struct {
	petri.State
}

// EncodeExt implements kernel.Extension.
func (s *state) EncodeExt() ([]byte, error) { return json.Marshal(&s.State) }

// stateOf returns the state of a net process, decoding it once.
func stateOf(p *kernel.Process) (*state, error) {
	if s, ok := p.Ext.(*state); ok {
		return s, nil
	}
	if p.Ext != nil {
		return nil, fmt.Errorf("%w: process %s holds %T", ErrNotANet, p.ID, p.Ext)
	}
	n := petri.Compiled(p.Graph)
	if n == nil {
		return nil, &kernel.Error{Code: ErrNotANet.Code, Msg: fmt.Sprintf("process %s of %s is not a Petri net process", p.ID, p.Graph)}
	}
	s := &state{}
	if len(p.ExtData) == 0 {
		s.State = *n.NewState()
	} else if err := json.Unmarshal(p.ExtData, &s.State); err != nil {
		return nil, fmt.Errorf("process %s: decode its marking: %w", p.ID, err)
	}
	if len(s.Marking) != len(n.Places) {
		return nil, fmt.Errorf("process %s: a marking of %d places for a net of %d", p.ID, len(s.Marking), len(n.Places))
	}
	p.Ext, p.ExtData = s, nil
	return s, nil
}

func (r *Runtime) machine(n *petri.Net) *petri.Machine {
	return &petri.Machine{Net: n, Actions: r.action, Budget: r.Budget}
}

// step runs one command of the marking kernel on p, inside a kernel
// command: it works on a copy of the state (the kernel keeps the old one
// to give back if the command fails), writes the variables back into the
// environment, and turns what the step did into tokens, jobs, incidents,
// wakes and events.
func (r *Runtime) step(ke *kernel.Engine, p *kernel.Process, fn func(st *petri.Step) error) error {
	return ke.Run(p, func() {
		if p.State != kernel.Executing {
			ke.Fail(&kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not executing", p.ID, p.State)})
		}
		old, err := stateOf(p)
		if err != nil {
			ke.Fail(err)
		}
		n := petri.Compiled(p.Graph)
		s := &state{State: *old.State.Clone()}
		ke.SetExt(p, s)
		before := p.Env.Map()
		vars := maps.Clone(before)
		st := r.machine(n).Begin(&s.State, vars, ke.Now(), p.ID)
		if err := fn(st); err != nil {
			ke.Fail(mapError(err))
		}
		for k, v := range vars {
			if was, ok := before[k]; !ok || was != v {
				p.Env.Set(k, v)
			}
		}
		for k := range before {
			if _, ok := vars[k]; !ok {
				p.Env.Remove(k)
			}
		}
		if err := r.apply(ke, p, n, s, st); err != nil {
			ke.Fail(err)
		}
		if err := ke.Settle(p); err != nil {
			ke.Fail(err)
		}
	})
}

func mapError(err error) error {
	var ke *kernel.Error
	switch {
	case errors.As(err, &ke):
		return err
	case errors.Is(err, petri.ErrNotEnabled):
		return &kernel.Error{Code: ErrNotEnabled.Code, Msg: err.Error(), Err: err}
	case errors.Is(err, petri.ErrActionFailed):
		return &kernel.Error{Code: ErrActionFailed.Code, Msg: err.Error(), Err: err}
	case errors.Is(err, petri.ErrBudget):
		return &kernel.Error{Code: ErrBudget.Code, Msg: err.Error(), Err: err}
	case errors.Is(err, petri.ErrNoActivity):
		return &kernel.Error{Code: kernel.ErrTokenComplete.Code, Msg: err.Error(), Err: err}
	}
	return err
}

// apply turns the effects of a step into events and tokens: first the
// events (what fired, in order), then the tokens it starts (activities'
// jobs, incidents, wakes), then the tokens it ends, so that a process the
// step leaves done completes at the end, with everything recorded.
func (r *Runtime) apply(ke *kernel.Engine, p *kernel.Process, n *petri.Net, s *state, st *petri.Step) error {
	for _, ef := range st.Effects {
		var typ kernel.EventType
		var name string
		switch ef.Kind {
		case petri.Fired:
			typ, name = kernel.TransitionFired, n.Transitions[ef.Transition].ID
		case petri.ActionDone:
			typ, name = kernel.ActionCompleted, n.Transitions[ef.Transition].ID
		case petri.Ignored:
			typ, name = kernel.EventIgnored, ef.Event
		default:
			continue
		}
		if _, err := ke.FireNamed(p, typ, nil, []string{name}); err != nil {
			return err
		}
	}
	for _, ef := range st.Effects {
		switch ef.Kind {
		case petri.StartActivity:
			place := n.Places[ef.Activity.Place].Node
			t, err := ke.CreateToken(p, place, nil, nil, map[string]string{noteActivity: strconv.Itoa(ef.Activity.ID)})
			if err != nil {
				return err
			}
			ef.Activity.Ref = t.ID
		case petri.OpenIncident:
			b := blockedOf(&s.State, ef.Transition)
			if b == nil {
				continue
			}
			tr := n.Transitions[ef.Transition]
			t, err := ke.CreateToken(p, tr.Node, nil, nil, map[string]string{noteRole: "incident"})
			if err != nil {
				return err
			}
			if err := ke.RaiseIncident(t, kernel.IncidentSpec{Kind: "action_failed", Message: fmt.Sprintf("action %s of transition %s: %s", tr.Action, tr.ID, ef.Message)}); err != nil {
				return err
			}
			b.Ref = t.ID
		case petri.SetTimer:
			d := deferralOf(&s.State, ef.Transition)
			if d == nil || d.Ref >= 0 {
				continue
			}
			t, err := ke.CreateToken(p, n.Transitions[ef.Transition].Node, nil, nil, map[string]string{noteRole: "deferral"})
			if err != nil {
				return err
			}
			d.Ref = t.ID
		}
	}
	for _, ef := range st.Effects {
		switch ef.Kind {
		case petri.CloseIncident, petri.DropTimer:
			if err := endToken(ke, p, ef.Ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// endToken ends a token of the runtime's (a deferral's or an incident's)
// that may have ended already.
func endToken(ke *kernel.Engine, p *kernel.Process, ref int) error {
	if ref < 0 || ref >= len(p.NodeTokens) {
		return nil
	}
	t := p.NodeTokens[ref]
	if t.Complete || !t.Active() {
		return nil
	}
	return ke.Withdraw(t)
}

func blockedOf(s *petri.State, t int) *petri.Blocked {
	for _, b := range s.Blocked {
		if b.Transition == t {
			return b
		}
	}
	return nil
}

func deferralOf(s *petri.State, t int) *petri.Deferral {
	for _, d := range s.Deferred {
		if d.Transition == t {
			return d
		}
	}
	return nil
}

// Begin implements kernel.ProcessRunner: the activities of initially
// marked places start and transitions that fire by themselves fire.
func (r *Runtime) Begin(ke *kernel.Engine, p *kernel.Process) error {
	return r.step(ke, p, func(st *petri.Step) error { return st.Start() })
}

// Done implements kernel.ProcessRunner: a net process is done when no
// transition is enabled and no activity runs.
func (r *Runtime) Done(p *kernel.Process) bool {
	s, err := stateOf(p)
	if err != nil {
		return true
	}
	st := r.machine(petri.Compiled(p.Graph)).Begin(&s.State, nil, p.UpdatedAt, p.ID)
	return st.Done()
}

// Fire fires one transition of p, by id, if it is enabled.
func (r *Runtime) Fire(ke *kernel.Engine, p *kernel.Process, transition string) error {
	n := petri.Compiled(p.Graph)
	if n == nil {
		return &kernel.Error{Code: ErrNotANet.Code, Msg: fmt.Sprintf("process %s of %s is not a Petri net process", p.ID, p.Graph)}
	}
	t := n.Transition(transition)
	if t < 0 {
		return &kernel.Error{Code: ErrTransitionUnknown.Code, Msg: fmt.Sprintf("net %s has no transition %q", n.Name, transition)}
	}
	return r.step(ke, p, func(st *petri.Step) error {
		if err := st.Fire(t); errors.Is(err, petri.ErrNotEnabled) {
			return &kernel.Error{Code: ErrNotEnabled.Code, Msg: fmt.Sprintf("transition %s is not enabled", transition)}
		} else if err != nil {
			return err
		}
		return nil
	})
}

// Event delivers an event to p and returns the ids of the transitions it
// fired (none: the event was ignored and recorded so).
func (r *Runtime) Event(ke *kernel.Engine, p *kernel.Process, name string, args map[string]kernel.Value) ([]string, error) {
	n := petri.Compiled(p.Graph)
	if n == nil {
		return nil, &kernel.Error{Code: ErrNotANet.Code, Msg: fmt.Sprintf("process %s of %s is not a Petri net process", p.ID, p.Graph)}
	}
	var fired []string
	err := r.step(ke, p, func(st *petri.Step) error {
		ts, err := st.Event(name, args)
		fired = fired[:0]
		for _, t := range ts {
			fired = append(fired, n.Transitions[t].ID)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if fired == nil {
		fired = []string{}
	}
	return fired, nil
}

// Intermediate delivers an intermediate result of the activity whose job
// token t holds: its code chooses the arcs, the activity runs on.
func (r *Runtime) Intermediate(ke *kernel.Engine, t *kernel.NodeToken, code string, env map[string]kernel.Value) error {
	id, err := activityOf(t)
	if err != nil {
		return err
	}
	p := t.Process
	return r.step(ke, p, func(st *petri.Step) error {
		maps.Copy(st.Vars, env)
		return st.Deliver(id, code, false)
	})
}

func activityOf(t *kernel.NodeToken) (int, error) {
	id, err := strconv.Atoi(t.Note(noteActivity))
	if err != nil {
		return 0, &kernel.Error{Code: kernel.ErrInvalidArgument.Code, Msg: fmt.Sprintf("node token %s holds no activity", t.Label())}
	}
	return id, nil
}

// placeType is the node type of places: a token created on a place holds
// the job of the place's activity.
type placeType struct{ r *Runtime }

// Execute offers the activity's job: its type is the activity's name, its
// variables the values of its arguments.
func (pt *placeType) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	if t.Note(noteActivity) == "" {
		return nil
	}
	n := petri.Compiled(t.Process.Graph)
	place := n.Places[n.Place(t.Node.Name)]
	if place.Activity == nil {
		return nil
	}
	env := map[string]kernel.Value{}
	for _, a := range place.Activity.Args {
		if v, ok := t.Process.Env.Get(a.Name); ok {
			env[a.Name] = v
		}
	}
	headers := map[string]string{"place": place.ID, "activity": place.Activity.String()}
	if err := e.OfferJob(t, kernel.JobSpec{Type: place.Activity.Name, Headers: headers, Env: env}); err != nil {
		return err
	}
	e.SetNote(t, noteJob, strconv.FormatInt(t.Process.EventSeq, 10))
	return nil
}

// CompleteWork takes the end of an activity's job: the worker's variables
// go into the net's, the result code is the activity's final result, and
// the token that held the job ends.
func (pt *placeType) CompleteWork(e *kernel.Engine, t *kernel.NodeToken, held kernel.WorkFlags, res kernel.WorkResult) error {
	id, err := activityOf(t)
	if err != nil {
		return err
	}
	p := t.Process
	if err := pt.r.step(e, p, func(st *petri.Step) error {
		maps.Copy(st.Vars, res.Env)
		return st.Deliver(id, res.Result, true)
	}); err != nil {
		return err
	}
	if t.Active() && !t.Complete {
		return e.Withdraw(t)
	}
	return nil
}

// IsBacktrackable refuses backtracking: a net process goes where its
// marking takes it.
func (pt *placeType) IsBacktrackable(e *kernel.Engine, t *kernel.NodeToken) bool { return false }

// Backtrack is never called (IsBacktrackable refuses).
func (pt *placeType) Backtrack(e *kernel.Engine, t *kernel.NodeToken) error { return nil }

// transitionType is the node type of transitions: a token on a transition
// holds the incident of its failed action, or waits for its deferral.
type transitionType struct{ r *Runtime }

func (tt *transitionType) Execute(e *kernel.Engine, t *kernel.NodeToken) error { return nil }

func (tt *transitionType) transition(t *kernel.NodeToken) int {
	return petri.Compiled(t.Process.Graph).Transition(t.Node.Name)
}

// ResolveIncident lifts the block of the transition whose action failed and
// tries it again; a failure again fails the command.
func (tt *transitionType) ResolveIncident(e *kernel.Engine, t *kernel.NodeToken, kind string) error {
	tr := tt.transition(t)
	if err := tt.r.step(e, t.Process, func(st *petri.Step) error { return st.Resolve(tr) }); err != nil {
		return err
	}
	if t.Active() && !t.Complete {
		return e.Withdraw(t)
	}
	return nil
}

// Wake implements kernel.Waker: a deferral token wakes at its time.
func (tt *transitionType) Wake(t *kernel.NodeToken) *kernel.Wake {
	if t.Note(noteRole) != "deferral" {
		return nil
	}
	s, err := stateOf(t.Process)
	if err != nil {
		return nil
	}
	for _, d := range s.Deferred {
		if d.Ref == t.ID {
			return &kernel.Wake{Key: "deferral " + strconv.Itoa(d.Count), Due: d.Until}
		}
	}
	return nil
}

// Woken tries the deferred transition again.
func (tt *transitionType) Woken(e *kernel.Engine, t *kernel.NodeToken, res kernel.WakeResult) error {
	tr := tt.transition(t)
	return tt.r.step(e, t.Process, func(st *petri.Step) error { return st.Retry(tr) })
}

// IsBacktrackable refuses backtracking.
func (tt *transitionType) IsBacktrackable(e *kernel.Engine, t *kernel.NodeToken) bool { return false }

// Backtrack is never called.
func (tt *transitionType) Backtrack(e *kernel.Engine, t *kernel.NodeToken) error { return nil }

// Activity is a running activity as a marking shows it.
type Activity struct {
	Place string
	Token int    // the node token that holds its job
	Job   int64  // the sequence number of its JOB_CREATED event (0: none yet)
	State string // "running", or "done" once its final result came while its token waits
}

// Marking is what a net process looks like now.
type Marking struct {
	Places     map[string]int
	Enabled    []string
	Activities []Activity
	Deferred   map[string]int64 // transition -> due time (unix nanoseconds)
	Blocked    map[string]string
}

// View returns the marking of a net process, the transitions it enables
// and its running activities.
func (r *Runtime) View(p *kernel.Process) (*Marking, error) {
	s, err := stateOf(p)
	if err != nil {
		return nil, err
	}
	n := petri.Compiled(p.Graph)
	m := &Marking{Places: map[string]int{}, Enabled: []string{}, Activities: []Activity{}, Deferred: map[string]int64{}, Blocked: map[string]string{}}
	for i, c := range s.Marking {
		m.Places[n.Places[i].ID] = c
	}
	if p.State == kernel.Executing {
		st := r.machine(n).Begin(&s.State, nil, p.UpdatedAt, p.ID)
		for _, t := range st.EnabledTransitions() {
			m.Enabled = append(m.Enabled, n.Transitions[t].ID)
		}
	}
	for _, a := range s.Activities {
		if a.Ended {
			continue
		}
		x := Activity{Place: n.Places[a.Place].ID, Token: a.Ref, State: "running"}
		if a.Ref >= 0 && a.Ref < len(p.NodeTokens) {
			x.Job, _ = strconv.ParseInt(p.NodeTokens[a.Ref].Note(noteJob), 10, 64)
		}
		m.Activities = append(m.Activities, x)
	}
	for _, d := range s.Deferred {
		m.Deferred[n.Transitions[d.Transition].ID] = d.Until.UnixNano()
	}
	for _, b := range s.Blocked {
		m.Blocked[n.Transitions[b.Transition].ID] = b.Message
	}
	slices.SortFunc(m.Activities, func(a, b Activity) int { return a.Token - b.Token })
	return m, nil
}

// ErrNotByHand: the tokens of a net process are the runtime's; they move
// by firing, events and job results, not by completing them.
var ErrNotByHand = &kernel.Error{Code: kernel.ErrInvalidArgument.Code, Msg: "the tokens of a Petri net process are not completed by hand"}

func refuseByHand(t *kernel.NodeToken) error {
	what := "fire a transition, send an event"
	if t.Holds(kernel.HoldsJob) {
		what = "complete its job (POST /jobs/{id}/complete)"
	}
	return &kernel.Error{Code: ErrNotByHand.Code, Msg: fmt.Sprintf("node token %s belongs to a Petri net process: %s instead", t.Label(), what)}
}

// HandleComplete refuses: an activity's token ends with its job.
func (pt *placeType) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return refuseByHand(t)
}

// HandleComplete refuses: a transition's token ends with its incident or wake.
func (tt *transitionType) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return refuseByHand(t)
}
