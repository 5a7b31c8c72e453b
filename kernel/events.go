package kernel

import (
	"math/bits"
	"strings"
	"time"
)

// EventType is a kind of execution event. The values are bits so that
// listeners can subscribe with a mask; they never change.
type EventType uint64

// The execution event types, with their fixed bit values.
const (
	ProcessCreated         EventType = 1 << 0
	ProcessStarted         EventType = 1 << 1
	ProcessPendingComplete EventType = 1 << 2
	ProcessCompleted       EventType = 1 << 3
	ProcessPendingCancel   EventType = 1 << 4
	ProcessCanceled        EventType = 1 << 5
	NodeTokenCreated       EventType = 1 << 6
	NodeTokenAccepted      EventType = 1 << 7
	NodeTokenExecuted      EventType = 1 << 8
	NodeTokenDiscarded     EventType = 1 << 9
	NodeTokenSkipped       EventType = 1 << 10
	NodeTokenCompleted     EventType = 1 << 11
	NodeTokenBacktracked   EventType = 1 << 12
	ArcTokenCreated        EventType = 1 << 13
	ArcTokenProcessed      EventType = 1 << 14
	ArcTokenCompleted      EventType = 1 << 15
	ArcTokenBacktracked    EventType = 1 << 16
	ArcTokenMerged         EventType = 1 << 17
	NodeTokenDelayed       EventType = 1 << 18
	ArcTokenIncompleteJoin EventType = 1 << 19

	// The events of the work layer (see work.go): tasks for people, jobs
	// for programs, incidents, and changes made from outside the token game.
	TaskCreated      EventType = 1 << 20
	TaskClaimed      EventType = 1 << 21
	TaskReleased     EventType = 1 << 22
	TaskSaved        EventType = 1 << 23
	TaskCompleted    EventType = 1 << 24
	JobCreated       EventType = 1 << 25
	JobCompleted     EventType = 1 << 26
	JobFailed        EventType = 1 << 27
	JobErrorThrown   EventType = 1 << 28
	IncidentOpened   EventType = 1 << 29
	IncidentResolved EventType = 1 << 30
	EnvChanged       EventType = 1 << 31
	AttachmentSet    EventType = 1 << 32
	// ActionCompleted: an action of a schema node completed (its node
	// token is the event's), or the action of a Petri net transition
	// succeeded (its name is the transition's id).
	ActionCompleted EventType = 1 << 33

	// The events of Petri nets: a transition fired, an event no transition
	// welcomed. Their names hold the transition's id (the event's name).
	TransitionFired EventType = 1 << 34
	EventIgnored    EventType = 1 << 35
)

// EventTypes lists every event type in bit order.
var EventTypes = []EventType{
	ProcessCreated, ProcessStarted, ProcessPendingComplete, ProcessCompleted, ProcessPendingCancel,
	ProcessCanceled, NodeTokenCreated, NodeTokenAccepted, NodeTokenExecuted, NodeTokenDiscarded,
	NodeTokenSkipped, NodeTokenCompleted, NodeTokenBacktracked, ArcTokenCreated, ArcTokenProcessed,
	ArcTokenCompleted, ArcTokenBacktracked, ArcTokenMerged, NodeTokenDelayed, ArcTokenIncompleteJoin,
	TaskCreated, TaskClaimed, TaskReleased, TaskSaved, TaskCompleted, JobCreated, JobCompleted, JobFailed,
	JobErrorThrown, IncidentOpened, IncidentResolved, EnvChanged, AttachmentSet, ActionCompleted,
	TransitionFired, EventIgnored,
}

// eventNames are the names of the event types, in bit order.
var eventNames = [...]string{
	"PROCESS_CREATED", "PROCESS_STARTED", "PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED",
	"PROCESS_PENDING_CANCEL", "PROCESS_CANCELED", "NODE_TOKEN_CREATED", "NODE_TOKEN_ACCEPTED",
	"NODE_TOKEN_EXECUTED", "NODE_TOKEN_DISCARDED", "NODE_TOKEN_SKIPPED", "NODE_TOKEN_COMPLETED",
	"NODE_TOKEN_BACKTRACKED", "ARC_TOKEN_CREATED", "ARC_TOKEN_PROCESSED", "ARC_TOKEN_COMPLETED",
	"ARC_TOKEN_BACKTRACKED", "ARC_TOKEN_MERGED", "NODE_TOKEN_DELAYED", "ARC_TOKEN_INCOMPLETE_JOIN",
	"TASK_CREATED", "TASK_CLAIMED", "TASK_RELEASED", "TASK_SAVED", "TASK_COMPLETED", "JOB_CREATED",
	"JOB_COMPLETED", "JOB_FAILED", "JOB_ERROR_THROWN", "INCIDENT_OPENED", "INCIDENT_RESOLVED", "ENV_CHANGED",
	"ATTACHMENT_SET", "ACTION_COMPLETED", "TRANSITION_FIRED", "EVENT_IGNORED",
}

// Index is the type's position in EventTypes (its bit number), -1 if t is
// not one event type.
func (t EventType) Index() int {
	if i := bits.TrailingZeros64(uint64(t)); t == 1<<i && i < len(eventNames) {
		return i
	}
	return -1
}

// String is the type's name (PROCESS_CREATED …), "" if t is not one event
// type.
func (t EventType) String() string {
	if i := t.Index(); i >= 0 {
		return eventNames[i]
	}
	return ""
}

// ParseEventType maps an event name (PROCESS_CREATED …) onto its type.
func ParseEventType(name string) (EventType, bool) {
	for i, n := range eventNames {
		if n == name {
			return EventTypes[i], true
		}
	}
	return 0, false
}

// EventMask is a set of event types.
type EventMask uint64

// AllEvents subscribes to every event type.
const AllEvents EventMask = ^EventMask(0)

// allEvents32 is what AllEvents was while event types had 32 bits; a
// stored mask with this value subscribed to everything (see MaskFromStored).
const allEvents32 = 0xFFFFFFFF

// MaskFromStored reads a mask stored by any Veena: the 32-bit "all events"
// of the time before the work layer's event types means all of them.
func MaskFromStored(m uint64) EventMask {
	if m == allEvents32 {
		return AllEvents
	}
	return EventMask(m)
}

// MaskOf builds a mask from types; no types means all.
func MaskOf(types ...EventType) EventMask {
	if len(types) == 0 {
		return AllEvents
	}
	var m EventMask
	for _, t := range types {
		m |= EventMask(t)
	}
	return m
}

// Has reports whether the mask includes t.
func (m EventMask) Has(t EventType) bool { return m&EventMask(t) != 0 }

// Without clears the bits of types.
func (m EventMask) Without(types ...EventType) EventMask {
	for _, t := range types {
		m &^= EventMask(t)
	}
	return m
}

// EventActions are what listeners ask of the engine after an event.
type EventActions uint8

// The event actions.
const (
	// DelayNodeExecution, returned for NODE_TOKEN_ACCEPTED, keeps the node
	// from executing; user code executes it later.
	DelayNodeExecution EventActions = 1 << iota
	// DelayFinalizeComplete, returned for PROCESS_PENDING_COMPLETE, leaves the
	// process pending until FinalizeComplete is called.
	DelayFinalizeComplete
	// DelayFinalizeCancel, returned for PROCESS_PENDING_CANCEL, leaves the
	// process pending until FinalizeCancel is called.
	DelayFinalizeCancel
)

// EventRecord is one execution event as a process keeps it in Events:
// 24 bytes and no pointers, so that the event log, most of what a command
// allocates, costs the garbage collector nothing to scan and the engine no
// write barrier to fill. Its sequence number is its place in the log
// (Process.Event works it out). Event is the same with its process and
// sequence number, to read it by.
type EventRecord struct {
	at   int64 // unix nanoseconds
	node int32 // index+1 of the node token, 0 for none
	arc  int32 // index+1 of the arc token, 0 for none
	// names is 0 for no names, -1 for the default arc, n for
	// Process.eventNames[n-1].
	names int32
	// kind is the event type's bit index in its low 6 bits and, above
	// them, the number of arcs a NODE_TOKEN_COMPLETED token left on.
	kind uint32
}

// maxExits is the most exit arcs an event record counts: a completion on
// more arcs counts this many.
const maxExits = 1<<26 - 1

func newEventRecord(typ EventType, exits int, at int64) EventRecord {
	return EventRecord{at: at, kind: uint32(min(exits, maxExits))<<6 | uint32(typ.Index())&63}
}

// EventType is the event's type.
func (r *EventRecord) EventType() EventType { return 1 << (r.kind & 63) }

// Exits is the number of arcs a NODE_TOKEN_COMPLETED token left on.
func (r *EventRecord) Exits() int { return int(r.kind >> 6) }

// NodeTokenID is the ID (index in Process.NodeTokens) of the node token the
// event is about, or -1.
func (r *EventRecord) NodeTokenID() int { return int(r.node) - 1 }

// ArcTokenID is the ID (index in Process.ArcTokens) of the arc token the
// event is about, or -1.
func (r *EventRecord) ArcTokenID() int { return int(r.arc) - 1 }

// At is when the event fired (the command's time).
func (r *EventRecord) At() time.Time { return nsTime(r.at) }

// Event is an execution event with the process it belongs to: what
// listeners are told, and what Process.Event reads out of Events.
type Event struct {
	EventRecord
	Process *Process
	Seq     int64 // 1-based position in the process's event log
	Type    EventType
	// ExitArcs is the number of arcs a NODE_TOKEN_COMPLETED token left on.
	ExitArcs int
}

// NodeToken is the node token the event is about, or nil.
func (e *Event) NodeToken() *NodeToken {
	if e.node == 0 {
		return nil
	}
	return e.Process.NodeTokens[e.node-1]
}

// ArcToken is the arc token the event is about, or nil.
func (e *Event) ArcToken() *ArcToken {
	if e.arc == 0 {
		return nil
	}
	return e.Process.ArcTokens[e.arc-1]
}

// ArcNames are the exit arc names of NODE_TOKEN_COMPLETED and
// NODE_TOKEN_SKIPPED ("" for the default arcs), or nil.
func (e *Event) ArcNames() []string {
	switch {
	case e.names == 0:
		return nil
	case e.names < 0:
		return defaultArcs
	}
	return e.Process.eventNames[e.names-1]
}

// String renders the event as "TYPE subject", e.g. "NODE_TOKEN_ACCEPTED B".
func (e *Event) String() string {
	var b strings.Builder
	b.WriteString(e.Type.String())
	if a := e.ArcToken(); a != nil {
		b.WriteString(" " + a.Arc.From.QualifiedName() + "->" + a.Arc.To.QualifiedName())
	} else if t := e.NodeToken(); t != nil {
		b.WriteString(" " + t.Node.QualifiedName())
	}
	return b.String()
}

// Listener is told of execution events. It may act on the engine (complete
// tokens, set attributes) and returns the event actions it asks for.
type Listener interface {
	Notify(e *Engine, ev *Event) EventActions
}

// ListenerFunc adapts a function to a Listener.
type ListenerFunc func(e *Engine, ev *Event) EventActions

// Notify calls f.
func (f ListenerFunc) Notify(e *Engine, ev *Event) EventActions { return f(e, ev) }
