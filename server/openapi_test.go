package server_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/translate"
	"github.com/veena-wf/veena/server"
)

type openAPIDoc struct {
	OpenAPI string                                  `json:"openapi"`
	Paths   map[string]map[string]openAPIOp         `json:"paths"`
	Comps   struct{ Schemas map[string]jsonSchema } `json:"components"`
}

type openAPIOp struct {
	OperationID string                     `json:"operationId"`
	Role        string                     `json:"x-veena-role"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

type jsonSchema struct {
	Type       any                        `json:"type"`
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
	Example    json.RawMessage            `json:"example"`
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	return &doc
}

// TestOpenAPIRoutes checks that the document and the router have the same
// routes, methods and roles.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	srv := server.New(server.Config{})
	routes := map[string]string{ // "METHOD path" -> role
		"GET /healthz": "public",
		"GET /readyz":  "public",
		"GET /metrics": "viewer",
	}
	for _, r := range srv.Routes() {
		role := r.Role.String()
		if r.Role == auth.RoleNone {
			role = "public"
		}
		routes[r.Method+" "+r.Pattern] = role
	}
	documented := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = op.Role
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			if _, ok := op.Responses["200"]; !ok {
				if _, ok := op.Responses["201"]; !ok {
					t.Errorf("%s %s documents no success answer", method, path)
				}
			}
		}
	}
	for r, role := range routes {
		d, ok := documented[r]
		if !ok {
			t.Errorf("route %s is not in openapi.json", r)
			continue
		}
		if d != role {
			t.Errorf("route %s needs role %s; openapi.json says %s", r, role, d)
		}
	}
	for r := range documented {
		if _, ok := routes[r]; !ok {
			t.Errorf("openapi.json documents %s, which the server does not have", r)
		}
	}
}

// jsonFields returns the JSON names of a struct type's fields and the
// names of those without omitempty.
func jsonFields(t reflect.Type) (all, required []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

// TestOpenAPISchemas checks that the documented objects have exactly the
// fields of the Go types the server writes and reads, that required fields
// are those always written, and that every example decodes into its type.
func TestOpenAPISchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	cases := []struct {
		schema  string
		typ     any
		request bool // a request body: nothing is required but what the server demands
	}{
		{"Definition", veena.Definition{}, false},
		{"Node", veena.Node{}, false},
		{"Arc", veena.Arc{}, false},
		{"NetView", veena.NetView{}, false},
		{"NetPlace", veena.NetPlace{}, false},
		{"NetTransition", veena.NetTransition{}, false},
		{"NetArc", veena.NetArc{}, false},
		{"Soundness", analysis.SoundnessDetails{}, false},
		{"Stranded", analysis.Stranded{}, false},
		{"StuckJoin", translate.StuckJoin{}, false},
		{"AnalysedNet", translate.NetSize{}, false},
		{"Process", veena.Process{}, false},
		{"ProcessPage", veena.ProcessPage{}, false},
		{"Wait", veena.Wait{}, false},
		{"JoinProgress", veena.JoinProgress{}, false},
		{"StalledJoin", veena.StalledJoin{}, false},
		{"TimerFailure", veena.TimerFailure{}, false},
		{"WaitingItem", veena.WaitingItem{}, false},
		{"WaitingPage", veena.WaitingPage{}, false},
		{"NodeToken", veena.NodeToken{}, false},
		{"ArcToken", veena.ArcToken{}, false},
		{"TokenSetRef", veena.TokenSetRef{}, false},
		{"TokenSet", veena.TokenSet{}, false},
		{"TokenHistory", veena.TokenHistory{}, false},
		{"Event", veena.Event{}, false},
		{"Problem", server.Problem{}, false},
		{"WhoAmI", server.WhoAmI{}, false},
		{"DefinitionPage", server.Page[veena.Definition]{}, false},
		{"StartRequest", server.StartBody{}, true},
		{"CompleteRequest", server.CompleteBody{}, true},
		{"TokenSetRequest", server.TokenSetBody{}, true},
		{"EventRequest", server.EventBody{}, true},
	}
	for _, c := range cases {
		s, ok := doc.Comps.Schemas[c.schema]
		if !ok {
			t.Errorf("schema %s missing", c.schema)
			continue
		}
		all, required := jsonFields(reflect.TypeOf(c.typ))
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		if !reflect.DeepEqual(props, all) {
			t.Errorf("schema %s has properties %v; the Go type has %v", c.schema, props, all)
		}
		req := append([]string(nil), s.Required...)
		sort.Strings(req)
		if !c.request && !reflect.DeepEqual(req, required) {
			t.Errorf("schema %s requires %v; the Go type always writes %v", c.schema, req, required)
		}
		if c.request {
			for _, r := range req {
				if !contains(all, r) {
					t.Errorf("schema %s requires %s, which the Go type lacks", c.schema, r)
				}
			}
		}
		if len(s.Example) > 0 {
			v := reflect.New(reflect.TypeOf(c.typ)).Interface()
			dec := json.NewDecoder(bytes.NewReader(s.Example))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Errorf("example of %s does not decode into %T: %v", c.schema, c.typ, err)
			}
			var keys map[string]json.RawMessage
			_ = json.Unmarshal(s.Example, &keys)
			for _, r := range s.Required {
				if _, ok := keys[r]; !ok {
					t.Errorf("example of %s lacks required %s", c.schema, r)
				}
			}
		}
	}
	// The documented error codes are the codes the server answers with.
	var code struct {
		Enum []string `json:"enum"`
	}
	if err := json.Unmarshal(doc.Comps.Schemas["Problem"].Properties["code"], &code); err != nil {
		t.Fatal(err)
	}
	documented := code.Enum
	codes := server.Codes()
	sort.Strings(documented)
	sort.Strings(codes)
	if !reflect.DeepEqual(documented, codes) {
		t.Errorf("openapi.json lists codes %v; the server has %v", documented, codes)
	}
	// Every error status an operation documents is one some code maps to.
	statuses := map[string]bool{}
	for _, c := range codes {
		statuses[itoa(server.StatusOf(c))] = true
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for status := range op.Responses {
				if status[0] >= '4' && !statuses[status] {
					t.Errorf("%s %s documents %s, which no code answers", method, path, status)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
