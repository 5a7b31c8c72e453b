package schema_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
)

// pingPong: once "go" arrives, parent and child answer each other's events
// for ever inside one step.
const pingPong = `
schema: pingpong
nodes:
  - {id: start, type: root, next: [{to: listen}]}
  - id: listen
    type: event
    event: {name: go}
    actions: [{id: mark, do: almanac.set, with: {went: true}}, {id: ping, do: emit, with: {event: ping, to: children}}]
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
`

// TestFailedCommandKeepsState: a command that fails (here: parent and
// child keep answering each other inside one step until the step's budget
// stops it) leaves the process exactly as it was, the schema's own state
// (node instances, queue) and almanac included, so that a program driving
// the kernel directly has nothing to reload.
func TestFailedCommandKeepsState(t *testing.T) {
	gs, err := schemaformat.Load("pingpong.yaml", []byte(pingPong))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*graph.Graph{}
	for i, g := range gs {
		g.Version = i + 1
		byName[g.Name] = g
	}
	k := kernel.New()
	k.Definitions = func(name string) *graph.Graph { return byName[name] }
	schema.New().Register(k)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := k.Engine(now).StartWith(byName["pingpong"], kernel.NewEnv(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := func() string {
		ext, err := p.EncodedExt()
		if err != nil {
			t.Fatal(err)
		}
		env, _ := json.Marshal(p.Env.Map())
		var b bytes.Buffer
		b.Write(ext)
		b.Write(env)
		for _, tk := range p.NodeTokens {
			b.WriteString(tk.Node.Name)
			if tk.Complete {
				b.WriteString("+")
			}
		}
		b.WriteString(p.State.String())
		return b.String()
	}
	before := snap()
	nested := len(p.Nested)
	err = k.Engine(now).Receive(p, &kernel.Message{Name: "go"})
	if err == nil {
		t.Fatal("the endless ping-pong did not fail its command")
	}
	t.Logf("the command failed: %v", err)
	if after := snap(); after != before {
		t.Errorf("the failed command changed the process:\nbefore %s\nafter  %s", before, after)
	}
	if len(p.Nested) != nested {
		t.Errorf("%d children after the failed command, %d before", len(p.Nested), nested)
	}
}
