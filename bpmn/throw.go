package bpmn

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

// catcher finds, for an error or escalation thrown at token t, the
// listener that catches it, looking outward from t's scope: in each scope,
// the event sub-processes of the scope (a listener of the code before a
// catch-all), then the boundary events of the scope's owner; at the
// process level, then through a call activity into the calling process.
func catcher(t *kernel.NodeToken, kind, code string) *kernel.NodeToken {
	p := t.Process
	scope := scopeOf(t.Sets)
	for {
		// Event sub-processes listening in this scope.
		if c := pick(p, kind, code, func(u *kernel.NodeToken) bool {
			return u.Node.Type == bpmn.TypeEventSub && scopeOf(u.Sets) == scope
		}); c != nil {
			return c
		}
		owner := ownerOf(p, scope)
		if owner == nil {
			// The process level: through the calling activity, if any.
			parent := p.ParentToken
			if parent == nil {
				return nil
			}
			if c := boundaryCatcher(parent, kind, code); c != nil {
				return c
			}
			p = parent.Process
			scope = scopeOf(parent.Sets)
			continue
		}
		if owner.Note(noteMode) == "body" || owner.Node.Type == bpmn.TypeSubProcess || owner.Node.Type == bpmn.TypeEventSub {
			if c := boundaryCatcher(owner, kind, code); c != nil {
				return c
			}
		}
		scope = scopeOf(owner.Sets)
	}
}

func boundaryCatcher(act *kernel.NodeToken, kind, code string) *kernel.NodeToken {
	id := tokenID(act)
	return pick(act.Process, kind, code, func(u *kernel.NodeToken) bool {
		return u.Node.Type == bpmn.TypeBoundary && u.Note(noteAttached) == id
	})
}

// pick chooses among a scope's listeners for kind the one of the code, or
// else a catch-all.
func pick(p *kernel.Process, kind, code string, in func(*kernel.NodeToken) bool) *kernel.NodeToken {
	var all *kernel.NodeToken
	for _, u := range p.NodeTokens {
		if !u.Active() || u.Complete || u.Note(noteMode) != "listen" || u.Note(noteAwait) != kind || !in(u) {
			continue
		}
		switch u.Note(noteName) {
		case code:
			return u
		case "":
			if all == nil {
				all = u
			}
		}
	}
	return all
}

// throwError throws a BPMN error at token t: the matching catcher takes
// over (interrupting what it is attached to); an uncaught error fails the
// step (uncaught_error).
func throwError(e *kernel.Engine, t *kernel.NodeToken, code string) {
	c := catcher(t, "error", code)
	if c == nil {
		fail(e, t, CodeUncaughtError, "error %q is not caught", code)
	}
	triggerListener(e, c, nil)
}

// ThrowError throws a BPMN error at a waiting token (a job's worker
// reporting a business error); vars are merged where the catcher takes
// them. It fails with uncaught_error when nothing catches it.
func ThrowError(e *kernel.Engine, t *kernel.NodeToken, code string, vars *kernel.Env) error {
	return e.Run(t.Process, func() {
		c := catcher(t, "error", code)
		if c == nil {
			fail(e, t, CodeUncaughtError, "error %q is not caught", code)
		}
		triggerListener(e, c, vars)
	})
}

// throwEscalation throws an escalation; uncaught, nothing happens.
func throwEscalation(e *kernel.Engine, t *kernel.NodeToken, code string) {
	if c := catcher(t, "escalation", code); c != nil {
		triggerListener(e, c, nil)
	}
}

func triggerListener(e *kernel.Engine, c *kernel.NodeToken, vars *kernel.Env) {
	switch c.Node.Type {
	case bpmn.TypeBoundary:
		newBoundaryNode(elementOf(c.Node)).trigger(e, c, vars)
	case bpmn.TypeEventSub:
		newEventSubProcess(elementOf(c.Node)).trigger(e, c, vars)
	}
}

// emitSignal records a signal thrown by a token. The engine broadcasts it
// after the step commits, to every process (this one included); see
// Signals.
func emitSignal(e *kernel.Engine, t *kernel.NodeToken, name string) {
	setNotes(e, t, "signal", name)
}

// ---- compensation

// compensate starts the compensation of the completed activities of the
// thrower's scope (or of the one activity named), the most recently
// completed first, one handler after the other. It reports whether the
// thrower waits for handlers.
func compensate(e *kernel.Engine, t *kernel.NodeToken, activity string) bool {
	p := t.Process
	scope := scopeOf(t.Sets)
	var done []*kernel.NodeToken
	for _, u := range p.NodeTokens {
		if !u.Complete || u.Note(noteDoneComp) != "" {
			continue
		}
		el := elementOf(u.Node)
		if el == nil || el.CompensatedBy == "" || !completedNormally(u) {
			continue
		}
		if activity != "" && el.ID != activity {
			continue
		}
		if scope != nil && !hasSet(u.Sets, scope) {
			continue
		}
		if !scopesEnded(u, scope) {
			continue
		}
		done = append(done, u)
	}
	if len(done) == 0 {
		return false
	}
	sort.Slice(done, func(i, j int) bool { return done[i].CompleteSeq > done[j].CompleteSeq })
	ids := make([]string, len(done))
	for i, u := range done {
		ids[i] = tokenID(u)
	}
	setNotes(e, t, notePending, strings.Join(ids, ","))
	nextHandler(e, t)
	return true
}

// scopesEnded reports whether the scopes a token ran in, inside scope,
// have all completed (compensating a scope reaches into its completed
// sub-processes, not into running ones).
func scopesEnded(u *kernel.NodeToken, scope *kernel.TokenSet) bool {
	for _, m := range u.Sets {
		if m.Set == scope {
			continue
		}
		if owner := ownerOf(u.Process, m.Set); owner != nil && !owner.Complete {
			if scope == nil || hasSet(owner.Sets, scope) || owner.Sets == nil {
				return false
			}
		}
	}
	return true
}

// completedNormally reports whether an activity token completed by taking
// its flows (or as an instance), not by being withdrawn or interrupted.
func completedNormally(u *kernel.NodeToken) bool {
	if len(u.Children) > 0 {
		return true
	}
	return u.Note(noteMode) == "instance" && u.Complete
}

// nextHandler starts the handler of the next activity to compensate, or
// completes the thrower when none is left.
func nextHandler(e *kernel.Engine, t *kernel.NodeToken) {
	pending := t.Note(notePending)
	if pending == "" {
		setNotes(e, t, notePending, "")
		if t.Node.Type == bpmn.TypeEnd {
			complete(e, t)
		} else {
			complete(e, t, elementOf(t.Node).OutNames...)
		}
		return
	}
	first, rest, _ := strings.Cut(pending, ",")
	setNotes(e, t, notePending, rest)
	u := tokenByID(t.Process, first)
	if u == nil {
		nextHandler(e, t)
		return
	}
	setNotes(e, u, noteDoneComp, "1")
	handler := elementOf(u.Node).CompensatedBy
	// The handler runs in the compensated activity's scope, seeing its
	// variables as they were.
	create(e, t.Process, handler, t.Sets, u.Env, map[string]string{noteCompOf: first, noteThrower: tokenID(t)})
}

// compensationDone continues the throw that started a handler.
func compensationDone(e *kernel.Engine, h *kernel.NodeToken) {
	thrower := tokenByID(h.Process, h.Note(noteThrower))
	if thrower == nil || thrower.Complete {
		return
	}
	nextHandler(e, thrower)
}

// ---- work

// prepareWork opens what a waiting element hands out: a task for people
// (user tasks: assignee, candidates, queue, priority, dates from the
// model's assignment), or a job for workers (its type, headers and
// retries). Both see the token's variables (input mappings included).
func prepareWork(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	if a := el.Assignment; a != nil {
		spec := kernel.TaskSpec{Label: el.Name, Queue: a.Queue, Priority: 50}
		if a.Assignee != nil {
			spec.Assignee = text(e, t, a.Assignee, "assignee")
		}
		if a.CandidateUsers != nil {
			spec.CandidateUsers = splitComma(list(e, t, a.CandidateUsers, "candidate users"))
		}
		if a.CandidateGroups != nil {
			spec.CandidateGroups = splitComma(list(e, t, a.CandidateGroups, "candidate groups"))
		}
		if a.Priority != nil {
			p, err := strconv.Atoi(text(e, t, a.Priority, "priority"))
			if err != nil || p < 0 || p > 100 {
				fail(e, t, CodeConditionFailed, "priority %q is not a number from 0 to 100", text(e, t, a.Priority, "priority"))
			}
			spec.Priority = p
		}
		if a.DueDate != nil {
			spec.DueAt = parseDate(date(e, t, a.DueDate, "due date"))
		}
		if a.FollowUpDate != nil {
			spec.FollowUpAt = parseDate(date(e, t, a.FollowUpDate, "follow-up date"))
		}
		if err := e.OpenTask(t, spec); err != nil {
			e.Fail(err)
		}
		return
	}
	typ := el.ID
	if el.JobType != nil {
		typ = text(e, t, el.JobType, "job type")
	}
	if typ == "" {
		fail(e, t, CodeConditionFailed, "the job type is empty")
	}
	if err := e.OfferJob(t, kernel.JobSpec{Type: typ, Headers: el.Headers, Retries: el.Retries}); err != nil {
		e.Fail(err)
	}
}

func parseDate(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	d, _ := time.Parse(time.RFC3339Nano, s)
	return d
}

// list evaluates a list of names (a FEEL list, or comma-separated text).
func list(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, what string) string {
	v := mustEval(e, t, x, what, nil)
	if l, ok := v.([]any); ok {
		parts := make([]string, 0, len(l))
		for _, item := range l {
			parts = append(parts, fmt.Sprint(item))
		}
		return strings.Join(parts, ",")
	}
	parts := splitComma(fmt.Sprint(v))
	return strings.Join(parts, ",")
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
