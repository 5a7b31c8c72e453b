package kernel

import (
	"testing"
	"unsafe"

	"github.com/veena-wf/veena/graph"
)

// TestEventTypeNames: every event type has its bit number as index and a
// name that parses back to it; a value that is not one type has neither.
func TestEventTypeNames(t *testing.T) {
	seen := map[string]bool{}
	for i, typ := range EventTypes {
		if typ != 1<<i {
			t.Fatalf("EventTypes[%d] = %#x, want bit %d", i, uint64(typ), i)
		}
		if got := typ.Index(); got != i {
			t.Errorf("%#x: Index %d, want %d", uint64(typ), got, i)
		}
		name := typ.String()
		if name == "" || seen[name] {
			t.Errorf("%#x: name %q empty or repeated", uint64(typ), name)
		}
		seen[name] = true
		if back, ok := ParseEventType(name); !ok || back != typ {
			t.Errorf("ParseEventType(%q) = %#x, %v", name, uint64(back), ok)
		}
	}
	for _, typ := range []EventType{0, ProcessCreated | ProcessStarted, 1 << len(EventTypes), 1 << 63} {
		if typ.Index() != -1 || typ.String() != "" {
			t.Errorf("%#x: Index %d, String %q; want -1 and \"\"", uint64(typ), typ.Index(), typ.String())
		}
	}
	if _, ok := ParseEventType("NO_SUCH_EVENT"); ok {
		t.Error("an unknown name parsed")
	}
}

// TestEventRecords: a record keeps its type, exit arc count (up to
// maxExits) and time in 24 bytes, and an event's sequence number is its
// place in the whole log, also after a caller took the events of earlier
// commands.
func TestEventRecords(t *testing.T) {
	if n := unsafe.Sizeof(EventRecord{}); n != 24 {
		t.Errorf("an event record takes %d bytes, want 24", n)
	}
	for _, typ := range EventTypes {
		for _, exits := range []int{0, 1, 40000, maxExits} {
			r := newEventRecord(typ, exits, t0.UnixNano())
			if r.EventType() != typ || r.Exits() != exits || !r.At().Equal(t0) {
				t.Errorf("record of %s with %d exits: %s, %d, %v", typ, exits, r.EventType(), r.Exits(), r.At())
			}
		}
	}
	if r := newEventRecord(NodeTokenCompleted, maxExits+5, 0); r.Exits() != maxExits || r.EventType() != NodeTokenCompleted {
		t.Errorf("more exits than a record counts: %d, %s", r.Exits(), r.EventType())
	}

	k := testKernel()
	g := mkGraph(t, "seq",
		N{Name: "A", Start: true, Arcs: []string{"B"}},
		N{Name: "B", Type: graph.TypeWait, Custom: jobEl("work"), Arcs: []string{"C"}},
		N{Name: "C"})
	if err := k.Prepare(g); err != nil {
		t.Fatal(err)
	}
	p := start(t, k, g, nil)
	started := p.EventSeq
	if got := p.Event(len(p.Events) - 1).Seq; got != started || p.Event(0).Seq != 1 || p.Event(0).Type != ProcessCreated {
		t.Fatalf("the start's events: last seq %d, first %+v; want %d", got, p.Event(0), started)
	}
	p.Events = nil // taken by the caller, as the engine does
	e := k.Engine(t0)
	if err := e.CompleteJob(token(t, p, "B"), WorkResult{}); err != nil {
		t.Fatal(err)
	}
	if len(p.Events) == 0 {
		t.Fatal("the completion fired no events")
	}
	for i := range p.Events {
		if ev := p.Event(i); ev.Seq != started+int64(i)+1 {
			t.Errorf("event %d of the completion (%s): seq %d, want %d", i, ev.Type, ev.Seq, started+int64(i)+1)
		}
	}
	if last := p.Event(len(p.Events) - 1); last.Seq != p.EventSeq || last.Type != ProcessCompleted {
		t.Errorf("last event %s %d; want PROCESS_COMPLETED %d", last.Type, last.Seq, p.EventSeq)
	}
	for _, ev := range p.EventList() {
		if ev.Type == NodeTokenCompleted && ev.NodeToken().Node.Name == "B" && ev.ExitArcs != 1 {
			t.Errorf("B completed on %d arcs, want 1", ev.ExitArcs)
		}
	}
}
