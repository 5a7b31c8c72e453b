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
	if want := "warning: nodes A, B form a cycle without a wait state"; !strings.Contains(errOut, want) || !strings.Contains(errOut, "(line 4, column 3)") {
		t.Fatalf("check lacks %q at line 4:\n%s", want, errOut)
	}
	c.fails("check", "--strict", f)
}
