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

// Timer start events are timers of the definition, kept in the store:
// loading a version arms them and no process exists until one is due; each
// due time starts one process of the definition, a cycle as often as it
// says; a new version's timers replace the old ones.
func TestBPMNTimerStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(nightlyBPMN), ""); err != nil {
			t.Fatal(err)
		}
		processes := func() []veena.Process {
			page, err := e.Processes(ctx, veena.ProcessFilter{Definition: "nightly"})
			if err != nil {
				t.Fatal(err)
			}
			return page.Items
		}
		reports := func() int {
			page, err := e.Tasks(ctx, veena.TaskFilter{})
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Items)
		}
		timers := func() []veena.StartTimer {
			ts, err := e.StartTimers(ctx, "nightly")
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		// Armed: one timer due in an hour, and no process of the definition.
		ts := timers()
		if len(ts) != 1 || ts[0].Node != "everyHour" || ts[0].Version != 1 || ts[0].DueAt == nil || !ts[0].DueAt.Equal(t0.Add(time.Hour)) || ts[0].Fired != 0 {
			t.Fatalf("start timers %+v", ts)
		}
		if n := len(processes()); n != 0 {
			t.Fatalf("%d processes before the timer fired", n)
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
		if ts := timers(); ts[0].Fired != 1 || !ts[0].DueAt.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("after the first firing: %+v", ts[0])
		}
		clk.Advance(60 * time.Minute)
		waitFor(t, func() bool { return reports() == 2 })
		clk.Advance(5 * time.Hour)
		time.Sleep(100 * time.Millisecond)
		if n := reports(); n != 2 {
			t.Fatalf("R2 started %d processes", n)
		}
		ps := processes()
		if len(ps) != 2 {
			t.Fatalf("%d processes, want the 2 started", len(ps))
		}
		for _, p := range ps {
			if p.State != "executing" || p.Version != 1 {
				t.Fatalf("process %s: %s, version %d", p.ID, p.State, p.Version)
			}
		}
		if ts := timers(); ts[0].Fired != 2 || ts[0].DueAt != nil {
			t.Fatalf("after the last firing: %+v", ts[0])
		}
		// A new version arms its own timer and disarms the old one's.
		v2 := strings.Replace(nightlyBPMN, "R2/PT1H", "R/PT2H", 1)
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(strings.Replace(nightlyBPMN, "R2/PT1H", "R5/PT1H", 1)), ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(v2), ""); err != nil {
			t.Fatal(err)
		}
		ts = timers()
		if len(ts) != 1 || ts[0].Version != 3 || ts[0].Fired != 0 || !ts[0].DueAt.Equal(clk.Now().Add(2*time.Hour)) {
			t.Fatalf("start timers after two new versions: %+v", ts)
		}
		clk.Advance(121 * time.Minute)
		waitFor(t, func() bool { return reports() == 3 })
		// A version without a timer start event removes the timers.
		v4 := strings.Replace(strings.Replace(nightlyBPMN, "<timerEventDefinition><timeCycle>R2/PT1H</timeCycle></timerEventDefinition>", "", 1), "everyHour", "begin", 2)
		if _, _, err := e.LoadDefinition(ctx, "nightly.bpmn", []byte(v4), ""); err != nil {
			t.Fatal(err)
		}
		if ts := timers(); len(ts) != 0 {
			t.Fatalf("start timers after a version without: %+v", ts)
		}
		e.Close()
	})
}
