package bpmn_test

import (
	"strings"
	"testing"
	"time"
)

// An embedded sub-process is a scope: its token stays active while what
// runs inside does; inner tokens are members of its token set.
func TestEmbeddedSubProcess(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="fork"/>
  <parallelGateway id="fork"/><sequenceFlow id="g1" sourceRef="fork" targetRef="a"/><sequenceFlow id="g2" sourceRef="fork" targetRef="b"/>
  <userTask id="a"/><task id="b"/>
  <sequenceFlow id="g3" sourceRef="a" targetRef="join"/><sequenceFlow id="g4" sourceRef="b" targetRef="join"/>
  <parallelGateway id="join"/><sequenceFlow id="g5" sourceRef="join" targetRef="se"/><endEvent id="se"/>
</subProcess>
<sequenceFlow id="f1" sourceRef="sub" targetRef="after"/><userTask id="after"/>`))).start(nil)
	r.want(`
[1 s C F]
  (C F 2)
[2 sub I F]
[3 ss C F sub 0]
  (C F 4)
[4 fork C F sub 0]
  (C F 5)
  (C F 6)
[5 a I F sub 0]
[6 b C F sub 0]
  (I F join)
`)
	r.task("a", map[string]any{"x": 1})
	r.want(`
[1 s C F]
  (C F 2)
[2 sub C F]
  (C F 9)
[3 ss C F sub 0]
  (C F 4)
[4 fork C F sub 0]
  (C F 5)
  (C F 6)
[5 a C F sub 0]
  (C F 7)
[6 b C F sub 0]
  (C F 7)
[7 join C F sub 0]
  (C F 8)
[8 se C F sub 0]
[9 after I F]
`)
	r.env(map[string]any{"x": int64(1)})
}

// Boundary events: a timer interrupts its activity; a non-interrupting one
// starts a path beside it and, as a cycle, fires again.
func TestBoundaryTimers(t *testing.T) {
	src := model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="work"/>
<userTask id="work"/>
<boundaryEvent id="remind" attachedToRef="work" cancelActivity="false"><timerEventDefinition><timeCycle>R2/PT10M</timeCycle></timerEventDefinition></boundaryEvent>
<boundaryEvent id="timeout" attachedToRef="work"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
<sequenceFlow id="f1" sourceRef="work" targetRef="done"/><endEvent id="done"/>
<sequenceFlow id="f2" sourceRef="remind" targetRef="nudge"/><task id="nudge"/>
<sequenceFlow id="f3" sourceRef="timeout" targetRef="late"/><endEvent id="late"/>`))
	r := load(t, src).start(nil)
	r.want(`
[1 s C F]
  (C F 2)
[2 work I F]
[3 remind I F]
[4 timeout I F]
`)
	r.advance(10 * time.Minute)
	r.advance(10 * time.Minute)
	r.advance(10 * time.Minute) // R2: no third reminder
	r.state("executing")
	r.advance(30 * time.Minute)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 work C F]
[3 remind C F]
[4 timeout C F]
  (C F 10)
[5 remind C F]
  (C F 7)
[6 remind C F]
[7 nudge C F]
[8 remind C F]
  (C F 9)
[9 nudge C F]
[10 late C F]
`)
	n := 0
	for _, tok := range r.p.NodeTokens {
		if tok.Node.Name == "nudge" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d reminders, want 2", n)
	}
	// Completed in time: the boundary events are withdrawn.
	r = load(t, src).start(nil)
	r.advance(5 * time.Minute)
	r.task("work", nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 work C F]
  (C F 5)
[3 remind C F]
[4 timeout C F]
[5 done C F]
`)
}

// A message boundary event on a sub-process interrupts it with everything
// inside; its user task is ended with it.
func TestMessageBoundaryInterruptsSubProcess(t *testing.T) {
	r := load(t, model(`<message id="m" name="cancel"><extensionElements><zeebe:subscription correlationKey="= orderId"/></extensionElements></message>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="a"/><userTask id="a"/>
  <sequenceFlow id="g1" sourceRef="a" targetRef="se"/><endEvent id="se"/>
</subProcess>
<boundaryEvent id="cancelled" attachedToRef="sub"><messageEventDefinition messageRef="m"/></boundaryEvent>
<sequenceFlow id="f1" sourceRef="sub" targetRef="ok"/><endEvent id="ok"/>
<sequenceFlow id="f2" sourceRef="cancelled" targetRef="undo"/><endEvent id="undo"/>`))).start(map[string]any{"orderId": "o-7"})
	r.message("cancel", "o-7", map[string]any{"reason": "changed mind"})
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 sub C F]
[3 cancelled C F]
  (C F 6)
[4 ss C F sub 0]
  (C F 5)
[5 a C F sub 0]
[6 undo C F]
`)
	r.env(map[string]any{"orderId": "o-7", "reason": "changed mind"})
	ended := false
	for _, ef := range r.p.Effects {
		if ef.Token.Node.Name == "a" && ef.Kind == 4 && !ef.Completed {
			ended = true
		}
	}
	if !ended {
		t.Error("the interrupted user task's work was not ended (canceled)")
	}
}

// Multi-instance, parallel: one instance per element, loopCounter from 1,
// each result at its index, the body completes when all have.
func TestMultiInstanceParallel(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="ask"/>
<userTask id="ask">
  <multiInstanceLoopCharacteristics>
    <extensionElements><zeebe:loopCharacteristics inputCollection="= people" inputElement="person" outputCollection="answers" outputElement="= answer"/></extensionElements>
  </multiInstanceLoopCharacteristics>
</userTask>
<sequenceFlow id="f1" sourceRef="ask" targetRef="e"/><endEvent id="e"/>`))).start(map[string]any{"people": []any{"ann", "bob", "cy"}})
	ins := r.activeAll("ask")
	if len(ins) != 3 {
		t.Fatalf("%d instances, want 3", len(ins))
	}
	for i, tok := range ins {
		if v, _ := tok.Env.Get("person"); v.Str() != []string{"ann", "bob", "cy"}[i] {
			t.Errorf("instance %d: person %v", i, v)
		}
		if v, _ := tok.Env.Get("loopCounter"); v.IntValue() != int64(i+1) {
			t.Errorf("instance %d: loopCounter %v", i, v)
		}
	}
	// Completed out of order: the answers keep the collection's order.
	r.work(ins[2], map[string]any{"answer": "c"}, "")
	r.work(ins[0], map[string]any{"answer": "a"}, "")
	r.state("executing")
	r.work(ins[1], map[string]any{"answer": "b"}, "")
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 ask C F]
  (C F 6)
[3 ask C F mi:ask 0]
[4 ask C F mi:ask 1]
[5 ask C F mi:ask 2]
[6 e C F]
`)
	r.env(map[string]any{"people": `["ann","bob","cy"]`, "answers": `["a","b","c"]`})
}

// Sequential multi-instance with a completion condition: the instances run
// one after the other and stop once it holds.
func TestMultiInstanceSequentialCompletion(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="vote"/>
<userTask id="vote">
  <multiInstanceLoopCharacteristics isSequential="true">
    <loopCardinality>= 5</loopCardinality>
    <completionCondition>= numberOfCompletedInstances &gt;= 2</completionCondition>
  </multiInstanceLoopCharacteristics>
</userTask>
<sequenceFlow id="f1" sourceRef="vote" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.task("vote", nil)
	r.state("executing")
	r.task("vote", nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 vote C F]
  (C F 5)
[3 vote C F mi:vote 0]
[4 vote C F mi:vote 1]
[5 e C F]
`)
}

// An empty collection completes the body at once.
func TestMultiInstanceEmpty(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="t"/>
<task id="t"><multiInstanceLoopCharacteristics><extensionElements><zeebe:loopCharacteristics inputCollection="= []" outputCollection="out"/></extensionElements></multiInstanceLoopCharacteristics></task>
<sequenceFlow id="f1" sourceRef="t" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.state("completed")
	r.env(map[string]any{"out": `[]`})
}

// A multi-instance sub-process: each instance is a scope of its own, and
// a join inside joins only its own instance's tokens.
func TestMultiInstanceSubProcess(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <multiInstanceLoopCharacteristics><loopCardinality>2</loopCardinality></multiInstanceLoopCharacteristics>
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="fork"/>
  <parallelGateway id="fork"/><sequenceFlow id="g1" sourceRef="fork" targetRef="a"/><sequenceFlow id="g2" sourceRef="fork" targetRef="b"/>
  <userTask id="a"/><task id="b"/>
  <sequenceFlow id="g3" sourceRef="a" targetRef="join"/><sequenceFlow id="g4" sourceRef="b" targetRef="join"/>
  <parallelGateway id="join"/>
</subProcess>
<sequenceFlow id="f1" sourceRef="sub" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	as := r.activeAll("a")
	if len(as) != 2 {
		t.Fatalf("%d tokens at a, want 2", len(as))
	}
	r.work(as[0], nil, "")
	// The first instance's join fired with its own tokens only.
	joins := 0
	for _, tok := range r.p.NodeTokens {
		if tok.Node.Name == "join" {
			joins++
		}
	}
	if joins != 1 {
		t.Fatalf("%d joins after one instance's task, want 1:\n%s", joins, r.history())
	}
	r.state("executing")
	r.work(as[1], nil, "")
	r.state("completed")
}

// A standard loop repeats while its condition holds, up to its maximum.
func TestStandardLoop(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="try"/>
<scriptTask id="try"><extensionElements><zeebe:script expression="= tries + 1" resultVariable="tries"/></extensionElements>
  <standardLoopCharacteristics loopMaximum="5"><loopCondition>= tries &lt; 3</loopCondition></standardLoopCharacteristics>
</scriptTask>
<sequenceFlow id="f1" sourceRef="try" targetRef="e"/><endEvent id="e"/>`))).start(map[string]any{"tries": 0})
	r.state("completed")
	r.env(map[string]any{"tries": int64(3)})
	r.want(`
[1 s C F]
  (C F 2)
[2 try C F]
[3 try C F]
[4 try C F]
  (C F 5)
[5 e C F]
`)
}

func TestTerminateEndEvent(t *testing.T) {
	// In a sub-process: only the sub-process ends, and completes normally.
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="fork"/>
  <parallelGateway id="fork"/><sequenceFlow id="g1" sourceRef="fork" targetRef="a"/><sequenceFlow id="g2" sourceRef="fork" targetRef="stop"/>
  <userTask id="a"/><endEvent id="stop"><terminateEventDefinition/></endEvent>
</subProcess>
<sequenceFlow id="f1" sourceRef="sub" targetRef="after"/><userTask id="after"/>`))).start(nil)
	r.active("after")
	r.want(`
[1 s C F]
  (C F 2)
[2 sub C F]
  (C F 7)
[3 ss C F sub 0]
  (C F 4)
[4 fork C F sub 0]
  (C F 5)
  (C F 6)
[5 a C F sub 0]
[6 stop C F sub 0]
[7 after I F]
`)
	// At process level: the process completes, other paths ended.
	r = load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<parallelGateway id="fork"/><sequenceFlow id="g1" sourceRef="fork" targetRef="a"/><sequenceFlow id="g2" sourceRef="fork" targetRef="b"/>
<userTask id="a"/><userTask id="b"/><sequenceFlow id="g3" sourceRef="b" targetRef="stop"/>
<endEvent id="stop"><terminateEventDefinition/></endEvent>`))).start(nil)
	r.task("b", nil)
	r.state("completed")
}

// An error thrown in a sub-process is caught by the nearest matching
// catcher: an event sub-process of that scope before the boundary event.
func TestErrorPropagation(t *testing.T) {
	body := func(eventSub string) string {
		return model(`<error id="e1" errorCode="BAD"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="boom"/>
  <endEvent id="boom"><errorEventDefinition errorRef="e1"/></endEvent>
  `+eventSub+`
</subProcess>
<boundaryEvent id="caught" attachedToRef="sub"><errorEventDefinition errorRef="e1"/></boundaryEvent>
<sequenceFlow id="f1" sourceRef="sub" targetRef="ok"/><endEvent id="ok"/>
<sequenceFlow id="f2" sourceRef="caught" targetRef="handled"/><endEvent id="handled"/>`))
	}
	r := load(t, body("")).start(nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 sub C F]
[3 caught C F]
  (C F 6)
[4 ss C F sub 0]
  (C F 5)
[5 boom C F sub 0]
[6 handled C F]
`)
	r = load(t, body(`<subProcess id="inner" triggeredByEvent="true"><startEvent id="es"><errorEventDefinition/></startEvent>
  <sequenceFlow id="h0" sourceRef="es" targetRef="fix"/><task id="fix"/></subProcess>`)).start(nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 sub C F]
  (C F 9)
[3 caught C F]
[4 inner C F sub 0]
[5 ss C F sub 0]
  (C F 6)
[6 boom C F sub 0]
[7 es C F sub 0 inner 0]
  (C F 8)
[8 fix C F sub 0 inner 0]
[9 ok C F]
`)
	// Uncaught: an incident on the throwing end event.
	r = load(t, model(`<error id="e1" errorCode="BAD"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="boom"/><endEvent id="boom"><errorEventDefinition errorRef="e1"/></endEvent>`))).start(nil)
	r.state("executing")
	if got := strings.Join(r.opened(), "\n"); !strings.Contains(got, `incident boom uncaught_error: error "BAD" is not caught`) {
		t.Errorf("effects: %s", got)
	}
}

// A non-interrupting escalation catcher lets the thrower go on.
func TestEscalation(t *testing.T) {
	r := load(t, model(`<escalation id="x" escalationCode="late"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="sub"/>
<subProcess id="sub">
  <startEvent id="ss"/><sequenceFlow id="g0" sourceRef="ss" targetRef="esc"/>
  <intermediateThrowEvent id="esc"><escalationEventDefinition escalationRef="x"/></intermediateThrowEvent>
  <sequenceFlow id="g1" sourceRef="esc" targetRef="a"/><userTask id="a"/>
</subProcess>
<boundaryEvent id="heard" attachedToRef="sub" cancelActivity="false"><escalationEventDefinition escalationRef="x"/></boundaryEvent>
<sequenceFlow id="f1" sourceRef="heard" targetRef="tell"/><userTask id="tell"/>
<sequenceFlow id="f2" sourceRef="sub" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.active("a")
	r.active("tell")
	r.task("a", nil)
	r.state("executing")
	r.task("tell", nil)
	r.state("completed")
}

// Event sub-processes: a non-interrupting message start runs beside the
// process (each message once more); an interrupting timer start ends it.
func TestEventSubProcesses(t *testing.T) {
	r := load(t, model(`<message id="m" name="ping"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="work"/><userTask id="work"/>
<sequenceFlow id="f1" sourceRef="work" targetRef="e"/><endEvent id="e"/>
<subProcess id="onPing" triggeredByEvent="true">
  <startEvent id="ps" isInterrupting="false"><messageEventDefinition messageRef="m"/></startEvent>
  <sequenceFlow id="g0" sourceRef="ps" targetRef="pong"/><task id="pong"/>
</subProcess>
<subProcess id="onTimeout" triggeredByEvent="true">
  <startEvent id="ts"><timerEventDefinition><timeDuration>P1D</timeDuration></timerEventDefinition></startEvent>
  <sequenceFlow id="g1" sourceRef="ts" targetRef="giveUp"/><endEvent id="giveUp"/>
</subProcess>`))).start(nil)
	r.message("ping", "", nil)
	r.message("ping", "", nil)
	r.state("executing")
	r.advance(24 * time.Hour)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 4)
[2 onPing C F]
[3 onTimeout C F]
[4 work C F]
[5 onPing C F]
[6 ps C F onPing 0]
  (C F 7)
[7 pong C F onPing 0]
[8 onPing C F]
[9 ps C F onPing 0]
  (C F 10)
[10 pong C F onPing 0]
[11 ts C F onTimeout 0]
  (C F 12)
[12 giveUp C F onTimeout 0]
`)
	// Completing the work first: the listeners are withdrawn, the process completes.
	r = load(t, model(`<message id="m" name="ping"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="work"/><userTask id="work"/>
<sequenceFlow id="f1" sourceRef="work" targetRef="e"/><endEvent id="e"/>
<subProcess id="onPing" triggeredByEvent="true">
  <startEvent id="ps" isInterrupting="false"><messageEventDefinition messageRef="m"/></startEvent>
  <sequenceFlow id="g0" sourceRef="ps" targetRef="pong"/><task id="pong"/>
</subProcess>`))).start(nil)
	r.task("work", nil)
	r.state("completed")
}

// Compensation: the handlers of the completed activities run in reverse
// order of completion, one after the other; the throw waits for them.
func TestCompensation(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="book"/>
<task id="book"/><boundaryEvent id="cb" attachedToRef="book"><compensateEventDefinition/></boundaryEvent>
<userTask id="unbook" isForCompensation="true"/>
<association id="a1" sourceRef="cb" targetRef="unbook"/>
<sequenceFlow id="f1" sourceRef="book" targetRef="charge"/>
<task id="charge"/><boundaryEvent id="cc" attachedToRef="charge"><compensateEventDefinition/></boundaryEvent>
<userTask id="refund" isForCompensation="true"/>
<association id="a2" sourceRef="cc" targetRef="refund"/>
<sequenceFlow id="f2" sourceRef="charge" targetRef="undo"/>
<intermediateThrowEvent id="undo"><compensateEventDefinition/></intermediateThrowEvent>
<sequenceFlow id="f3" sourceRef="undo" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.active("refund") // charge completed last: compensated first
	if n := len(r.activeAll("unbook")); n != 0 {
		t.Fatalf("unbook runs beside refund")
	}
	r.task("refund", nil)
	r.task("unbook", nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 book C F]
  (C F 3)
[3 charge C F]
  (C F 4)
[4 undo C F]
  (C F 7)
[5 refund C F]
[6 unbook C F]
[7 e C F]
`)
}

// A timer written as text is read once for its node: each token still
// counts its duration from when it arrives, and text that does not read
// fails at each token that reaches it, where its timer fires.
func TestStaticTimers(t *testing.T) {
	src := model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="w"/>
<intermediateCatchEvent id="w"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></intermediateCatchEvent>
<sequenceFlow id="f1" sourceRef="w" targetRef="e"/><endEvent id="e"/>`))
	r := load(t, src)
	for _, at := range []time.Duration{0, 25 * time.Minute} {
		r.now = t0.Add(at)
		r.start(nil)
		if w := r.active("w"); !w.DelayUntil().Equal(r.now.Add(time.Hour)) {
			t.Errorf("started at %s: due %s, want an hour later", r.now, w.DelayUntil())
		}
		r.advance(time.Hour)
		r.state("completed")
	}
	bad := load(t, strings.Replace(src, "PT1H", "PT1 hour", 1))
	for range 2 {
		bad.start(nil)
		w := bad.active("w")
		if w.Note("timerFailed") == "" || !w.DelayUntil().Equal(bad.now) {
			t.Fatalf("a timer that does not read: notes %v, due %s; want it failed and due now", w.Notes, w.DelayUntil())
		}
		err := bad.engine().ReevaluateDelayedToken(w)
		if err == nil || !strings.Contains(err.Error(), `timer "PT1 hour"`) {
			t.Errorf("firing it: %v, want its timer's failure", err)
		}
	}
}
