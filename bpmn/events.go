package bpmn

import (
	"strconv"
	"time"

	"github.com/veena-wf/veena/bpmn/timer"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

// ---- start and end events

type startNode struct{ el *bpmn.Element }

func (s *startNode) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	if s.el.Scope == nil {
		armProcessListeners(e, t.Process)
	}
	complete(e, t, s.el.OutNames...)
	return nil
}

type endNode struct{ el *bpmn.Element }

func (n *endNode) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	ev := n.el.Event
	switch ev.Kind {
	case bpmn.EventTerminate:
		// Terminates everything in its scope; the scope then completes
		// normally (at process level, the process completes).
		terminate(e, t.Process, scopeOf(t.Sets), t)
	case bpmn.EventError:
		throwError(e, t, ev.Name)
	case bpmn.EventEscalation:
		throwEscalation(e, t, ev.Name)
	case bpmn.EventSignal:
		emitSignal(e, t, ev.Name)
	case bpmn.EventMessage:
		prepareWork(e, t, n.el) // a job, as Camunda 8 runs message end events
		return nil
	case bpmn.EventCompensate:
		if compensate(e, t, ev.Activity) {
			return nil // waits for the handlers
		}
	}
	complete(e, t)
	return nil
}

// HandleComplete finishes a message end event's job, or a compensation
// throw once its handlers are done.
func (n *endNode) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	outputs(e, t, n.el, vars)
	complete(e, t)
	return nil
}

// CompleteWork finishes a message end event's job.
func (n *endNode) CompleteWork(e *kernel.Engine, t *kernel.NodeToken, held kernel.WorkFlags, r kernel.WorkResult) error {
	return guard(e, func() {
		outputs(e, t, n.el, envOf(r.Env))
		complete(e, t)
	})
}

// CompleteWork finishes a message throw event's job.
func (n *throwNode) CompleteWork(e *kernel.Engine, t *kernel.NodeToken, held kernel.WorkFlags, r kernel.WorkResult) error {
	return guard(e, func() {
		outputs(e, t, n.el, envOf(r.Env))
		complete(e, t, n.el.OutNames...)
	})
}

// ---- intermediate events

type throwNode struct{ el *bpmn.Element }

func (n *throwNode) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	ev := n.el.Event
	switch ev.Kind {
	case bpmn.EventEscalation:
		throwEscalation(e, t, ev.Name)
	case bpmn.EventSignal:
		emitSignal(e, t, ev.Name)
	case bpmn.EventMessage:
		prepareWork(e, t, n.el)
		return nil
	case bpmn.EventCompensate:
		if compensate(e, t, ev.Activity) {
			return nil
		}
	}
	if !t.Complete && t.Active() {
		complete(e, t, n.el.OutNames...)
	}
	return nil
}

func (n *throwNode) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	outputs(e, t, n.el, vars)
	complete(e, t, n.el.OutNames...)
	return nil
}

type catchNode struct {
	el    *bpmn.Element
	timer *timerEvent // a timer catch's timer, else nil
}

func newCatchNode(el *bpmn.Element) *catchNode {
	return &catchNode{el: el, timer: newTimerEvent(el.Event)}
}

func (n *catchNode) guard(e *kernel.Engine, t *kernel.NodeToken) (kernel.GuardResult, error) {
	if n.timer != nil {
		return n.timer.guard(e, t), nil
	}
	return kernel.GuardResult{Action: kernel.Accept}, nil
}

func (n *catchNode) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	switch n.el.Event.Kind {
	case bpmn.EventTimer:
		n.fire(e, t, nil) // the guard let it through: the time has come
	case bpmn.EventLink:
		complete(e, t, n.el.OutNames...)
	default:
		subscribe(e, t, n.el.Event)
	}
	return nil
}

// HandleComplete delivers the message or signal the event waits for.
func (n *catchNode) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	n.fire(e, t, vars)
	return nil
}

func (n *catchNode) fire(e *kernel.Engine, t *kernel.NodeToken, vars *kernel.Env) {
	raceWon(e, t)
	outputs(e, t, n.el, vars)
	complete(e, t, n.el.OutNames...)
}

// raceWon ends the other events behind an event-based gateway when one of
// them happens: the first event wins.
func raceWon(e *kernel.Engine, t *kernel.NodeToken) {
	for _, a := range t.Parents {
		g := a.Parent
		if g.Node.Type != bpmn.TypeEventGateway {
			continue
		}
		for _, c := range g.Children {
			if c.Child != nil && c.Child != t {
				withdraw(e, c.Child)
			}
		}
	}
}

// subscribe makes a token wait for a message (its name and the
// correlation key, evaluated now and never again) or a signal. The engine
// finds waiting tokens by these notes.
func subscribe(e *kernel.Engine, t *kernel.NodeToken, ev *bpmn.Event) {
	switch ev.Kind {
	case bpmn.EventMessage:
		key := ""
		if ev.CorrelationKey != nil {
			key = text(e, t, ev.CorrelationKey, "correlation key")
		}
		setNotes(e, t, noteAwait, "message", noteName, ev.Name, noteKey, key)
	case bpmn.EventSignal:
		setNotes(e, t, noteAwait, "signal", noteName, ev.Name)
	case bpmn.EventError, bpmn.EventEscalation:
		setNotes(e, t, noteAwait, string(ev.Kind), noteName, ev.Name)
	}
}

// timerEvent is the timer of a node's timer event: its definition and,
// when that is static text that reads (not an expression), the timer read
// once for all the node's tokens.
type timerEvent struct {
	ev     *bpmn.Event
	static *timer.Timer
}

// newTimerEvent is the timer of an event; nil when it is not a timer
// event. A static definition that does not read is read again by each
// token, whose step then fails as it would have.
func newTimerEvent(ev *bpmn.Event) *timerEvent {
	if ev == nil || ev.Kind != bpmn.EventTimer {
		return nil
	}
	te := &timerEvent{ev: ev}
	if ev.Timer.IsStatic() {
		te.static, _ = timer.Parse(timer.Kind(ev.TimerKind), ev.Timer.Text)
	}
	return te
}

// guard delays a token until its timer is due: the first time it runs it
// evaluates the timer (an expression, or ISO 8601 / cron text); later runs
// (the engine firing the delay) let it through once due.
func (te *timerEvent) guard(e *kernel.Engine, t *kernel.NodeToken) kernel.GuardResult {
	if t.DelayCount > 0 && t.Note("timerFailed") == "" {
		if !t.DelayUntil().After(e.Now()) {
			return kernel.GuardResult{Action: kernel.Accept}
		}
		return kernel.GuardResult{Action: kernel.Delay, Until: t.DelayUntil()}
	}
	if t.DelayCount == 0 {
		// A timer that cannot be evaluated on entry is due at once: the
		// engine fires it, its evaluation fails again there, and the
		// failure is an incident on the waiting token (timer_failed)
		// instead of undoing the step that reached it.
		var due time.Time
		if err := guardFails(func() { due = te.firstDue(e, t) }); err != nil {
			e.SetNote(t, "timerFailed", "1")
			return kernel.GuardResult{Action: kernel.Delay, Until: e.Now()}
		}
		if !due.After(e.Now()) {
			return kernel.GuardResult{Action: kernel.Accept}
		}
		return kernel.GuardResult{Action: kernel.Delay, Until: due}
	}
	due := te.firstDue(e, t)
	e.SetNote(t, "timerFailed", "")
	if !due.After(e.Now()) {
		return kernel.GuardResult{Action: kernel.Accept}
	}
	return kernel.GuardResult{Action: kernel.Delay, Until: due}
}

// parse is the timer at a token: the static one, or the definition
// evaluated there.
func (te *timerEvent) parse(e *kernel.Engine, t *kernel.NodeToken) *timer.Timer {
	if te.static != nil {
		return te.static
	}
	ev := te.ev
	v := mustEval(e, t, ev.Timer, "timer", nil)
	kind := timer.Kind(ev.TimerKind)
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case time.Time:
		return &timer.Timer{Kind: timer.Date, At: x}
	default:
		if d, ok := v.(interface{ String() string }); ok {
			s = d.String()
		} else {
			fail(e, t, CodeConditionFailed, "timer %q gives a %T, not a date, duration or cycle", ev.Timer.Text, v)
		}
	}
	tm, err := timer.Parse(kind, s)
	if err != nil {
		fail(e, t, CodeConditionFailed, "timer %q: %v", ev.Timer.Text, err)
	}
	return tm
}

// firstDue is when a timer first fires; for a cycle, the repetitions left
// after that firing are noted on the token.
func (te *timerEvent) firstDue(e *kernel.Engine, t *kernel.NodeToken) time.Time {
	if s := t.Note("due"); s != "" {
		// A re-armed cycle: its due time was computed when it was armed.
		d, err := time.Parse(time.RFC3339Nano, s)
		if err == nil {
			return d
		}
	}
	tm := te.parse(e, t)
	if tm.Kind == timer.Cycle && t.Note(noteRepeat) == "" {
		setNotes(e, t, noteRepeat, strconv.Itoa(tm.Repeat))
	}
	return tm.First(e.Now())
}

// rearm arms a timer cycle's next firing, if repetitions are left: a new
// listening token at the same node, due one interval after this one.
func (te *timerEvent) rearm(e *kernel.Engine, t *kernel.NodeToken, notes map[string]string) {
	if te.ev.TimerKind != bpmn.TimeCycle {
		return
	}
	left, err := strconv.Atoi(t.Note(noteRepeat))
	if err != nil {
		return
	}
	if left > 0 {
		left--
	}
	if left == 0 {
		return
	}
	tm := te.parse(e, t)
	prev := t.DelayUntil()
	if prev.IsZero() {
		prev = e.Now()
	}
	next, ok := tm.Next(prev)
	if !ok {
		return
	}
	n := map[string]string{noteMode: "listen", noteRepeat: strconv.Itoa(left), "due": next.UTC().Format(time.RFC3339Nano)}
	for k, v := range notes {
		n[k] = v
	}
	create(e, t.Process, t.Node.Name, t.Sets, t.Env, n)
}

// ---- boundary events

type boundaryNode struct {
	el    *bpmn.Element
	timer *timerEvent // a timer boundary event's timer, else nil
}

func newBoundaryNode(el *bpmn.Element) *boundaryNode {
	return &boundaryNode{el: el, timer: newTimerEvent(el.Event)}
}

func (b *boundaryNode) guard(e *kernel.Engine, t *kernel.NodeToken) (kernel.GuardResult, error) {
	if b.timer != nil && t.Note(noteMode) == "listen" {
		return b.timer.guard(e, t), nil
	}
	return kernel.GuardResult{Action: kernel.Accept}, nil
}

func (b *boundaryNode) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	switch t.Note(noteMode) {
	case "listen":
		if b.el.Event.Kind == bpmn.EventTimer {
			b.trigger(e, t, nil) // its time has come
			return nil
		}
		subscribe(e, t, b.el.Event)
	case "fire":
		// A non-interrupting boundary event's path.
		complete(e, t, outgoing(e, t, nil)...)
	}
	return nil
}

// HandleComplete delivers the message or signal the boundary event waits for.
func (b *boundaryNode) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	b.trigger(e, t, vars)
	return nil
}

// trigger fires a boundary event: an interrupting one ends its activity
// (with what runs inside it) and takes its flows; a non-interrupting one
// starts a path of its own and keeps listening.
func (b *boundaryNode) trigger(e *kernel.Engine, t *kernel.NodeToken, vars *kernel.Env) {
	act := tokenByID(t.Process, t.Note(noteAttached))
	if b.el.Interrupting {
		setNotes(e, t, noteMode, "fire")
		if act != nil && act.Active() && !act.Complete {
			interrupt(e, act) // withdraws this token's listening siblings too
		}
		outputs(e, t, b.el, vars)
		complete(e, t, outgoing(e, t, nil)...)
		return
	}
	fired := create(e, t.Process, t.Node.Name, t.Sets, t.Env, map[string]string{noteMode: "fire", noteAttached: t.Note(noteAttached)})
	_ = fired
	if b.el.Event.Kind == bpmn.EventTimer {
		b.timer.rearm(e, t, map[string]string{noteAttached: t.Note(noteAttached)})
		withdraw(e, t)
	}
	if vars != nil {
		outputs(e, t, b.el, vars)
	}
}

// ---- event sub-processes

type eventSubProcess struct {
	el    *bpmn.Element
	st    *bpmn.Element // its start event
	timer *timerEvent   // the start event's timer, if it is a timer start
}

func newEventSubProcess(el *bpmn.Element) *eventSubProcess {
	s := &eventSubProcess{el: el}
	for _, c := range el.Children {
		if c.Kind == "startEvent" {
			s.st = c
			s.timer = newTimerEvent(c.Event)
			break
		}
	}
	return s
}

func (s *eventSubProcess) guard(e *kernel.Engine, t *kernel.NodeToken) (kernel.GuardResult, error) {
	if s.timer != nil && t.Note(noteMode) == "listen" {
		return s.timer.guard(e, t), nil
	}
	return kernel.GuardResult{Action: kernel.Accept}, nil
}

func (s *eventSubProcess) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	st := s.st
	switch t.Note(noteMode) {
	case "listen":
		if st.Event.Kind == bpmn.EventTimer {
			s.trigger(e, t, nil)
			return nil
		}
		subscribe(e, t, st.Event)
	case "run":
		s.run(e, t, st)
	}
	return nil
}

func (s *eventSubProcess) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	if t.Note(noteMode) != "listen" {
		return nil // a running event sub-process ends when its scope does
	}
	s.trigger(e, t, vars)
	return nil
}

// trigger starts the event sub-process: an interrupting one first ends
// everything else in its scope; a non-interrupting one runs beside it, and
// its listener keeps listening.
func (s *eventSubProcess) trigger(e *kernel.Engine, t *kernel.NodeToken, vars *kernel.Env) {
	st := s.st
	if vars != nil {
		outputs(e, t, st, vars)
	}
	if st.Interrupting {
		terminate(e, t.Process, scopeOf(t.Sets), t)
		setNotes(e, t, noteMode, "run")
		s.run(e, t, st)
		return
	}
	create(e, t.Process, t.Node.Name, t.Sets, t.Env, map[string]string{noteMode: "run"})
	if st.Event.Kind == bpmn.EventTimer {
		s.timer.rearm(e, t, nil)
		withdraw(e, t)
	}
}

// run opens the event sub-process's scope at its start event.
func (s *eventSubProcess) run(e *kernel.Engine, t *kernel.NodeToken, st *bpmn.Element) {
	p := t.Process
	set, err := e.NewTokenSet(p, s.el.ID, 1, t.Sets, nil, nil)
	if err != nil {
		e.Fail(err)
	}
	setNotes(e, t, noteScope, strconv.Itoa(set.ID))
	sets := append(append([]kernel.Membership(nil), t.Sets...), kernel.Membership{Set: set})
	armListeners(e, p, s.el.ID, sets, t.Env)
	create(e, p, st.ID, sets, t.Env, nil)
}
