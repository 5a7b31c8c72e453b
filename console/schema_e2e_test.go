package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// supportBot is a schema (YAML) with every node kind, a cycle through an
// event node and one through a timer node, a child schema started by an
// event of the parent, a job for outside programs and almanac updates
// from the child to its parent.
const supportBot = `schema: support-bot
description: Answers support chats.
context: {keys: [chatId]}
trigger: {event: chat.opened}
almanac: {messages: 0, topic: ""}
nodes:
  - id: greet
    type: root
    actions:
      - {id: hello, do: almanac.set, with: {greeting: "= 'Hello ' + event.payload.name"}}
    next: [{to: listen}]
  - id: listen
    type: event
    event: {name: chat.message}
    actions:
      - {id: count, do: almanac.set, with: {messages: "= almanac.messages + 1", last: "= event.payload.text"}}
      - {id: ask-child, do: emit, with: {event: lookup, to: children, payload: {q: "= event.payload.text"}}}
    next:
      - {to: close, when: "event.payload.text == 'bye'", label: Bye}
      - {to: pause, when: "almanac.messages >= 2", label: Slow down}
      - {to: listen}
  - id: pause
    type: timer
    timer: {after: PT1H}
    actions: [{id: nudge, do: almanac.set, with: {nudged: true}}]
    next: [{to: listen}]
  - id: close
    type: terminator
children:
  - schema: lookup
    context: {inherit: [chatId]}
    trigger: {event: lookup, from: parent}
    nodes:
      - id: find
        type: root
        actions:
          - {id: classify, job: ticket.classify, with: {q: "= event.payload.q"}, result: topic}
          - {id: tell, do: almanac.setParent, with: {topic: "= almanac.topic"}}
        next: [{to: done}]
      - {id: done, type: terminator}
`

// TestSchemaConsoleInBrowser loads a schema through the console, checks
// that its graph shows node kinds, actions per node and conditions, drives
// an instance through the HTTP API (named events, a job done by a
// worker), and checks the process page: the almanac, the node instances
// with their action instances, and the child instance. Screenshots go to
// artifacts/ (schema-definition.png, schema-process.png, schema-child.png).
func TestSchemaConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if findChromium() == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the schema view was not tested in a browser")
	}
	if _, err := embedded.Open("web/" + vendorMarker); err != nil {
		t.Skip("SKIPPED: the console's libraries are not built into this test binary; run `make console` first")
	}
	srv := startServer(t)
	b := newBrowser(t, srv, 1000)
	b.login(srv.admin)

	// The schema, loaded through the page, is drawn with its node kinds,
	// the actions of each node in order and the conditions on its arcs.
	b.loadDefinition("support-bot", supportBot)
	if got := b.str(`document.querySelector('.graph-status').textContent`); got != "4 nodes, 5 arcs" {
		t.Errorf("graph status = %q, want 4 nodes, 5 arcs", got)
	}
	labels := b.str(`JSON.stringify(window.__veenaGraph ? [] : Array.from(document.querySelectorAll('table.nodes tbody tr')).map((r) => r.innerText))`)
	for _, want := range []string{"listen", "event chat.message", "count: almanac.set", "ask-child: emit", "pause", "after 1h0m0s", "Slow down", "if almanac.messages >= 2"} {
		if !strings.Contains(labels, want) {
			t.Errorf("the nodes table does not show %q: %s", want, labels)
		}
	}
	graphText := b.str(`JSON.stringify(document.querySelector('.graph-host').graphLabels ? document.querySelector('.graph-host').graphLabels() : [])`)
	for _, want := range []string{"✉ listen", "event · waits for chat.message", "1. count: almanac.set", "2. ask-child: emit", "◷ pause", "■ close", "Slow down: almanac.messages >= 2", "otherwise"} {
		if !strings.Contains(graphText, want) {
			t.Errorf("the graph does not draw %q: %s", want, graphText)
		}
	}
	if legend := b.str(`document.querySelector('.legend').innerText`); !strings.Contains(legend, "event: waits for an event") {
		t.Errorf("legend: %q", legend)
	}
	b.screenshot("schema-definition.png")

	// An instance, driven from outside: opened by the trigger, two
	// messages (the second leads to the timer), each starting a look-up
	// child whose job a worker does.
	var opened struct{ ID string }
	apiCall(t, srv, "POST", "/events", map[string]any{"name": "chat.opened", "context": map[string]string{"chatId": "c-7"}, "payload": map[string]any{"name": "Ada"}}, &opened)
	apiCall(t, srv, "POST", "/events", map[string]any{"name": "chat.message", "context": map[string]string{"chatId": "c-7"}, "payload": map[string]any{"text": "my printer is on fire"}}, nil)
	var act struct {
		Jobs []struct{ ID string } `json:"jobs"`
	}
	apiCall(t, srv, "POST", "/jobs/activate", map[string]any{"type": "ticket.classify", "worker": "w1", "maxJobs": 1, "lockFor": "1m"}, &act)
	if len(act.Jobs) != 1 {
		t.Fatalf("activated %d jobs", len(act.Jobs))
	}
	apiCall(t, srv, "POST", "/jobs/"+act.Jobs[0].ID+"/complete", map[string]any{"worker": "w1", "env": map[string]any{"result": "hardware"}}, nil)
	apiCall(t, srv, "POST", "/events", map[string]any{"name": "chat.message", "context": map[string]string{"chatId": "c-7"}, "payload": map[string]any{"text": "still burning"}}, nil)

	b.goTo("#/processes/" + opened.ID)
	b.wait("the schema panel", `document.querySelector('.schema-panel table.actions') !== null && document.querySelectorAll('.schema-panel tr.visit-head').length >= 4`)
	b.wait("the almanac with the child's topic", `/hardware/.test(document.querySelector('.schema-panel .almanac').innerText)`)
	visits := b.str(`Array.from(document.querySelectorAll('.schema-panel tr.visit-head')).map((r) => r.dataset.node + ':' + r.querySelector('[data-state]').dataset.state).join(' ')`)
	if visits != "greet:completed listen:completed listen:completed pause:waiting" {
		t.Errorf("node instances: %q", visits)
	}
	almanac := b.str(`document.querySelector('.schema-panel .almanac').innerText`)
	for _, want := range []string{"greeting", "Hello Ada", "messages", "2", "topic", "hardware", "last", "still burning"} {
		if !strings.Contains(almanac, want) {
			t.Errorf("almanac does not show %q: %s", want, almanac)
		}
	}
	if n := b.num(`document.querySelectorAll('.schema-panel tr.action[data-state=completed]').length`); n != 5 {
		t.Errorf("%d completed action instances shown, want 5 (hello, count and ask-child twice)", n)
	}
	children := b.num(`document.querySelectorAll('.schema-panel a[data-rel=schema-child]').length`)
	if children != 2 {
		t.Errorf("%d child instances linked, want 2", children)
	}
	if n := b.num(`document.querySelectorAll('[data-action=complete]').length`); n != 0 {
		t.Errorf("a schema instance's token offers to be completed by hand (%d buttons)", n)
	}
	// A tall page, to show the schema panel under the graph.
	b.do("a tall viewport", chromedp.EmulateViewport(1440, 1900))
	b.screenshot("schema-process.png")
	b.do("the usual viewport", chromedp.EmulateViewport(1440, 1000))

	// The first child: its job completed, the parent's almanac updated.
	b.click(".schema-panel a[data-rel=schema-child]")
	b.wait("the child's page", `document.querySelectorAll('.schema-panel tr.visit-head').length >= 1 && /classify/.test(document.querySelector('.schema-panel').innerText)`)
	child := b.str(`document.querySelector('.schema-panel').innerText`)
	if !strings.Contains(child, "job:ticket.classify") || !strings.Contains(child, `"hardware"`) {
		t.Errorf("child page: %s", child)
	}
	b.screenshot("schema-child.png")
	_ = fmt.Sprint
}
