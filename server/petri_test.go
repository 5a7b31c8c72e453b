package server_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
)

// flatFields is jsonFields for a struct that embeds others (their fields
// are the outer object's, as encoding/json writes them).
func flatFields(t reflect.Type) (all, required []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			a, r := flatFields(ft)
			all, required = append(all, a...), append(required, r...)
			continue
		}
		a, r := jsonFields(reflect.StructOf([]reflect.StructField{f}))
		all, required = append(all, a...), append(required, r...)
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

// TestOpenAPIAnalysis: the Analysis schema has the fields the analysis
// answer has.
func TestOpenAPIAnalysis(t *testing.T) {
	doc := loadOpenAPI(t)
	s, ok := doc.Comps.Schemas["Analysis"]
	if !ok {
		t.Fatal("schema Analysis missing")
	}
	all, required := flatFields(reflect.TypeOf(veena.Analysis{}))
	var props []string
	for p := range s.Properties {
		props = append(props, p)
	}
	sort.Strings(props)
	if !slices.Equal(props, all) {
		t.Errorf("schema Analysis has %v; the Go type has %v", props, all)
	}
	req := slices.Clone(s.Required)
	sort.Strings(req)
	if !slices.Equal(req, required) {
		t.Errorf("schema Analysis requires %v; the Go type always writes %v", req, required)
	}
}

const netChoice = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
  <net id="choice" type="http://www.pnml.org/version-2009/grammar/ptnet">
    <page id="p">
      <place id="i"><initialMarking><text>1</text></initialMarking></place>
      <place id="a"/><place id="b"/><place id="o"/>
      <transition id="left"/><transition id="right"/><transition id="join"/>
      <arc id="1" source="i" target="left"/><arc id="2" source="left" target="a"/>
      <arc id="3" source="i" target="right"/><arc id="4" source="right" target="b"/>
      <arc id="5" source="a" target="join"/><arc id="6" source="b" target="join"/><arc id="7" source="join" target="o"/>
    </page>
  </net>
</pnml>`

// TestNetDefinitionAndAnalysis: a PNML file loads through POST
// /definitions (sniffed), its definition shows the net, and the analysis
// endpoint answers for nets and for Sarasvati graphs; bad input is refused
// with its position.
func TestNetDefinitionAndAnalysis(t *testing.T) {
	e := newEnv(t, backends(t)[0], envOptions{})
	r := e.post("/api/v1/definitions", netChoice)
	e.want(r, 201, "")
	var d veena.Definition
	r.decode(t, &d)
	if d.Name != "choice" || d.Format != "pnml" || d.Net == nil || len(d.Net.Places) != 4 || len(d.Net.Transitions) != 3 || d.Net.Driven {
		t.Fatalf("definition %s", r.body)
	}
	r = e.get("/api/v1/definitions/choice/analysis")
	e.want(r, 200, "")
	var a struct {
		Complete     bool       `json:"complete"`
		States       *int       `json:"states"`
		DeadlockFree *bool      `json:"deadlockFree"`
		Deadlocks    [][]string `json:"deadlocks"`
		WorkflowNet  bool       `json:"workflowNet"`
		Sound        *bool      `json:"sound"`
		Dead         []string   `json:"deadTransitions"`
	}
	r.decode(t, &a)
	if !a.Complete || a.States == nil || *a.States != 3 || *a.DeadlockFree || !a.WorkflowNet || *a.Sound ||
		!slices.Equal(a.Dead, []string{"join"}) || len(a.Deadlocks) != 2 || !slices.Equal(a.Deadlocks[0], []string{"left"}) {
		t.Errorf("analysis %s", r.body)
	}
	e.want(e.post("/api/v1/definitions", defChoice), 201, "")
	r = e.get("/api/v1/definitions/choice/analysis?version=1")
	e.want(r, 200, "")
	e.want(e.get("/api/v1/definitions/choice/analysis?maxStates=0"), 400, "invalid_argument")
	e.want(e.get("/api/v1/definitions/choice/analysis?version=x"), 400, "invalid_argument")
	e.want(e.get("/api/v1/definitions/nothing/analysis"), 404, "not_found")

	bad := strings.Replace(netChoice, `<arc id="7" source="join" target="o"/>`, `<arc id="7" source="join" target="left"/>`, 1)
	r = e.post("/api/v1/definitions", bad)
	e.want(r, 422, "definition_invalid")
	p := r.problem(t)
	if len(p.Errors) != 1 || p.Errors[0].Line != 10 || !strings.Contains(p.Errors[0].Message, "arc 7 joins transition join to transition left") {
		t.Errorf("errors %+v", p.Errors)
	}
	r = e.post("/api/v1/definitions", strings.Replace(netChoice, "<pnml", "<!DOCTYPE pnml [<!ENTITY x \"y\">]>\n<pnml", 1))
	e.want(r, 422, "definition_invalid")
}
