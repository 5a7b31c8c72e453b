package schema_test

import (
	"context"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
)

// family: a parent that starts children with child.start, updates them
// with almanac.setChild, talks to them by event, and sends events by
// context to another schema's instances; the children report back with
// almanac.setParent and emit, and have children of their own.
const family = `
schema: family
context: {keys: [house]}
almanac: {reports: 0}
events: {queue: 2}
nodes:
  - id: start
    type: root
    actions:
      - {id: kid1, do: child.start, with: {schema: kid, context: {name: ann}}, result: ann}
      - {id: kid2, do: child.start, with: {schema: kid, context: {name: bob}}, result: bob}
      - {id: tell, do: almanac.setChild, with: {child: kid, chore: dishes}, result: told}
    next: [{to: wait}]
  - id: wait
    type: event
    event: {name: report, when: "event.payload.ok == true"}
    actions:
      - {id: count, do: almanac.set, with: {reports: "= almanac.reports + 1"}}
    next:
      - {to: done, when: "almanac.reports >= 2"}
      - {to: nap, when: "almanac.reports == 1"}
  - id: nap
    type: timer
    timer: {at: "= string(now + duration('2h'))"}
    actions:
      - {id: shout, do: emit, with: {event: wake, to: children}}
      - {id: post, do: emit, with: {event: note, context: {street: "= context.house"}, payload: {from: "= context.house"}}}
    next: [{to: wait}]
  - id: done
    type: terminator
children:
  - schema: kid
    context: {inherit: [house], keys: [name]}
    nodes:
      - id: up
        type: root
        actions:
          - {id: hi, do: emit, with: {event: report, to: parent, payload: {ok: true}}}
          - {id: pet, do: child.start, with: {schema: pet}}
        next: [{to: sleep}]
      - id: sleep
        type: event
        event: {name: wake}
        actions:
          - {id: again, do: almanac.setParent, with: {lastWake: "= context.name"}}
        next:
          - {to: bye, when: "event.payload != null && event.payload.last == true"}
          - {to: sleep}
      - {id: bye, type: terminator}
    children:
      - schema: pet
        nodes:
          - {id: born, type: root, next: [{to: sit}]}
          - {id: sit, type: event, event: {name: never}, next: [{to: gone}]}
          - {id: gone, type: terminator}
`

const mailbox = `
schema: mailbox
context: {keys: [street]}
trigger: {event: note}
almanac: {notes: 0}
nodes:
  - id: open
    type: root
    actions:
      - {id: first, do: almanac.set, with: {notes: 1, from: "= event.payload.from"}}
    next: [{to: more}]
  - id: more
    type: event
    event: {name: note}
    actions:
      - {id: add, do: almanac.set, with: {notes: "= almanac.notes + 1"}}
    next:
      - {to: shut, when: "almanac.notes > 99"}
      - {to: more}
  - {id: shut, type: terminator}
`

func TestSchemaSemantics(t *testing.T) {
	ctx := context.Background()
	b := newBot()
	h := open(t, nil, b)
	for name, src := range map[string]string{"family.yaml": family, "mailbox.yaml": mailbox} {
		if _, _, err := h.e.LoadDefinition(ctx, name, []byte(src), ""); err != nil {
			t.Fatal(err)
		}
	}
	p, err := h.e.StartProcess(ctx, veena.StartRequest{Definition: "family", Context: map[string]string{"house": "h1"}})
	if err != nil {
		t.Fatal(err)
	}
	// Both children reported inside the start's step, while the parent
	// still ran its root actions: both reports queued, the event node took
	// the first when the parent reached it, and reports == 1 leads to the
	// timer.
	alm := h.almanac(p.ID)
	if alm["reports"] != int64(1) || alm["told"] != int64(2) {
		t.Fatalf("almanac after start: %v", alm)
	}
	in, _ := h.rt.Nodes(ctx, p.ID)
	if len(in.Queue) != 1 || in.Queue[0].Name != "report" {
		t.Errorf("queue after start: %+v", in.Queue)
	}
	kids, err := h.e.Processes(ctx, veena.ProcessFilter{Definition: "family.kid"})
	if err != nil || len(kids.Items) != 2 {
		t.Fatalf("kids: %+v %v", kids, err)
	}
	for _, k := range kids.Items {
		if k.Parent != p.ID || k.Env["chore"].Any() != "dishes" || k.Context["house"] != "h1" {
			t.Errorf("kid %+v", k)
		}
	}
	pets, _ := h.e.Processes(ctx, veena.ProcessFilter{Definition: "family.kid.pet"})
	if len(pets.Items) != 2 {
		t.Fatalf("%d pets (children of children)", len(pets.Items))
	}

	// A filtered-out event queues; a third one overflows the queue (2).
	send := func(name string, payload any) error {
		_, err := h.e.Deliver(ctx, p.ID, veenaMessage(name, payload), "")
		return err
	}
	if err := send("report", map[string]any{"ok": false}); err != nil {
		t.Fatal(err)
	}
	if err := send("report", map[string]any{"ok": false}); veena.Code(err) != "event_queue_full" {
		t.Fatalf("a third queued event: %v", err)
	}

	// The timer's time comes: the children are woken (each tells the
	// parent), an event goes by context to another schema's instance,
	// which its trigger creates.
	h.clock.Add(2*time.Hour + time.Second)
	waitTimers(t, h)
	h.settle(p.ID)
	alm = h.almanac(p.ID)
	if alm["lastWake"] == nil {
		t.Errorf("no child told the parent it woke: %v", alm)
	}
	mb, err := h.e.Processes(ctx, veena.ProcessFilter{Definition: "mailbox"})
	if err != nil || len(mb.Items) != 1 {
		t.Fatalf("mailbox instances: %+v %v", mb, err)
	}
	if a := h.almanac(mb.Items[0].ID); a["from"] != "h1" || a["notes"] != int64(1) {
		t.Errorf("mailbox almanac: %v", a)
	}
	// Back at the event node, the queued report (ok) completes the family.
	got, _ := h.e.Process(ctx, p.ID)
	if got.State != "completed" {
		in, _ := h.rt.Nodes(ctx, p.ID)
		t.Fatalf("family is %s: %+v", got.State, in)
	}

	// An event routed by context to the mailbox, not created again.
	res, err := h.rt.Send(ctx, schema.Event{Name: "note", Context: map[string]string{"street": "h1"}, Payload: map[string]any{"from": "x"}})
	if err != nil || res.Started || res.Process.ID != mb.Items[0].ID {
		t.Fatalf("second note: %+v %v", res, err)
	}
	if a := h.almanac(mb.Items[0].ID); a["notes"] != int64(2) {
		t.Errorf("mailbox notes: %v", a)
	}
}

// TestCancelCascades: cancelling a schema instance cancels its executing
// children and theirs; the node instances that were waiting show canceled.
func TestCancelCascades(t *testing.T) {
	ctx := context.Background()
	h := open(t, nil, newBot())
	if _, _, err := h.e.LoadDefinition(ctx, "family.yaml", []byte(family), ""); err != nil {
		t.Fatal(err)
	}
	p, err := h.e.StartProcess(ctx, veena.StartRequest{Definition: "family", Context: map[string]string{"house": "h2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CancelProcess(ctx, p.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{"family", "family.kid", "family.kid.pet"} {
		page, err := h.e.Processes(ctx, veena.ProcessFilter{Definition: def})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range page.Items {
			if q.State != "canceled" {
				t.Errorf("%s %s is %s after its ancestor was cancelled", def, q.ID, q.State)
			}
		}
	}
	in, _ := h.rt.Nodes(ctx, p.ID)
	last := in.Nodes[len(in.Nodes)-1]
	if last.State != schema.NodeCanceled {
		t.Errorf("the waiting node instance shows %s", last.State)
	}
	// A cancelled instance no longer receives events by context.
	if _, err := h.rt.Send(ctx, schema.Event{Name: "report", Context: map[string]string{"house": "h2"}}); veena.Code(err) != veena.ErrNotFound.Code {
		t.Errorf("event to a cancelled instance: %v", err)
	}
}

// TestRoutingConflicts: two schemas whose instances both match an event
// (neither the other's child) make it ambiguous: 409, nothing delivered.
func TestRoutingConflicts(t *testing.T) {
	ctx := context.Background()
	h := open(t, nil, newBot())
	two := func(name string) string {
		return strings.ReplaceAll(`
schema: NAME
context: {keys: [user]}
nodes:
  - {id: r, type: root, next: [{to: w}]}
  - {id: w, type: event, event: {name: ping}, next: [{to: e}]}
  - {id: e, type: terminator}
`, "NAME", name)
	}
	for _, n := range []string{"one", "two"} {
		if _, _, err := h.e.LoadDefinition(ctx, n+".yaml", []byte(two(n)), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.StartProcess(ctx, veena.StartRequest{Definition: n, Context: map[string]string{"user": "u"}}); err != nil {
			t.Fatal(err)
		}
	}
	// A second instance of "one" with the same context is refused.
	if _, err := h.e.StartProcess(ctx, veena.StartRequest{Definition: "one", Context: map[string]string{"user": "u"}}); veena.Code(err) != veena.ErrConflict.Code {
		t.Errorf("a second instance with the same context: %v", err)
	}
	_, err := h.rt.Send(ctx, schema.Event{Name: "ping", Context: map[string]string{"user": "u"}})
	if veena.Code(err) != veena.ErrConflict.Code || !strings.Contains(err.Error(), "several instances") {
		t.Fatalf("an event matching two instances: %v", err)
	}
	// An event that lacks a routing key reaches nobody.
	if _, err := h.rt.Send(ctx, schema.Event{Name: "ping", Context: map[string]string{"other": "u"}}); veena.Code(err) != veena.ErrNotFound.Code {
		t.Errorf("an event without the routing key: %v", err)
	}
}

func veenaMessage(name string, payload any) kernel.Message {
	return kernel.Message{Name: name, Payload: payload}
}

// TestLongConversationKeepsRecentVisits: an instance that loops through
// its event node for a long time keeps its last visits in detail and counts
// the others, so that a step's cost does not grow with its history.
func TestLongConversationKeepsRecentVisits(t *testing.T) {
	ctx := context.Background()
	h := open(t, nil, newBot())
	if _, _, err := h.e.LoadDefinition(ctx, "mailbox.yaml", []byte(strings.ReplaceAll(mailbox, "almanac.notes > 99", "almanac.notes > 999")), ""); err != nil {
		t.Fatal(err)
	}
	var id string
	for i := range 700 {
		res, err := h.rt.Send(ctx, schema.Event{Name: "note", Context: map[string]string{"street": "long"}, Payload: map[string]any{"from": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			id = res.Process.ID
		}
	}
	in, err := h.rt.Nodes(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Nodes) != 500 || in.Trimmed != 201 {
		t.Fatalf("%d visits kept, %d trimmed; want 500 and 201", len(in.Nodes), in.Trimmed)
	}
	if a := h.almanac(id); a["notes"] != int64(700) {
		t.Errorf("notes = %v", a["notes"])
	}
	last := in.Nodes[len(in.Nodes)-1]
	if last.Node != "more" || last.State != schema.NodeWaiting {
		t.Errorf("last visit %+v", last)
	}
}
