package bpmn

import (
	"fmt"
	"strconv"

	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

type activityKind uint8

const (
	kindTask       activityKind = iota // task, manual task: pass through
	kindWait                           // user task, service/send/business-rule task: a task or a job to do
	kindReceive                        // receive task: waits for a message
	kindScript                         // script task
	kindCall                           // call activity
	kindSubProcess                     // embedded sub-process
)

// Notes the node types keep on tokens.
const (
	noteMode     = "mode"       // listen | fire | run | body | instance
	noteAttached = "attachedTo" // a boundary token: the activity token it is attached to
	noteScope    = "scope"      // a token that owns a scope: its token set's id
	noteAwait    = "await"      // message | signal | error | escalation | compensate
	noteName     = "name"       // the message or signal name, the error or escalation code
	noteKey      = "key"        // a message subscription's correlation key
	noteRepeat   = "repeat"     // a timer cycle: repetitions left (-1 forever)
	noteLoop     = "loop"       // a standard loop: the iteration, from 1
	noteIndex    = "index"      // a multi-instance instance: its index, from 0
	noteCount    = "count"      // a multi-instance body: instances, completed, started
	noteDone     = "completed"
	noteStarted  = "started"
	noteThrower  = "thrower"     // a compensation handler: the throwing token
	notePending  = "compensate"  // a compensation throw: tokens still to compensate
	noteCompOf   = "compensates" // a compensation handler: the activity token it compensates
	noteDoneComp = "compensated" // an activity token whose compensation ran
)

// miPrefix starts the names of multi-instance token sets.
const miPrefix = "mi:"

// activity is the node type of tasks, call activities and embedded
// sub-processes. A token arriving by a flow is the activity; with
// multi-instance characteristics it is the body, whose instances are
// tokens at the same node, members of the body's token set.
type activity struct {
	el   *bpmn.Element
	kind activityKind
}

func (a *activity) execute(e *kernel.Engine, t *kernel.NodeToken) error {
	if t.Note(noteMode) == "" {
		armBoundaries(e, t, a.el)
		if l := a.el.Loop; l != nil && l.MultiInstance {
			startBody(e, t, a.el)
			return nil
		}
		if l := a.el.Loop; l != nil {
			n := 1
			if s := t.Note(noteLoop); s != "" {
				n, _ = strconv.Atoi(s)
			} else {
				setNotes(e, t, noteLoop, "1")
			}
			setLocal(e, t, "loopCounter", int64(n))
			if l.TestBefore && l.Condition != nil && !condition(e, t, l.Condition, "loop condition", nil) {
				disarmBoundaries(e, t)
				complete(e, t, outgoing(e, t, nil)...)
				return nil
			}
		}
	}
	a.inputs(e, t)
	a.run(e, t)
	return nil
}

// inputs applies the input mappings: local variables of the activity.
func (a *activity) inputs(e *kernel.Engine, t *kernel.NodeToken) {
	if a.kind == kindCall {
		return // a call activity's inputs go to its child
	}
	for _, m := range a.el.Inputs {
		setLocal(e, t, m.Target, mustEval(e, t, m.Source, "input mapping "+m.Target, nil))
	}
}

// run does the activity's work.
func (a *activity) run(e *kernel.Engine, t *kernel.NodeToken) {
	switch a.kind {
	case kindTask:
		a.leave(e, t, nil, nil)
	case kindWait:
		// A task for people or a job for a worker: the token waits until
		// its completion is reported (work.go records what is to be done).
		prepareWork(e, t, a.el)
	case kindReceive:
		subscribe(e, t, a.el.Event)
	case kindScript:
		a.script(e, t)
	case kindCall:
		a.call(e, t)
	case kindSubProcess:
		openScope(e, t, a.el)
	}
}

// HandleComplete completes the activity: a task or job done, a message
// received, a called process ended.
func (a *activity) handleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	switch {
	case a.kind == kindCall:
		a.leave(e, t, names, childVars(t, a.el))
	case t.Note(noteMode) == "body":
		e.Fail(&kernel.Error{Code: kernel.ErrInvalidArgument.Code, Msg: fmt.Sprintf("%s is a multi-instance body: complete its instances", t.Node.Name)})
	default:
		a.leave(e, t, names, vars)
	}
	return nil
}

// CompleteWork completes a user task or a job: the task's changed data or
// the worker's variables go through the output mappings; a task's
// outcome names the flow to take (by id or name).
func (a *activity) CompleteWork(e *kernel.Engine, t *kernel.NodeToken, held kernel.WorkFlags, r kernel.WorkResult) error {
	return guard(e, func() {
		var names []string
		if r.Outcome != "" {
			names = []string{r.Outcome}
		}
		a.leave(e, t, names, envOf(r.Env))
	})
}

// CatchError catches a business error a worker throws: the nearest
// matching boundary event or event sub-process takes over.
func (a *activity) CatchError(e *kernel.Engine, t *kernel.NodeToken, code, message string, env map[string]kernel.Value) (caught bool, err error) {
	err = guard(e, func() {
		c := catcher(t, "error", code)
		if c == nil {
			return
		}
		caught = true
		triggerListener(e, c, envOf(env))
	})
	return caught, err
}

func envOf(m map[string]kernel.Value) *kernel.Env {
	if len(m) == 0 {
		return nil
	}
	env := kernel.NewEnv()
	for k, v := range m {
		env.Set(k, v)
	}
	return env
}

// leave completes the activity token: output mappings, boundary events
// withdrawn, then a loop, the next instance of a multi-instance body, or
// the outgoing flows.
func (a *activity) leave(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) {
	outputs(e, t, a.el, vars)
	disarmBoundaries(e, t)
	if t.Note(noteCompOf) != "" {
		compensationDone(e, t)
		complete(e, t)
		return
	}
	if t.Note(noteMode) == "instance" {
		instanceDone(e, t, a.el)
		return
	}
	if l := a.el.Loop; l != nil && !l.MultiInstance {
		n, _ := strconv.Atoi(t.Note(noteLoop))
		// testBefore: the next iteration tests the condition when it starts.
		again := l.TestBefore || l.Condition == nil || condition(e, t, l.Condition, "loop condition", nil)
		if again && (l.Maximum == 0 || n < l.Maximum) {
			complete(e, t)
			create(e, t.Process, t.Node.Name, t.Sets, t.Env, map[string]string{noteLoop: strconv.Itoa(n + 1)})
			return
		}
	}
	complete(e, t, outgoing(e, t, names)...)
}

// outputs places what a completion brings: the output mappings, where the
// element has them, evaluated over the brought variables and the token's;
// else every brought variable (see setVar).
func outputs(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element, brought *kernel.Env) {
	if brought.IsEmpty() && len(el.Outputs) == 0 {
		return
	}
	extra := map[string]any{}
	for _, n := range brought.Names() {
		v, _ := brought.Get(n)
		extra[n] = fromValue(v)
	}
	if len(el.Outputs) > 0 {
		values := make([]any, len(el.Outputs))
		for i, m := range el.Outputs {
			values[i] = mustEval(e, t, m.Source, "output mapping "+m.Target, extra)
		}
		for i, m := range el.Outputs {
			if !t.Env.Has(m.Target) || inInstance(t) {
				setVar(e, t, m.Target, values[i])
			} else {
				// An output mapping writes to the enclosing scope.
				v, err := toValue(values[i])
				if err != nil {
					fail(e, t, CodeConditionFailed, "output mapping %s: %v", m.Target, err)
				}
				t.Process.Env.Set(m.Target, v)
			}
		}
		return
	}
	for _, n := range brought.Names() {
		setVar(e, t, n, extra[n])
	}
}

// ---- script tasks

func (a *activity) script(e *kernel.Engine, t *kernel.NodeToken) {
	switch {
	case a.el.ScriptProgram != nil:
		v := mustEval(e, t, a.el.ScriptProgram, "script", nil)
		if a.el.ResultVariable != "" {
			setVar(e, t, a.el.ResultVariable, v)
		}
	case a.el.ScriptLang == expr.JavaScript:
		runJavaScript(e, t, a.el)
	}
	a.leave(e, t, nil, nil)
}

// ---- call activities

func (a *activity) call(e *kernel.Engine, t *kernel.NodeToken) {
	id := text(e, t, a.el.CalledElement, "called element")
	defs := e.Kernel().Definitions
	if defs == nil {
		fail(e, t, CodeConditionFailed, "process %q: no definitions are available", id)
	}
	name := id
	if n, _, _, ok := bpmn.SplitModelName(id); ok {
		name = n
	}
	g := defs(name)
	if g == nil {
		fail(e, t, CodeConditionFailed, "the called process %q is not loaded", id)
	}
	env := t.FullEnv().Copy()
	for _, m := range a.el.Inputs {
		v, err := toValue(mustEval(e, t, m.Source, "input mapping "+m.Target, nil))
		if err != nil {
			fail(e, t, CodeConditionFailed, "input mapping %s: %v", m.Target, err)
		}
		env.Set(m.Target, v)
	}
	if _, err := e.StartNested(t, g, env); err != nil {
		e.Fail(err)
	}
}

// childVars is what a completed called process hands back: every variable
// of the child (propagateAllChildVariables), or only those its output
// mappings read.
func childVars(t *kernel.NodeToken, el *bpmn.Element) *kernel.Env {
	var child *kernel.Process
	for _, c := range t.Process.Nested {
		if c.ParentToken == t {
			child = c
		}
	}
	if child == nil {
		return nil
	}
	if !el.PropagateAll && len(el.Outputs) == 0 {
		return nil
	}
	return child.Env.Clone()
}
