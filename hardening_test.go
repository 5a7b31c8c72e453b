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
