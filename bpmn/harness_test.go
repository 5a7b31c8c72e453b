package bpmn_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/bpmn"
	fbpmn "github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

var t0 = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

// run drives one process of a BPMN model through the kernel, on a test
// clock.
type run struct {
	t    *testing.T
	k    *kernel.Kernel
	defs map[string]*graph.Graph
	g    *graph.Graph
	p    *kernel.Process
	now  time.Time
}

const defsHead = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="t">
`

// model wraps process bodies (and global elements) into a file.
func model(globals string, procs ...string) string {
	return defsHead + globals + strings.Join(procs, "\n") + "\n</definitions>"
}

func proc(id, body string) string {
	return `<process id="` + id + `" isExecutable="true">` + body + `</process>`
}

// load compiles a file; its first process is the one the run drives.
func load(t *testing.T, src string) *run {
	t.Helper()
	gs, err := fbpmn.Load("test.bpmn", []byte(src))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	k := kernel.New()
	bpmn.Register(k)
	n := 0
	k.NewID = func() string { n++; return fmt.Sprintf("p%d", n) }
	r := &run{t: t, k: k, defs: map[string]*graph.Graph{}, now: t0}
	for _, g := range gs {
		g.Version = 1
		r.defs[g.Name] = g
		if err := k.Prepare(g); err != nil {
			t.Fatalf("prepare %s: %v", g.Name, err)
		}
	}
	k.Definitions = func(name string) *graph.Graph { return r.defs[name] }
	r.g = gs[0]
	return r
}

func (r *run) engine() *kernel.Engine { return r.k.Engine(r.now) }

func (r *run) start(env map[string]any) *run {
	r.t.Helper()
	e, err := kernel.EnvFromMap(env)
	if err != nil {
		r.t.Fatal(err)
	}
	p, err := r.engine().Start(r.g, e)
	if err != nil {
		r.t.Fatalf("start: %v", err)
	}
	r.p = p
	return r
}

func (r *run) startAt(node string, env map[string]any) *run {
	r.t.Helper()
	e, _ := kernel.EnvFromMap(env)
	p, err := r.engine().StartAt(r.g, e, r.g.Node(node))
	if err != nil {
		r.t.Fatalf("start at %s: %v", node, err)
	}
	r.p = p
	return r
}

// history is the process's token history with every nested process's.
func (r *run) history() string {
	var b strings.Builder
	r.p.Walk(func(q *kernel.Process) {
		if q != r.p {
			fmt.Fprintf(&b, "-- %s (%s)\n", q.ID, q.Graph.Name)
		}
		b.WriteString(q.History())
	})
	return b.String()
}

func (r *run) want(history string) {
	r.t.Helper()
	want := strings.TrimLeft(history, "\n")
	if got := r.history(); got != want {
		r.t.Fatalf("history:\n%s\nwant:\n%s", got, want)
	}
}

func (r *run) state(want string) {
	r.t.Helper()
	if got := r.p.State.String(); got != want {
		r.t.Fatalf("state %s, want %s\n%s", got, want, r.history())
	}
}

func (r *run) env(want map[string]any) {
	r.t.Helper()
	got := map[string]any{}
	for k, v := range r.p.Env.Map() {
		got[k] = v.Any()
		if v.Kind() == kernel.KindJSON {
			got[k] = v.String()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		r.t.Fatalf("process env (-want +got):\n%s", diff)
	}
}

// active finds the one active token at a node (in the process or a nested one).
func (r *run) active(node string) *kernel.NodeToken {
	r.t.Helper()
	var found []*kernel.NodeToken
	r.p.Walk(func(q *kernel.Process) {
		for _, t := range q.NodeTokens {
			if t.Active() && !t.Complete && t.Node.Name == node && t.Note("mode") != "listen" && t.Note("mode") != "body" {
				found = append(found, t)
			}
		}
	})
	if len(found) != 1 {
		r.t.Fatalf("%d active tokens at %s, want 1:\n%s", len(found), node, r.history())
	}
	return found[0]
}

func (r *run) activeAll(node string) []*kernel.NodeToken {
	var found []*kernel.NodeToken
	r.p.Walk(func(q *kernel.Process) {
		for _, t := range q.NodeTokens {
			if t.Active() && !t.Complete && t.Node.Name == node && t.Note("mode") != "listen" && t.Note("mode") != "body" {
				found = append(found, t)
			}
		}
	})
	return found
}

func envOf(m map[string]any) map[string]kernel.Value {
	out := map[string]kernel.Value{}
	for k, x := range m {
		v, err := kernel.ValueOf(x)
		if err != nil {
			panic(err)
		}
		out[k] = v
	}
	return out
}

// task completes the user task (or job) waiting at node.
func (r *run) task(node string, vars map[string]any) *run {
	r.t.Helper()
	t := r.active(node)
	r.work(t, vars, "")
	return r
}

func (r *run) work(t *kernel.NodeToken, vars map[string]any, outcome string) {
	r.t.Helper()
	e := r.engine()
	var err error
	switch {
	case t.Holds(kernel.HoldsTask):
		err = e.CompleteTask(t, kernel.WorkResult{Env: envOf(vars), Outcome: outcome})
	case t.Holds(kernel.HoldsJob):
		err = e.CompleteJob(t, kernel.WorkResult{Env: envOf(vars)})
	default:
		r.t.Fatalf("token at %s holds no task or job:\n%s", t.Node.Name, r.history())
	}
	if err != nil {
		r.t.Fatalf("complete %s: %v", t.Node.Name, err)
	}
}

// message delivers a message to the one token waiting for it.
func (r *run) message(name, key string, vars map[string]any) *run {
	r.t.Helper()
	var found []*kernel.NodeToken
	r.p.Walk(func(q *kernel.Process) {
		for _, t := range q.NodeTokens {
			if t.Active() && !t.Complete && t.Note("await") == "message" && t.Note("name") == name && t.Note("key") == key {
				found = append(found, t)
			}
		}
	})
	if len(found) != 1 {
		r.t.Fatalf("%d tokens wait for message %q key %q:\n%s", len(found), name, key, r.history())
	}
	env, _ := kernel.EnvFromMap(vars)
	if err := r.engine().CompleteWith(found[0], env); err != nil {
		r.t.Fatalf("message %s: %v", name, err)
	}
	return r
}

// signal delivers a signal to every token waiting for it.
func (r *run) signal(name string) *run {
	r.t.Helper()
	var found []*kernel.NodeToken
	r.p.Walk(func(q *kernel.Process) {
		for _, t := range q.NodeTokens {
			if t.Active() && !t.Complete && t.Note("await") == "signal" && t.Note("name") == name {
				found = append(found, t)
			}
		}
	})
	for _, t := range found {
		if !t.Active() || t.Complete {
			continue
		}
		if err := r.engine().CompleteWith(t, nil); err != nil {
			r.t.Fatalf("signal %s: %v", name, err)
		}
	}
	return r
}

// advance moves the clock and fires the delays that are due, in due order.
func (r *run) advance(d time.Duration) *run {
	r.t.Helper()
	r.now = r.now.Add(d)
	for {
		var due []*kernel.NodeToken
		r.p.Walk(func(q *kernel.Process) {
			if q.State != kernel.Executing {
				return
			}
			for _, t := range q.NodeTokens {
				if t.Active() && !t.Complete && t.GuardAction == kernel.Delay && !t.DelayUntil().After(r.now) {
					due = append(due, t)
				}
			}
		})
		if len(due) == 0 {
			return r
		}
		sort.SliceStable(due, func(i, j int) bool { return due[i].DelayUntilNs < due[j].DelayUntilNs })
		if err := r.k.Engine(due[0].DelayUntil()).ReevaluateDelayedToken(due[0]); err != nil {
			r.t.Fatalf("timer at %s: %v", due[0].Node.Name, err)
		}
	}
}

// effects lists the work effects of the process (task and job openings).
func (r *run) opened() []string {
	var out []string
	for _, ef := range r.p.Effects {
		switch ef.Kind {
		case kernel.TaskOpened:
			out = append(out, fmt.Sprintf("task %s assignee=%q users=%v groups=%v queue=%q priority=%d due=%s",
				ef.Token.Node.Name, ef.Task.Assignee, ef.Task.CandidateUsers, ef.Task.CandidateGroups, ef.Task.Queue, ef.Task.Priority, fmtTime(ef.Task.DueAt)))
		case kernel.JobOffered:
			out = append(out, fmt.Sprintf("job %s type=%q retries=%d headers=%v", ef.Token.Node.Name, ef.Job.Type, ef.Job.Retries, ef.Job.Headers))
		case kernel.IncidentRaised:
			out = append(out, fmt.Sprintf("incident %s %s: %s", ef.Token.Node.Name, ef.Incident.Kind, ef.Incident.Message))
		}
	}
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}
