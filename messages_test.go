package veena_test

import (
	"context"
	"testing"
	"time"

	"github.com/veena-wf/veena"
)

const messageModel = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="t">
  <message id="paid" name="payment received"><extensionElements><zeebe:subscription correlationKey="= orderId"/></extensionElements></message>
  <message id="order" name="new order"/>
  <signal id="stop" name="shutdown"/>
  <process id="shop" isExecutable="true">
    <startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="wait"/>
    <intermediateCatchEvent id="wait"><messageEventDefinition messageRef="paid"/></intermediateCatchEvent>
    <sequenceFlow id="f1" sourceRef="wait" targetRef="e"/><endEvent id="e"/>
    <subProcess id="onStop" triggeredByEvent="true">
      <startEvent id="ss"><signalEventDefinition signalRef="stop"/></startEvent>
      <sequenceFlow id="g0" sourceRef="ss" targetRef="se"/><endEvent id="se"/>
    </subProcess>
  </process>
  <process id="intake" isExecutable="true">
    <startEvent id="byMessage"><messageEventDefinition messageRef="order"/></startEvent>
    <sequenceFlow id="h0" sourceRef="byMessage" targetRef="tell"/>
    <intermediateThrowEvent id="tell"><signalEventDefinition signalRef="stop"/></intermediateThrowEvent>
    <sequenceFlow id="h1" sourceRef="tell" targetRef="he"/><endEvent id="he"/>
  </process>
  <process id="watcher" isExecutable="true">
    <startEvent id="bySignal"><signalEventDefinition signalRef="stop"/></startEvent>
    <sequenceFlow id="w0" sourceRef="bySignal" targetRef="we"/><endEvent id="we"/>
  </process>
</definitions>`

func state(t *testing.T, e *veena.Engine, id string) string {
	t.Helper()
	p, err := e.Process(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p.State
}

// Messages by name and correlation key, buffered with a TTL and a message
// id; signals broadcast to waiting tokens and signal starts, also when a
// process throws one; message starts: on every backend, durable where it
// can be.
func TestMessagesAndSignals(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now})
		d, _, err := e.LoadDefinition(ctx, "shop.bpmn", []byte(messageModel), "")
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "shop" || len(d.Related) != 2 || d.Related[0] != "intake" || d.Related[1] != "watcher" {
			t.Fatalf("definition %s related %v", d.Name, d.Related)
		}
		p1 := start(t, e, veena.StartRequest{Definition: "shop", Env: map[string]any{"orderId": "o-1"}})
		p2 := start(t, e, veena.StartRequest{Definition: "shop", Env: map[string]any{"orderId": "o-2"}})

		// By name and key: only o-2's process gets it.
		res, err := e.PublishMessage(ctx, veena.PublishRequest{Name: "payment received", CorrelationKey: "o-2", Env: map[string]any{"amount": 12}})
		if err != nil || res.Process == nil || *res.Process != p2.ID || res.Buffered {
			t.Fatalf("publish: %+v, %v", res, err)
		}
		if state(t, e, p2.ID) != "completed" || state(t, e, p1.ID) != "executing" {
			t.Fatalf("states %s %s", state(t, e, p1.ID), state(t, e, p2.ID))
		}
		if p, _ := e.Process(ctx, p2.ID); p.Env["amount"].IntValue() != 12 {
			t.Fatalf("payload not merged: %v", p.Env)
		}
		// No taker, no TTL: dropped. With a TTL: buffered, and an id twice is refused.
		if res, err = e.PublishMessage(ctx, veena.PublishRequest{Name: "payment received", CorrelationKey: "o-3"}); err != nil || res.Process != nil || res.Buffered {
			t.Fatalf("dropped message: %+v %v", res, err)
		}
		if res, err = e.PublishMessage(ctx, veena.PublishRequest{Name: "payment received", CorrelationKey: "o-3", TTL: time.Hour, MessageID: "m-1", Env: map[string]any{"early": true}}); err != nil || !res.Buffered {
			t.Fatalf("buffered message: %+v %v", res, err)
		}
		_, err = e.PublishMessage(ctx, veena.PublishRequest{Name: "payment received", CorrelationKey: "o-3", TTL: time.Hour, MessageID: "m-1"})
		wantCode(t, err, "conflict")
		if b.durable {
			e.Close()
			e = open(t, mk(), veena.Options{Clock: clk.Now})
		}
		// A process that comes to wait for it takes the buffered message.
		p3 := start(t, e, veena.StartRequest{Definition: "shop", Env: map[string]any{"orderId": "o-3"}})
		waitFor(t, func() bool { return state(t, e, p3.ID) == "completed" })
		if p, _ := e.Process(ctx, p3.ID); !p.Env["early"].BoolValue() {
			t.Fatalf("buffered payload not merged: %v", p.Env)
		}
		// An expired message is not delivered.
		if _, err = e.PublishMessage(ctx, veena.PublishRequest{Name: "payment received", CorrelationKey: "o-4", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		p4 := start(t, e, veena.StartRequest{Definition: "shop", Env: map[string]any{"orderId": "o-4"}})
		time.Sleep(50 * time.Millisecond)
		if state(t, e, p4.ID) != "executing" {
			t.Fatal("an expired message was delivered")
		}

		// A message start: a new process of intake, which throws the
		// signal: it ends p1's and p4's waits through their event
		// sub-process, and starts a watcher.
		res, err = e.PublishMessage(ctx, veena.PublishRequest{Name: "new order", Env: map[string]any{"item": "book"}})
		if err != nil || res.Process == nil {
			t.Fatalf("message start: %+v %v", res, err)
		}
		if state(t, e, *res.Process) != "completed" {
			t.Fatalf("intake process %s", state(t, e, *res.Process))
		}
		waitFor(t, func() bool { return state(t, e, p1.ID) == "completed" && state(t, e, p4.ID) == "completed" })
		waitFor(t, func() bool {
			page, _ := e.Processes(ctx, veena.ProcessFilter{Definition: "watcher"})
			return page != nil && len(page.Items) == 1
		})
		// Broadcast from outside: nobody waits any more; one more watcher.
		sig, err := e.BroadcastSignal(ctx, veena.SignalRequest{Name: "shutdown"})
		if err != nil || sig.Delivered != 0 || len(sig.Started) != 1 {
			t.Fatalf("signal: %+v %v", sig, err)
		}
		_, err = e.PublishMessage(ctx, veena.PublishRequest{})
		wantCode(t, err, "invalid_argument")
		e.Close()
	})
}

const ordersModel = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="t">
  <message id="placed" name="order placed"/>
  <message id="paid" name="paid"><extensionElements><zeebe:subscription correlationKey="= orderId"/></extensionElements></message>
  <process id="orders" isExecutable="true">
    <startEvent id="s"><messageEventDefinition messageRef="placed"/></startEvent>
    <sequenceFlow id="f0" sourceRef="s" targetRef="pack"/>
    <userTask id="pack"/>
    <sequenceFlow id="f1" sourceRef="pack" targetRef="wait"/>
    <intermediateCatchEvent id="wait"><messageEventDefinition messageRef="paid"/></intermediateCatchEvent>
    <sequenceFlow id="f2" sourceRef="wait" targetRef="e"/><endEvent id="e"/>
  </process>
</definitions>`

// Message ids are remembered for their TTL whether the message was
// delivered at once, started a process or was buffered, across engines; a
// message start with a correlation key starts one executing process per
// key (a second message waits in the buffer until the first process ends);
// a token that comes to wait takes a buffered message in the same command.
func TestMessageIDsAndMessageStarts(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e1 := open(t, mk(), veena.Options{Clock: clk.Now})
		e2 := open(t, mk(), veena.Options{Clock: clk.Now})
		defer e2.Close()
		defer e1.Close()
		if _, _, err := e1.LoadDefinition(ctx, "orders.bpmn", []byte(ordersModel), ""); err != nil {
			t.Fatal(err)
		}
		publish := func(e *veena.Engine, req veena.PublishRequest) *veena.PublishResult {
			t.Helper()
			res, err := e.PublishMessage(ctx, req)
			if err != nil {
				t.Fatalf("publish %+v: %v", req, err)
			}
			return res
		}
		// A message start with a key: the process holds the key.
		res := publish(e1, veena.PublishRequest{Name: "order placed", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "m1", Env: map[string]any{"orderId": "o-1"}})
		if res.Process == nil || res.Buffered {
			t.Fatalf("first order: %+v", res)
		}
		p1 := *res.Process
		if p, _ := e2.Process(ctx, p1); p.Context["@message:orders"] != "o-1" || p.State != "executing" {
			t.Fatalf("started process %+v", p)
		}
		// Its id is remembered although it was never buffered, on the
		// other engine too.
		_, err := e2.PublishMessage(ctx, veena.PublishRequest{Name: "order placed", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "m1"})
		wantCode(t, err, "conflict")
		// While p1 executes, the key starts no second process: dropped
		// without a TTL, buffered with one.
		if res = publish(e2, veena.PublishRequest{Name: "order placed", CorrelationKey: "o-1", MessageID: "m2"}); res.Process != nil || res.Buffered {
			t.Fatalf("second order o-1 without ttl: %+v", res)
		}
		if res = publish(e2, veena.PublishRequest{Name: "order placed", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "m3", Env: map[string]any{"orderId": "o-1", "second": true}}); res.Process != nil || !res.Buffered {
			t.Fatalf("second order o-1 with ttl: %+v", res)
		}
		// Another key, and no key at all (every time), start processes.
		others := map[string]bool{}
		for _, key := range []string{"o-2", "", ""} {
			res = publish(e1, veena.PublishRequest{Name: "order placed", CorrelationKey: key})
			if res.Process == nil || others[*res.Process] {
				t.Fatalf("order %q: %+v", key, res)
			}
			others[*res.Process] = true
		}
		// p1 is not waiting for its payment yet: the payment is buffered,
		// and the task's completion takes it in the same command.
		if res = publish(e1, veena.PublishRequest{Name: "paid", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "pay-1", Env: map[string]any{"amount": 30}}); !res.Buffered {
			t.Fatalf("early payment: %+v", res)
		}
		tasks, err := e2.Tasks(ctx, veena.TaskFilter{Process: p1})
		if err != nil || len(tasks.Items) != 1 {
			t.Fatalf("tasks of p1: %+v, %v", tasks, err)
		}
		done, err := e2.CompleteTask(ctx, tasks.Items[0].ID, veena.CompleteTaskRequest{Actor: veena.Actor{User: "ann"}})
		if err != nil {
			t.Fatal(err)
		}
		if done.State != "completed" || done.Env["amount"].IntValue() != 30 {
			t.Fatalf("p1 after its task: %s, env %v", done.State, done.Env)
		}
		// The payment's id is remembered after it was taken.
		_, err = e2.PublishMessage(ctx, veena.PublishRequest{Name: "paid", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "pay-1"})
		wantCode(t, err, "conflict")
		// p1 ended: the buffered order o-1 starts the next process.
		var p5 *veena.Process
		waitFor(t, func() bool {
			page, err := e1.Processes(ctx, veena.ProcessFilter{Definition: "orders", State: "executing"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Items {
				if p.Context["@message:orders"] == "o-1" {
					p5 = &p
					return true
				}
			}
			return false
		})
		if p5.ID == p1 || !p5.Env["second"].BoolValue() {
			t.Fatalf("process for the buffered order: %+v", p5)
		}
		// Once the TTL has passed, an id may be used again.
		clk.Advance(2 * time.Hour)
		if res = publish(e1, veena.PublishRequest{Name: "paid", CorrelationKey: "o-1", TTL: time.Hour, MessageID: "pay-1"}); !res.Buffered {
			t.Fatalf("an expired id: %+v", res)
		}
	})
}
