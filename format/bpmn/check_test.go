package bpmn

import (
	"fmt"
	"strings"
	"testing"
)

// The static checks of issue 20 at load, each reported once as a warning
// naming the element and its position: an element no path reaches, a
// parallel join after an exclusive split, a flow without a condition out
// of an exclusive gateway without a default; a sound model warns nothing.
func TestStaticChecks(t *testing.T) {
	const head = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
<process id="p" isExecutable="true">
`
	cases := []struct {
		name, body string
		want       []string
	}{
		{"unreachable", `<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="e"/><endEvent id="e"/>
<task id="lost"/><sequenceFlow id="f1" sourceRef="lost" targetRef="e"/>`,
			[]string{`5:1: <task id="lost"> is unreachable`}},
		{"deadlock", `<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="x"/>
<exclusiveGateway id="x" default="b"/>
<sequenceFlow id="a" sourceRef="x" targetRef="ta"><conditionExpression>= ok</conditionExpression></sequenceFlow>
<sequenceFlow id="b" sourceRef="x" targetRef="tb"/>
<task id="ta"/><task id="tb"/>
<sequenceFlow id="a2" sourceRef="ta" targetRef="j"/><sequenceFlow id="b2" sourceRef="tb" targetRef="j"/>
<parallelGateway id="j"/><sequenceFlow id="f9" sourceRef="j" targetRef="e"/><endEvent id="e"/>`,
			[]string{`10:1: <parallelGateway id="j"> joins flows that <exclusiveGateway id="x"> splits exclusively`}},
		{"no default", `<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="x"/>
<exclusiveGateway id="x"/>
<sequenceFlow id="a" sourceRef="x" targetRef="e"><conditionExpression>= ok</conditionExpression></sequenceFlow>
<sequenceFlow id="b" sourceRef="x" targetRef="e"/>
<endEvent id="e"/>`,
			[]string{`7:1: <sequenceFlow id="b"> leaves <exclusiveGateway id="x"> with no condition, and the gateway has no default flow`}},
		{"parallel split and join", `<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="x"/>
<parallelGateway id="x"/>
<sequenceFlow id="a" sourceRef="x" targetRef="j"/><sequenceFlow id="b" sourceRef="x" targetRef="j"/>
<parallelGateway id="j"/><sequenceFlow id="f9" sourceRef="j" targetRef="e"/><endEvent id="e"/>`, nil},
	}
	for _, c := range cases {
		gs, err := Load(c.name+".bpmn", []byte(head+c.body+"\n</process>\n</definitions>\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, w := range gs[0].Warnings {
			got = append(got, fmt.Sprintf("%d:%d: %s", w.Line, w.Column, w.Message))
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %q, want %q", c.name, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: warning %q, want %q…", c.name, got[i], c.want[i])
			}
		}
	}
}
