package petri

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// State is what a net process is between two steps: its marking, the
// activities that run on its places, and the transitions whose action
// deferred or failed. Its variables are kept by the caller (the process
// environment) and passed to each step.
type State struct {
	Marking    Marking
	Activities []*Activity // in the order they started
	Deferred   []*Deferral
	Blocked    []*Blocked
	NextID     int // the next activity's id
}

// TokenState is where an activity's token is.
type TokenState uint8

// The states of an activity's token.
const (
	// Busy: the token sits in the place while the activity runs; no
	// transition may take it.
	Busy TokenState = iota
	// Released: the activity delivered a result; the token carries its
	// code and the arcs that take that code may take it.
	Released
	// Gone: a transition took the token after an intermediate result; the
	// activity runs on and takes the next token that enters its place.
	Gone
)

// Activity is the work on a place started by a token entering it.
type Activity struct {
	ID    int
	Place int
	Token TokenState
	Code  string // the result code the token carries while Released
	Ended bool   // the final result came (the token may still wait to be taken)
	// Queue holds results that came while the activity did not hold its
	// token; each is delivered when the token is back.
	Queue []Delivery
	// Ref is the caller's handle on the activity (the node token that
	// holds its job).
	Ref int
}

// Delivery is a result an activity reports: a code, and whether it ends
// the activity.
type Delivery struct {
	Code  string
	Final bool
}

// Deferral is a transition whose action asked to be tried again later.
type Deferral struct {
	Transition int
	Until      time.Time
	Count      int           // deferrals of this firing so far
	First      time.Time     // when the first was asked for
	Last       time.Duration // the delay the last one asked for
	// Event and Args: the event the firing answers, if it answers one.
	Event string
	Args  map[string]Value
	Ref   int // the caller's handle (the node token that holds the timer)
}

// Blocked is a transition whose action failed: it is not tried again
// until the incident is resolved.
type Blocked struct {
	Transition int
	Message    string
	Ref        int // the caller's handle (the node token that holds the incident)
}

// NewState is the state of a new process of the net: its initial marking
// (the activities of initially marked places start with the first step).
func (n *Net) NewState() *State {
	return &State{Marking: n.InitialMarking()}
}

// Clone copies the state deeply.
func (s *State) Clone() *State {
	c := &State{Marking: s.Marking.Clone(), NextID: s.NextID}
	for _, a := range s.Activities {
		x := *a
		x.Queue = slices.Clone(a.Queue)
		c.Activities = append(c.Activities, &x)
	}
	for _, d := range s.Deferred {
		x := *d
		c.Deferred = append(c.Deferred, &x)
	}
	for _, b := range s.Blocked {
		x := *b
		c.Blocked = append(c.Blocked, &x)
	}
	return c
}

// Running reports whether some activity runs (has not ended).
func (s *State) Running() bool {
	for _, a := range s.Activities {
		if !a.Ended {
			return true
		}
	}
	return false
}

// Activity returns the activity with that id, or nil.
func (s *State) Activity(id int) *Activity {
	for _, a := range s.Activities {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func (s *State) deferral(t int) *Deferral {
	for _, d := range s.Deferred {
		if d.Transition == t {
			return d
		}
	}
	return nil
}

func (s *State) blocked(t int) *Blocked {
	for _, b := range s.Blocked {
		if b.Transition == t {
			return b
		}
	}
	return nil
}

// Errors of commands on a net process.
var (
	// ErrNotEnabled: the transition to fire is not enabled.
	ErrNotEnabled = errors.New("transition not enabled")
	// ErrBudget: the step fired more transitions than its budget allows.
	ErrBudget = errors.New("step budget exceeded")
	// ErrActionFailed: the action of a transition fired by command failed.
	ErrActionFailed = errors.New("action failed")
	// ErrNoActivity: no running activity has that id.
	ErrNoActivity = errors.New("no such activity")
)

// DefaultBudget is how many transitions one step may fire.
const DefaultBudget = 10_000

// EffectKind is what an effect asks of the caller.
type EffectKind uint8

// The effects of a step.
const (
	// StartActivity: offer the activity's work (Effect.Activity).
	StartActivity EffectKind = iota + 1
	// EndActivity: the activity ended (its final result came).
	EndActivity
	// OpenIncident: the transition's action failed (Effect.Message);
	// the caller sets Blocked.Ref.
	OpenIncident
	// SetTimer: the transition's action deferred until Effect.Until; the
	// caller sets Deferral.Ref.
	SetTimer
	// DropTimer: the deferral of Effect.Transition is over (the transition
	// fired or is no longer enabled); Effect.Ref is its handle.
	DropTimer
	// Fired: Effect.Transition fired (Effect.Event names the event it
	// answered, if any).
	Fired
	// ActionDone: the action of Effect.Transition succeeded.
	ActionDone
	// Ignored: the event Effect.Event was welcomed by no enabled transition.
	Ignored
	// CloseIncident: the blocked transition Effect.Transition fired by
	// command after all; Effect.Ref is the incident's handle.
	CloseIncident
)

// Effect is something a step did that the caller records or acts on, in
// order.
type Effect struct {
	Kind       EffectKind
	Transition int
	Activity   *Activity
	Message    string
	Until      time.Time
	Event      string
	Ref        int
}

// Machine runs net processes: it fires transitions by the firing rule,
// calls actions, starts activities and takes their results. It holds no
// process state; each command works on a State.
type Machine struct {
	Net     *Net
	Actions Actions // nil: the built-ins only
	Budget  int     // transitions one step may fire (0: DefaultBudget)
}

// Step is one command on one process: the state it changes in place, the
// variables, the time, and what it did.
type Step struct {
	m       *Machine
	State   *State
	Vars    map[string]Value // changed in place
	Now     time.Time
	Process string
	Effects []Effect
	Fired   []int // transitions fired, in order
	failed  map[int]bool
}

// Begin starts a step on a process's state.
func (m *Machine) Begin(s *State, vars map[string]Value, now time.Time, process string) *Step {
	if vars == nil {
		vars = map[string]Value{}
	}
	return &Step{m: m, State: s, Vars: vars, Now: now, Process: process, failed: map[int]bool{}}
}

func (st *Step) effect(e Effect) { st.Effects = append(st.Effects, e) }

func (m *Machine) budget() int {
	if m.Budget > 0 {
		return m.Budget
	}
	return DefaultBudget
}

// Start runs a new process's first step: activities on initially marked
// places start, then transitions that fire by themselves fire.
func (st *Step) Start() error {
	for p, c := range st.State.Marking {
		if st.m.Net.Places[p].Activity != nil {
			for range c {
				st.enter(p)
			}
		}
	}
	return st.settle()
}

// accepts reports whether an arc taking codes takes a token with code of
// place p.
func (n *Net) accepts(p int, codes []string, code string) bool {
	if len(codes) > 0 {
		return slices.Contains(codes, code)
	}
	return !n.Places[p].Named[code]
}

// available counts the tokens of place p an input arc with codes may take.
func (st *Step) available(p int, codes []string) int {
	n := st.m.Net
	if n.Places[p].Activity == nil {
		return st.State.Marking[p]
	}
	c := 0
	for _, a := range st.State.Activities {
		if a.Place == p && a.Token == Released && n.accepts(p, codes, a.Code) {
			c++
		}
	}
	return c
}

// Enabled reports whether transition t may fire: the firing rule, and for
// arcs from an activity's place, enough released tokens whose result code
// the arc takes.
func (st *Step) Enabled(t int) bool {
	n := st.m.Net
	if !n.Enabled(st.State.Marking, t) {
		return false
	}
	tr := n.Transitions[t]
	for i, a := range tr.In {
		if n.Places[a.Place].Activity == nil {
			continue
		}
		// Arcs of one place with different codes take different tokens:
		// count what the arcs before this one took.
		need := a.Weight
		taken := map[*Activity]bool{}
		for _, b := range tr.In[:i] {
			if b.Place == a.Place {
				st.pick(b, taken)
			}
		}
		have := 0
		for _, x := range st.State.Activities {
			if x.Place == a.Place && x.Token == Released && !taken[x] && n.accepts(a.Place, a.Codes, x.Code) {
				have++
			}
		}
		if have < need {
			return false
		}
	}
	return true
}

// pick chooses the tokens arc a takes (oldest activities first) into taken.
func (st *Step) pick(a Arc, taken map[*Activity]bool) []*Activity {
	n := st.m.Net
	var out []*Activity
	for _, x := range st.State.Activities {
		if len(out) == a.Weight {
			break
		}
		if x.Place == a.Place && x.Token == Released && !taken[x] && n.accepts(a.Place, a.Codes, x.Code) {
			taken[x] = true
			out = append(out, x)
		}
	}
	return out
}

// EnabledTransitions lists the enabled transitions in document order.
func (st *Step) EnabledTransitions() []int {
	var out []int
	for t := range st.m.Net.Transitions {
		if st.Enabled(t) {
			out = append(out, t)
		}
	}
	return out
}

// fire fires an enabled transition: takes its input tokens (released
// activity tokens chosen oldest first), gives its output tokens (starting
// or resuming activities) and records it.
func (st *Step) fire(t int, event string) {
	n := st.m.Net
	tr := n.Transitions[t]
	taken := map[*Activity]bool{}
	for _, a := range tr.In {
		if n.Places[a.Place].Activity == nil {
			continue
		}
		for _, x := range st.pick(a, taken) {
			if x.Ended {
				st.removeActivity(x)
			} else {
				x.Token, x.Code = Gone, ""
			}
		}
	}
	n.Fire(st.State.Marking, t)
	for _, a := range tr.Out {
		if n.Places[a.Place].Activity != nil {
			for range a.Weight {
				st.enter(a.Place)
			}
		}
	}
	if d := st.State.deferral(t); d != nil {
		st.dropDeferral(d)
	}
	st.Fired = append(st.Fired, t)
	st.effect(Effect{Kind: Fired, Transition: t, Event: event})
}

func (st *Step) removeActivity(x *Activity) {
	st.State.Activities = slices.DeleteFunc(st.State.Activities, func(a *Activity) bool { return a == x })
}

func (st *Step) dropDeferral(d *Deferral) {
	st.State.Deferred = slices.DeleteFunc(st.State.Deferred, func(x *Deferral) bool { return x == d })
	st.effect(Effect{Kind: DropTimer, Transition: d.Transition, Ref: d.Ref})
}

// enter handles a token entering an activity's place (already counted in
// the marking): it goes back to an activity that awaits its token after an
// intermediate result, or starts a new activity.
func (st *Step) enter(p int) {
	for _, a := range st.State.Activities {
		if a.Place == p && a.Token == Gone && !a.Ended {
			a.Token = Busy
			st.deliverQueued(a)
			return
		}
	}
	a := &Activity{ID: st.State.NextID, Place: p, Token: Busy, Ref: -1}
	st.State.NextID++
	st.State.Activities = append(st.State.Activities, a)
	st.effect(Effect{Kind: StartActivity, Activity: a})
}

// deliverQueued delivers the first queued result of an activity that
// holds its token again.
func (st *Step) deliverQueued(a *Activity) {
	if len(a.Queue) == 0 || a.Token != Busy {
		return
	}
	d := a.Queue[0]
	a.Queue = a.Queue[1:]
	st.release(a, d)
}

func (st *Step) release(a *Activity, d Delivery) {
	a.Token, a.Code = Released, d.Code
	if d.Final {
		a.Ended = true
		a.Queue = nil
		st.effect(Effect{Kind: EndActivity, Activity: a})
	}
}

// Deliver reports a result of an activity: its code (trimmed; "" for none)
// and whether it is the final one. The token of the activity then carries
// the code, and the transitions that take it may fire; an intermediate
// result leaves the activity running, to take back the next token that
// enters its place. A result that comes while the activity does not hold
// its token waits for it. Then transitions that fire by themselves fire.
func (st *Step) Deliver(activity int, code string, final bool) error {
	a := st.State.Activity(activity)
	if a == nil || a.Ended {
		return fmt.Errorf("%w: %d", ErrNoActivity, activity)
	}
	d := Delivery{Code: trimCode(code), Final: final}
	if a.Token == Busy {
		st.release(a, d)
	} else {
		a.Queue = append(a.Queue, d)
	}
	return st.settle()
}

func trimCode(c string) string {
	for len(c) > 0 && (c[0] == ' ' || c[0] == '\t') {
		c = c[1:]
	}
	for len(c) > 0 && (c[len(c)-1] == ' ' || c[len(c)-1] == '\t') {
		c = c[:len(c)-1]
	}
	return c
}

// settle fires the transitions that fire by themselves (in a net that
// drives work: those without an event), in document order, one at a time,
// until none is enabled, skipping those deferred or blocked, within the
// budget.
func (st *Step) settle() error {
	n := st.m.Net
	if !n.Driven {
		return nil
	}
	for from := 0; ; {
		progressed := false
		for t := from; t < len(n.Transitions); t++ {
			tr := n.Transitions[t]
			if tr.Event != nil || st.failed[t] || !st.Enabled(t) {
				continue
			}
			if d := st.State.deferral(t); d != nil && st.Now.Before(d.Until) {
				continue
			}
			if st.State.blocked(t) != nil {
				continue
			}
			ok, err := st.try(t, "", nil)
			if err != nil {
				return err
			}
			if ok {
				progressed = true
				if len(st.Fired) > st.m.budget() {
					return fmt.Errorf("%w: %d transitions fired in one step (the net may fire for ever)", ErrBudget, len(st.Fired))
				}
				// Document order again, from the first transition the
				// firing may have enabled.
				from = n.affected(t)
				break
			}
		}
		if !progressed {
			return nil
		}
	}
}

// affected returns the first transition (in document order) whose
// enabledness firing t may have changed: t itself, those taking from the
// places it gave to, those inhibited by (or, with capacities, giving to)
// the places it took from. The transitions before it that were not
// enabled are still not.
func (n *Net) affected(t int) int {
	tr := n.Transitions[t]
	first := t
	for _, a := range tr.Out {
		for _, u := range n.Places[a.Place].Out {
			first = min(first, u)
		}
	}
	for _, a := range tr.In {
		p := n.Places[a.Place]
		for _, u := range p.Inhibits {
			first = min(first, u)
		}
		if p.Capacity > 0 {
			for _, u := range p.In {
				first = min(first, u)
			}
		}
	}
	return first
}

// try fires an enabled transition, calling its action first: Success
// fires it and keeps what the action wrote; Failure blocks it (an
// incident) and Defer sets a timer; neither fires it. It reports whether
// the transition fired.
func (st *Step) try(t int, event string, eventArgs map[string]Value) (bool, error) {
	tr := st.m.Net.Transitions[t]
	if tr.Action == nil {
		st.fire(t, event)
		return true, nil
	}
	res, writes := st.call(t, event, eventArgs)
	switch res.Outcome {
	case Success:
		for k, v := range writes {
			if v == nil {
				delete(st.Vars, k)
			} else {
				st.Vars[k] = *v
			}
		}
		st.effect(Effect{Kind: ActionDone, Transition: t})
		st.fire(t, event)
		return true, nil
	case Defer:
		st.deferFor(t, res.Delay, event, eventArgs)
	default:
		st.failed[t] = true
		if d := st.State.deferral(t); d != nil {
			st.dropDeferral(d) // the deferrals of this firing end with it
		}
		if st.State.blocked(t) == nil {
			st.State.Blocked = append(st.State.Blocked, &Blocked{Transition: t, Message: res.Message, Ref: -1})
			st.effect(Effect{Kind: OpenIncident, Transition: t, Message: res.Message})
		}
	}
	return false, nil
}

// call calls the action of transition t.
func (st *Step) call(t int, event string, eventArgs map[string]Value) (res Result, writes map[string]*Value) {
	tr := st.m.Net.Transitions[t]
	c := &ActionCall{
		Process: st.Process, Transition: tr.ID, Call: tr.Action, Now: st.Now,
		Event: event, EventArgs: eventArgs, vars: st.Vars, writes: map[string]*Value{},
	}
	if d := st.State.deferral(t); d != nil {
		c.Deferrals, c.FirstDeferred, c.LastDelay = d.Count, d.First, d.Last
	}
	f, ok := Builtins[tr.Action.Name]
	if st.m.Actions != nil {
		if g, found := st.m.Actions(tr.Action.Name); found {
			f, ok = g, true
		}
	}
	if !ok {
		return Fail("no action %s is registered", tr.Action.Name), nil
	}
	defer func() {
		if r := recover(); r != nil {
			res, writes = Fail("action %s panicked: %v", tr.Action.Name, r), nil
		}
	}()
	res = f(c)
	if res.Outcome == Defer && res.Delay <= 0 {
		res.Delay = time.Second
	}
	return res, c.writes
}

func (st *Step) deferFor(t int, delay time.Duration, event string, args map[string]Value) {
	d := st.State.deferral(t)
	if d == nil {
		d = &Deferral{Transition: t, First: st.Now, Ref: -1, Event: event, Args: args}
		st.State.Deferred = append(st.State.Deferred, d)
	} else if d.Ref >= 0 {
		st.effect(Effect{Kind: DropTimer, Transition: t, Ref: d.Ref})
		d.Ref = -1
	}
	d.Count++
	d.Last = delay
	d.Until = st.Now.Add(delay)
	st.effect(Effect{Kind: SetTimer, Transition: t, Until: d.Until})
}

// Fire fires transition t, which must be enabled (ErrNotEnabled
// otherwise): its action runs first, and a Failure refuses the command
// (ErrActionFailed) while a Defer sets a timer and fires nothing. Then
// transitions that fire by themselves fire.
func (st *Step) Fire(t int) error {
	if t < 0 || t >= len(st.m.Net.Transitions) || !st.Enabled(t) {
		return ErrNotEnabled
	}
	tr := st.m.Net.Transitions[t]
	if tr.Action != nil {
		res, writes := st.call(t, "", nil)
		switch res.Outcome {
		case Failure:
			return fmt.Errorf("%w: %s: %s", ErrActionFailed, tr.Action, res.Message)
		case Defer:
			st.deferFor(t, res.Delay, "", nil)
			return st.settle()
		}
		for k, v := range writes {
			if v == nil {
				delete(st.Vars, k)
			} else {
				st.Vars[k] = *v
			}
		}
		st.effect(Effect{Kind: ActionDone, Transition: t})
	}
	if b := st.State.blocked(t); b != nil {
		st.unblock(b)
	}
	st.fire(t, "")
	return st.settle()
}

func (st *Step) unblock(b *Blocked) {
	st.State.Blocked = slices.DeleteFunc(st.State.Blocked, func(x *Blocked) bool { return x == b })
	if b.Ref >= 0 {
		st.effect(Effect{Kind: CloseIncident, Transition: b.Transition, Ref: b.Ref})
	}
}

// Welcome reports whether transition t answers the event name with
// arguments args: its event has that name, every value argument x has
// args[x] equal to the variable x, and every binding argument &x has an
// args[x]. A missing argument does not welcome.
func (st *Step) Welcome(t int, name string, args map[string]Value) bool {
	ev := st.m.Net.Transitions[t].Event
	if ev == nil || ev.Name != name {
		return false
	}
	for _, a := range ev.Args {
		v, ok := args[a.Name]
		if !ok {
			return false
		}
		if !a.Bind {
			cur, set := st.Vars[a.Name]
			if !set || cur != v {
				return false
			}
		}
	}
	return true
}

// Event delivers an event: the transitions that welcome it and are
// enabled when it arrives are tried in document order, each if still
// enabled (match-all); binding arguments copy the event's values into the
// variables before the transition's action runs (and stay only if it
// succeeds). An event no transition takes is recorded as ignored. Then
// transitions that fire by themselves fire. It returns the transitions
// the event fired.
func (st *Step) Event(name string, args map[string]Value) ([]int, error) {
	var candidates []int
	for t := range st.m.Net.Transitions {
		if st.Welcome(t, name, args) && st.Enabled(t) {
			candidates = append(candidates, t)
		}
	}
	var fired []int
	for _, t := range candidates {
		if !st.Enabled(t) || st.State.blocked(t) != nil {
			continue
		}
		if d := st.State.deferral(t); d != nil && st.Now.Before(d.Until) {
			continue
		}
		ok, err := st.answer(t, name, args)
		if err != nil {
			return fired, err
		}
		if ok {
			fired = append(fired, t)
		}
	}
	if len(fired) == 0 {
		st.effect(Effect{Kind: Ignored, Event: name})
	}
	return fired, st.settle()
}

// answer fires transition t for an event: binding arguments first, kept
// only if the transition fires.
func (st *Step) answer(t int, name string, args map[string]Value) (bool, error) {
	ev := st.m.Net.Transitions[t].Event
	saved := map[string]*Value{}
	for _, a := range ev.Args {
		if a.Bind {
			if v, ok := st.Vars[a.Name]; ok {
				saved[a.Name] = &v
			} else {
				saved[a.Name] = nil
			}
			st.Vars[a.Name] = args[a.Name]
		}
	}
	ok, err := st.try(t, name, args)
	if !ok || err != nil {
		for k, v := range saved {
			if v == nil {
				delete(st.Vars, k)
			} else {
				st.Vars[k] = *v
			}
		}
	}
	return ok, err
}

// Retry tries a deferred transition again when its time has come: if it
// is still enabled (and still welcomes the event it answered) its action
// runs again with the earlier deferrals; if not, the deferral lapses.
func (st *Step) Retry(t int) error {
	d := st.State.deferral(t)
	if d == nil {
		return st.settle()
	}
	if st.Now.Before(d.Until) {
		return nil
	}
	if !st.Enabled(t) || (d.Event != "" && !st.Welcome(t, d.Event, d.Args)) {
		st.dropDeferral(d)
		return st.settle()
	}
	var err error
	if d.Event != "" {
		_, err = st.answer(t, d.Event, d.Args)
	} else {
		_, err = st.try(t, "", nil)
	}
	if err != nil {
		return err
	}
	return st.settle()
}

// Resolve lifts the block of a transition whose action failed and tries it
// again at once if it is enabled. A failure again keeps it blocked and
// fails the command (ErrActionFailed), so that the incident stays open.
func (st *Step) Resolve(t int) error {
	b := st.State.blocked(t)
	if b == nil {
		return st.settle()
	}
	st.unblock(b)
	if st.Enabled(t) && st.m.Net.Transitions[t].Event == nil {
		ok, err := st.try(t, "", nil)
		if err != nil {
			return err
		}
		if !ok {
			if nb := st.State.blocked(t); nb != nil {
				return fmt.Errorf("%w: %s: %s", ErrActionFailed, st.m.Net.Transitions[t].Action, nb.Message)
			}
		}
	}
	return st.settle()
}

// Done reports whether the process has come to rest for good: no
// transition is enabled and no activity runs.
func (st *Step) Done() bool {
	return !st.State.Running() && len(st.EnabledTransitions()) == 0
}
