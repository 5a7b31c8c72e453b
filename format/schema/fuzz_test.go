package schema_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/limitrun"
)

// runaways are schemas that would run without end or grow without bound
// were it not for the engine's limits, with the code one of their commands
// fails with under limitrun's limits ("" when they must only wait;
// "incident: text" when an action fails for good with that text).
var runaways = []struct {
	name, src, code string
}{
	{"parent and child answering each other", `schema: pingpong
nodes:
  - {id: start, type: root, next: [{to: listen}]}
  - id: listen
    type: event
    event: {name: go}
    actions: [{id: ping, do: emit, with: {event: ping, to: children}}]
    next: [{to: ponged}]
  - id: ponged
    type: event
    event: {name: pong}
    actions: [{id: ping, do: emit, with: {event: ping, to: children}}]
    next: [{to: ponged, when: "true"}, {to: end}]
  - {id: end, type: terminator}
children:
  - schema: echo
    trigger: {event: ping, from: parent}
    nodes:
      - id: hello
        type: root
        actions: [{id: pong, do: emit, with: {event: pong, to: parent}}]
        next: [{to: pinged}]
      - id: pinged
        type: event
        event: {name: ping}
        actions: [{id: pong, do: emit, with: {event: pong, to: parent}}]
        next: [{to: pinged, when: "true"}, {to: end}]
      - {id: end, type: terminator}
`, "budget_exceeded"},
	{"a child for every event", `{"schema": "spawner", "nodes": [
  {"id": "start", "type": "root", "next": [{"to": "more"}]},
  {"id": "more", "type": "event", "event": {"name": "more"},
   "actions": [{"id": "a", "do": "emit", "with": {"event": "spawn", "to": "children"}},
               {"id": "b", "do": "emit", "with": {"event": "spawn", "to": "children"}},
               {"id": "c", "do": "emit", "with": {"event": "spawn", "to": "children"}}],
   "next": [{"to": "more", "when": "true"}, {"to": "end"}]},
  {"id": "end", "type": "terminator"}],
 "children": [{"schema": "spawned", "trigger": {"event": "spawn", "from": "parent"}, "nodes": [
   {"id": "hello", "type": "root", "next": [{"to": "wait"}]},
   {"id": "wait", "type": "event", "event": {"name": "never"}, "next": [{"to": "end"}]},
   {"id": "end", "type": "terminator"}]}]}`, ""},
	{"an expression that costs too much", `schema: costly
almanac: {s: "x"}
nodes:
  - id: start
    type: root
    actions: [{id: grow, do: almanac.set, with: {n: "= [1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, [1,2,3,4,5,6,7,8,9,10].map(f, a+b+c+d+e+f))))))"}}]
    next: [{to: end}]
  - {id: end, type: terminator}
`, "incident: cost limit"},
}

// TestRunawaySchemas: each runaway schema fails its command with the
// stable code of the limit it meets, promptly, or waits.
func TestRunawaySchemas(t *testing.T) {
	for _, r := range runaways {
		t.Run(r.name, func(t *testing.T) {
			rep := limitrun.Drive(t, "runaway", []byte(r.src), "schema")
			t.Log(rep)
			if rep.Started+len(rep.Codes) == 0 {
				t.Fatalf("nothing started and nothing failed: %s", rep)
			}
			if want, ok := strings.CutPrefix(r.code, "incident: "); ok {
				if len(rep.Codes) != 0 || len(rep.Incidents) == 0 || !strings.Contains(rep.Incidents[0], want) {
					t.Fatalf("want an incident saying %q and no failed command: %s", want, rep)
				}
				return
			}
			if r.code != "" && rep.Codes[r.code] == 0 {
				t.Fatalf("no command failed with %s: %s", r.code, rep)
			}
			if r.code == "" && len(rep.Codes) != 0 {
				t.Fatalf("commands failed: %s", rep)
			}
		})
	}
}

// fuzzLoad: any input loads without panicking; a failure is a
// *graph.LoadError with problems that name the file; a success is a set of
// consistent graphs (one start node each, arcs between their own nodes,
// every node with its schema properties) that runs under small limits
// (limitrun.Drive): every command ends promptly, in success, a wait or an
// error with a stable code.
func fuzzLoad(t *testing.T, src []byte) {
	gs, err := schema.Load("fuzz", src)
	if err != nil {
		var le *graph.LoadError
		if !errors.As(err, &le) || len(le.Problems) == 0 || le.File != "fuzz" {
			t.Fatalf("error is not a LoadError with problems: %#v", err)
		}
		return
	}
	if len(gs) == 0 {
		t.Fatal("no graphs and no error")
	}
	for _, g := range gs {
		if len(g.StartNodes()) != 1 {
			t.Fatalf("%s: %d start nodes", g.Name, len(g.StartNodes()))
		}
		if _, ok := g.Props.(*schema.Schema); !ok {
			t.Fatalf("%s: props %T", g.Name, g.Props)
		}
		for _, n := range g.Nodes {
			if _, ok := n.Props.(*schema.Node); !ok {
				t.Fatalf("%s: node %s props %T", g.Name, n.Name, n.Props)
			}
		}
		for _, a := range g.Arcs {
			if g.Nodes[a.From.Index] != a.From || g.Nodes[a.To.Index] != a.To {
				t.Fatalf("%s: arc %s between foreign nodes", g.Name, a)
			}
		}
	}
	_ = schema.Describe(gs)
	limitrun.Drive(t, "fuzz", src, "schema")
}

func addSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, file := range files {
		if filepath.Ext(file) == ".golden" || filepath.Ext(file) == ".errors" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
}

func FuzzLoadJSON(f *testing.F) {
	addSeeds(f, "testdata/*/*.json")
	for _, r := range runaways {
		f.Add([]byte(r.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !schema.IsJSON(src) {
			return
		}
		fuzzLoad(t, src)
	})
}

func FuzzLoadYAML(f *testing.F) {
	addSeeds(f, "testdata/*/*.yaml")
	for _, r := range runaways {
		f.Add([]byte(r.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if schema.IsJSON(src) {
			return
		}
		fuzzLoad(t, src)
	})
}
