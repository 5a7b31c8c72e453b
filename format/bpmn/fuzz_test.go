package bpmn_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/limitrun"
)

// runaways are models that would run without end or grow without bound
// were it not for the engine's limits, with the code their start (or the
// work after it) fails with under limitrun's limits, or the incident it
// opens (a script task over the script limits opens one on its token, as
// any failing script task does).
var runaways = []struct {
	name, src, code, incident string
}{
	{"cycle without a wait state", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="a"/>
<task id="a"/><sequenceFlow id="f1" sourceRef="a" targetRef="g"/>
<exclusiveGateway id="g" default="f2"/><sequenceFlow id="f2" sourceRef="g" targetRef="a"/>`), "budget_exceeded", ""},
	{"parallel fan-out back into a merge", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="x"/>
<exclusiveGateway id="x"/><sequenceFlow id="f1" sourceRef="x" targetRef="g"/>
<parallelGateway id="g"/><sequenceFlow id="f2" sourceRef="g" targetRef="x"/><sequenceFlow id="f3" sourceRef="g" targetRef="x"/>`), "budget_exceeded", ""},
	{"huge multi-instance", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="m"/>
<task id="m"><multiInstanceLoopCharacteristics><loopCardinality>= 10000</loopCardinality></multiInstanceLoopCharacteristics></task>
<sequenceFlow id="f1" sourceRef="m" targetRef="e"/><endEvent id="e"/>`), "budget_exceeded", ""},
	{"script loop", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="js"/>
<scriptTask id="js" scriptFormat="javascript"><script>for(;;){}</script></scriptTask>
<sequenceFlow id="f1" sourceRef="js" targetRef="e"/><endEvent id="e"/>`), "", "longer than 200ms (Kernel.ScriptTimeout)"},
	{"script string doubling", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="js"/>
<scriptTask id="js" scriptFormat="javascript"><script>var s = "x"; for(;;) s += s;</script></scriptTask>
<sequenceFlow id="f1" sourceRef="js" targetRef="e"/><endEvent id="e"/>`), "", "(Kernel.ScriptMemory)"},
	{"user task in a cycle", proc(`<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="u"/>
<userTask id="u"/><sequenceFlow id="f1" sourceRef="u" targetRef="g"/>
<parallelGateway id="g"/><sequenceFlow id="f2" sourceRef="g" targetRef="u"/><sequenceFlow id="f3" sourceRef="g" targetRef="u"/>`), "", ""},
}

// TestRunawayModels: each runaway model fails its command with the stable
// code of the limit it meets, promptly, and changes nothing.
func TestRunawayModels(t *testing.T) {
	for _, r := range runaways {
		t.Run(r.name, func(t *testing.T) {
			rep := limitrun.Drive(t, "runaway.bpmn", []byte(r.src), "bpmn")
			t.Log(rep)
			if rep.Started+len(rep.Codes) == 0 {
				t.Fatalf("nothing started and nothing failed: %s", rep)
			}
			if r.code != "" && rep.Codes[r.code] == 0 {
				t.Fatalf("no command failed with %s: %s", r.code, rep)
			}
			if r.code == "" && len(rep.Codes) != 0 {
				t.Fatalf("commands failed: %s", rep)
			}
			if r.incident != "" && !strings.Contains(strings.Join(rep.Incidents, "\n"), r.incident) {
				t.Fatalf("no incident says %q: %s", r.incident, rep)
			}
		})
	}
}

// FuzzLoad: any input loads without panicking; a failure is a
// *graph.LoadError with problems; a success is a set of consistent graphs,
// and runs under small limits (limitrun.Drive): every command ends
// promptly, in success, a wait or an error with a stable code.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*")
	for _, file := range files {
		if filepath.Ext(file) == ".golden" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte(proc(`<startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="e"/><endEvent id="e"/>`)))
	for _, r := range runaways {
		f.Add([]byte(r.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		gs, err := bpmn.Load("fuzz.bpmn", src, bpmn.WithMaxElements(5000))
		if err != nil {
			var le *graph.LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			return
		}
		if len(gs) == 0 {
			t.Fatal("no graph and no error")
		}
		for _, g := range gs {
			for i, n := range g.Nodes {
				if n.Index != i || n.Props == nil || n.Type == "" {
					t.Fatalf("node %d inconsistent: %+v", i, n)
				}
			}
			for _, a := range g.Arcs {
				if g.Nodes[a.From.Index] != a.From || g.Nodes[a.To.Index] != a.To {
					t.Fatalf("arc %s joins nodes of another graph", a)
				}
			}
		}
		limitrun.Drive(t, "fuzz.bpmn", src, "bpmn")
	})
}
