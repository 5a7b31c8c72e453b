package veena_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena"
)

func loadBPMN(t *testing.T, e *veena.Engine, file string) *veena.Definition {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := e.LoadDefinition(context.Background(), filepath.Base(file), src, "")
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	return d
}

// The README's example, end to end on every backend: a BPMN file loaded, a
// process started, its user task completed by a person, its job by a
// worker; a restart in between where the store is durable; a timer that
// fires through the engine's background loop.
func TestBPMNOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		d := loadBPMN(t, e, "testdata/examples/order.bpmn")
		if d.Name != "order" || d.Format != "bpmn" || d.Label != "Order" || len(d.Nodes) != 8 {
			t.Fatalf("definition %+v", d)
		}
		kinds := map[string]string{}
		for _, n := range d.Nodes {
			kinds[n.Name] = n.Kind + ":" + n.Label
		}
		if kinds["review"] != "userTask:Review the order" || kinds["decision"] != "exclusiveGateway:Approved?" {
			t.Fatalf("nodes %v", kinds)
		}
		// Loading the same file again is the same version.
		if again := loadBPMN(t, e, "testdata/examples/order.bpmn"); again.Version != d.Version {
			t.Fatalf("reloaded as version %d", again.Version)
		}
		p := start(t, e, veena.StartRequest{Definition: "order", Env: map[string]any{"amount": 1500}})
		task := oneTask(t, e, veena.TaskFilter{CandidateGroup: "sales", Process: p.ID})
		if task.Label != "Review the order" || task.Priority != 80 || task.Node != "review" {
			t.Fatalf("task %+v", task)
		}
		if b.durable {
			e.Close()
			e = open(t, mk(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		}
		// Two days pass: the reminder fires (non-interrupting).
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(49 * time.Hour)
		waitFor(t, func() bool {
			page, _ := e.Tasks(ctx, veena.TaskFilter{CandidateGroup: "managers", Process: p.ID})
			return len(page.Items) == 1
		})
		e.Stop()
		if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Data: map[string]any{"approved": true}}); err != nil {
			t.Fatal(err)
		}
		jobs := activate(t, e, "charge-card", "w1")
		if len(jobs) != 1 || jobs[0].Headers["currency"] != "EUR" || jobs[0].Env["amount"].IntValue() != 1500 {
			t.Fatalf("jobs %+v", jobs)
		}
		proc, err := e.CompleteJob(ctx, jobs[0].ID, veena.CompleteJobRequest{Worker: "w1", Env: map[string]any{"receipt": "r-1"}})
		if err != nil {
			t.Fatal(err)
		}
		// The escalation task is still open: the process waits for it.
		if proc.State != "executing" || proc.Env["receipt"].Str() != "r-1" || !proc.Env["approved"].BoolValue() {
			t.Fatalf("process %+v", proc)
		}
		chase := oneTask(t, e, veena.TaskFilter{CandidateGroup: "managers", Process: p.ID})
		proc, err = e.CompleteTask(ctx, chase.ID, veena.CompleteTaskRequest{Actor: veena.Actor{User: "m", Groups: []string{"managers"}}})
		if err != nil {
			t.Fatal(err)
		}
		if proc.State != "completed" {
			t.Fatalf("process %+v", proc)
		}
		h, err := e.Tokens(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var path []string
		for _, tok := range h.NodeTokens {
			path = append(path, tok.Node)
		}
		if got, want := strings.Join(path, " "), "placed review tooSlow tooSlow escalate decision charge shipped"; got != want {
			t.Fatalf("tokens %s, want %s", got, want)
		}
		e.Close()
	})
}
