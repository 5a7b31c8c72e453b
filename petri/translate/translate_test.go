package translate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/bpmn"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/translate"
)

func sarasvati(t *testing.T, body string) *graph.Graph {
	t.Helper()
	src := `<process-definition name="p" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">` + body + `</process-definition>`
	g, err := wfxml.Load("p.wf.xml", []byte(src), func(string) *graph.Graph { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func show(p *bool) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// TestAndJoins: whether an AND join can wait for ever, on the shapes that
// make it so and those that do not.
func TestAndJoins(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		stuck []string // "node <- arc after sequence"
		sound bool
	}{
		{"parallel split then AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`, nil, true},
		{"choice then AND join", `
			<node name="A" type="wait" isStart="true"><arc to="B" name="left"/><arc to="C" name="right"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`,
			[]string{"D <- B->D after [A leaves 'left' B from A->B 'left' B leaves]", "D <- C->D after [A leaves 'right' C from A->C 'right' C leaves]"}, false},
		{"a guard that may discard before the AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B"><guard>if ok then Accept else Discard</guard><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`,
			[]string{"D <- C->D after [A leaves B from A->B B ends C from A->C C leaves]"}, false},
		{"choice then OR join", `
			<node name="A" type="wait" isStart="true"><arc to="B" name="left"/><arc to="C" name="right"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D"/>`, nil, true},
		{"label AND join waits for its label only", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/><arc to="E"/></node>
			<node name="B"><arc to="D"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="E" type="wait"><arc to="D" name="y"/></node>
			<node name="D" joinType="labelAnd"/>`, nil, true},
		{"label AND join whose label can be missing", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B" type="wait"><arc to="D" name="x"/></node>
			<node name="C"><arc to="D" name="x"/></node>
			<node name="D" joinType="labelAnd"/>`,
			[]string{"D <- B->D 'x' after [A leaves B from A->B B leaves 'x' C from A->C C ends]"}, false},
		{"a loop back into an AND join", `
			<node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
			<node name="B" type="wait"><arc to="D"/><arc to="B" name="again"/></node>
			<node name="C"><arc to="D"/></node>
			<node name="D" joinType="and"/>`, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := translate.Analyze(sarasvati(t, c.body), analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Complete {
				t.Fatalf("incomplete: %s", rep.Reason)
			}
			var got []string
			for _, s := range rep.StuckJoins {
				got = append(got, fmt.Sprintf("%s <- %s after %v", s.Node, s.Arc, s.Sequence))
			}
			if !slices.Equal(got, c.stuck) {
				t.Errorf("stuck joins:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.stuck, "\n"))
			}
			if !rep.WorkflowNet || rep.Sound == nil || *rep.Sound != c.sound {
				t.Errorf("sound %s, want %v (completes %s, quasi-live %s, dead %v)", show(rep.Sound), c.sound, show(rep.Completes), show(rep.QuasiLive), rep.DeadTransitions)
			}
		})
	}
}

// TestApproximations names the joins the translation reads loosely.
func TestApproximations(t *testing.T) {
	rep, err := translate.Analyze(sarasvati(t, `
		<node name="A" isStart="true"><arc to="B"/></node>
		<node name="B" joinType="tokenSet"><join>ts</join></node>`), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Approximations) != 1 || !strings.Contains(rep.Approximations[0], "B: its tokenSet join depends on run-time data") {
		t.Errorf("approximations %v", rep.Approximations)
	}
}

const bpmnHead = `<?xml version="1.0"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
<process id="p" isExecutable="true">`

func bpmnGraph(t *testing.T, body string) *graph.Graph {
	t.Helper()
	gs, err := bpmn.Load("p.bpmn", []byte(bpmnHead+body+`</process></definitions>`))
	if err != nil {
		t.Fatal(err)
	}
	return gs[0]
}

// TestBPMN: gateways by kind, sub-processes entered and left when nothing
// is left inside, boundary events, and the stuck parallel join after an
// exclusive choice.
func TestBPMN(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		sound bool
		stuck string
	}{
		{"exclusive then parallel join", `
			<startEvent id="s"/><exclusiveGateway id="x"/><task id="a"/><task id="b"/><parallelGateway id="j"/><endEvent id="e"/>
			<sequenceFlow id="f1" sourceRef="s" targetRef="x"/><sequenceFlow id="f2" sourceRef="x" targetRef="a"/>
			<sequenceFlow id="f3" sourceRef="x" targetRef="b"/><sequenceFlow id="f4" sourceRef="a" targetRef="j"/>
			<sequenceFlow id="f5" sourceRef="b" targetRef="j"/><sequenceFlow id="f6" sourceRef="j" targetRef="e"/>`, false, "j"},
		{"parallel split and join", `
			<startEvent id="s"/><parallelGateway id="x"/><task id="a"/><task id="b"/><parallelGateway id="j"/><endEvent id="e"/>
			<sequenceFlow id="f1" sourceRef="s" targetRef="x"/><sequenceFlow id="f2" sourceRef="x" targetRef="a"/>
			<sequenceFlow id="f3" sourceRef="x" targetRef="b"/><sequenceFlow id="f4" sourceRef="a" targetRef="j"/>
			<sequenceFlow id="f5" sourceRef="b" targetRef="j"/><sequenceFlow id="f6" sourceRef="j" targetRef="e"/>`, true, ""},
		{"a sub-process with two branches to its end", `
			<startEvent id="s"/>
			<subProcess id="sub">
				<startEvent id="ss"/><parallelGateway id="fork"/><task id="a"/><task id="b"/><endEvent id="se"/>
				<sequenceFlow id="g1" sourceRef="ss" targetRef="fork"/><sequenceFlow id="g2" sourceRef="fork" targetRef="a"/>
				<sequenceFlow id="g3" sourceRef="fork" targetRef="b"/><sequenceFlow id="g4" sourceRef="a" targetRef="se"/>
				<sequenceFlow id="g5" sourceRef="b" targetRef="se"/>
			</subProcess>
			<boundaryEvent id="timeout" attachedToRef="sub"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
			<endEvent id="e"/><endEvent id="late"/>
			<sequenceFlow id="f1" sourceRef="s" targetRef="sub"/><sequenceFlow id="f2" sourceRef="sub" targetRef="e"/>
			<sequenceFlow id="f3" sourceRef="timeout" targetRef="late"/>`, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := translate.Analyze(bpmnGraph(t, c.body), analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sound == nil || *rep.Sound != c.sound {
				t.Errorf("sound %s, want %v (completes %s, dead %v, stuck %v, approximations %v)", show(rep.Sound), c.sound, show(rep.Completes), rep.DeadTransitions, rep.StuckJoins, rep.Approximations)
			}
			if c.stuck != "" && (len(rep.StuckJoins) == 0 || rep.StuckJoins[0].Node != c.stuck) {
				t.Errorf("stuck joins %v, want one at %s", rep.StuckJoins, c.stuck)
			}
		})
	}
}

// TestBPMNCorpus analyses the BPMN models of the corpus that load: all but
// the one whose inclusive join the translation reads as an or join come
// out sound.
func TestBPMNCorpus(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/corpus/bpmn/*/*.bpmn")
	more, _ := filepath.Glob("../../../shared/corpus/bpmn/*/*/*.bpmn")
	files = append(files, more...)
	if len(files) == 0 {
		t.Skip("the shared corpus is not there")
	}
	sound, analysed := 0, 0
	for _, f := range files {
		src, _ := os.ReadFile(f)
		gs, err := bpmn.Load(f, src)
		if err != nil {
			continue
		}
		for _, g := range gs {
			rep, err := translate.Analyze(g, analysis.Options{MaxStates: 200000})
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			analysed++
			if rep.Sound != nil && *rep.Sound {
				sound++
			} else if len(rep.Approximations) == 0 {
				t.Errorf("%s (%s): not sound, with no approximation to blame: stuck %v dead %v", f, g.Name, rep.StuckJoins, rep.DeadTransitions)
			}
		}
	}
	t.Logf("%d of %d BPMN processes sound", sound, analysed)
}

// TestSchema: a schema's chat-bot, whose cycles all pass an event or a
// timer node, is a sound workflow through its translation.
func TestSchema(t *testing.T) {
	src, err := os.ReadFile("../../format/schema/testdata/valid/order-status-bot.yaml")
	if err != nil {
		t.Skip(err)
	}
	gs, err := schemaformat.Load("order-status-bot.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := translate.Analyze(gs[0], analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Sound == nil || !*rep.Sound || len(rep.StuckJoins) != 0 {
		t.Errorf("complete %v sound %s stuck %v dead %v", rep.Complete, show(rep.Sound), rep.StuckJoins, rep.DeadTransitions)
	}
}

// TestInclusiveJoin: a BPMN inclusive join is read as passing any
// non-empty set of the branches that have arrived — the net has the run in
// which it passes once with both branches of an inclusive split (which a
// merge of each arrival on its own lacks) — and the analysis says what the
// reading proves; after an exclusive split the sets of two branches never
// pass, which is no dead step of the process: the model stays sound.
func TestInclusiveJoin(t *testing.T) {
	model := func(split string) *graph.Graph {
		src := `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
<process id="p" isExecutable="true">
  <startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="split"/>
  <` + split + ` id="split"/>
  <sequenceFlow id="fa" sourceRef="split" targetRef="a"/><sequenceFlow id="fb" sourceRef="split" targetRef="b"/>
  <task id="a"/><task id="b"/>
  <sequenceFlow id="ja" sourceRef="a" targetRef="join"/><sequenceFlow id="jb" sourceRef="b" targetRef="join"/>
  <inclusiveGateway id="join"/><sequenceFlow id="f9" sourceRef="join" targetRef="e"/>
  <endEvent id="e"/>
</process>
</definitions>`
		gs, err := bpmn.Load("or.bpmn", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return gs[0]
	}
	g := model("inclusiveGateway")
	tr, err := translate.Translate(g)
	if err != nil {
		t.Fatal(err)
	}
	both := false
	for _, x := range tr.Net.Transitions {
		both = both || tr.JoinOf[x.Index] != nil && tr.JoinOf[x.Index].Name == "join" && len(x.In) == 2
	}
	if !both {
		t.Error("no transition passes the join once with both branches")
	}
	rep, err := translate.Analyze(g, analysis.Options{MaxStates: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Approximations) != 1 || rep.Approximations[0] != "join: "+translate.InclusiveJoinLimit {
		t.Errorf("approximations %q, want the inclusive join's reading", rep.Approximations)
	}
	rep, err = translate.Analyze(model("exclusiveGateway"), analysis.Options{MaxStates: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sound == nil || !*rep.Sound || len(rep.DeadTransitions) != 0 {
		t.Errorf("exclusive split, inclusive join: sound %s, dead %v", show(rep.Sound), rep.DeadTransitions)
	}
}
