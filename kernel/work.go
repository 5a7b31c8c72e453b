package kernel

import (
	"fmt"
	"sort"
	"time"
)

// The work layer's part of the kernel: a node type hands a token's work to
// people (a task) or to outside programs (a job), or raises an incident
// when its step cannot go on; the kernel records that as an effect on the
// process, beside the events, and the engine writes it in the step's
// transaction. Whatever ends a token that holds work (its completion, a
// backtrack, the cancelling of its process, an interrupting node of another
// format completing it on no arc) ends that work in the same step: see
// endWork. The kernel keeps no task or job state of its own beyond which
// kinds of work a token holds (NodeToken.Work); the rows are the engine's.

// WorkFlags are the kinds of outside work a node token holds open.
type WorkFlags uint8

// The kinds of work a token may hold.
const (
	HoldsTask WorkFlags = 1 << iota
	HoldsJob
	HoldsIncident
)

// TaskSpec is a human task a node opens for its token.
type TaskSpec struct {
	// Label is what people see (the node's name if empty).
	Label string
	// Assignee is the user the task is assigned to, if any.
	Assignee string
	// CandidateUsers and CandidateGroups may claim the task; a queue is a
	// pool anyone who works it may claim from.
	CandidateUsers  []string
	CandidateGroups []string
	Queue           string
	// Priority orders inboxes, highest first (0–100; 50 is usual).
	Priority int
	// DueAt and FollowUpAt are optional dates.
	DueAt, FollowUpAt time.Time
	// Data is the task's data; nil means the variables the token sees (its
	// full environment).
	Data map[string]Value
}

// JobSpec is work a node offers to worker programs of a type.
type JobSpec struct {
	Type string
	// Headers are static settings of the node, passed to the worker.
	Headers map[string]string
	// Retries is how many failures the job may have before an incident
	// opens (at least 1 is usual; 0 means 3).
	Retries int
	// Env is what the worker gets as variables; nil means the token's
	// full environment as it was when the job was offered (Variables).
	Env map[string]Value

	// offered holds the process's and the token's attributes when the job
	// was offered with no Env, shared copy-on-write: later writes leave
	// them as they were, and the map is only made for a caller that asks.
	offered [2]*envData
}

// Variables is what the worker gets: Env, or else the token's full
// environment as it was when the job was offered.
func (s *JobSpec) Variables() map[string]Value {
	if s.Env != nil {
		return s.Env
	}
	return mergedAttrs(s.offered[0], s.offered[1])
}

// DefaultJobRetries is the retries of a job whose spec gives none.
const DefaultJobRetries = 3

// IncidentSpec is a problem that stops a token until someone resolves it.
type IncidentSpec struct {
	// Kind is job_failed, uncaught_error, condition_failed, no_route,
	// action_failed, timer_failed or another stable snake_case word.
	Kind    string
	Message string
	// Job is the id of the job whose failure it is, if any (the engine's).
	Job string
}

// EffectKind is what an effect asks the engine to write.
type EffectKind uint8

// The effect kinds.
const (
	// TaskOpened: write a new task (Effect.Task) for the token.
	TaskOpened EffectKind = iota + 1
	// JobOffered: write a new job (Effect.Job) for the token.
	JobOffered
	// IncidentRaised: write a new open incident (Effect.Incident).
	IncidentRaised
	// WorkEnded: the token ended: its open task and job end (completed if
	// Effect.Completed, else canceled) and its open incidents are
	// resolved. Effect.Held says what the token held.
	WorkEnded
)

// Effect is something a command asks of the world outside the token game,
// for the engine to write in the command's transaction.
type Effect struct {
	Kind  EffectKind
	Token *NodeToken
	// Seq is the sequence number of the event that goes with the effect
	// (TASK_CREATED, JOB_CREATED, INCIDENT_OPENED): unique in the process,
	// so the engine names the new row after it.
	Seq      int64
	Task     *TaskSpec
	Job      *JobSpec
	Incident *IncidentSpec
	// For WorkEnded: what the token held, and whether it completed on
	// its way (true) or was cancelled, backtracked or interrupted.
	Held      WorkFlags
	Completed bool
}

// WorkResult is how a token's task or job came back.
type WorkResult struct {
	// Env holds the variables to merge: what changed in a task's data, or
	// what a worker returned.
	Env map[string]Value
	// Result is a job's result code: it chooses the arcs (see
	// CompleteWithResult).
	Result string
	// Outcome is the arc a person chose when completing a task.
	Outcome string
	// User is who completed a task ("" for a job or an unknown user).
	User string
}

// WorkCompleter is implemented by node types that decide themselves what a
// completed task or job does (output mappings, result codes of their own):
// CompleteWork must complete the token or leave it waiting. Without it the
// kernel calls CompleteWithResult.
type WorkCompleter interface {
	CompleteWork(e *Engine, t *NodeToken, held WorkFlags, r WorkResult) error
}

// ErrorCatcher is implemented by node types that can catch a business
// error a worker throws on their token (BPMN error boundaries): it reports
// whether it caught the error and has moved the process on.
type ErrorCatcher interface {
	CatchError(e *Engine, t *NodeToken, code, message string, env map[string]Value) (caught bool, err error)
}

// IncidentResolver is implemented by node types that decide what resolving
// an incident on their token does; without it the kernel runs the token's
// step again (see ResolveIncident).
type IncidentResolver interface {
	ResolveIncident(e *Engine, t *NodeToken, kind string) error
}

// Holds reports whether the token holds work of that kind.
func (t *NodeToken) Holds(f WorkFlags) bool { return t.Work&f != 0 }

// effect records an effect of the running command.
func (e *Engine) effect(t *NodeToken, ef Effect) {
	ef.Token = t
	p := t.Process
	e.mutP(p)
	if n := len(p.Effects); n == cap(p.Effects) {
		gr := e.runtime(p.Graph.Nodes[0]).graph
		if p.Effects == nil {
			p.Effects = make([]Effect, 0, gr.effectHint())
		} else {
			// The list grows: the next one starts with room for this many.
			raise(&gr.effects, n+1)
		}
	}
	p.Effects = append(p.Effects, ef)
	p.Dirty = true
}

// checkHolder fails the command unless t is an active token of an
// executing process.
func (e *Engine) checkHolder(t *NodeToken, what string) {
	e.checkCompletable(t)
	if !t.active {
		e.Fail(refuse(ErrInvalidArgument, "node token %s is not active: it cannot hold %s", t.Label(), what))
	}
}

// OpenTask opens a human task for an active token: the TASK_CREATED event
// and a TaskOpened effect. The token waits until the task is completed
// (CompleteTask) or the token ends otherwise. A token holds one open task
// at a time.
func (e *Engine) OpenTask(t *NodeToken, spec TaskSpec) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "a task")
		if t.Holds(HoldsTask) {
			e.Fail(refuse(ErrInvalidArgument, "node token %s holds a task already", t.Label()))
		}
		if spec.Label == "" {
			spec.Label = t.Node.Name
		}
		if spec.Data == nil {
			spec.Data = t.FullEnv().Map()
		}
		e.mutN(t)
		t.Work |= HoldsTask
		e.fire(t.Process, TaskCreated, t, nil, nil, 0)
		e.effect(t, Effect{Kind: TaskOpened, Seq: t.Process.EventSeq, Task: &spec})
	})
}

// OfferJob offers a job to workers of spec.Type for an active token: the
// JOB_CREATED event and a JobOffered effect. The token waits until the job
// completes (CompleteJob) or the token ends otherwise. A token holds one
// job at a time.
func (e *Engine) OfferJob(t *NodeToken, spec JobSpec) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "a job")
		if spec.Type == "" {
			e.Fail(refuse(ErrInvalidArgument, "node %s: a job needs a type", t.Node.QualifiedName()))
		}
		if t.Holds(HoldsJob) {
			e.Fail(refuse(ErrInvalidArgument, "node token %s holds a job already", t.Label()))
		}
		if spec.Retries <= 0 {
			spec.Retries = DefaultJobRetries
		}
		if spec.Env == nil {
			pd, td := t.Process.Env.data(), t.Env.data()
			pd.share()
			td.share()
			spec.offered = [2]*envData{pd, td}
		}
		e.mutN(t)
		t.Work |= HoldsJob
		e.fire(t.Process, JobCreated, t, nil, nil, 0)
		e.effect(t, Effect{Kind: JobOffered, Seq: t.Process.EventSeq, Job: &spec})
	})
}

// RaiseIncident opens an incident on an active token: the INCIDENT_OPENED
// event and an IncidentRaised effect. The token stays where it is until the
// incident is resolved (ResolveIncident) or the token ends. A node type
// raises one instead of failing the command when its step cannot go on
// for a reason an operator can fix (a condition that does not evaluate, no
// route to take).
func (e *Engine) RaiseIncident(t *NodeToken, spec IncidentSpec) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "an incident")
		if spec.Kind == "" {
			e.Fail(refuse(ErrInvalidArgument, "an incident needs a kind"))
		}
		e.mutN(t)
		t.Work |= HoldsIncident
		e.fire(t.Process, IncidentOpened, t, nil, nil, 0)
		e.effect(t, Effect{Kind: IncidentRaised, Seq: t.Process.EventSeq, Incident: &spec})
	})
}

// FireWorkEvent records an event of the work layer on a token (a task
// claimed, released or saved; a job failed; an incident resolved; an
// environment changed), for the engine's commands that change work rows
// without moving the token. It returns the event's sequence number.
func (e *Engine) FireWorkEvent(t *NodeToken, typ EventType) (seq int64, err error) {
	err = e.run(t.Process, func() {
		e.fire(t.Process, typ, t, nil, nil, 0)
		seq = t.Process.EventSeq
	})
	return seq, err
}

// FireProcessEvent records an event about a process as a whole (an
// environment changed, an attachment set) and returns its sequence number.
func (e *Engine) FireProcessEvent(p *Process, typ EventType) (seq int64, err error) {
	err = e.run(p, func() {
		e.fire(p, typ, nil, nil, nil, 0)
		seq = p.EventSeq
	})
	return seq, err
}

// CompleteTask delivers the completion of the token's task: TASK_COMPLETED,
// then the node type's CompleteWork, or CompleteWithResult.
func (e *Engine) CompleteTask(t *NodeToken, r WorkResult) error {
	return e.deliver(t, HoldsTask, TaskCompleted, r)
}

// CompleteJob delivers the completion of the token's job: JOB_COMPLETED,
// then the node type's CompleteWork, or CompleteWithResult.
func (e *Engine) CompleteJob(t *NodeToken, r WorkResult) error {
	return e.deliver(t, HoldsJob, JobCompleted, r)
}

func (e *Engine) deliver(t *NodeToken, held WorkFlags, typ EventType, r WorkResult) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "work")
		if !t.Holds(held) {
			e.Fail(refuse(ErrInvalidArgument, "node token %s holds no %s", t.Label(), workName(held)))
		}
		e.mutN(t)
		t.Work &^= held
		e.fire(t.Process, typ, t, nil, nil, 0)
		p := t.Process
		was := p.inLoop
		p.inLoop = true
		if wc, ok := e.runtime(t.Node).typ.(WorkCompleter); ok {
			if err := wc.CompleteWork(e, t, held, r); err != nil {
				e.Fail(failed(err, "node %s: completing its %s", t.Node.QualifiedName(), workName(held)))
			}
		} else if err := e.CompleteWithResult(t, r); err != nil {
			e.Fail(err)
		}
		p.inLoop = was
		if p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
}

func workName(f WorkFlags) string {
	switch f {
	case HoldsTask:
		return "task"
	case HoldsJob:
		return "job"
	case HoldsIncident:
		return "incident"
	}
	return "work"
}

// CompleteWithResult is what a completed task or job does unless the node
// type decides otherwise: r.Env is merged into the process environment,
// then the token completes on the arcs r.Outcome names (it must name an
// arc leaving the node), else on the arcs named r.Result if the node has
// any, else on its default arcs. Node types with a WorkCompleter may call
// it after mapping the result their own way.
func (e *Engine) CompleteWithResult(t *NodeToken, r WorkResult) error {
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		names := defaultArcs
		switch {
		case r.Outcome != "":
			name, ok := outcomeArc(t, r.Outcome)
			if !ok {
				e.Fail(refuse(ErrInvalidArgument, "outcome %q names no arc leaving node %s (its arcs: %s)",
					r.Outcome, t.Node.QualifiedName(), arcNameList(t)))
			}
			names = []string{name}
		case r.Result != "" && len(t.Node.OutArcsNamed(r.Result)) > 0:
			names = []string{r.Result}
		}
		if len(r.Env) > 0 {
			keys := make([]string, 0, len(r.Env))
			for k := range r.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.Process.Env.Set(k, r.Env[k])
			}
			e.mutP(t.Process)
			t.Process.Dirty = true
		}
		e.complete(t, names, false)
	})
}

// outcomeArc finds the arc an outcome names among those leaving t's node:
// by name (a BPMN flow's id), else by label (its display name); it returns
// the arc's name.
func outcomeArc(t *NodeToken, outcome string) (string, bool) {
	if len(t.Node.OutArcsNamed(outcome)) > 0 {
		return outcome, true
	}
	for _, a := range t.Node.OutArcs() {
		if a.Label != "" && a.Label == outcome {
			return a.Name, true
		}
	}
	return "", false
}

// arcNameList lists the names of the arcs leaving t's node, for messages.
func arcNameList(t *NodeToken) string {
	var out []string
	seen := map[string]bool{}
	for _, a := range t.Node.OutArcs() {
		n := a.Name
		if n == "" {
			n = "(default)"
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, fmt.Sprintf("%q", n))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	s := out[0]
	for _, x := range out[1:] {
		s += ", " + x
	}
	return s
}

// FailJob records a failed attempt at the token's job (JOB_FAILED). With no
// retries left an incident of kind job_failed opens for job jobID; the job
// stays the token's, to be offered again when the incident is resolved.
func (e *Engine) FailJob(t *NodeToken, retriesLeft int, message, jobID string) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "a job")
		if !t.Holds(HoldsJob) {
			e.Fail(refuse(ErrInvalidArgument, "node token %s holds no job", t.Label()))
		}
		e.fire(t.Process, JobFailed, t, nil, nil, 0)
		if retriesLeft <= 0 {
			if err := e.RaiseIncident(t, IncidentSpec{Kind: "job_failed", Message: message, Job: jobID}); err != nil {
				e.Fail(err)
			}
		}
	})
}

// ThrowError delivers a business error a worker threw on the token's job
// jobID (JOB_ERROR_THROWN): the job ends, and the node type's ErrorCatcher
// may catch the error; uncaught, an incident of kind uncaught_error opens
// and the token waits. It reports whether the error was caught.
func (e *Engine) ThrowError(t *NodeToken, code, message string, env map[string]Value, jobID string) (caught bool, err error) {
	err = e.run(t.Process, func() {
		e.checkHolder(t, "a job")
		if !t.Holds(HoldsJob) {
			e.Fail(refuse(ErrInvalidArgument, "node token %s holds no job", t.Label()))
		}
		e.mutN(t)
		t.Work &^= HoldsJob
		e.fire(t.Process, JobErrorThrown, t, nil, nil, 0)
		p := t.Process
		was := p.inLoop
		p.inLoop = true
		if ec, ok := e.runtime(t.Node).typ.(ErrorCatcher); ok {
			var cerr error
			caught, cerr = ec.CatchError(e, t, code, message, env)
			if cerr != nil {
				e.Fail(failed(cerr, "node %s: catching error %q", t.Node.QualifiedName(), code))
			}
		}
		p.inLoop = was
		if !caught {
			msg := fmt.Sprintf("error %q thrown at node %s was not caught", code, t.Node.QualifiedName())
			if message != "" {
				msg += ": " + message
			}
			if err := e.RaiseIncident(t, IncidentSpec{Kind: "uncaught_error", Message: msg, Job: jobID}); err != nil {
				e.Fail(err)
			}
		}
		if p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
	return caught, err
}

// ResolveIncident records that an incident of the token was resolved
// (INCIDENT_RESOLVED). With rerun, the step that failed runs again: the
// node type's IncidentResolver if it has one; else a delayed token's guard
// is evaluated again, and an accepted token's node executes again (a job
// or task node offers its work anew). A resolution whose step fails again
// fails the command: nothing changes and the incident stays open.
func (e *Engine) ResolveIncident(t *NodeToken, kind string, rerun bool) error {
	return e.run(t.Process, func() {
		e.checkHolder(t, "an incident")
		e.mutN(t)
		t.Work &^= HoldsIncident // resolved: the token no longer waits for it
		e.fire(t.Process, IncidentResolved, t, nil, nil, 0)
		if !rerun {
			return
		}
		p := t.Process
		was := p.inLoop
		p.inLoop = true
		rt := e.runtime(t.Node)
		switch r, ok := rt.typ.(IncidentResolver); {
		case ok:
			if err := r.ResolveIncident(e, t, kind); err != nil {
				e.Fail(failed(err, "node %s: resolving a %s incident", t.Node.QualifiedName(), kind))
			}
		case t.GuardAction == Delay:
			e.removeActive(t)
			e.executeNode(t)
		default:
			e.execute(rt, t)
		}
		p.inLoop = was
		if p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
}

// endWork ends the work a token holds as the token ends: completed says
// the token went on (else it was cancelled, backtracked or interrupted).
func (e *Engine) endWork(t *NodeToken, completed bool) {
	if t.Work == 0 {
		return
	}
	held := t.Work
	e.mutN(t)
	t.Work = 0
	e.effect(t, Effect{Kind: WorkEnded, Held: held, Completed: completed})
}
