// Package limitrun runs what the importers' fuzz tests load: it loads a
// definition file into an in-memory engine under small limits, starts
// every definition the file holds and does the work the processes wait
// for (jobs, tasks, enabled Petri transitions) a few times, checking that
// every command ends promptly — it succeeds, leaves the process waiting,
// or fails with a stable code (budget_exceeded, limit_exceeded,
// step_budget_exceeded, …) — and that no process grows past the limits.
//
// It lives in a package of its own because it needs the engine, which
// imports every importer: the importers' external test packages may import
// it without a cycle.
package limitrun

import (
	"context"
	"fmt"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri/netproc"
	schemart "github.com/veena-wf/veena/schema"
)

// Limits are the small limits the fuzzed definitions run under.
var Limits = kernel.Limits{
	CommandTokens:   2000,
	CommandTime:     time.Second,
	ProcessTokens:   5000,
	TokenSetMembers: 100,
	NestingDepth:    4,
}

// NetBudget is how many transitions one step of a Petri net may fire.
const NetBudget = 500

// Hung is how long a command may take before it counts as hung: its time
// budget and a generous margin for a loaded machine.
const Hung = 15 * time.Second

// rounds is how often Drive does the work the processes wait for.
const rounds = 4

// Report says what the commands of one Drive did.
type Report struct {
	Loaded   []string       // the definitions the file holds ("" if it did not load)
	Started  int            // processes started
	Commands int            // commands run (starts included)
	Codes    map[string]int // codes of the commands that failed, with their counts
	First    string         // the first failure's message
	// Incidents are the messages of the incidents the processes opened
	// (an action that failed for good waits for an operator).
	Incidents []string
}

// Drive loads src (format as LoadDefinition takes it, "" to sniff) into a
// new in-memory engine under Limits and runs it as the package comment
// says, failing t when a command hangs, panics, fails without a stable
// code or lets a process grow past Limits.ProcessTokens.
func Drive(t testing.TB, file string, src []byte, format string) *Report {
	t.Helper()
	ctx := context.Background()
	k := kernel.New()
	k.ScriptTimeout, k.ScriptMemory = 200*time.Millisecond, 8<<20
	nets := netproc.New()
	nets.Budget = NetBudget
	nets.Register(k)
	rt := schemart.New()
	rt.AcceptUnknownActions = true
	rt.Register(k)
	e, err := veena.Open(ctx, veena.Options{Kernel: k, Limits: Limits})
	if err != nil {
		t.Fatalf("open an engine: %v", err)
	}
	defer e.Close()
	rt.Attach(e)

	rep := &Report{Codes: map[string]int{}}
	// run runs one command, failing t if it hangs or fails without a
	// stable code; it reports whether the command succeeded.
	run := func(what string, fn func(ctx context.Context) error) bool {
		t.Helper()
		rep.Commands++
		done := make(chan error, 1)
		began := time.Now()
		go func() { done <- fn(ctx) }()
		select {
		case err := <-done:
			if err == nil {
				return true
			}
			code := veena.Code(err)
			if code == "internal" {
				t.Fatalf("%s failed without a stable code after %s: %v", what, time.Since(began), err)
			}
			rep.Codes[code]++
			if rep.First == "" {
				rep.First = what + ": " + err.Error()
			}
			return false
		case <-time.After(Hung):
			t.Fatalf("%s did not end within %s (command budget %s)", what, Hung, Limits.CommandTime)
			return false
		}
	}
	if !run("load", func(ctx context.Context) error {
		_, _, err := e.LoadDefinition(ctx, file, src, format)
		return err
	}) {
		return rep
	}
	defs, err := e.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		rep.Loaded = append(rep.Loaded, d.Name)
		var p *veena.Process
		if !run("start "+d.Name, func(ctx context.Context) (err error) {
			p, err = e.StartProcess(ctx, veena.StartRequest{Definition: d.Name})
			return err
		}) {
			continue
		}
		rep.Started++
		for i := 0; i < rounds && work(ctx, t, e, p.ID, run); i++ {
			checkSize(ctx, t, e, p.ID)
		}
		checkSize(ctx, t, e, p.ID)
		inc, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID, Limit: 10})
		if err != nil {
			t.Fatalf("incidents of %s: %v", p.ID, err)
		}
		for _, i := range inc.Items {
			rep.Incidents = append(rep.Incidents, i.Message)
		}
	}
	return rep
}

// work does once what process id waits for — its open tasks, its jobs,
// its first enabled transition, the events its schema's event nodes wait
// for — and reports whether there was any.
func work(ctx context.Context, t testing.TB, e *veena.Engine, id string, run func(string, func(context.Context) error) bool) bool {
	t.Helper()
	did := false
	p, err := e.Process(ctx, id)
	if err != nil {
		t.Fatalf("process %s: %v", id, err)
	}
	if p.State != kernel.Executing.String() {
		return false
	}
	for _, name := range events(e, p.Definition) {
		did = true
		run("event "+name, func(ctx context.Context) error {
			_, err := e.Deliver(ctx, id, kernel.Message{Name: name}, "")
			return err
		})
	}
	tasks, err := e.Tasks(ctx, veena.TaskFilter{Process: id, Actor: veena.Actor{Admin: true}, Limit: 10})
	if err != nil {
		t.Fatalf("tasks of %s: %v", id, err)
	}
	for _, task := range tasks.Items {
		did = true
		run("complete task "+task.Node, func(ctx context.Context) error {
			_, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: veena.Actor{User: "fuzz", Admin: true}})
			return err
		})
	}
	jobs, err := e.Jobs(ctx, veena.JobFilter{Process: id, Limit: 10})
	if err != nil {
		t.Fatalf("jobs of %s: %v", id, err)
	}
	for _, job := range jobs.Items {
		if job.State != "open" {
			continue
		}
		did = true
		run("complete job "+job.Type, func(ctx context.Context) error {
			leased, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: job.Type, Worker: "fuzz", MaxJobs: 1, LockFor: time.Minute})
			if err != nil || len(leased) == 0 {
				return err
			}
			_, err = e.CompleteJob(ctx, leased[0].ID, veena.CompleteJobRequest{Worker: "fuzz"})
			return err
		})
	}
	if m, err := e.NetMarking(ctx, id); err == nil && len(m.Enabled) > 0 {
		did = true
		run("fire "+m.Enabled[0], func(ctx context.Context) error {
			_, err := e.FireTransition(ctx, id, m.Enabled[0], "")
			return err
		})
	}
	return did
}

// events lists the events the event nodes of a schema wait for (none for
// the other formats), each once, in document order.
func events(e *veena.Engine, definition string) []string {
	g := e.Kernel().Definitions(definition)
	if g == nil {
		return nil
	}
	s, ok := g.Props.(*schemaformat.Schema)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range s.Nodes {
		if n.Event != nil && !seen[n.Event.Name] {
			seen[n.Event.Name] = true
			out = append(out, n.Event.Name)
		}
	}
	return out
}

// checkSize fails t if a process holds more node and arc tokens than
// Limits.ProcessTokens allows.
func checkSize(ctx context.Context, t testing.TB, e *veena.Engine, id string) {
	t.Helper()
	n := 0
	count := func(any) error { n++; return nil }
	err := e.EachToken(ctx, id, func(*veena.NodeToken) error { return count(nil) }, func(*veena.ArcToken) error { return count(nil) })
	if err != nil {
		t.Fatalf("tokens of %s: %v", id, err)
	}
	if n > Limits.ProcessTokens {
		t.Fatalf("process %s holds %d tokens, more than the limit of %d", id, n, Limits.ProcessTokens)
	}
}

// String summarises a report for a test log.
func (r *Report) String() string {
	return fmt.Sprintf("loaded %v, %d started, %d commands, failures %v (first: %q), incidents %q", r.Loaded, r.Started, r.Commands, r.Codes, r.First, r.Incidents)
}
