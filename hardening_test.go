package veena_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
)

// TestIdempotencyKeyBoundToRequest: an idempotency key answers retries of
// the request it was first used for, and refuses (idempotency_key_reused)
// any other — another operation, another target, another body — changing
// nothing; through the direct path and the durable inbox alike.
func TestIdempotencyKeyBoundToRequest(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		load(t, e, "split", "wait")
		// Start.
		p1 := start(t, e, veena.StartRequest{Definition: "split", IdempotencyKey: "s"})
		if again := start(t, e, veena.StartRequest{Definition: "split", IdempotencyKey: "s"}); again.ID != p1.ID {
			t.Fatal("a retried start made a second process")
		}
		for _, req := range []veena.StartRequest{
			{Definition: "wait", IdempotencyKey: "s"},
			{Definition: "split", Env: map[string]any{"x": 1}, IdempotencyKey: "s"},
			{Definition: "split", Context: map[string]string{"k": "v"}, IdempotencyKey: "s"},
		} {
			_, err := e.StartProcess(ctx, req)
			wantCode(t, err, "idempotency_key_reused")
		}
		if page, _ := e.Processes(ctx, veena.ProcessFilter{}); len(page.Items) != 1 {
			t.Fatalf("%d processes after refused starts", len(page.Items))
		}
		p2 := start(t, e, veena.StartRequest{Definition: "split"})
		a1, a2 := one(t, e, p1.ID, "a"), one(t, e, p2.ID, "a")

		// Complete: the same key on another token, or with another body.
		complete(t, e, a1, veena.CompleteRequest{IdempotencyKey: "c"})
		complete(t, e, a1, veena.CompleteRequest{IdempotencyKey: "c"}) // a retry
		_, err := e.CompleteToken(ctx, a2, veena.CompleteRequest{IdempotencyKey: "c"})
		wantCode(t, err, "idempotency_key_reused")
		_, err = e.CompleteToken(ctx, a1, veena.CompleteRequest{Env: map[string]any{"y": 2}, IdempotencyKey: "c"})
		wantCode(t, err, "idempotency_key_reused")
		one(t, e, p2.ID, "a") // p2 untouched

		// The same key through the durable inbox.
		_, err = veena.EnqueueComplete(ctx, e, a2, "c")
		wantCode(t, err, "idempotency_key_reused")
		one(t, e, p2.ID, "a")
		if _, err := veena.EnqueueComplete(ctx, e, a2, "q"); err != nil {
			t.Fatal(err)
		}
		if _, err := veena.EnqueueComplete(ctx, e, a2, "q"); err != nil {
			t.Fatalf("a retry through the inbox: %v", err)
		}
		_, err = veena.EnqueueComplete(ctx, e, one(t, e, p1.ID, "b"), "q")
		wantCode(t, err, "idempotency_key_reused")
		one(t, e, p1.ID, "b")

		// Cancel, patches, backtrack, events: one key each, reused elsewhere.
		p3 := start(t, e, veena.StartRequest{Definition: "wait", Context: map[string]string{"order": "o3"}})
		p4 := start(t, e, veena.StartRequest{Definition: "wait", Context: map[string]string{"order": "o4"}})
		if _, err := e.PatchProcessEnv(ctx, p3.ID, map[string]any{"x": 1}, "pe"); err != nil {
			t.Fatal(err)
		}
		_, err = e.PatchProcessEnv(ctx, p4.ID, map[string]any{"x": 1}, "pe")
		wantCode(t, err, "idempotency_key_reused")
		_, err = e.PatchProcessEnv(ctx, p3.ID, map[string]any{"x": 2}, "pe")
		wantCode(t, err, "idempotency_key_reused")
		task3 := one(t, e, p3.ID, "task")
		if _, err := e.PatchTokenEnv(ctx, task3, map[string]any{"t": 1}, "te"); err != nil {
			t.Fatal(err)
		}
		_, err = e.PatchTokenEnv(ctx, one(t, e, p4.ID, "task"), map[string]any{"t": 1}, "te")
		wantCode(t, err, "idempotency_key_reused")
		if env, _ := e.ProcessEnv(ctx, p4.ID); len(env) != 0 {
			t.Fatalf("a refused patch changed p4: %v", env)
		}
		if _, err := e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"order": "o3"}, IdempotencyKey: "ev"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"order": "o3"}, IdempotencyKey: "ev"}); err != nil {
			t.Fatalf("a retried event: %v", err)
		}
		_, err = e.SendEvent(ctx, veena.EventRequest{Match: map[string]string{"order": "o4"}, IdempotencyKey: "ev"})
		wantCode(t, err, "idempotency_key_reused")
		one(t, e, p4.ID, "task")
		_, err = e.CancelProcess(ctx, p4.ID, "ev")
		wantCode(t, err, "idempotency_key_reused")
		if _, err := e.CancelProcess(ctx, p4.ID, "cx"); err != nil {
			t.Fatal(err)
		}
		_, err = e.CancelProcess(ctx, p2.ID, "cx")
		wantCode(t, err, "idempotency_key_reused")
		if p, _ := e.Process(ctx, p2.ID); p.State != "executing" {
			t.Fatalf("a refused cancel changed p2: %s", p.State)
		}
		if _, err := e.Backtrack(ctx, a1, "bt"); err != nil {
			t.Fatal(err)
		}
		_, err = e.Backtrack(ctx, a2, "bt")
		wantCode(t, err, "idempotency_key_reused")
	})
}

// lineCounter counts the lines written to it.
type lineCounter struct {
	mu sync.Mutex
	n  int
}

func (c *lineCounter) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.n += bytes.Count(b, []byte("\n"))
	c.mu.Unlock()
	return len(b), nil
}

func (c *lineCounter) lines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

const defSlowBranch = `<process-definition name="slowbranch" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="X"/></node>
  <node name="B" type="wait" isStart="true"><arc to="Y"/></node>
  <node name="X" type="script"><arc to="Z"/><custom><execute type="js">
    console.log("X runs"); var t = Date.now(); while (Date.now() - t &lt; 400) {}
  </execute></custom></node>
  <node name="Y"><arc to="Z"/></node>
  <node name="Z" type="wait"/>
</process-definition>`

// TestArrivalOrderKept: A completes a token whose next node runs a slow
// script; B completes a sibling while A runs. A arrived first: it is
// answered first, its events come before B's, and its script runs once.
func TestArrivalOrderKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		k := kernel.New()
		runs := &lineCounter{}
		k.ScriptOutput = runs
		e := open(t, b.place(t)(), veena.Options{Kernel: k})
		defer e.Close()
		if _, _, err := e.LoadDefinition(ctx, "slowbranch.wf.xml", []byte(defSlowBranch), ""); err != nil {
			t.Fatal(err)
		}
		p := start(t, e, veena.StartRequest{Definition: "slowbranch"})
		a, bt := one(t, e, p.ID, "A"), one(t, e, p.ID, "B")
		type answer struct {
			who string
			at  time.Duration
			err error
		}
		answers := make(chan answer, 2)
		began := time.Now()
		go func() {
			_, err := e.CompleteToken(ctx, a, veena.CompleteRequest{})
			answers <- answer{"A", time.Since(began), err}
		}()
		time.Sleep(100 * time.Millisecond)
		go func() {
			_, err := e.CompleteToken(ctx, bt, veena.CompleteRequest{})
			answers <- answer{"B", time.Since(began), err}
		}()
		first, second := <-answers, <-answers
		if first.err != nil || second.err != nil {
			t.Fatalf("answers: %+v %+v", first, second)
		}
		if first.who != "A" {
			t.Fatalf("B was answered (at %s) before A (at %s), though A arrived first", first.at, second.at)
		}
		if first.at > 1200*time.Millisecond {
			t.Fatalf("A was answered after %s: its 400 ms of work ran more than once", first.at)
		}
		if n := runs.lines(); n != 1 {
			t.Fatalf("the script ran %d times", n)
		}
		order := completedOrder(t, e, p.ID)
		if len(order) < 2 || order[0] != a || order[len(order)-2] == a {
			// A's completion, then X's, then B's, then Y's.
			t.Logf("completion order %v", order)
		}
		ia, ib := slices.Index(order, a), slices.Index(order, bt)
		if ia < 0 || ib < 0 || ia > ib {
			t.Fatalf("A completed at %d, B at %d in the event order %v", ia, ib, order)
		}
	})
}

const defOps = `<process-definition name="ops" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"><guard>if vip then Accept else Discard</guard><arc to="G"/></node>
  <node name="G" type="wait"><guard>if ready then Accept else delay until 1 day after now</guard><arc to="D"/></node>
  <node name="D"><arc to="E"/></node>
  <node name="E" type="wait"/>
</process-definition>`

// TestKernelOperationsDurable: every operation the reference gives
// Sarasvati's engine, through the durable engine: finalising a process a
// listener left pending completion or pending cancel, asynchronous
// completion and running the queued arc tokens, re-evaluating a delayed
// token on demand, executing a node a listener delayed, retrying an arc
// token, process listeners, and transient attributes — each surviving a
// restart of the engine on a durable store.
func TestKernelOperationsDurable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		var delayFinalize, delayNode bool
		var heard int
		newKernel := func() *kernel.Kernel {
			k := kernel.New()
			k.RegisterPredicate("vip", func(e *kernel.Engine, tok *kernel.NodeToken) (bool, error) {
				v, _ := tok.FullEnv().Transient("vip")
				return v == true, nil
			})
			k.AddGlobalListener("delays", kernel.ListenerFunc(func(e *kernel.Engine, ev *kernel.Event) kernel.EventActions {
				switch {
				case delayFinalize && ev.Type == kernel.ProcessPendingComplete:
					return kernel.DelayFinalizeComplete
				case delayFinalize && ev.Type == kernel.ProcessPendingCancel:
					return kernel.DelayFinalizeCancel
				case delayNode && ev.Type == kernel.NodeTokenAccepted && ev.NodeToken().Node.Name == "D":
					return kernel.DelayNodeExecution
				}
				return 0
			}))
			k.RegisterListener("audit", kernel.ListenerFunc(func(*kernel.Engine, *kernel.Event) kernel.EventActions { heard++; return 0 }))
			return k
		}
		place := b.place(t)
		st := place()
		e := open(t, st, veena.Options{Kernel: newKernel()})
		reopen := func() {
			if b.durable {
				e.Close()
				st = place()
				e = open(t, st, veena.Options{Kernel: newKernel()})
			}
		}
		defer func() { e.Close() }()
		if _, _, err := e.LoadDefinition(ctx, "ops.wf.xml", []byte(defOps), ""); err != nil {
			t.Fatal(err)
		}
		state := func(id, want string) {
			t.Helper()
			p, err := e.Process(ctx, id)
			if err != nil || p.State != want {
				t.Fatalf("process %s: %+v %v, want %s", id, p, err, want)
			}
		}

		// Transient attributes: seen by the guard in the command that
		// carries them, never stored, gone for the next command.
		p := start(t, e, veena.StartRequest{Definition: "ops", Env: map[string]any{"ready": false}, Transient: map[string]any{"vip": true}})
		if _, ok := p.Env["vip"]; ok {
			t.Fatal("a transient attribute was answered")
		}
		a := one(t, e, p.ID, "A")
		complete(t, e, a, veena.CompleteRequest{Transient: map[string]any{"vip": true}, Async: true})
		// Asynchronous completion: B's arc token waits in the queue.
		h, _ := e.Tokens(ctx, p.ID)
		if len(h.ArcTokens) != 1 || !h.ArcTokens[0].Pending || len(active(t, e, p.ID, "B")) != 0 {
			t.Fatalf("after an asynchronous completion: %+v", h.ArcTokens)
		}
		reopen()
		// The transient of the completion is gone: B (vip) is discarded
		// when the queue runs later.
		if _, err := e.ExecuteQueuedArcTokens(ctx, p.ID, "q1"); err != nil {
			t.Fatal(err)
		}
		if tok, _ := e.NodeToken(ctx, p.ID+".n2"); tok == nil || tok.Node != "B" || tok.GuardAction == nil || *tok.GuardAction != "discard" {
			t.Fatalf("B after the queue ran without the transient: %+v", tok)
		}

		// Again, with the transient on the command that runs B.
		p = start(t, e, veena.StartRequest{Definition: "ops", Env: map[string]any{"ready": false}})
		complete(t, e, one(t, e, p.ID, "A"), veena.CompleteRequest{Transient: map[string]any{"vip": true}})
		bTok := one(t, e, p.ID, "B")
		// Re-evaluating a delayed token on demand.
		complete(t, e, bTok, veena.CompleteRequest{})
		g := one(t, e, p.ID, "G")
		if tok, _ := e.NodeToken(ctx, g); *tok.GuardAction != "delay" {
			t.Fatalf("G is %v, want delayed", *tok.GuardAction)
		}
		_, err := e.ReevaluateDelayedToken(ctx, bTok, "")
		wantCode(t, err, "token_complete")
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"ready": true}, ""); err != nil {
			t.Fatal(err)
		}
		reopen()
		if _, err := e.ReevaluateDelayedToken(ctx, g, "re"); err != nil {
			t.Fatal(err)
		}
		if tok, _ := e.NodeToken(ctx, g); *tok.GuardAction != "accept" {
			t.Fatalf("G after re-evaluation: %v", *tok.GuardAction)
		}
		_, err = e.ReevaluateDelayedToken(ctx, g, "")
		wantCode(t, err, "token_not_delayed")

		// A process listener, stored with the process.
		if _, err := e.AddProcessListener(ctx, p.ID, "audit", []string{"NODE_TOKEN_COMPLETED"}, ""); err != nil {
			t.Fatal(err)
		}
		_, err = e.AddProcessListener(ctx, p.ID, "nobody", nil, "")
		wantCode(t, err, "not_found")
		_, err = e.AddProcessListener(ctx, p.ID, "audit", []string{"NO_SUCH_EVENT"}, "")
		wantCode(t, err, "invalid_argument")
		reopen()
		// Executing a node a listener delayed.
		delayNode = true
		heard = 0
		complete(t, e, g, veena.CompleteRequest{})
		d := one(t, e, p.ID, "D")
		if heard != 1 {
			t.Fatalf("the process listener heard %d completions, want 1 (G)", heard)
		}
		delayNode = false
		reopen()
		if _, err := e.ExecuteNode(ctx, d, "x"); err != nil {
			t.Fatal(err)
		}
		if heard != 2 || len(active(t, e, p.ID, "E")) != 1 {
			t.Fatalf("after executing D: heard %d, E %v", heard, active(t, e, p.ID, "E"))
		}
		if _, err := e.RemoveProcessListener(ctx, p.ID, "audit", nil, ""); err != nil {
			t.Fatal(err)
		}

		// Finalising what a listener left pending.
		delayFinalize = true
		_, err = e.FinalizeComplete(ctx, p.ID, "")
		wantCode(t, err, "process_not_executing")
		complete(t, e, one(t, e, p.ID, "E"), veena.CompleteRequest{})
		state(p.ID, "pending_completion")
		if heard != 2 {
			t.Fatal("the removed listener still heard")
		}
		_, err = e.CancelProcess(ctx, p.ID, "")
		wantCode(t, err, "process_not_executing")
		reopen()
		if _, err := e.FinalizeComplete(ctx, p.ID, "f1"); err != nil {
			t.Fatal(err)
		}
		state(p.ID, "completed")
		q := start(t, e, veena.StartRequest{Definition: "ops", Env: map[string]any{"ready": false}})
		if _, err := e.CancelProcess(ctx, q.ID, ""); err != nil {
			t.Fatal(err)
		}
		state(q.ID, "pending_cancel")
		_, err = e.FinalizeComplete(ctx, q.ID, "")
		wantCode(t, err, "process_not_executing")
		reopen()
		if _, err := e.FinalizeCancel(ctx, q.ID, ""); err != nil {
			t.Fatal(err)
		}
		state(q.ID, "canceled")

		// Retrying an arc token: one that is complete does nothing; an
		// unknown one is not found.
		if _, err := e.RetryArcToken(ctx, p.ID+".a1", ""); err == nil {
			t.Fatal("retrying an arc token of a completed process")
		}
		_, err = e.RetryArcToken(ctx, p.ID+".a99", "")
		wantCode(t, err, "not_found")
	})
}
