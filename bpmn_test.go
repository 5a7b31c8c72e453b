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

const nightlyBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="http://veena.example/nightly">
  <process id="nightly" isExecutable="true">
    <startEvent id="everyHour">
      <timerEventDefinition><timeCycle>R2/PT1H</timeCycle></timerEventDefinition>
    </startEvent>
    <sequenceFlow id="f1" sourceRef="everyHour" targetRef="report"/>
    <userTask id="report"/>
    <sequenceFlow id="f2" sourceRef="report" targetRef="end"/>
    <endEvent id="end"/>
  </process>
</definitions>
`

// Timer start events: loading a version arms them (a process holds each,
// its token a durable timer); each due time starts a process of the
// definition, a cycle as often as it says; a new version's timers replace
// the old ones.
func TestBPMNTimerStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(nightlyBPMN), ""); err != nil {
			t.Fatal(err)
		}
		reports := func() int {
			page, err := e.Tasks(ctx, veena.TaskFilter{})
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Items)
		}
		holders := func() []veena.Process {
			page, err := e.Processes(ctx, veena.ProcessFilter{Definition: "nightly", State: "executing"})
			if err != nil {
				t.Fatal(err)
			}
			var out []veena.Process
			for _, p := range page.Items {
				if _, ok := p.Env["veena.timerStart"]; ok {
					out = append(out, p)
				}
			}
			return out
		}
		if h := holders(); len(h) != 1 || reports() != 0 {
			t.Fatalf("holders %d, reports %d", len(h), reports())
		}
		if b.durable {
			e.Close()
			e = open(t, mk(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(61 * time.Minute)
		waitFor(t, func() bool { return reports() == 1 })
		clk.Advance(60 * time.Minute)
		waitFor(t, func() bool { return reports() == 2 && len(holders()) == 0 })
		clk.Advance(5 * time.Hour)
		time.Sleep(100 * time.Millisecond)
		if n := reports(); n != 2 {
			t.Fatalf("R2 started %d processes", n)
		}
		// A new version arms its own timer and disarms the old one's.
		v2 := strings.Replace(nightlyBPMN, "R2/PT1H", "R/PT2H", 1)
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(strings.Replace(nightlyBPMN, "R2/PT1H", "R5/PT1H", 1)), ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(v2), ""); err != nil {
			t.Fatal(err)
		}
		h := holders()
		if len(h) != 1 || h[0].Version != 3 {
			t.Fatalf("holders after two new versions: %+v", h)
		}
		clk.Advance(121 * time.Minute)
		waitFor(t, func() bool { return reports() == 3 })
		e.Close()
	})
}
