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
