package bpmn_test

import (
	"strings"
	"testing"
)

const seq = `<sequenceFlow id="%s" sourceRef="%s" targetRef="%s"/>`

// Exclusive: conditions in document order, the first true wins; else the
// default; with neither, an incident on the gateway (no_route).
func TestExclusiveGateway(t *testing.T) {
	src := model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="x"/>
<exclusiveGateway id="x" default="fd"/>
<sequenceFlow id="fa" sourceRef="x" targetRef="a"><conditionExpression>= amount &gt; 100</conditionExpression></sequenceFlow>
<sequenceFlow id="fb" sourceRef="x" targetRef="b"><conditionExpression>= amount &gt; 10</conditionExpression></sequenceFlow>
<sequenceFlow id="fd" sourceRef="x" targetRef="c"/>
<task id="a"/><task id="b"/><task id="c"/>`))
	for amount, want := range map[int]string{500: "a", 50: "b", 5: "c"} {
		r := load(t, src).start(map[string]any{"amount": amount})
		r.state("completed")
		if got := r.p.NodeTokens[2].Node.Name; got != want {
			t.Errorf("amount %d went to %s, want %s", amount, got, want)
		}
	}
	r := load(t, src).start(map[string]any{"amount": 500})
	r.want(`
[1 s C F]
  (C F 2)
[2 x C F]
  (C F 3)
[3 a C F]
`)
	// No default and no true condition: an incident, the token waits.
	noDefault := strings.Replace(src, ` default="fd"`, "", 1)
	noDefault = strings.Replace(noDefault, `<sequenceFlow id="fd" sourceRef="x" targetRef="c"/>`, "", 1)
	r = load(t, noDefault).start(map[string]any{"amount": 1})
	r.state("executing")
	if got := strings.Join(r.opened(), "\n"); !strings.Contains(got, "incident x no_route") {
		t.Errorf("effects %s, want a no_route incident at x", got)
	}
	// A condition that is not a boolean: condition_failed, naming the flow.
	r = load(t, noDefault).start(map[string]any{"amount": "lots"})
	if got := strings.Join(r.opened(), "\n"); !strings.Contains(got, "incident x condition_failed: condition of sequence flow fa (line 6)") || !strings.Contains(got, "not null") && !strings.Contains(got, "boolean") {
		t.Errorf("effects %s, want condition_failed", got)
	}
}

func TestParallelSplitAndJoin(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<parallelGateway id="fork"/>
<sequenceFlow id="f1" sourceRef="fork" targetRef="a"/><sequenceFlow id="f2" sourceRef="fork" targetRef="b"/>
<userTask id="a"/><task id="b"/>
<sequenceFlow id="f3" sourceRef="a" targetRef="join"/><sequenceFlow id="f4" sourceRef="b" targetRef="join"/>
<parallelGateway id="join"/><sequenceFlow id="f5" sourceRef="join" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.want(`
[1 s C F]
  (C F 2)
[2 fork C F]
  (C F 3)
  (C F 4)
[3 a I F]
[4 b C F]
  (I F join)
`)
	r.task("a", map[string]any{"ok": true})
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 fork C F]
  (C F 3)
  (C F 4)
[3 a C F]
  (C F 5)
[4 b C F]
  (C F 5)
[5 join C F]
  (C F 6)
[6 e C F]
`)
	r.env(map[string]any{"ok": true})
}

// The inclusive gateway forks on every true condition (else the default),
// and its join waits only for the branches that can still arrive.
func TestInclusiveGateway(t *testing.T) {
	src := model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<inclusiveGateway id="fork" default="fd"/>
<sequenceFlow id="fa" sourceRef="fork" targetRef="a"><conditionExpression>= gift</conditionExpression></sequenceFlow>
<sequenceFlow id="fb" sourceRef="fork" targetRef="b"><conditionExpression>= express</conditionExpression></sequenceFlow>
<sequenceFlow id="fd" sourceRef="fork" targetRef="c"/>
<userTask id="a"/><userTask id="b"/><task id="c"/>
<sequenceFlow id="f1" sourceRef="a" targetRef="join"/><sequenceFlow id="f2" sourceRef="b" targetRef="join"/><sequenceFlow id="f3" sourceRef="c" targetRef="join"/>
<inclusiveGateway id="join"/><sequenceFlow id="f4" sourceRef="join" targetRef="e"/><endEvent id="e"/>`))
	// Both conditions hold: the join waits for both.
	r := load(t, src).start(map[string]any{"gift": true, "express": true})
	r.task("a", nil)
	r.state("executing")
	r.task("b", nil)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 fork C F]
  (C F 3)
  (C F 4)
[3 a C F]
  (C F 5)
[4 b C F]
  (C F 5)
[5 join C F]
  (C F 6)
[6 e C F]
`)
	// One holds: the join fires on that branch alone (nothing else can arrive).
	r = load(t, src).start(map[string]any{"gift": false, "express": true})
	r.task("b", nil)
	r.state("completed")
	// A condition that does not give a boolean: condition_failed, naming the flow.
	r = load(t, src).start(map[string]any{"gift": "lots", "express": true})
	r.state("executing")
	if got := strings.Join(r.opened(), "\n"); !strings.Contains(got, "incident fork condition_failed: condition of sequence flow fa (line 6)") {
		t.Errorf("effects %s, want condition_failed at fork naming fa", got)
	}
	// None: the default.
	r = load(t, src).start(map[string]any{"gift": false, "express": false})
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 fork C F]
  (C F 3)
[3 c C F]
  (C F 4)
[4 join C F]
  (C F 5)
[5 e C F]
`)
}

// The non-local rule looks at tokens anywhere upstream, not only at the
// gateway's own fork: a parallel split before an inclusive join.
func TestInclusiveJoinAfterParallelSplit(t *testing.T) {
	r := load(t, model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<parallelGateway id="fork"/>
<sequenceFlow id="f1" sourceRef="fork" targetRef="a"/><sequenceFlow id="f2" sourceRef="fork" targetRef="b"/>
<userTask id="a"/><userTask id="b"/>
<sequenceFlow id="f3" sourceRef="a" targetRef="join"/><sequenceFlow id="f4" sourceRef="b" targetRef="mid"/>
<userTask id="mid"/><sequenceFlow id="f5" sourceRef="mid" targetRef="join"/>
<inclusiveGateway id="join"/><sequenceFlow id="f6" sourceRef="join" targetRef="e"/><endEvent id="e"/>`))).start(nil)
	r.task("a", nil)
	r.state("executing") // b, then mid, can still reach the join
	r.task("b", nil)
	r.state("executing")
	r.task("mid", nil)
	r.state("completed")
	if n := len(r.activeAll("join")); n != 0 {
		t.Fatalf("%d tokens left at the join", n)
	}
	joins := 0
	for _, tok := range r.p.NodeTokens {
		if tok.Node.Name == "join" {
			joins++
			if len(tok.Parents) != 2 {
				t.Errorf("the join fired with %d arc tokens, want 2", len(tok.Parents))
			}
		}
	}
	if joins != 1 {
		t.Errorf("the join fired %d times, want once", joins)
	}
}

// An event-based gateway: the first event wins, the others are withdrawn.
func TestEventBasedGateway(t *testing.T) {
	src := model(`<message id="m" name="answer"/>`, proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="g"/>
<eventBasedGateway id="g"/>
<sequenceFlow id="f1" sourceRef="g" targetRef="msg"/><sequenceFlow id="f2" sourceRef="g" targetRef="late"/>
<intermediateCatchEvent id="msg"><messageEventDefinition messageRef="m"/></intermediateCatchEvent>
<intermediateCatchEvent id="late"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></intermediateCatchEvent>
<sequenceFlow id="f3" sourceRef="msg" targetRef="ok"/><sequenceFlow id="f4" sourceRef="late" targetRef="timeout"/>
<endEvent id="ok"/><endEvent id="timeout"/>`))
	r := load(t, src).start(nil)
	r.message("answer", "", map[string]any{"reply": "yes"})
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 g C F]
  (C F 3)
  (C F 4)
[3 msg C F]
  (C F 5)
[4 late C F]
[5 ok C F]
`)
	r.env(map[string]any{"reply": "yes"})
	r = load(t, src).start(nil)
	r.advance(59 * 60e9)
	r.state("executing")
	r.advance(60e9)
	r.state("completed")
	r.want(`
[1 s C F]
  (C F 2)
[2 g C F]
  (C F 3)
  (C F 4)
[3 msg C F]
[4 late C F]
  (C F 5)
[5 timeout C F]
`)
}
