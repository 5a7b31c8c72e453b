package main

import (
	"strings"
	"testing"
)

// TestCheckWarnsOfRunawayCycles: check warns, as loading does, of a cycle
// that a token can go round without reaching a wait state, naming its nodes
// and their line; the file still checks ok (unless --strict).
func TestCheckWarnsOfRunawayCycles(t *testing.T) {
	c := newCLIEnv(t)
	f := c.file("loop.wf.xml", `<?xml version="1.0"?>
<process-definition name="loop" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="S" type="wait" isStart="true"><arc to="A"/></node>
  <node name="A"><arc to="B"/></node>
  <node name="B"><arc to="A"/></node>
</process-definition>
`)
	out, errOut, code := c.veena("check", f)
	if code != 0 || !strings.Contains(out, "ok (loop") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	if want := f + ":4:3: warning: nodes A, B form a cycle without a wait state"; !strings.Contains(errOut, want) {
		t.Fatalf("check lacks %q:\n%s", want, errOut)
	}
	c.fails("check", "--strict", f)
}

// TestCheckWarningsAtFileLineColumn: check places the warnings of every
// format as it places problems, file:line:column, with "warning:" before
// the message (file: warning: for one with no place in the file); the JSON
// output gives them as file:line:column: message, like its problems.
func TestCheckWarningsAtFileLineColumn(t *testing.T) {
	c := newCLIEnv(t)
	wf := c.file("loop.wf.xml", `<?xml version="1.0"?>
<process-definition name="loop" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="S" type="wait" isStart="true"><arc to="A"/></node>
  <node name="A"><arc to="B"/></node>
  <node name="B"><arc to="A"/></node>
</process-definition>
`)
	bpmn := c.file("lost.bpmn", `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
<process id="lost" isExecutable="true">
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="e"/><endEvent id="e"/>
  <task id="nowhere"/><sequenceFlow id="f1" sourceRef="nowhere" targetRef="e"/>
</process>
</definitions>
`)
	pnml := c.file("odd.pnml", `<?xml version="1.0" encoding="UTF-8"?>
<pnml>
<net id="odd" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <place id="p"><initialMarking><text>1</text></initialMarking>
    <colour/></place>
  <transition id="t"/>
  <arc id="a" source="p" target="t"/>
</net>
</pnml>
`)
	lib := c.file("lib.wf.xml", `<?xml version="1.0"?>
<process-definition name="lib" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A"/>
</process-definition>
`)
	out, errOut, code := c.veena("check", wf, bpmn, pnml, lib)
	if code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		wf + ":4:3: warning: nodes A, B form a cycle without a wait state",
		bpmn + `:5:3: warning: <task id="nowhere"> is unreachable`,
		pnml + ":5:5: warning: element <colour> in place p is not part of a P/T net; ignored",
		lib + ": warning: definition lib has no start node",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "(line ") {
		t.Errorf("check still places a warning as (line …):\n%s", errOut)
	}
	js := c.ok("check", "--output", "json", bpmn)
	if want := strings.ReplaceAll(bpmn, `\`, `\\`) + `:5:3: \u003ctask id=\"nowhere\"\u003e is unreachable`; !strings.Contains(js, want) {
		t.Errorf("check --output json lacks %q:\n%s", want, js)
	}
}
