package xpath

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/expr"
)

type procVars struct{ expr.Map }

func (procVars) Attachments() []Attachment {
	return []Attachment{{Name: "Document", URI: "/docs/a.xml", Cardinality: 1}}
}

func TestMarkLogicConditions(t *testing.T) {
	vars := procVars{expr.Map{"wf:action": "Approved", "approved": false, "someemail": "a@b.c", "n": int64(5), "newassignee": "jo", "order": map[string]any{"total": 12.5}}}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for src, want := range map[string]any{
		`fn:true()`:  true,
		`fn:false()`: false,
		`fn:not(fn:empty($wf:process/wf:data/someemail))`:                                   true,
		`fn:not(fn:empty($wf:process/wf:data/nothing))`:                                     false,
		`fn:exists($processData/n)`:                                                         true,
		`$wf:process/wf:data/n > 3`:                                                         true,
		`$wf:process/wf:data/n lt 3`:                                                        false,
		`$processData/order/total * 2`:                                                      int64(25),
		`$wf:process/wf:data/newassignee/text()`:                                            "jo",
		`fn:not(fn:empty($wf:process/wf:attachments/wf:attachment[@name="Document"]/@uri))`: true,
		`fn:not(fn:empty($wf:process/wf:attachments/wf:attachment[@name="Other"]/@uri))`:    false,
		`fn:current-dateTime() lt xs:dateTime("2000-01-01T00:00:00")`:                       false,
		`fn:current-dateTime() gt xs:dateTime("2000-01-01T00:00:00")`:                       true,
		`xs:string($processData/n) = "5"`:                                                   true,
		`"a lt b" = "a lt b"`:                                                               true,
	} {
		p, err := Compile(src, map[string]string{"fn": "http://www.w3.org/2005/xpath-functions"})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		got, err := p.Eval(expr.Env{Vars: vars, Now: now})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s = %#v, want %#v", src, got, want)
		}
	}
}

func TestConditionsAreBooleans(t *testing.T) {
	vars := procVars{expr.Map{"approved": false, "clarified": "yes", "n": int64(0)}}
	for src, want := range map[string]bool{
		`bpmn:getDataObject('clarified')`:        true,
		`bpmn:getDataObject('approved')`:         false,
		`not(bpmn:getDataObject('approved'))`:    true,
		`$processData/nothing`:                   false,
		`$processData/n`:                         true,
		`bpmn:getDataObject('clarified') = 'no'`: false,
	} {
		p, err := CompileCondition(src, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := p.Eval(expr.Env{Vars: vars})
		if err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", src, got, err, want)
		}
	}
}

func TestRefused(t *testing.T) {
	for src, want := range map[string]string{
		`$other/x`:      "variable $other is not defined",
		`xs:QName("a")`: "only xs:string",
		`///`:           "",
		``:              "empty",
	} {
		_, err := Compile(src, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

func TestDocRefusedWhenEvaluated(t *testing.T) {
	p, err := Compile(`fn:doc($wf:process/wf:attachments/wf:attachment[1]/@uri)/x = "y"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.UsesDoc() {
		t.Error("UsesDoc is false")
	}
	if _, err := p.Eval(expr.Env{}); !errors.Is(err, ErrDoc) {
		t.Errorf("evaluating fn:doc: %v", err)
	}
}

func TestDocumentEscapes(t *testing.T) {
	doc, err := Document(expr.Map{"a": `<x y="&">`, "list": []any{int64(1), int64(2)}, "1bad": "skipped", "xmlx": "skipped"})
	if err != nil {
		t.Fatal(err)
	}
	want := `<wf:process xmlns:wf="http://marklogic.com/workflow"><wf:data><a>&lt;x y=&quot;&amp;&quot;&gt;</a><list>1</list><list>2</list></wf:data><wf:attachments></wf:attachments></wf:process>`
	if doc != want {
		t.Errorf("document\n%s\nwant\n%s", doc, want)
	}
}
