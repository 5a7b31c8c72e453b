package bpmn_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
)

const head = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0">
`

func proc(body string) string {
	return head + `<process id="p" isExecutable="true">` + body + `</process></definitions>`
}

// Every construct Veena cannot run is refused, naming the element, its line
// and column; nothing is skipped silently.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		want      string
	}{
		{"complex gateway", proc(`<startEvent id="s"/>
<complexGateway id="g"/>`), 4, 1, `<complexGateway id="g">: complex gateways are not supported`},
		{"transaction", proc(`<transaction id="t"/>`), 3, 37, `<transaction id="t">: transaction sub-processes`},
		{"ad hoc", proc(`<adHocSubProcess id="a"/>`), 3, 37, `ad-hoc sub-processes are not supported`},
		{"conditional event", proc(`<startEvent id="s"><conditionalEventDefinition/></startEvent>`), 3, 37, `<startEvent id="s">: conditional events are not supported`},
		{"cancel event", proc(`<endEvent id="e"><cancelEventDefinition/></endEvent>`), 3, 37, `cancel events`},
		{"two definitions", proc(`<intermediateCatchEvent id="c"><timerEventDefinition><timeDuration>PT1M</timeDuration></timerEventDefinition><signalEventDefinition/></intermediateCatchEvent>`), 3, 37, `2 event definitions`},
		{"timer end", proc(`<endEvent id="e"><timerEventDefinition><timeDuration>PT1M</timeDuration></timerEventDefinition></endEvent>`), 3, 37, `timer end events are not supported`},
		{"error start at top", proc(`<startEvent id="s"><errorEventDefinition/></startEvent>`), 3, 37, `error start events are only allowed in event sub-processes`},
		{"bad FEEL", proc(`<startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="x"><conditionExpression>= a &gt;</conditionExpression></sequenceFlow><task id="x"/>`), 3, 132, `feel expression "= a >": unexpected the end`},
		{"bad UEL", proc(`<userTask id="u"><extensionElements/><potentialOwner><resourceAssignmentExpression><formalExpression>${bean.pick()}</formalExpression></resourceAssignmentExpression></potentialOwner></userTask>`), 3, 145, `method calls (pick) are not supported`},
		{"unknown language", proc(`<startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="x"><conditionExpression language="groovy">a</conditionExpression></sequenceFlow><task id="x"/>`), 3, 145, `expression language "groovy" is not supported`},
		{"groovy script", proc(`<scriptTask id="x" scriptFormat="groovy"><script>println 1</script></scriptTask>`), 3, 37, `script format "groovy" is not supported`},
		{"bad timer", proc(`<intermediateCatchEvent id="c"><timerEventDefinition/></intermediateCatchEvent>`), 3, 37, `a timer event needs a timeDate`},
		{"DMN", proc(`<businessRuleTask id="b"><extensionElements><zeebe:calledDecision decisionId="d" resultVariable="r"/></extensionElements></businessRuleTask>`), 3, 37, `DMN decisions`},
		{"flow to nowhere", proc(`<startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="ghost"/>`), 3, 57, `<sequenceFlow id="f">: target "ghost" is not a flow element`},
		{"duplicate id", proc(`<task id="x"/><task id="x"/>`), 3, 51, `<task id="x">: id already used at line 3`},
		{"boundary on nothing", proc(`<boundaryEvent id="b" attachedToRef="nope"><messageEventDefinition/></boundaryEvent>`), 3, 37, `attached to "nope", which is not an element`},
		{"link without catch", proc(`<intermediateThrowEvent id="l"><linkEventDefinition name="x"/></intermediateThrowEvent>`), 3, 37, `no link catch event named "x"`},
		{"call without target", proc(`<callActivity id="c"/>`), 3, 37, `a call activity needs a calledElement`},
		{"loop without end", proc(`<task id="t"><standardLoopCharacteristics/></task>`), 3, 37, `a standard loop needs a loopCondition or a loopMaximum`},
		{"mi without collection", proc(`<task id="t"><multiInstanceLoopCharacteristics/></task>`), 3, 37, `a multi-instance activity needs a loopCardinality or an input collection`},
		{"flow across scopes", proc(`<subProcess id="sp"><startEvent id="in"/></subProcess><task id="out"/><sequenceFlow id="f" sourceRef="in" targetRef="out"/>`), 3, 107, `crosses the boundary of a sub-process`},
		{"event sub-process without trigger", proc(`<subProcess id="e" triggeredByEvent="true"><startEvent id="s"/></subProcess>`), 3, 37, `needs a trigger`},
		{"unknown element", proc(`<fancyTask id="f"/>`), 3, 37, `<fancyTask id="f">: this element is not supported`},
		{"choreography", proc(`<choreographyTask id="c"/>`), 3, 37, `choreographies are not executable`},
		{"no process", head + `</definitions>`, 2, 1, `the file has no <process>`},
		{"not BPMN", `<process-definition name="x"/>`, 1, 1, `root element is <process-definition>, want <definitions> of BPMN 2.0`},
		{"wrong namespace", `<definitions xmlns="urn:other"><process id="p"/></definitions>`, 1, 1, `<definitions> is in namespace "urn:other"`},
		{"default flow elsewhere", proc(`<exclusiveGateway id="g" default="f"/><task id="a"/><task id="b"/><sequenceFlow id="f" sourceRef="a" targetRef="b"/>`), 3, 37, `default flow "f" is not one of its outgoing sequence flows`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bpmn.Load("x.bpmn", []byte(c.src))
			var le *graph.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T), want a *graph.LoadError", err, err)
			}
			for _, p := range le.Problems {
				if strings.Contains(p.Message, c.want) {
					if p.Line != c.line || p.Column != c.col {
						t.Errorf("%q at %d:%d, want %d:%d", p.Message, p.Line, p.Column, c.line, c.col)
					}
					return
				}
			}
			t.Errorf("problems %v, want one with %q", le.Problems, c.want)
		})
	}
}

// Hostile XML is refused as Sarasvati files are: no DTDs (so no entity
// expansion or external entities), bounded size, depth, text and element
// counts, UTF-8 or ISO-8859-1 only.
func TestHostileXML(t *testing.T) {
	bomb := `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="p">&lol2;</process></definitions>`
	external := `<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="p">&x;</process></definitions>`
	deep := head + strings.Repeat("<extensionElements>", 100) + strings.Repeat("</extensionElements>", 100) + "</definitions>"
	long := proc(`<task id="t" name="` + strings.Repeat("x", bpmn.DefaultMaxText+1) + `"/>`)
	many := proc(strings.Repeat(`<documentation/>`, 600))
	cases := []struct {
		name, src string
		opts      []bpmn.Option
		want      string
	}{
		{"entity bomb", bomb, nil, "DOCTYPE declarations are not allowed"},
		{"external entity", external, nil, "DOCTYPE declarations are not allowed"},
		{"deep", deep, nil, "nested deeper than 64 levels"},
		{"long attribute", long, nil, "bytes long; the limit is"},
		{"many elements", many, []bpmn.Option{bpmn.WithMaxElements(500)}, "more than 500 elements"},
		{"too big", proc(""), []bpmn.Option{bpmn.WithMaxBytes(100)}, "the limit is 100 bytes"},
		{"encoding", `<?xml version="1.0" encoding="Shift_JIS"?><definitions/>`, nil, `encoding "Shift_JIS" is not supported`},
		{"syntax", head + `<process id="p"><task id="t"></process></definitions>`, nil, "XML syntax error"},
		{"empty", ``, nil, "no root element"},
		{"text", `hello`, nil, "text before the root element"},
		{"trailing", head + `</definitions><x/>`, nil, "after the root element"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bpmn.Load("x.bpmn", []byte(c.src), c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// ISO-8859-1 is read (the OMG example models use it).
	latin := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" + `<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="p" isExecutable="true"><task id="t" name="Caf` + "\xe9" + `"/></process></definitions>`
	gs, err := bpmn.Load("latin.bpmn", []byte(latin))
	if err != nil {
		t.Fatal(err)
	}
	if got := gs[0].Nodes[0].Label; got != "Café" {
		t.Errorf("label %q, want Café", got)
	}
}

func TestModelNames(t *testing.T) {
	for in, want := range map[string]string{"myprocess__1__0": "myprocess 1 0 true", "a__b__2__10": "a__b 2 10 true", "plain": " 0 0 false", "x__1": " 0 0 false"} {
		n, ma, mi, ok := bpmn.SplitModelName(in)
		if got := fmt.Sprint(n, " ", ma, " ", mi, " ", ok); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// A large model loads in linear time (no quadratic checks).
func TestLargeModel(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<startEvent id="n0"/>`)
	for i := 1; i < 9000; i++ {
		kind := "task"
		switch i % 3 {
		case 1:
			kind = "parallelGateway"
		case 2:
			kind = "exclusiveGateway"
		}
		fmt.Fprintf(&b, `<%s id="n%d"/><sequenceFlow id="f%d" sourceRef="n%d" targetRef="n%d"/>`, kind, i, i, i-1, i)
	}
	gs, err := bpmn.Load("big.bpmn", []byte(proc(b.String())))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs[0].Nodes) != 9000 {
		t.Fatalf("%d nodes", len(gs[0].Nodes))
	}
}
