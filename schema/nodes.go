package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/kernel"
)

// maxActionsPerCommand bounds the actions one command may run: parent and
// child instances that keep emitting events to each other would otherwise
// run for ever inside one step.
const maxActionsPerCommand = 10000

type budgetKey struct{}

// nodeType is a schema node of any kind.
type nodeType struct {
	rt *Runtime
	n  *schemaformat.Node
}

func schemaOf(p *kernel.Process) *schemaformat.Schema {
	s, _ := p.Graph.Props.(*schemaformat.Schema)
	return s
}

// Execute starts a visit of the node: a node instance with its action
// instances; event and timer nodes wait, the others run their actions.
func (nt *nodeType) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	p := t.Process
	st := mustState(e, p)
	now := e.Now()
	if nt.n.Kind == schemaformat.KindRoot && len(st.Nodes) == 0 {
		initInstance(e, p)
	}
	ni := &nodeInstance{Token: t.ID, Node: nt.n.ID, Kind: nt.n.Kind, StartedAt: now, Actions: make([]*actionInst, len(nt.n.Actions))}
	for i, a := range nt.n.Actions {
		ni.Actions[i] = &actionInst{Name: a.ID, Do: a.Name(), State: ActionPending}
	}
	st.add(ni)
	p.Dirty = true
	switch nt.n.Kind {
	case schemaformat.KindEvent:
		ni.State = NodeWaiting
		for i, m := range st.Queue {
			ok, err := nt.accepts(e, p, m)
			if err != nil {
				return err
			}
			if ok {
				st.Queue = append(st.Queue[:i:i], st.Queue[i+1:]...)
				ni.Event = m
				ni.State = NodeRunning
				nt.advance(e, t, ni)
				break
			}
		}
		return nil
	case schemaformat.KindTimer:
		ni.State = NodeWaiting
		due := now.Add(nt.n.Timer.After)
		if at := nt.n.Timer.At; at != nil {
			v, err := at.Eval(vars(e, p, ni))
			if err != nil {
				return err
			}
			s, _ := v.(string)
			x, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return fmt.Errorf("timer.at %q gave %v, not a time", at.Source, v)
			}
			due = x.UTC()
		}
		ni.Due = timePtr(due)
		return nil
	}
	ni.State = NodeRunning
	if nt.n.Kind == schemaformat.KindRoot {
		ni.Event = st.Start
	}
	nt.advance(e, t, ni)
	return nil
}

// initInstance gives a new instance its initial almanac (keys the start
// request did not set) and its routing key.
func initInstance(e *kernel.Engine, p *kernel.Process) {
	s := schemaOf(p)
	for _, en := range s.Almanac {
		if _, ok := p.Env.Get(en.Key); ok {
			continue
		}
		if v, err := almanacValue(schemaformat.Normalize(en.Value)); err == nil && !v.IsNone() {
			p.Env.Set(en.Key, v)
		}
	}
	e.SetContext(p, withRoutingKey(s, p.Context))
}

// accepts reports whether the event node takes the event m now.
func (nt *nodeType) accepts(e *kernel.Engine, p *kernel.Process, m *kernel.Message) (bool, error) {
	w := nt.n.Event
	if w == nil || m.Name != w.Name {
		return false, nil
	}
	if w.When == nil {
		return true, nil
	}
	v := vars(e, p, nil)
	v.Event = eventVar(m)
	return w.When.Bool(v)
}

// spend counts one action against the command's budget.
func spend(e *kernel.Engine) {
	n, _ := e.Value(budgetKey{}).(int)
	n++
	if n > maxActionsPerCommand {
		e.Fail(&kernel.Error{Code: kernel.ErrBudgetExceeded.Code, Msg: fmt.Sprintf("a step ran more than %d schema actions: instances keep sending each other events without waiting", maxActionsPerCommand)})
	}
	e.SetValue(budgetKey{}, n)
}

// advance runs the node instance's actions from its cursor on: built-ins
// at once, a registered action or a job by starting an attempt and
// waiting for its result; after the last action, the connection.
func (nt *nodeType) advance(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance) {
	p := t.Process
	now := e.Now()
	for ni.Cursor < len(nt.n.Actions) {
		a := nt.n.Actions[ni.Cursor]
		ai := ni.Actions[ni.Cursor]
		if ai.State != ActionPending {
			return // running or retrying: waits for its work
		}
		spend(e)
		if ai.StartedAt == nil {
			ai.StartedAt = timePtr(now)
		}
		p.Dirty = true
		outside := a.Job != "" || !schemaformat.Builtin(a.Do) || isEmitByContext(a)
		args, err := a.With.Eval(vars(e, p, ni))
		if err != nil {
			ai.Attempts++
			nt.failed(e, t, ni, a, ai, fmt.Sprintf("arguments: %v", err), true)
			return
		}
		if outside {
			ai.Args = args
			if a.Job != "" {
				nt.offerJob(e, t, ni, a, ai, args)
				return
			}
			ai.Attempts++
			ai.State = ActionRunning
			ai.Due = timePtr(now.Add(a.Timeout))
			return
		}
		ai.Attempts++
		res, err := nt.builtin(e, t, ni, a, args)
		if err != nil {
			nt.failed(e, t, ni, a, ai, err.Error(), false)
			if ai.State != ActionPending {
				return
			}
			continue
		}
		nt.succeeded(e, p, a, ai, res)
		ni.Cursor++
	}
	nt.leave(e, t, ni)
}

func isEmitByContext(a *schemaformat.Action) bool {
	if a.Do != schemaformat.ActEmit {
		return false
	}
	to, ok := a.With.Field("to").Literal()
	return !ok || to == nil || to == schemaformat.ToContext
}

// succeeded records an action's result (in the almanac, if it names a key).
func (nt *nodeType) succeeded(e *kernel.Engine, p *kernel.Process, a *schemaformat.Action, ai *actionInst, res any) {
	ai.State = ActionCompleted
	ai.FinishedAt = timePtr(e.Now())
	ai.Due = nil
	ai.Result = res
	ai.Error = ""
	if a.Result != "" {
		if err := setAlmanac(p, a.Result, res); err != nil {
			e.Fail(fmt.Errorf("action %s: result: %w", a.ID, err))
		}
	}
	p.Dirty = true
	if t := tokenOf(p, ai); t != nil {
		if _, err := e.FireWorkEvent(t, kernel.ActionCompleted); err != nil {
			e.Fail(err)
		}
	}
}

// tokenOf finds the node token whose visit holds the action instance.
func tokenOf(p *kernel.Process, ai *actionInst) *kernel.NodeToken {
	st, err := stateOf(p)
	if err != nil {
		return nil
	}
	for i := len(st.Nodes) - 1; i >= 0; i-- {
		n := st.Nodes[i]
		for _, x := range n.Actions {
			if x == ai && n.Token < len(p.NodeTokens) {
				return p.NodeTokens[n.Token]
			}
		}
	}
	return nil
}

// failed records a failed attempt: retried while the action's retries
// last (unless the failure is permanent), else the action and its node
// instance fail and wait for an operator.
func (nt *nodeType) failed(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance, a *schemaformat.Action, ai *actionInst, msg string, permanent bool) {
	now := e.Now()
	ai.Error = msg
	t.Process.Dirty = true
	if !permanent && ai.Attempts <= a.Retry.Max {
		ai.State = ActionRetrying
		ai.Due = timePtr(now.Add(a.Retry.Delay))
		if a.Retry.Delay <= 0 && schemaformat.Builtin(a.Do) && !isEmitByContext(a) {
			// A built-in retried without delay runs again at once.
			ai.State = ActionPending
			ai.Due = nil
		}
		return
	}
	ai.State = ActionFailed
	ai.FinishedAt = timePtr(now)
	ai.Due = nil
	nt.incident(e, t, ni, "action_failed", fmt.Sprintf("action %s failed after %d attempt(s): %s", a.ID, ai.Attempts, msg))
}

// incident fails the node instance and opens an incident on its token:
// it waits for an operator, who fixes the almanac or the outside system
// and resolves the incident to run the failed part again.
func (nt *nodeType) incident(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance, kind, msg string) {
	ni.State = NodeFailed
	ni.Error = msg
	t.Process.Dirty = true
	if err := e.RaiseIncident(t, kernel.IncidentSpec{Kind: kind, Message: fmt.Sprintf("%s: node %s: %s", t.Process.Graph.Name, ni.Node, msg)}); err != nil {
		e.Fail(err)
	}
}

// ResolveIncident runs the failed part of the node instance again: a
// failed action (from a new attempt, its retries counted afresh), or the
// choice of the connection.
func (nt *nodeType) ResolveIncident(e *kernel.Engine, t *kernel.NodeToken, kind string) error {
	st := mustState(e, t.Process)
	ni := st.node(t.ID)
	if ni == nil || ni.State != NodeFailed {
		return nil
	}
	t.Process.Dirty = true
	ni.State = NodeRunning
	ni.Error = ""
	if ni.Cursor < len(ni.Actions) {
		ai := ni.Actions[ni.Cursor]
		if ai.State == ActionFailed {
			ai.State = ActionPending
			ai.FinishedAt = nil
			ai.Attempts = 0
		}
	}
	nt.advance(e, t, ni)
	return nil
}

// offerJob starts a job action: a job of the action's type for outside
// programs (the work layer), its variables the action's arguments.
func (nt *nodeType) offerJob(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance, a *schemaformat.Action, ai *actionInst, args any) {
	env := map[string]kernel.Value{}
	obj, ok := args.(map[string]any)
	if !ok && args != nil {
		obj = map[string]any{"input": args}
	}
	for k, x := range obj {
		v, err := almanacValue(x)
		if err != nil {
			ai.Attempts++
			nt.failed(e, t, ni, a, ai, fmt.Sprintf("argument %s: %v", k, err), true)
			return
		}
		if !v.IsNone() {
			env[k] = v
		}
	}
	ai.Attempts++
	ai.State = ActionRunning
	if err := e.OfferJob(t, kernel.JobSpec{Type: a.Job, Retries: a.Retry.Max + 1, Env: env,
		Headers: map[string]string{"schema": t.Process.Graph.Name, "node": ni.Node, "action": a.ID}}); err != nil {
		e.Fail(err)
	}
}

// CompleteWork takes a job action's result: the "result" variable the
// worker returned if it set one, else all the variables it returned (an
// object), else its result code.
func (nt *nodeType) CompleteWork(e *kernel.Engine, t *kernel.NodeToken, held kernel.WorkFlags, r kernel.WorkResult) error {
	st := mustState(e, t.Process)
	ni := st.node(t.ID)
	if ni == nil || ni.State != NodeRunning || ni.Cursor >= len(ni.Actions) {
		return fmt.Errorf("node token %d waits for no job", t.ID)
	}
	a := nt.n.Actions[ni.Cursor]
	ai := ni.Actions[ni.Cursor]
	if a.Job == "" || ai.State != ActionRunning {
		return fmt.Errorf("action %s of node %s is not a running job", a.ID, ni.Node)
	}
	var res any
	switch v, ok := r.Env["result"]; {
	case ok:
		res = plainValue(v)
	case len(r.Env) > 0:
		m := map[string]any{}
		for k, v := range r.Env {
			m[k] = plainValue(v)
		}
		res = m
	case r.Result != "":
		res = r.Result
	}
	nt.succeeded(e, t.Process, a, ai, res)
	ni.Cursor++
	nt.advance(e, t, ni)
	return nil
}

// leave ends the visit: a terminator completes the instance; any other
// node takes the first connection whose condition holds.
func (nt *nodeType) leave(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance) {
	p := t.Process
	if nt.n.Kind == schemaformat.KindTerminator {
		ni.State = NodeCompleted
		ni.FinishedAt = timePtr(e.Now())
		if err := e.Complete(t, ""); err != nil {
			e.Fail(err)
		}
		if st := mustState(e, p); len(st.Queue) > 0 {
			st.Dropped += len(st.Queue)
			st.Queue = nil
		}
		return
	}
	v := vars(e, p, ni)
	for _, x := range nt.n.Next {
		if x.When != nil {
			ok, err := x.When.Bool(v)
			if err != nil {
				nt.incident(e, t, ni, "condition_failed", fmt.Sprintf("connection to %s: %v", x.To, err))
				return
			}
			if !ok {
				continue
			}
		}
		ni.State = NodeCompleted
		ni.Arc = x.Arc
		ni.FinishedAt = timePtr(e.Now())
		p.Dirty = true
		if err := e.Complete(t, x.Arc); err != nil {
			e.Fail(err)
		}
		return
	}
	nt.incident(e, t, ni, "no_route", "no connection's condition holds")
}

// IsBacktrackable refuses backtracking: a schema instance's actions have
// run (some outside Veena), its almanac holds their results, and undoing
// its tokens would leave both behind.
func (nt *nodeType) IsBacktrackable(e *kernel.Engine, t *kernel.NodeToken) bool { return false }

// Backtrack is never called (IsBacktrackable says no).
func (nt *nodeType) Backtrack(e *kernel.Engine, t *kernel.NodeToken) error { return nil }

// Wake gives what a token of this node waits for: its time (timer
// nodes), a running or retried registered action, or a built-in's retry.
func (nt *nodeType) Wake(t *kernel.NodeToken) *kernel.Wake {
	st, err := stateOf(t.Process)
	if err != nil {
		return nil
	}
	ni := st.node(t.ID)
	if ni == nil {
		return nil
	}
	if ni.State == NodeWaiting && ni.Due != nil {
		return &kernel.Wake{Key: "timer", Due: *ni.Due}
	}
	if ni.State != NodeRunning || ni.Cursor >= len(ni.Actions) {
		return nil
	}
	a := nt.n.Actions[ni.Cursor]
	ai := ni.Actions[ni.Cursor]
	if ai.Due == nil {
		return nil
	}
	switch ai.State {
	case ActionRunning:
		return &kernel.Wake{Key: attemptKey(ni.Cursor, ai.Attempts), Due: *ai.Due, Runner: RunnerName, Input: nt.input(t, ni, a, ai, ai.Attempts), RunNow: true}
	case ActionRetrying:
		if schemaformat.Builtin(a.Do) && !isEmitByContext(a) {
			return &kernel.Wake{Key: "retry:" + attemptKey(ni.Cursor, ai.Attempts+1), Due: *ai.Due}
		}
		return &kernel.Wake{Key: attemptKey(ni.Cursor, ai.Attempts+1), Due: *ai.Due, Runner: RunnerName, Input: nt.input(t, ni, a, ai, ai.Attempts+1)}
	}
	return nil
}

func attemptKey(cursor, attempt int) string {
	return strconv.Itoa(cursor) + "/" + strconv.Itoa(attempt)
}

func (nt *nodeType) input(t *kernel.NodeToken, ni *nodeInstance, a *schemaformat.Action, ai *actionInst, attempt int) []byte {
	b, _ := json.Marshal(workInput{Process: t.Process.ID, Token: t.ID, Schema: t.Process.Graph.Name, Node: ni.Node,
		Action: a.ID, Do: a.Do, Attempt: attempt, Args: ai.Args, Context: t.Process.Context})
	return b
}

// Woken takes the outcome of the token's work: the timer's time came,
// a retry is due, or an action attempt finished.
func (nt *nodeType) Woken(e *kernel.Engine, t *kernel.NodeToken, r kernel.WakeResult) error {
	st := mustState(e, t.Process)
	ni := st.node(t.ID)
	if ni == nil {
		return fmt.Errorf("node token %d has no node instance", t.ID)
	}
	t.Process.Dirty = true
	switch {
	case r.Key == "timer":
		ni.State = NodeRunning
		nt.advance(e, t, ni)
		return nil
	case strings.HasPrefix(r.Key, "retry:"):
		ni.Actions[ni.Cursor].State = ActionPending
		ni.Actions[ni.Cursor].Due = nil
		nt.advance(e, t, ni)
		return nil
	}
	_, attempt, ok := strings.Cut(r.Key, "/")
	n, err := strconv.Atoi(attempt)
	if !ok || err != nil || ni.Cursor >= len(ni.Actions) {
		return fmt.Errorf("work %q is not an action attempt", r.Key)
	}
	a := nt.n.Actions[ni.Cursor]
	ai := ni.Actions[ni.Cursor]
	ai.Attempts = n
	if r.Err != "" {
		nt.failed(e, t, ni, a, ai, r.Err, r.Permanent)
		if ai.State == ActionRetrying && ai.Due != nil && a.Retry.Delay <= 0 {
			ai.Due = timePtr(e.Now())
		}
		return nil
	}
	var res any
	if len(r.Output) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(r.Output)))
		dec.UseNumber()
		if err := dec.Decode(&res); err != nil {
			nt.failed(e, t, ni, a, ai, fmt.Sprintf("result: %v", err), true)
			return nil
		}
		res = schemaformat.Normalize(res)
	}
	nt.succeeded(e, t.Process, a, ai, res)
	ni.Cursor++
	nt.advance(e, t, ni)
	return nil
}

// vars are the variables expressions of a node instance see.
func vars(e *kernel.Engine, p *kernel.Process, ni *nodeInstance) *schemaformat.Vars {
	v := &schemaformat.Vars{Almanac: almanacOf(p), Context: p.Context, Now: e.Now(),
		Instance: map[string]any{"id": p.ID, "schema": p.Graph.Name}}
	if ni != nil {
		v.Instance["node"] = ni.Node
		if ni.Event != nil {
			v.Event = eventVar(ni.Event)
		}
	}
	return v
}

func eventVar(m *kernel.Message) map[string]any {
	ctx := map[string]any{}
	for k, x := range m.Context {
		ctx[k] = x
	}
	return map[string]any{"name": m.Name, "context": ctx, "payload": schemaformat.Normalize(m.Payload), "from": m.From}
}
