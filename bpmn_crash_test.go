package veena_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
)

// The BPMN crash test: child engines publish messages, start processes
// that wait for them and are started by them, and fire a timer start
// event, while they are killed with SIGKILL at random moments and started
// again on the same database.
//
//   - relay: each job publishes a message (with an id and a TTL) and
//     starts a process that waits for it twice, the message first or the
//     process first. The message must reach the process's first wait
//     exactly once: never lost (buffered, then taken by the command in
//     which the process came to wait), never twice (the second wait never
//     ends), and never left in the buffer.
//   - solo: every fourth job publishes two messages that start a process by
//     a message start event with the job's key, and one that ends the first
//     process: the second start waits in the buffer while the first
//     process holds the key, and starts the second process once the first
//     has ended, whatever engine died in between.
//   - ticker: a timer start event of 40 repetitions: every firing starts
//     exactly one process.
//
// Publications are retried after a crash with the same message id: one
// refused as a conflict was already acknowledged by the store.
//
// VEENA_BPMN_CRASH_KILLS sets the kills (default 3; -short: 2),
// VEENA_BPMN_CRASH_JOBS the jobs (default 400).

const crashBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="crash">
  <message id="ping" name="ping"><extensionElements><zeebe:subscription correlationKey="= key"/></extensionElements></message>
  <message id="soloStart" name="solo-start"/>
  <message id="soloEnd" name="solo-end"><extensionElements><zeebe:subscription correlationKey="= key"/></extensionElements></message>
  <process id="relay" isExecutable="true">
    <startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="first"/>
    <intermediateCatchEvent id="first"><messageEventDefinition messageRef="ping"/></intermediateCatchEvent>
    <sequenceFlow id="f1" sourceRef="first" targetRef="second"/>
    <intermediateCatchEvent id="second"><messageEventDefinition messageRef="ping"/></intermediateCatchEvent>
    <sequenceFlow id="f2" sourceRef="second" targetRef="e"/><endEvent id="e"/>
  </process>
  <process id="solo" isExecutable="true">
    <startEvent id="ss"><messageEventDefinition messageRef="soloStart"/></startEvent>
    <sequenceFlow id="g0" sourceRef="ss" targetRef="hold"/>
    <intermediateCatchEvent id="hold"><messageEventDefinition messageRef="soloEnd"/></intermediateCatchEvent>
    <sequenceFlow id="g1" sourceRef="hold" targetRef="se"/><endEvent id="se"/>
  </process>
  <process id="ticker" isExecutable="true">
    <startEvent id="tick"><timerEventDefinition><timeCycle>R40/PT0.15S</timeCycle></timerEventDefinition></startEvent>
    <sequenceFlow id="h0" sourceRef="tick" targetRef="te"/><endEvent id="te"/>
  </process>
</definitions>`

const crashTicks = 40

func TestBPMNCrash(t *testing.T) {
	kills := envInt("VEENA_BPMN_CRASH_KILLS", 3)
	if testing.Short() {
		kills = min(kills, 2)
	}
	jobs := envInt("VEENA_BPMN_CRASH_JOBS", 400)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		bpmnCrashRun(t, "sqlite", filepath.Join(dir, "veena.db"), dir, 1, kills, jobs)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		bpmnCrashRun(t, "postgres", pgtest.Schema(t), t.TempDir(), 2, kills, jobs)
	})
}

func bpmnCrashRun(t *testing.T, backend, where, dir string, engines, kills, jobs int) {
	crashChildren(t, "TestBPMNCrashChild", backend, where, dir, engines, kills, 200*time.Millisecond, 800*time.Millisecond,
		"VEENA_BPMN_CRASH_CHILD=1", "VEENA_BPMN_CRASH_JOBS="+strconv.Itoa(jobs))
	verifyBPMNCrash(t, crashStore(t, backend, where, 0), readAcks(t, dir), jobs)
}

// allProcesses lists every process of a definition.
func allProcesses(t *testing.T, e *veena.Engine, def string) []veena.Process {
	t.Helper()
	var all []veena.Process
	after := ""
	for {
		page, err := e.Processes(context.Background(), veena.ProcessFilter{Definition: def, Limit: 1000, After: after})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			return all
		}
		after = page.Next
	}
}

func verifyBPMNCrash(t *testing.T, st store.Store, acks []ack, jobs int) {
	ctx := context.Background()
	e := open(t, st, veena.Options{})
	defer e.Close()
	acked := map[string]bool{}
	for _, a := range acks {
		acked[a.kind+" "+a.a] = true
	}
	// relay: one process per job, its first wait passed by its message,
	// its second still waiting.
	relays := allProcesses(t, e, "relay")
	if len(relays) != jobs {
		t.Fatalf("%d relay processes, want %d", len(relays), jobs)
	}
	byJob := map[string]bool{}
	for _, p := range relays {
		job := p.Context["job"]
		if byJob[job] {
			t.Fatalf("job %s has two relay processes", job)
		}
		byJob[job] = true
		h, err := e.Tokens(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var path []string
		for _, nt := range h.NodeTokens {
			state := "done"
			if !nt.Complete {
				state = "waiting"
			}
			path = append(path, nt.Node+":"+state)
		}
		if got := strings.Join(path, " "); p.State != "executing" || got != "s:done first:done second:waiting" || p.Env["got"].String() != job {
			t.Errorf("relay of job %s: %s, tokens %s, got %v", job, p.State, got, p.Env["got"])
		}
	}
	for _, name := range []string{"ping", "solo-start", "solo-end"} {
		if ms, err := st.BufferedMessages(ctx, name, time.Now(), 0); err != nil || len(ms) != 0 {
			t.Errorf("%d %s messages left in the buffer: %+v %v", len(ms), name, ms, err)
		}
	}
	// solo: per fourth job, one process ended by its message and one
	// started by the buffered second message, waiting.
	byKey := map[string][]veena.Process{}
	for _, p := range allProcesses(t, e, "solo") {
		byKey[p.Context["@message:solo"]] = append(byKey[p.Context["@message:solo"]], p)
	}
	solos := 0
	for n := range jobs {
		if n%4 != 1 {
			continue
		}
		solos++
		key := fmt.Sprint("s", n)
		ps := byKey[key]
		states := map[string]int{}
		for _, p := range ps {
			states[p.State]++
		}
		if len(ps) != 2 || states["completed"] != 1 || states["executing"] != 1 {
			t.Errorf("solo key %s: %d processes %v", key, len(ps), states)
		}
		delete(byKey, key)
	}
	if len(byKey) != 0 {
		t.Errorf("solo processes of unknown keys: %v", byKey)
	}
	// ticker: every firing started one process.
	ticks := allProcesses(t, e, "ticker")
	ts, err := e.StartTimers(ctx, "ticker")
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	if len(ticks) != crashTicks || ts[0].Fired != crashTicks || ts[0].DueAt != nil {
		t.Errorf("ticker: %d processes, the timer fired %d times, due %v; want %d", len(ticks), ts[0].Fired, ts[0].DueAt, crashTicks)
	}
	for _, p := range ticks {
		if p.State != "completed" {
			t.Errorf("ticker process %s is %s", p.ID, p.State)
		}
	}
	t.Logf("%d relays, %d solo keys, %d ticks verified; %d acknowledgements", len(relays), solos, len(ticks), len(acks))
}

// TestBPMNCrashChild is an engine under load; only TestBPMNCrash runs it.
func TestBPMNCrashChild(t *testing.T) {
	if os.Getenv("VEENA_BPMN_CRASH_CHILD") != "1" {
		t.Skip("run by TestBPMNCrash")
	}
	ctx := context.Background()
	backend, where, dir := os.Getenv("VEENA_CRASH_BACKEND"), os.Getenv("VEENA_CRASH_WHERE"), os.Getenv("VEENA_CRASH_DIR")
	slot := envInt("VEENA_CRASH_SLOT", 0)
	jobs := envInt("VEENA_BPMN_CRASH_JOBS", 300)
	e, err := veena.Open(ctx, veena.Options{Store: crashStore(t, backend, where, slot),
		TimerInterval: 20 * time.Millisecond, TimerLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for {
		// Two engines may load it at once: one stores it, the other finds it.
		if _, _, err = e.LoadDefinition(ctx, "crash.bpmn", []byte(crashBPMN), ""); err == nil {
			break
		}
		t.Logf("load: %v", err)
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("acks-%d.log", slot)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logAck := func(kind, a, b string) {
		logMu.Lock()
		fmt.Fprintf(logf, "%s %s %s\n", kind, a, b)
		logMu.Unlock()
	}
	done := map[string]bool{}
	for _, a := range readAcks(t, dir) {
		if a.kind == "done" {
			done[a.a] = true
		}
	}
	work := make(chan int)
	go func() {
		for i := range jobs {
			n := i
			if slot%2 == 1 {
				n = jobs - 1 - i
			}
			if !done[strconv.Itoa(n)] {
				work <- n
			}
		}
		close(work)
	}()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := runBPMNJob(ctx, e, n, logAck); err != nil {
					fmt.Fprintf(os.Stderr, "job %d: %v\n", n, err)
					os.Exit(3)
				}
			}
		}()
	}
	wg.Wait()
	// The last run waits for what follows the acknowledged work: the
	// timer's firings and the second solo processes.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ts, err := e.StartTimers(ctx, "ticker")
		solo, serr := e.Processes(ctx, veena.ProcessFilter{Definition: "solo", NoTotal: true, Limit: 1000})
		if err == nil && serr == nil && len(ts) == 1 && ts[0].DueAt == nil && len(solo.Items) == 2*((jobs+2)/4) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "timer %+v (%v), %d solo processes (%v)\n", ts, err, len(solo.Items), serr)
			os.Exit(4)
		}
		time.Sleep(50 * time.Millisecond)
	}
	logf.Close()
	e.Close()
}

// publishOnce publishes a message, retrying while the store is
// unavailable; a conflict means an earlier attempt with the same id was
// acknowledged by the store.
func publishOnce(ctx context.Context, e *veena.Engine, req veena.PublishRequest) error {
	for {
		_, err := e.PublishMessage(ctx, req)
		if err == nil || veena.Code(err) == "conflict" {
			return nil
		}
		if veena.Code(err) != "unavailable" && !errors.Is(err, store.ErrBusy) {
			return fmt.Errorf("publish %s %s: %w", req.Name, req.MessageID, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runBPMNJob(ctx context.Context, e *veena.Engine, n int, logAck func(kind, a, b string)) error {
	job := strconv.Itoa(n)
	key := "k" + job
	ping := veena.PublishRequest{Name: "ping", CorrelationKey: key, TTL: time.Hour, MessageID: "ping-" + job, Env: map[string]any{"got": job}}
	startRelay := func() error {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "relay", Env: map[string]any{"key": key},
			Context: map[string]string{"job": job}, IdempotencyKey: "relay-" + job})
		if err != nil {
			return fmt.Errorf("start relay: %w", err)
		}
		logAck("start", job, p.ID)
		return nil
	}
	publish := func() error {
		if err := publishOnce(ctx, e, ping); err != nil {
			return err
		}
		logAck("ping", job, key)
		return nil
	}
	steps := []func() error{publish, startRelay}
	if n%2 == 1 {
		steps = []func() error{startRelay, publish}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if n%4 == 1 {
		solo := "s" + job
		for _, req := range []veena.PublishRequest{
			{Name: "solo-start", CorrelationKey: solo, TTL: time.Hour, MessageID: "a-" + job, Env: map[string]any{"key": solo}},
			{Name: "solo-start", CorrelationKey: solo, TTL: time.Hour, MessageID: "b-" + job, Env: map[string]any{"key": solo}},
			{Name: "solo-end", CorrelationKey: solo, TTL: time.Hour, MessageID: "c-" + job},
		} {
			if err := publishOnce(ctx, e, req); err != nil {
				return err
			}
		}
		logAck("solo", job, solo)
	}
	logAck("done", job, "-")
	return nil
}
