package veena_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store/sqlitestore"
)

func TestLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()

		src, _ := os.ReadFile("testdata/wait.wf.xml")
		d, created, err := e.LoadDefinition(ctx, "wait.wf.xml", src, "")
		if err != nil || !created || d.Version != 1 || d.Name != "wait" || len(d.Nodes) != 4 {
			t.Fatalf("load: %+v %v %v", d, created, err)
		}
		d2, created, err := e.LoadDefinition(ctx, "wait.wf.xml", src, "")
		if err != nil || created || d2.Version != 1 {
			t.Fatalf("load again: %+v %v %v", d2, created, err)
		}
		changed := []byte(strings.Replace(string(src), `<node name="other"/>`, `<node name="other" type="wait"/>`, 1))
		d3, created, err := e.LoadDefinition(ctx, "wait.wf.xml", changed, "sarasvati")
		if err != nil || !created || d3.Version != 2 {
			t.Fatalf("load changed: %+v %v %v", d3, created, err)
		}
		if vs, err := e.DefinitionVersions(ctx, "wait"); err != nil {
			t.Fatal(err)
		} else if len(vs) != 2 {
			t.Fatalf("versions: %d", len(vs))
		}
		if s, err := e.DefinitionSource(ctx, "wait", 1); err != nil {
			t.Fatal(err)
		} else if string(s) != string(src) {
			t.Fatalf("source of version 1 differs")
		}
		_, _, err = e.LoadDefinition(ctx, "bad.wf.xml", []byte(`<process-definition name="bad"><node name="a"><arc to="nowhere"/></node></process-definition>`), "")
		wantCode(t, err, "definition_invalid")
		var le *graph.LoadError
		if !errors.As(err, &le) || len(le.Problems) == 0 {
			t.Fatalf("invalid definition: no problems listed: %v", err)
		}
		// A BPMN file outside the BPMN namespace is no BPMN definition.
		_, _, err = e.LoadDefinition(ctx, "x.bpmn", []byte(`<definitions/>`), "")
		wantCode(t, err, "definition_invalid")
		_, err = e.Definition(ctx, "nope", 0)
		wantCode(t, err, "not_found")

		p := start(t, e, veena.StartRequest{Definition: "wait", Version: 1, Env: map[string]any{"n": 1, "s": "x"}})
		if p.State != "executing" || p.Version != 1 || p.Env["n"] != kernel.Int(1) {
			t.Fatalf("started: %+v", p)
		}
		task := one(t, e, p.ID, "task")
		tok, err := e.NodeToken(ctx, task)
		if err != nil || tok.Complete || tok.GuardAction == nil || *tok.GuardAction != "accept" || tok.ExecutionType != "forward" || len(tok.Parents) != 1 {
			t.Fatalf("token: %+v %v", tok, err)
		}
		if _, err := e.PatchTokenEnv(ctx, task, map[string]any{"t": true}, ""); err != nil {
			t.Fatal(err)
		}
		if env, err := e.TokenEnv(ctx, task); err != nil {
			t.Fatal(err)
		} else if env["t"] != kernel.Bool(true) {
			t.Fatalf("token env: %v", env)
		}
		env, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"s": nil, "m": 2.5}, "")
		if err != nil || len(env) != 2 || env["m"] != kernel.Float(2.5) {
			t.Fatalf("patched env: %v %v", env, err)
		}

		done := complete(t, e, task, veena.CompleteRequest{Arcs: []*string{strp("other")}})
		if done.State != "completed" {
			t.Fatalf("after completion: %s", done.State)
		}
		_, err = e.CompleteToken(ctx, task, veena.CompleteRequest{})
		wantCode(t, err, "process_not_executing")
		_, err = e.CompleteToken(ctx, p.ID+".n99", veena.CompleteRequest{})
		wantCode(t, err, "not_found")
		_, err = e.CompleteToken(ctx, "garbage", veena.CompleteRequest{})
		wantCode(t, err, "not_found")
		_, err = e.CancelProcess(ctx, p.ID, "")
		wantCode(t, err, "process_not_executing")

		h, _ := e.Tokens(ctx, p.ID)
		var nodes []string
		for _, nt := range h.NodeTokens {
			nodes = append(nodes, nt.Node)
		}
		if strings.Join(nodes, ",") != "start,task,other" || len(h.ArcTokens) != 2 {
			t.Fatalf("history: %v, %d arc tokens", nodes, len(h.ArcTokens))
		}
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if evs[0].Type != "PROCESS_CREATED" || evs[len(evs)-1].Type != "PROCESS_COMPLETED" {
			t.Fatalf("events: first %s, last %s", evs[0].Type, evs[len(evs)-1].Type)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
			if ev.Type == "NODE_TOKEN_COMPLETED" && *ev.NodeToken == task {
				if len(ev.ArcNames) != 1 || ev.ArcNames[0] == nil || *ev.ArcNames[0] != "other" {
					t.Fatalf("arc names of the completion: %v", ev.ArcNames)
				}
			}
		}
		page, err := e.Events(ctx, p.ID, 3, 2)
		if err != nil || len(page) != 2 || page[0].Seq != 4 {
			t.Fatalf("events page: %v %v", page, err)
		}

		list, err := e.Processes(ctx, veena.ProcessFilter{Definition: "wait", State: "completed"})
		if err != nil || len(list.Items) != 1 || list.Items[0].ID != p.ID {
			t.Fatalf("list: %+v %v", list, err)
		}
		if err := e.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFailedCommandKeepsNothing: a guard that cannot be evaluated fails the
// command and leaves the stored process as it was.
func TestFailedCommandKeepsNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "delay")
		// Without "ready" the guard of hold fails: no process is created.
		_, err := e.StartProcess(ctx, veena.StartRequest{Definition: "delay"})
		wantCode(t, err, "execution_failed")
		if page, err := e.Processes(ctx, veena.ProcessFilter{}); err != nil {
			t.Fatal(err)
		} else if len(page.Items) != 0 {
			t.Fatalf("a failed start left %d processes", len(page.Items))
		}

		load(t, e, "split")
		p := start(t, e, veena.StartRequest{Definition: "split"})
		before, _ := e.Events(ctx, p.ID, 0, 0)
		a := one(t, e, p.ID, "a")
		_, err = e.CompleteToken(ctx, a, veena.CompleteRequest{TokenSet: &veena.TokenSetRequest{Name: "s", Count: 0}})
		wantCode(t, err, "invalid_argument")
		after, _ := e.Events(ctx, p.ID, 0, 0)
		if len(after) != len(before) {
			t.Fatalf("a failed command stored %d events", len(after)-len(before))
		}
		// The cached tree was dropped: the next command sees the stored state.
		complete(t, e, a, veena.CompleteRequest{})
		complete(t, e, one(t, e, p.ID, "b"), veena.CompleteRequest{})
		one(t, e, p.ID, "last")
	})
}

func TestRestart(t *testing.T) {
	for _, b := range backends() {
		if !b.durable {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			reopen := b.place(t)
			e := open(t, reopen(), veena.Options{})
			load(t, e, "child", "parent", "split")
			p := start(t, e, veena.StartRequest{Definition: "parent", Context: map[string]string{"user": "u1"}})
			s := start(t, e, veena.StartRequest{Definition: "split"})
			complete(t, e, one(t, e, s.ID, "a"), veena.CompleteRequest{})
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}

			e = open(t, reopen(), veena.Options{})
			defer e.Close()
			if ds, err := e.Definitions(ctx); err != nil {
				t.Fatal(err)
			} else if len(ds) != 3 {
				t.Fatalf("definitions after restart: %d", len(ds))
			}
			kids, err := e.Processes(ctx, veena.ProcessFilter{ParentToken: one(t, e, p.ID, "sub")})
			if err != nil || len(kids.Items) != 1 {
				t.Fatalf("nested process after restart: %+v %v", kids, err)
			}
			kid := kids.Items[0]
			if kid.ParentToken == nil || *kid.ParentToken != one(t, e, p.ID, "sub") {
				t.Fatalf("nested process parent token: %v", kid.ParentToken)
			}
			complete(t, e, one(t, e, kid.ID, "c2"), veena.CompleteRequest{})
			if got, err := e.Process(ctx, kid.ID); err != nil {
				t.Fatal(err)
			} else if got.State != "completed" {
				t.Fatalf("nested process: %s", got.State)
			}
			one(t, e, p.ID, "p2")
			// Context routing survives the restart too.
			if _, err := e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "u1"}, Node: "p2", Env: nil}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.Process(ctx, p.ID); err != nil {
				t.Fatal(err)
			} else if got.State != "completed" || got.Context["user"] != "u1" {
				t.Fatalf("parent: %+v", got)
			}
			complete(t, e, one(t, e, s.ID, "b"), veena.CompleteRequest{})
			complete(t, e, one(t, e, s.ID, "last"), veena.CompleteRequest{})
			if got, err := e.Process(ctx, s.ID); err != nil {
				t.Fatal(err)
			} else if got.State != "completed" {
				t.Fatalf("split: %s", got.State)
			}
		})
	}
}

func TestIdempotency(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "split")
		p1 := start(t, e, veena.StartRequest{Definition: "split", IdempotencyKey: "start-1"})
		p2 := start(t, e, veena.StartRequest{Definition: "split", IdempotencyKey: "start-1"})
		if p1.ID != p2.ID {
			t.Fatalf("retried start made a second process: %s %s", p1.ID, p2.ID)
		}
		if page, err := e.Processes(ctx, veena.ProcessFilter{}); err != nil {
			t.Fatal(err)
		} else if len(page.Items) != 1 {
			t.Fatalf("%d processes", len(page.Items))
		}
		a := one(t, e, p1.ID, "a")
		r1 := complete(t, e, a, veena.CompleteRequest{IdempotencyKey: "complete-a"})
		r2, err := e.CompleteToken(ctx, a, veena.CompleteRequest{IdempotencyKey: "complete-a"})
		if err != nil {
			t.Fatalf("retried completion: %v", err)
		}
		if r1.State != r2.State || !r1.UpdatedAt.Equal(r2.UpdatedAt) {
			t.Fatalf("retry answered differently: %+v %+v", r1, r2)
		}
		h, _ := e.Tokens(ctx, p1.ID)
		if len(h.ArcTokens) != 3 {
			t.Fatalf("retried completion changed the history: %d arc tokens", len(h.ArcTokens))
		}
		// Concurrent retries: one runs.
		var wg sync.WaitGroup
		ids := make([]string, 8)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "split", IdempotencyKey: "start-2"})
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = p.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("concurrent retries made several processes: %v", ids)
			}
		}
	})
}

func TestContextRouting(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{UniqueContextKeys: []string{"session"}})
		defer e.Close()
		load(t, e, "wait", "split")
		p1 := start(t, e, veena.StartRequest{Definition: "wait", Context: map[string]string{"bot": "b", "user": "u1", "session": "s1"}})
		p2 := start(t, e, veena.StartRequest{Definition: "wait", Context: map[string]string{"bot": "b", "user": "u2", "session": "s2"}})
		_, err := e.StartProcess(ctx, veena.StartRequest{Definition: "wait", Context: map[string]string{"session": "s1"}})
		wantCode(t, err, "conflict")

		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"bot": "b"}, Node: "task", Env: nil})
		wantCode(t, err, "conflict")
		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "nobody"}, Node: "task", Env: nil})
		wantCode(t, err, "not_found")
		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "u2"}, Node: "nosuchnode", Env: nil})
		wantCode(t, err, "not_found")

		got, err := e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"bot": "b", "user": "u2"}, Node: "task", Env: map[string]any{"answer": "yes"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != p2.ID || got.State != "completed" || got.Env["answer"] != kernel.String("yes") {
			t.Fatalf("routed to %+v", got)
		}
		// p2 no longer executes: its session value is free, and events for it find nothing.
		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "u2"}, Node: "", Env: nil})
		wantCode(t, err, "not_found")
		start(t, e, veena.StartRequest{Definition: "wait", Context: map[string]string{"session": "s2"}})
		got, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"session": "s1"}, Node: "", Env: nil})
		if err != nil || got.ID != p1.ID || got.State != "completed" {
			t.Fatalf("only active token: %+v %v", got, err)
		}
		// Several active tokens and no name: conflict.
		start(t, e, veena.StartRequest{Definition: "split", Context: map[string]string{"user": "u9"}})
		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "u9"}, Node: "", Env: nil})
		wantCode(t, err, "conflict")
		if _, err := e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"user": "u9"}, Node: "a", Env: nil}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDelayedTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		reopen := b.place(t)
		e := open(t, reopen(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		load(t, e, "delay")
		p := start(t, e, veena.StartRequest{Definition: "delay", Env: map[string]any{"ready": false}})
		hold := one(t, e, p.ID, "hold")
		tok, _ := e.NodeToken(ctx, hold)
		if *tok.GuardAction != "delay" || tok.DelayUntil == nil || !tok.DelayUntil.Equal(t0.Add(time.Minute)) {
			t.Fatalf("delayed token: %+v", tok)
		}
		if b.durable {
			e.Close()
			e = open(t, reopen(), veena.Options{Clock: clk.Now, TimerInterval: 10 * time.Millisecond})
		}
		defer e.Close()
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// Not due yet, and then due but still not ready: delayed again.
		time.Sleep(50 * time.Millisecond)
		if tok, err := e.NodeToken(ctx, hold); err != nil {
			t.Fatal(err)
		} else if tok.Complete || *tok.GuardAction != "delay" {
			t.Fatalf("fired early: %+v", tok)
		}
		clk.Advance(61 * time.Second)
		waitFor(t, func() bool {
			tok, _ := e.NodeToken(ctx, hold)
			return tok.DelayUntil != nil && tok.DelayUntil.Equal(t0.Add(61*time.Second+time.Minute))
		})
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"ready": true}, ""); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		waitFor(t, func() bool { return len(active(t, e, p.ID, "end")) == 1 })
		e.Stop()
		evs, _ := e.Events(ctx, p.ID, 0, 0)
		delayed := 0
		for _, ev := range evs {
			if ev.Type == "NODE_TOKEN_DELAYED" {
				delayed++
			}
		}
		if delayed != 2 {
			t.Fatalf("%d NODE_TOKEN_DELAYED events, want 2", delayed)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNestedAndCancel(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "child", "parent")
		p := start(t, e, veena.StartRequest{Definition: "parent"})
		kids, _ := e.Processes(ctx, veena.ProcessFilter{State: "executing", Definition: "child"})
		if len(kids.Items) != 1 {
			t.Fatalf("nested processes: %d", len(kids.Items))
		}
		got, err := e.CancelProcess(ctx, p.ID, "cancel-1")
		if err != nil || got.State != "canceled" {
			t.Fatalf("cancel: %+v %v", got, err)
		}
		if kid, err := e.Process(ctx, kids.Items[0].ID); err != nil {
			t.Fatal(err)
		} else if kid.State != "canceled" {
			t.Fatalf("nested process after cancel: %s", kid.State)
		}
		again, err := e.CancelProcess(ctx, p.ID, "cancel-1")
		if err != nil || again.State != "canceled" {
			t.Fatalf("retried cancel: %+v %v", again, err)
		}
		_, err = e.CancelProcess(ctx, p.ID, "")
		wantCode(t, err, "process_not_executing")
	})
}

func TestTokenSetAndBacktrack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		reopen := b.place(t)
		e := open(t, reopen(), veena.Options{})
		load(t, e, "tokenset", "wait")
		p := start(t, e, veena.StartRequest{Definition: "tokenset"})
		complete(t, e, one(t, e, p.ID, "start"), veena.CompleteRequest{
			Arcs:     []*string{strp("fan")},
			TokenSet: &veena.TokenSetRequest{Name: "set", Count: 3, Env: map[string]any{"batch": "b1"}, MemberEnv: map[string][]any{"i": {0, 1, 2}}},
		})
		work := active(t, e, p.ID, "work")
		if len(work) != 3 {
			t.Fatalf("%d work tokens", len(work))
		}
		tok, _ := e.NodeToken(ctx, work[2])
		if len(tok.TokenSets) != 1 || tok.TokenSets[0].Name != "set" || tok.TokenSets[0].Member != 2 {
			t.Fatalf("membership: %+v", tok.TokenSets)
		}
		if b.durable {
			e.Close()
			e = open(t, reopen(), veena.Options{})
		}
		defer e.Close()
		// Concurrent completions of the members: the join fires once.
		var wg sync.WaitGroup
		for _, id := range work {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.CompleteToken(ctx, id, veena.CompleteRequest{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		one(t, e, p.ID, "done")

		// Backtracking to an incomplete token is refused; to the start token
		// of a waiting process it works.
		w := start(t, e, veena.StartRequest{Definition: "wait"})
		task := one(t, e, w.ID, "task")
		_, err := e.Backtrack(ctx, task, "")
		wantCode(t, err, "backtrack_not_allowed")
		h0, _ := e.Tokens(ctx, w.ID)
		first := h0.NodeTokens[0].ID
		got, err := e.Backtrack(ctx, first, "bt-1")
		if err != nil {
			t.Fatalf("backtrack: %v", err)
		}
		if got.State != "executing" {
			t.Fatalf("after backtrack: %s", got.State)
		}
		h, _ := e.Tokens(ctx, w.ID)
		kinds := map[string]int{}
		for _, nt := range h.NodeTokens {
			kinds[nt.ExecutionType]++
		}
		if kinds["backtracked"]+kinds["forward_backtracked"] == 0 {
			t.Fatalf("no backtracked tokens: %v", kinds)
		}
		one(t, e, w.ID, "task")
	})
}

func TestSubscribe(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "wait")
	p := start(t, e, veena.StartRequest{Definition: "wait"})
	ch, cancel := e.Subscribe(p.ID)
	complete(t, e, one(t, e, p.ID, "task"), veena.CompleteRequest{})
	var types []string
	for ev := range ch {
		types = append(types, ev.Type)
		if ev.Type == "PROCESS_COMPLETED" {
			break
		}
	}
	cancel()
	if len(types) == 0 || types[0] != "NODE_TOKEN_COMPLETED" {
		t.Fatalf("live events: %v", types)
	}
	stored, err := e.Events(ctx, p.ID, int64(len(mustEvents(t, e, p.ID))-len(types)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(types) {
		t.Fatalf("live %d events, stored %d", len(types), len(stored))
	}
	// A subscriber that never reads is dropped (its channel closed), and
	// commands go on.
	q := start(t, e, veena.StartRequest{Definition: "wait"})
	slow, cancelSlow := e.Subscribe(q.ID)
	defer cancelSlow()
	for range 100 {
		// Backtrack to the newest start token: each round fires a dozen events.
		h, _ := e.Tokens(ctx, q.ID)
		var last string
		for _, nt := range h.NodeTokens {
			if nt.Node == "start" && nt.Complete && nt.ExecutionType == "forward" {
				last = nt.ID
			}
		}
		if _, err := e.Backtrack(ctx, last, ""); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range slow {
		n++
	}
	if n == 0 || n > 256 {
		t.Fatalf("a slow subscriber got %d events before it was dropped", n)
	}
}

func mustEvents(t *testing.T, e *veena.Engine, id string) []veena.Event {
	t.Helper()
	evs, err := e.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestDefinitionsDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"child", "parent"} {
		src, err := os.ReadFile(filepath.Join("testdata", n+".wf.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".wf.xml"), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := open(t, nil, veena.Options{DefinitionsDir: dir})
	defer e.Close()
	ds, err := e.Definitions(context.Background())
	if err != nil || len(ds) != 2 || ds[0].Name != "child" || ds[1].Name != "parent" {
		t.Fatalf("definitions: %v %v", ds, err)
	}
	p := start(t, e, veena.StartRequest{Definition: "parent"})
	one(t, e, p.ID, "sub")
}

// TestPanickingNodeType: a node type that panics fails the command, keeps
// nothing, and the engine carries on.
func TestPanickingNodeType(t *testing.T) {
	ctx := context.Background()
	k := kernel.New()
	k.RegisterNodeType("boom", func(*graph.Node) (kernel.NodeType, error) {
		return kernel.NodeTypeFunc(func(*kernel.Engine, *kernel.NodeToken) error { panic("boom") }), nil
	})
	e := open(t, nil, veena.Options{Kernel: k})
	defer e.Close()
	src := `<process-definition name="boom"><node name="a" isStart="true"><arc to="b"/></node><node name="b" type="boom"/></process-definition>`
	if _, _, err := e.LoadDefinition(ctx, "boom.wf.xml", []byte(src), ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.StartProcess(ctx, veena.StartRequest{Definition: "boom"})
	wantCode(t, err, "execution_failed")
	if page, err := e.Processes(ctx, veena.ProcessFilter{}); err != nil {
		t.Fatal(err)
	} else if len(page.Items) != 0 {
		t.Fatalf("%d processes after a failed start", len(page.Items))
	}
}

// TestIdempotentPatchesAndEvents: environment patches and incoming events
// take idempotency keys too; a retry answers the first result and changes
// nothing, even once the event's process no longer matches.
func TestIdempotentPatchesAndEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "split")
		p := start(t, e, veena.StartRequest{Definition: "split", Context: map[string]string{"order": "o1"}})

		first, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"n": 1}, "pe-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"n": 2}, "pe-2"); err != nil {
			t.Fatal(err)
		}
		again, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"n": 1}, "pe-1")
		if err != nil || again["n"].String() != first["n"].String() || again["n"].String() != "1" {
			t.Fatalf("retried process env patch answered %v, %v; want the first answer %v", again, err, first)
		}
		if env, _ := e.ProcessEnv(ctx, p.ID); env["n"].String() != "2" {
			t.Fatalf("retried process env patch changed the env: %v", env)
		}

		a := one(t, e, p.ID, "a")
		tfirst, err := e.PatchTokenEnv(ctx, a, map[string]any{"m": "x"}, "te-1")
		if err != nil || tfirst["m"].String() != "x" {
			t.Fatalf("token env patch: %v, %v", tfirst, err)
		}
		if _, err := e.PatchTokenEnv(ctx, a, map[string]any{"m": "y"}, "te-2"); err != nil {
			t.Fatal(err)
		}
		tagain, err := e.PatchTokenEnv(ctx, a, map[string]any{"m": "x"}, "te-1")
		if err != nil || tagain["m"].String() != "x" {
			t.Fatalf("retried token env patch answered %v, %v; want the first answer", tagain, err)
		}
		if env, _ := e.TokenEnv(ctx, a); env["m"].String() != "y" {
			t.Fatalf("retried token env patch changed the env: %v", env)
		}

		ev := veena.EventRequest{Match: map[string]string{"order": "o1"}, Node: "a", IdempotencyKey: "ev-1"}
		r1, err := e.SendEvent(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.CancelProcess(ctx, p.ID, ""); err != nil {
			t.Fatal(err)
		}
		// Nothing matches any more; the retry still gets its first answer.
		r2, err := e.SendEvent(ctx, ev)
		if err != nil || r2.ID != r1.ID || r2.State != r1.State || !r2.UpdatedAt.Equal(r1.UpdatedAt) {
			t.Fatalf("retried event answered %+v, %v; want %+v", r2, err, r1)
		}
		ev.IdempotencyKey = "ev-2"
		_, err = e.SendEvent(ctx, ev)
		wantCode(t, err, "not_found")
	})
}

// TestUpgradeFromSchema1: a database an earlier Veena wrote (schema 1: JSON
// snapshots and events, no inbox) is migrated at open, its processes carry
// on, and its idempotency records still answer retries, even after the
// purge of expired records.
func TestUpgradeFromSchema1(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("testdata", "upgrade", "schema1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "veena.db")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := open(t, st, veena.Options{})
	defer e.Close()
	// The records from before the upgrade count as created by it: a purge
	// right after keeps them.
	veena.DrainAbandoned(ctx, e)
	const id = "01a20217-5a1c-72e9-be61-0de3c2ab1284"
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "split", IdempotencyKey: "schema1-start"})
	if err != nil || p.ID != id || p.State != "executing" {
		t.Fatalf("retried start from before the upgrade: %+v, %v", p, err)
	}
	before, err := e.Events(ctx, id, 0, 0)
	if err != nil || len(before) == 0 {
		t.Fatalf("events written before the upgrade: %d, %v", len(before), err)
	}
	complete(t, e, one(t, e, id, "a"), veena.CompleteRequest{})
	p = complete(t, e, one(t, e, id, "b"), veena.CompleteRequest{})
	if p.State != "executing" || len(active(t, e, id, "last")) != 1 {
		t.Fatalf("after both branches: %+v", p)
	}
	after, err := e.Events(ctx, id, 0, 0)
	if err != nil || len(after) <= len(before) {
		t.Fatalf("events after the upgrade: %d (before %d), %v", len(after), len(before), err)
	}
	for i, ev := range after {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: old and new records do not read as one log", i, ev.Seq)
		}
	}
	if err := e.Ready(ctx); err != nil {
		t.Fatalf("ready after the upgrade: %v", err)
	}
}
