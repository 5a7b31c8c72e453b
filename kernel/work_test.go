package kernel

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/graph"
)

// taskEl builds <custom><task>…</task></custom> from property → value
// pairs; a value "env:x" reads attribute x.
func taskEl(props ...string) *graph.Element {
	task := &graph.Element{Name: "task"}
	for i := 0; i+1 < len(props); i += 2 {
		c := &graph.Element{Name: props[i]}
		if v, ok := strings.CutPrefix(props[i+1], "env:"); ok {
			c.Attrs = []graph.Attr{{Name: "env", Value: v}}
		} else {
			c.Text = props[i+1]
		}
		task.Children = append(task.Children, c)
	}
	return &graph.Element{Name: "custom", Children: []*graph.Element{task}}
}

func jobEl(typ string) *graph.Element {
	return &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "job", Attrs: []graph.Attr{{Name: "type", Value: typ}}}}}
}

// effects returns the kinds of effects in p (and its nested processes).
func effects(p *Process) []Effect {
	var out []Effect
	p.Walk(func(q *Process) { out = append(out, q.Effects...) })
	return out
}

func kinds(efs []Effect) string {
	names := map[EffectKind]string{TaskOpened: "task", JobOffered: "job", IncidentRaised: "incident", WorkEnded: "ended"}
	var out []string
	for _, ef := range efs {
		s := names[ef.Kind] + " " + ef.Token.Node.Name
		if ef.Kind == WorkEnded {
			if ef.Completed {
				s += " completed"
			} else {
				s += " canceled"
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// eventAt is the event of p with sequence number seq among those of the
// current command, or nil.
func eventAt(p *Process, seq int64) *Event {
	for i := range p.Events {
		if p.Event(i).Seq == seq {
			ev := p.Event(i)
			return &ev
		}
	}
	return nil
}

// wantPath checks the nodes of p's completed tokens, in order of completion.
func wantPath(t *testing.T, p *Process, want string) {
	t.Helper()
	var done []*NodeToken
	for _, tok := range p.NodeTokens {
		if tok.Complete {
			done = append(done, tok)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].CompleteSeq < done[j].CompleteSeq })
	var names []string
	for _, tok := range done {
		names = append(names, tok.Node.Name)
	}
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("completed %q, want %q", got, want)
	}
}

func clearEffects(p *Process) {
	p.Walk(func(q *Process) { q.Effects = nil; q.Events = nil })
}

func TestTaskOpensAndCompletes(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "approval",
		N{Name: "start", Start: true, Arcs: []string{"approve"}},
		N{Name: "approve", Type: graph.TypeWait, Arcs: []string{"done", "rework:no"},
			Custom: taskEl("label", "Approve", "assignee", "env:reviewer", "candidateGroups", "sales, managers", "priority", "70", "due", "P2D")},
		N{Name: "done"}, N{Name: "rework"})
	env := NewEnv()
	env.Set("reviewer", String("alice"))
	env.Set("amount", Int(40))
	p := start(t, k, g, env)
	efs := effects(p)
	if kinds(efs) != "task approve" {
		t.Fatalf("effects %s, want the task", kinds(efs))
	}
	spec := efs[0].Task
	if spec.Label != "Approve" || spec.Assignee != "alice" || strings.Join(spec.CandidateGroups, "|") != "sales|managers" || spec.Priority != 70 {
		t.Fatalf("task spec %+v", spec)
	}
	if want := t0.AddDate(0, 0, 2); !spec.DueAt.Equal(want) {
		t.Fatalf("due %v, want %v", spec.DueAt, want)
	}
	if v, _ := spec.Data["amount"]; v.IntValue() != 40 {
		t.Fatalf("task data %v: want the variables the node sees", spec.Data)
	}
	tok := token(t, p, "approve")
	if !tok.Holds(HoldsTask) {
		t.Fatalf("token holds %b", tok.Work)
	}
	if ev := eventAt(p, efs[0].Seq); ev == nil || ev.Type != TaskCreated || ev.NodeToken() != tok {
		t.Fatalf("effect seq %d is not the token's TASK_CREATED: %v", efs[0].Seq, eventLog(p))
	}
	clearEffects(p)
	// The outcome chooses the arc; the changed data lands in the process env.
	err := k.Engine(t0).CompleteTask(tok, WorkResult{Outcome: "no", Env: map[string]Value{"comment": String("too dear")}, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(effects(p)) != 0 {
		t.Fatalf("a completed task has no effect of the kernel's: %s", kinds(effects(p)))
	}
	if v, _ := p.Env.Get("comment"); v.Str() != "too dear" {
		t.Fatalf("process env %v", p.Env.Map())
	}
	wantPath(t, p, "start approve rework")
}

func TestUnknownOutcomeIsRefused(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"w"}},
		N{Name: "w", Type: graph.TypeWait, Arcs: []string{"x:yes"}, Custom: taskEl()},
		N{Name: "x"})
	p := start(t, k, g, nil)
	err := k.Engine(t0).CompleteTask(token(t, p, "w"), WorkResult{Outcome: "maybe"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `"yes"`) {
		t.Fatalf("err %v, want invalid_argument naming the arcs", err)
	}
}

func TestJobResultChoosesArcs(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"charge"}},
		N{Name: "charge", Type: graph.TypeWait, Arcs: []string{"ok", "declined:declined"}, Custom: jobEl("card")},
		N{Name: "ok"}, N{Name: "declined"})
	for _, c := range []struct{ result, want string }{{"declined", "declined"}, {"", "ok"}, {"unknown-code", "ok"}} {
		p := start(t, k, g, nil)
		efs := effects(p)
		if kinds(efs) != "job charge" || efs[0].Job.Type != "card" || efs[0].Job.Retries != DefaultJobRetries {
			t.Fatalf("effects %s %+v", kinds(efs), efs[0].Job)
		}
		if err := k.Engine(t0).CompleteJob(token(t, p, "charge"), WorkResult{Result: c.result}); err != nil {
			t.Fatal(err)
		}
		if p.State != Completed {
			t.Fatalf("result %q: process %s", c.result, p.State)
		}
		wantPath(t, p, "s charge "+c.want)
	}
}

// Whatever ends a token that holds work ends the work in the same step.
func TestTokenEndEndsWork(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"a"}},
		N{Name: "a", Arcs: []string{"w", "j"}},
		N{Name: "w", Type: graph.TypeWait, Arcs: []string{"e"}, Custom: taskEl()},
		N{Name: "j", Type: graph.TypeWait, Arcs: []string{"e"}, Custom: jobEl("t")},
		N{Name: "e", Join: graph.JoinAnd})
	cases := []struct {
		name string
		act  func(e *Engine, p *Process) error
		want string
	}{
		{"cancel", func(e *Engine, p *Process) error { return e.Cancel(p) }, "ended w canceled, ended j canceled"},
		{"interrupt", func(e *Engine, p *Process) error { return e.Complete(token(t, p, "w"), []string{}...) }, "ended w canceled"},
		{"no arc", func(e *Engine, p *Process) error { return e.Complete(token(t, p, "w"), "none") }, "ended w canceled"},
		{"plain complete", func(e *Engine, p *Process) error { return e.Complete(token(t, p, "j")) }, "ended j completed"},
		{"backtrack", func(e *Engine, p *Process) error {
			_, err := e.Backtrack(p.NodeTokens[1])
			return err
		}, "ended j canceled, ended w canceled, task w, job j"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, k, g, nil)
			if kinds(effects(p)) != "task w, job j" {
				t.Fatalf("start effects %s", kinds(effects(p)))
			}
			clearEffects(p)
			if err := c.act(k.Engine(t0.Add(time.Minute)), p); err != nil {
				t.Fatal(err)
			}
			if got := kinds(effects(p)); got != c.want {
				t.Fatalf("effects %q, want %q", got, c.want)
			}
		})
	}
}

func TestNestedCancelEndsWork(t *testing.T) {
	k := testKernel()
	child := mkGraph(t, "child",
		N{Name: "cs", Start: true, Arcs: []string{"cw"}},
		N{Name: "cw", Type: graph.TypeWait, Custom: taskEl()})
	k.Definitions = func(name string) *graph.Graph { return child }
	parent := mkGraph(t, "parent",
		N{Name: "s", Start: true, Arcs: []string{"n"}},
		N{Name: "n", Type: graph.TypeNested, Custom: &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "graphName", Text: "child"}}}})
	p := start(t, k, parent, nil)
	clearEffects(p)
	if err := k.Engine(t0).Cancel(p); err != nil {
		t.Fatal(err)
	}
	if got := kinds(effects(p)); got != "ended cw canceled" {
		t.Fatalf("effects %q", got)
	}
}

func TestFailJobAndResolve(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"j"}},
		N{Name: "j", Type: graph.TypeWait, Arcs: []string{"e"}, Custom: jobEl("t")},
		N{Name: "e"})
	p := start(t, k, g, nil)
	tok := token(t, p, "j")
	clearEffects(p)
	e := k.Engine(t0)
	if err := e.FailJob(tok, 2, "boom", "job-1"); err != nil {
		t.Fatal(err)
	}
	if len(effects(p)) != 0 {
		t.Fatalf("a failure with retries left opens nothing: %s", kinds(effects(p)))
	}
	wantEvents(t, p, "JOB_FAILED j")
	clearEffects(p)
	if err := e.FailJob(tok, 0, "boom", "job-1"); err != nil {
		t.Fatal(err)
	}
	efs := effects(p)
	if kinds(efs) != "incident j" || efs[0].Incident.Kind != "job_failed" || efs[0].Incident.Job != "job-1" {
		t.Fatalf("effects %s", kinds(efs))
	}
	wantEvents(t, p, "JOB_FAILED j", "INCIDENT_OPENED j")
	clearEffects(p)
	// A job_failed incident is resolved without running the step again.
	if err := e.ResolveIncident(tok, "job_failed", false); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, p, "INCIDENT_RESOLVED j")
	if len(effects(p)) != 0 || !tok.Holds(HoldsJob) {
		t.Fatalf("effects %s, token holds %b", kinds(effects(p)), tok.Work)
	}
}

func TestUncaughtErrorAndRerun(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"j"}},
		N{Name: "j", Type: graph.TypeWait, Arcs: []string{"e"}, Custom: jobEl("t")},
		N{Name: "e"})
	p := start(t, k, g, nil)
	tok := token(t, p, "j")
	clearEffects(p)
	e := k.Engine(t0)
	caught, err := e.ThrowError(tok, "NO_FUNDS", "card declined", nil, "job-1")
	if err != nil || caught {
		t.Fatalf("caught %v, err %v", caught, err)
	}
	efs := effects(p)
	if kinds(efs) != "incident j" || efs[0].Incident.Kind != "uncaught_error" || !strings.Contains(efs[0].Incident.Message, "NO_FUNDS") || efs[0].Incident.Job != "job-1" {
		t.Fatalf("effects %s", kinds(efs))
	}
	if tok.Holds(HoldsJob) {
		t.Fatal("a thrown error ends the job")
	}
	clearEffects(p)
	// Resolving runs the step again: the wait node offers a new job.
	if err := e.ResolveIncident(tok, "uncaught_error", true); err != nil {
		t.Fatal(err)
	}
	if got := kinds(effects(p)); got != "job j" {
		t.Fatalf("effects %q", got)
	}
}

// catcher is a node type that catches errors with code "CAUGHT" by
// completing its token on arc "error".
type catcher struct{}

func (catcher) Execute(e *Engine, t *NodeToken) error { return e.OfferJob(t, JobSpec{Type: "t"}) }

func (catcher) CatchError(e *Engine, t *NodeToken, code, message string, env map[string]Value) (bool, error) {
	if code != "CAUGHT" {
		return false, nil
	}
	return true, e.Complete(t, "error")
}

func TestErrorCatcher(t *testing.T) {
	k := testKernel()
	k.RegisterNodeType("catcher", func(*graph.Node) (NodeType, error) { return catcher{}, nil })
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"c"}},
		N{Name: "c", Type: "catcher", Arcs: []string{"ok", "handler:error"}},
		N{Name: "ok"}, N{Name: "handler"})
	p := start(t, k, g, nil)
	caught, err := k.Engine(t0).ThrowError(token(t, p, "c"), "CAUGHT", "", nil, "")
	if err != nil || !caught {
		t.Fatalf("caught %v, err %v", caught, err)
	}
	wantPath(t, p, "s c handler")
}

func TestWaitNodeDeclarationErrors(t *testing.T) {
	at := graph.Pos{Line: 7, Column: 3}
	for _, c := range []struct {
		name string
		el   *graph.Element
		want string
	}{
		{"unknown property", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "task", Children: []*graph.Element{{Name: "owner", Text: "x", Pos: at}}}}}, "no property <owner>"},
		{"bad priority", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "task", Children: []*graph.Element{{Name: "priority", Text: "high", Pos: at}}}}}, "priority"},
		{"bad due", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "task", Children: []*graph.Element{{Name: "due", Text: "tomorrow", Pos: at}}}}}, "neither a date"},
		{"text and env", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "task", Children: []*graph.Element{{Name: "queue", Text: "q", Attrs: []graph.Attr{{Name: "env", Value: "x"}}, Pos: at}}}}}, "both text and env"},
		{"job without type", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "job", Pos: at}}}, "needs a type"},
		{"bad retries", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "job", Pos: at, Attrs: []graph.Attr{{Name: "type", Value: "t"}, {Name: "retries", Value: "-1"}}}}}, "retries"},
		{"task and job", &graph.Element{Name: "custom", Children: []*graph.Element{{Name: "task"}, {Name: "job", Pos: at, Attrs: []graph.Attr{{Name: "type", Value: "t"}}}}}, "one task or one job"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			g := mkGraph(t, "g", N{Name: "s", Start: true, Arcs: []string{"w"}}, N{Name: "w", Type: graph.TypeWait, Custom: c.el})
			err := k.Prepare(g)
			var le *graph.LoadError
			if !errors.As(err, &le) || len(le.Problems) != 1 {
				t.Fatalf("err %v, want one load problem", err)
			}
			pr := le.Problems[0]
			if pr.Line != 7 || pr.Column != 3 || !strings.Contains(pr.Message, c.want) {
				t.Fatalf("problem %+v, want line 7 column 3 saying %q", pr, c.want)
			}
		})
	}
}

func TestTaskDeclarationFromEnvFails(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"w"}},
		N{Name: "w", Type: graph.TypeWait, Custom: taskEl("priority", "env:prio")})
	env := NewEnv()
	env.Set("prio", Bool(true))
	_, err := k.Engine(t0).Start(g, env)
	if err == nil || !strings.Contains(err.Error(), "prio") {
		t.Fatalf("err %v, want one naming the attribute", err)
	}
}

type failNode struct{}

func (failNode) Execute(e *Engine, t *NodeToken) error { return errors.New("boom") }

// A command that fails after it ended a token's work and offered another
// job leaves the token holding its task and no effect behind: the undo
// journal restores work flags and effects.
func TestFailedCommandKeepsWork(t *testing.T) {
	k := testKernel()
	k.RegisterNodeType("boom", func(n *graph.Node) (NodeType, error) { return failNode{}, nil })
	g := mkGraph(t, "rollback-work",
		N{Name: "start", Start: true, Arcs: []string{"approve"}},
		N{Name: "approve", Type: graph.TypeWait, Arcs: []string{"pay", "X"}, Custom: taskEl("label", "Approve")},
		N{Name: "pay", Type: graph.TypeWait, Custom: jobEl("pay")},
		N{Name: "X", Type: "boom"})
	p := start(t, k, g, NewEnv())
	tok := token(t, p, "approve")
	clearEffects(p)
	err := k.Engine(t0).CompleteTask(tok, WorkResult{User: "alice"})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("completing the task: %v, want boom", err)
	}
	if !tok.Holds(HoldsTask) || tok.Complete {
		t.Fatalf("after the failed command the token holds %b (complete %v), want its task", tok.Work, tok.Complete)
	}
	if efs := effects(p); len(efs) != 0 {
		t.Fatalf("the failed command left effects: %s", kinds(efs))
	}
}

// A job offered with no variables of its own gets the token's full
// environment as it was when offered: writes after the offer, to the
// process's or the token's attributes, do not reach it, and neither do
// writes to the environment the process was started with.
func TestJobVariablesAsOffered(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"charge"}},
		N{Name: "charge", Type: graph.TypeWait, Arcs: []string{"e"}, Custom: jobEl("card")},
		N{Name: "e"})
	env := NewEnv()
	env.Set("amount", String("12"))
	env.Set("currency", String("EUR"))
	p := start(t, k, g, env)
	env.Set("amount", String("0")) // the caller's env is the caller's
	if v, _ := p.Env.Get("amount"); v != String("12") {
		t.Fatalf("the process's amount is %v after a write to the env it started with", v)
	}
	efs := effects(p)
	if kinds(efs) != "job charge" {
		t.Fatalf("effects: %s", kinds(efs))
	}
	job := efs[0].Job
	tok := token(t, p, "charge")
	e := k.Engine(t0)
	err := e.Run(p, func() {
		p.Env.Set("amount", String("99"))
		tok.writableEnv().Set("currency", String("USD"))
		tok.writableEnv().Set("extra", String("x"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Env.Get("amount"); v != String("99") {
		t.Fatalf("the process's amount is %v after the write", v)
	}
	got := job.Variables()
	if len(got) != 2 || got["amount"] != String("12") || got["currency"] != String("EUR") {
		t.Errorf("job variables %v; want amount 12 and currency EUR, as offered", got)
	}
	// Variables of its own are what the job gets.
	own := JobSpec{Type: "x", Env: map[string]Value{"k": String("v")}}
	if v := own.Variables(); len(v) != 1 || v["k"] != String("v") {
		t.Errorf("a job's own variables: %v", v)
	}
}

// The same holds for writes later in the command that offers the job.
func TestJobVariablesAsOfferedInOneCommand(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "g",
		N{Name: "s", Start: true, Arcs: []string{"w"}},
		N{Name: "w", Type: graph.TypeWait, Arcs: []string{"e"}},
		N{Name: "e"})
	env := NewEnv()
	env.Set("amount", String("12"))
	p := start(t, k, g, env)
	w := token(t, p, "w")
	e := k.Engine(t0)
	err := e.Run(p, func() {
		p.Env.Set("amount", String("50"))
		if err := e.OfferJob(w, JobSpec{Type: "t"}); err != nil {
			e.Fail(err)
		}
		p.Env.Set("amount", String("99"))
	})
	if err != nil {
		t.Fatal(err)
	}
	efs := effects(p)
	if kinds(efs) != "job w" {
		t.Fatalf("effects: %s", kinds(efs))
	}
	if got := efs[0].Job.Variables(); got["amount"] != String("50") {
		t.Errorf("job variables %v; want amount 50, as offered", got)
	}
}
