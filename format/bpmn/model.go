package bpmn

import (
	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/graph"
)

// Format is the name of the BPMN format in definitions.
const Format = "bpmn"

// The XML namespaces the importer reads.
const (
	NSModel    = "http://www.omg.org/spec/BPMN/20100524/MODEL"
	NSZeebe    = "http://camunda.org/schema/zeebe/1.0"
	NSCamunda  = "http://camunda.org/schema/1.0/bpmn"
	NSActiviti = "http://activiti.org/bpmn"
	NSFlowable = "http://flowable.org/bpmn"
	NSXSI      = "http://www.w3.org/2001/XMLSchema-instance"
)

// vendorSpaces are the namespaces of the vendor attributes Camunda 7,
// Activiti and Flowable write (the same names in each).
var vendorSpaces = []string{NSCamunda, NSActiviti, NSFlowable}

// Expr is an expression of the model, compiled at load time.
type Expr struct {
	Text    string
	Lang    expr.Language // "" for a static value (Text as is)
	Program expr.Program  // nil for a static value
	Pos     graph.Pos
}

// IsStatic reports whether the expression is a plain value.
func (x *Expr) IsStatic() bool { return x != nil && x.Program == nil }

// EventKind is what an event catches or throws.
type EventKind string

// The event kinds.
const (
	EventNone        EventKind = "none"
	EventMessage     EventKind = "message"
	EventTimer       EventKind = "timer"
	EventSignal      EventKind = "signal"
	EventError       EventKind = "error"
	EventEscalation  EventKind = "escalation"
	EventTerminate   EventKind = "terminate"
	EventLink        EventKind = "link"
	EventCompensate  EventKind = "compensate"
	EventConditional EventKind = "conditional"
	EventCancel      EventKind = "cancel"
)

// TimerKind is how a timer is given.
type TimerKind string

// The timer kinds.
const (
	TimeDate     TimerKind = "date"
	TimeDuration TimerKind = "duration"
	TimeCycle    TimerKind = "cycle"
)

// Event is what an event element catches or throws.
type Event struct {
	Kind EventKind
	// Name: the message, signal or link name; the error or escalation code
	// ("" catches every code).
	Name string
	// Ref is the id of the message, signal, error or escalation element.
	Ref string
	// CorrelationKey is a message's key, evaluated when a subscription opens.
	CorrelationKey *Expr
	Timer          *Expr
	TimerKind      TimerKind
	// Activity names the activity a compensation throw compensates ("": the scope).
	Activity string
	Pos      graph.Pos
}

// Mapping is one input or output mapping: Target gets the value of Source.
type Mapping struct {
	Source *Expr
	Target string
}

// Assignment is who may work on a user task.
type Assignment struct {
	Assignee        *Expr
	CandidateUsers  *Expr // a list, or a comma-separated string
	CandidateGroups *Expr
	Queue           string // MarkLogic's Queue resource role
	DueDate         *Expr
	FollowUpDate    *Expr
	Priority        *Expr
	FormKey         string
}

// Loop is an activity's standard loop or multi-instance characteristics.
type Loop struct {
	MultiInstance bool
	Sequential    bool
	// Standard loop.
	Condition  *Expr
	TestBefore bool
	Maximum    int
	// Multi-instance.
	Cardinality         *Expr
	Collection          *Expr
	ElementVariable     string
	OutputCollection    string
	OutputElement       *Expr
	CompletionCondition *Expr
	Pos                 graph.Pos
}

// Element is one flow element of a process, as the importer understood it.
type Element struct {
	ID, Name string
	Kind     string // the BPMN element's local name: userTask, startEvent, …
	Pos      graph.Pos
	// Scope is the sub-process the element is inside, nil at process level.
	Scope *Element
	// Children are the elements of a sub-process, in document order.
	Children []*Element

	Event *Event // events
	// Interrupting: a start event of an event sub-process, or a boundary
	// event (cancelActivity).
	Interrupting bool
	AttachedTo   string   // boundary events: the activity's id
	Boundaries   []string // activities: their boundary events' ids, in document order
	Default      string   // the default flow's id
	// Outgoing are the element's outgoing arcs in its node's order, worked
	// out once by Compile so that a token leaving the element looks
	// nothing up: OutNames their names, OutFlows their sequence flows (nil
	// for the arc a link throw adds to its catch). Shared: read only.
	OutNames []string
	OutFlows []*Flow
	// AllOut is true when a token leaving the element takes every outgoing
	// arc: there is one at least, no flow has a condition and there is no
	// default flow.
	AllOut bool
	Loop   *Loop
	// TriggeredByEvent marks an event sub-process.
	TriggeredByEvent bool
	ForCompensation  bool
	// CompensatedBy is the id of the activity's compensation handler.
	CompensatedBy string

	// Work: the job type and headers of service, send, business-rule
	// tasks and message throw events, their retries.
	JobType *Expr
	Headers map[string]string
	Retries int
	Inputs  []Mapping
	Outputs []Mapping
	// PropagateAllChildVariables: whether a call activity copies every
	// variable of its child back when there are no output mappings.
	PropagateAll bool

	Assignment *Assignment // user tasks

	Script         string // script tasks: the script (JavaScript) or FEEL expression
	ScriptLang     expr.Language
	ScriptProgram  *Expr // FEEL/CEL scripts
	ResultVariable string

	CalledElement *Expr // call activities

	// MessageName and CorrelationKey: receive tasks (their Event holds them for events).
	Gateway string // gateways: exclusive, parallel, inclusive, eventBased
}

// Flow is a sequence flow.
type Flow struct {
	ID, Name       string
	Source, Target string
	Condition      *Expr
	Pos            graph.Pos
}

// Process is one process element of a file.
type Process struct {
	ID, Name   string
	Executable bool
	Pos        graph.Pos
	Elements   []*Element // every flow element, sub-processes' included, in document order
	Flows      []*Flow
	byID       map[string]*Element
	flows      map[string]*Flow
}

// Flow returns the process's sequence flow with that id, or nil.
func (p *Process) Flow(id string) *Flow { return p.flows[id] }

// Element returns the process's flow element with that id, or nil.
func (p *Process) Element(id string) *Element { return p.byID[id] }

// Definitions is a parsed BPMN file.
type Definitions struct {
	File      string
	Source    []byte
	Processes []*Process
	// Participants maps a process id to its pool's name (collaborations).
	Participants map[string]string
}

// Props is what a compiled definition's graph carries for the bpmn node
// types (graph.Graph.Props).
type Props struct {
	Process *Process
	// Listeners lists the event sub-processes (by id) of each scope: ""
	// for the process level, else the sub-process id.
	Listeners map[string][]string
	// HasScopes is true when the process has sub-processes, event
	// sub-processes, multi-instance activities or inclusive joins: the
	// node types then have bookkeeping to do when a step settles.
	HasScopes bool
	// StartEvents are the start events at process level that are not none
	// starts (message, timer, signal), by id.
	StartEvents []*Element
}
