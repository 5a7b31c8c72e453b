package server_test

import (
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/server"
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

// TestOpenAPINets: the schemas of the Petri net endpoints have the fields
// of the Go types the server writes and reads.
func TestOpenAPINets(t *testing.T) {
	for name, typ := range map[string]any{
		"Analysis": veena.Analysis{}, "Marking": veena.Marking{}, "MarkingActivity": veena.MarkingActivity{},
		"FireRequest": server.FireBody{}, "TransitionEventRequest": server.TransitionEventBody{},
		"TransitionEventResult": veena.TransitionEventResult{}, "JobResultRequest": server.JobResultBody{},
	} {
		t.Run(name, func(t *testing.T) { checkSchema(t, name, typ, strings.HasSuffix(name, "Request")) })
	}
}

func checkSchema(t *testing.T, name string, typ any, request bool) {
	doc := loadOpenAPI(t)
	s, ok := doc.Comps.Schemas[name]
	if !ok {
		t.Fatalf("schema %s missing", name)
	}
	all, required := flatFields(reflect.TypeOf(typ))
	var props []string
	for p := range s.Properties {
		props = append(props, p)
	}
	sort.Strings(props)
	if !slices.Equal(props, all) {
		t.Errorf("schema %s has %v; the Go type has %v", name, props, all)
	}
	req := slices.Clone(s.Required)
	sort.Strings(req)
	if request {
		for _, r := range req {
			if !slices.Contains(all, r) {
				t.Errorf("schema %s requires %s, which the Go type lacks", name, r)
			}
		}
		return
	}
	if !slices.Equal(req, required) {
		t.Errorf("schema %s requires %v; the Go type always writes %v", name, req, required)
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

const netLDAP = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="ldap" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="idle"><initialMarking><text>1</text></initialMarking></place>
   <place id="query"><name><text>ldap_search(base)</text></name></place>
   <place id="entries"/><place id="done"/>
   <transition id="ask"><name><text>search(&amp;base)</text></name></transition>
   <transition id="found"/><transition id="finish"/>
   <arc id="1" source="idle" target="ask"/><arc id="2" source="ask" target="query"/>
   <arc id="3" source="query" target="found"><name><text>entry</text></name></arc>
   <arc id="4" source="found" target="query"/><arc id="5" source="found" target="entries"/>
   <arc id="6" source="query" target="finish"><name><text>done</text></name></arc>
   <arc id="7" source="finish" target="done"/>
  </page>
 </net>
</pnml>`

// TestNetProcessEndpoints drives net processes through the HTTP API:
// marking, fire, events with arguments, an activity's job with
// intermediate results and its final one.
func TestNetProcessEndpoints(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, envOptions{})
			e.want(e.post("/api/v1/definitions", netChoice), 201, "")
			r := e.post("/api/v1/processes", `{"definition":"choice"}`)
			e.want(r, 201, "")
			var p veena.Process
			r.decode(t, &p)
			var m veena.Marking
			r = e.get("/api/v1/processes/" + p.ID + "/marking")
			e.want(r, 200, "")
			r.decode(t, &m)
			if m.Places["i"] != 1 || !slices.Equal(m.Enabled, []string{"left", "right"}) || len(m.Activities) != 0 {
				t.Fatalf("marking %s", r.body)
			}
			e.want(e.post("/api/v1/processes/"+p.ID+"/fire", `{"transition":"join"}`), 409, "transition_not_enabled")
			e.want(e.post("/api/v1/processes/"+p.ID+"/fire", `{"transition":"nowhere"}`), 404, "not_found")
			e.want(e.post("/api/v1/processes/"+p.ID+"/fire", `{}`), 400, "invalid_argument")
			r = e.post("/api/v1/processes/"+p.ID+"/fire", `{"transition":"left"}`)
			e.want(r, 200, "")
			r.decode(t, &p)
			// a holds the token; join needs b too: nothing is enabled, the process ends.
			if p.State != "completed" {
				t.Errorf("after left: %s", r.body)
			}
			e.want(e.post("/api/v1/processes/"+p.ID+"/fire", `{"transition":"right"}`), 409, "process_not_executing")

			e.want(e.post("/api/v1/definitions", defOne), 201, "")
			r = e.post("/api/v1/processes", `{"definition":"one"}`)
			var sp veena.Process
			r.decode(t, &sp)
			e.want(e.get("/api/v1/processes/"+sp.ID+"/marking"), 409, "not_a_net")
			e.want(e.post("/api/v1/processes/"+sp.ID+"/fire", `{"transition":"A"}`), 409, "not_a_net")

			e.want(e.post("/api/v1/definitions", netLDAP), 201, "")
			r = e.post("/api/v1/processes", `{"definition":"ldap"}`)
			e.want(r, 201, "")
			r.decode(t, &p)
			r = e.post("/api/v1/processes/"+p.ID+"/transition-events", `{"name":"other"}`)
			e.want(r, 200, "")
			var ev veena.TransitionEventResult
			r.decode(t, &ev)
			if len(ev.Fired) != 0 {
				t.Errorf("unknown event fired %v", ev.Fired)
			}
			e.want(e.post("/api/v1/processes/"+p.ID+"/transition-events", `{"name":"bad name"}`), 400, "invalid_argument")
			r = e.post("/api/v1/processes/"+p.ID+"/transition-events", `{"name":"search()","args":{"base":"dc=example"}}`)
			e.want(r, 200, "")
			r.decode(t, &ev)
			if !slices.Equal(ev.Fired, []string{"ask"}) || ev.Process.Env["base"] != kernel.String("dc=example") {
				t.Fatalf("search: %s", r.body)
			}
			r = e.post("/api/v1/jobs/activate", `{"type":"ldap_search","worker":"w","maxJobs":1,"lockFor":"1m"}`)
			e.want(r, 200, "")
			var act struct{ Jobs []veena.Job }
			r.decode(t, &act)
			if len(act.Jobs) != 1 || act.Jobs[0].Env["base"] != kernel.String("dc=example") {
				t.Fatalf("activate: %s", r.body)
			}
			job := act.Jobs[0].ID
			e.want(e.post("/api/v1/jobs/"+job+"/results", `{"worker":"other","result":"entry"}`), 409, "job_not_leased")
			for i := 0; i < 3; i++ {
				e.want(e.post("/api/v1/jobs/"+job+"/results", `{"worker":"w","result":"entry","env":{"last":`+strconv.Itoa(i)+`}}`), 200, "")
			}
			r = e.get("/api/v1/processes/" + p.ID + "/marking")
			r.decode(t, &m)
			if m.Places["entries"] != 3 || m.Places["query"] != 1 || len(m.Activities) != 1 || m.Activities[0].Job != job || m.Variables["last"] != kernel.Int(2) {
				t.Fatalf("after three entries: %s", r.body)
			}
			r = e.post("/api/v1/jobs/"+job+"/complete", `{"worker":"w","result":"done"}`)
			e.want(r, 200, "")
			r.decode(t, &p)
			r = e.get("/api/v1/processes/" + p.ID + "/marking")
			r.decode(t, &m)
			if m.Places["done"] != 1 || m.Places["entries"] != 3 || len(m.Activities) != 0 || p.State != "completed" {
				t.Errorf("after the final result (%s): %s", p.State, r.body)
			}
		})
	}
}
