package bpmn

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/graph"
)

// Parse reads a BPMN 2.0 file: its processes with their flow elements and
// sequence flows, the messages, signals, errors and escalations they refer
// to, and the vendor extensions of Camunda 8 (zeebe:), Camunda 7,
// Activiti and Flowable for job types, assignments and mappings.
// Expressions are compiled. Every element Veena cannot run is refused,
// naming it with its line and column; diagram interchange is left for
// drawing (the source is kept). On failure the error is a
// *graph.LoadError listing every problem found.
func Parse(file string, src []byte, opts ...Option) (*Definitions, []graph.Problem, error) {
	o := buildOptions(opts)
	root, lerr := parseXML(file, src, o)
	if lerr != nil {
		return nil, nil, finish(lerr)
	}
	p := &parser{file: file, opts: o, errs: &graph.LoadError{File: file},
		messages: map[string]*message{}, signals: map[string]string{}, errors: map[string]string{},
		escalations: map[string]string{}, resources: map[string]string{}, items: map[string]bool{}}
	if root.Local != "definitions" || root.Space != NSModel {
		where := "in no namespace"
		if root.Space != "" {
			where = "in namespace " + strconv.Quote(root.Space)
		}
		if root.Local == "definitions" {
			p.errs.Add(root.Pos, "<definitions> is %s; a BPMN 2.0 file uses %q", where, NSModel)
		} else {
			p.errs.Add(root.Pos, "root element is <%s>, want <definitions> of BPMN 2.0", root.Local)
		}
		return nil, nil, finish(p.errs)
	}
	p.root = root
	d := &Definitions{File: file, Source: src, Participants: map[string]string{}}
	p.defaultLang = root.get("expressionLanguage")
	for _, v := range root.NS {
		if v == NSZeebe {
			p.zeebe = true
		}
	}
	// Global elements first: processes refer to them by id.
	for _, c := range root.Children {
		if c.Space != NSModel {
			continue
		}
		switch c.Local {
		case "message":
			m := &message{name: c.get("name"), pos: c.Pos}
			if m.name == "" {
				m.name = c.get("id")
			}
			if ext := c.child(NSModel, "extensionElements"); ext != nil {
				if sub := ext.child(NSZeebe, "subscription"); sub != nil {
					m.key = sub.get("correlationKey")
					m.keyPos = sub.Pos
				}
			}
			p.messages[c.get("id")] = m
		case "signal":
			n := c.get("name")
			if n == "" {
				n = c.get("id")
			}
			p.signals[c.get("id")] = n
		case "error":
			code := c.get("errorCode")
			if code == "" {
				code = c.get("name")
			}
			if code == "" {
				code = c.get("id")
			}
			p.errors[c.get("id")] = code
		case "escalation":
			code := c.get("escalationCode")
			if code == "" {
				code = c.get("name")
			}
			if code == "" {
				code = c.get("id")
			}
			p.escalations[c.get("id")] = code
		case "resource":
			p.resources[c.get("id")] = c.get("name")
		case "collaboration":
			for _, part := range c.childrenNamed(NSModel, "participant") {
				if ref := part.get("processRef"); ref != "" {
					d.Participants[ref] = part.get("name")
				}
			}
		}
	}
	for _, c := range root.Children {
		if c.Space == NSModel && c.Local == "process" {
			d.Processes = append(d.Processes, p.process(c))
		}
	}
	if len(d.Processes) == 0 {
		p.errs.Add(root.Pos, "the file has no <process>: nothing to run")
	}
	if err := finish(p.errs); err != nil {
		return nil, nil, err
	}
	return d, p.warnings, nil
}

type message struct {
	name   string
	key    string
	keyPos graph.Pos
	pos    graph.Pos
}

type parser struct {
	file        string
	opts        options
	errs        *graph.LoadError
	warnings    []graph.Problem
	root        *elem
	zeebe       bool
	defaultLang string
	messages    map[string]*message
	signals     map[string]string
	errors      map[string]string
	escalations map[string]string
	resources   map[string]string
	items       map[string]bool

	proc  *Process
	nodes int
}

func (p *parser) add(pos graph.Pos, format string, args ...any) { p.errs.Add(pos, format, args...) }

func (p *parser) warn(pos graph.Pos, format string, args ...any) {
	p.warnings = append(p.warnings, graph.Problem{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// refuse reports an element Veena cannot run.
func (p *parser) refuse(e *elem, what string) {
	id := e.get("id")
	if id != "" {
		p.add(e.Pos, "<%s id=%q>: %s", e.Local, id, what)
	} else {
		p.add(e.Pos, "<%s>: %s", e.Local, what)
	}
}

const maxProblems = 50

// finish sorts the problems by position and caps their number.
func finish(e *graph.LoadError) error {
	sort.SliceStable(e.Problems, func(i, j int) bool {
		a, b := e.Problems[i], e.Problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	if n := len(e.Problems); n > maxProblems {
		e.Problems = append(e.Problems[:maxProblems:maxProblems], graph.Problem{Message: fmt.Sprintf("and %d more problems", n-maxProblems)})
	}
	return e.OrNil()
}

func (p *parser) process(pe *elem) *Process {
	proc := &Process{ID: pe.get("id"), Name: pe.get("name"), Pos: pe.Pos, byID: map[string]*Element{}}
	if proc.ID == "" {
		p.add(pe.Pos, "<process> has no id")
	}
	switch strings.TrimSpace(pe.get("isExecutable")) {
	case "true", "1":
		proc.Executable = true
	}
	p.proc = proc
	p.nodes = 0
	p.flowElements(pe, nil)
	// Boundary events attach to activities of the same process.
	for _, el := range proc.Elements {
		if el.Kind != "boundaryEvent" {
			continue
		}
		act := proc.byID[el.AttachedTo]
		switch {
		case el.AttachedTo == "":
			p.add(el.Pos, "<boundaryEvent id=%q> has no attachedToRef", el.ID)
		case act == nil:
			p.add(el.Pos, "<boundaryEvent id=%q> is attached to %q, which is not an element of process %q", el.ID, el.AttachedTo, proc.ID)
		case !isActivity(act.Kind):
			p.add(el.Pos, "<boundaryEvent id=%q> is attached to <%s id=%q>, which is not an activity", el.ID, act.Kind, act.ID)
		case act.Scope != el.Scope:
			p.add(el.Pos, "<boundaryEvent id=%q> is not in the same scope as the activity %q it is attached to", el.ID, act.ID)
		default:
			act.Boundaries = append(act.Boundaries, el.ID)
			if el.Event != nil && el.Event.Kind == EventCompensate {
				// The handler is joined by an association; found below.
				continue
			}
		}
	}
	// Sequence flows must join elements of one scope.
	for _, f := range proc.Flows {
		src, dst := proc.byID[f.Source], proc.byID[f.Target]
		switch {
		case src == nil:
			p.add(f.Pos, "<sequenceFlow id=%q>: source %q is not a flow element of process %q", f.ID, f.Source, proc.ID)
		case dst == nil:
			p.add(f.Pos, "<sequenceFlow id=%q>: target %q is not a flow element of process %q", f.ID, f.Target, proc.ID)
		case src.Scope != dst.Scope:
			p.add(f.Pos, "<sequenceFlow id=%q> crosses the boundary of a sub-process (from %q to %q)", f.ID, f.Source, f.Target)
		}
	}
	proc.flows = make(map[string]*Flow, len(proc.Flows))
	for _, f := range proc.Flows {
		proc.flows[f.ID] = f
	}
	for _, el := range proc.Elements {
		if el.Default == "" {
			continue
		}
		if f := proc.flows[el.Default]; f == nil || f.Source != el.ID {
			p.add(el.Pos, "<%s id=%q>: default flow %q is not one of its outgoing sequence flows", el.Kind, el.ID, el.Default)
		}
	}
	p.links(proc)
	p.compensation(pe, proc)
	return proc
}

// links checks that every link throw has one catch of its name in its scope.
func (p *parser) links(proc *Process) {
	for _, el := range proc.Elements {
		if el.Kind != "intermediateThrowEvent" || el.Event == nil || el.Event.Kind != EventLink {
			continue
		}
		n := 0
		for _, c := range proc.Elements {
			if c.Kind == "intermediateCatchEvent" && c.Event != nil && c.Event.Kind == EventLink && c.Event.Name == el.Event.Name && c.Scope == el.Scope {
				n++
			}
		}
		switch n {
		case 0:
			p.add(el.Pos, "<intermediateThrowEvent id=%q>: no link catch event named %q in its scope", el.ID, el.Event.Name)
		case 1:
		default:
			p.add(el.Pos, "<intermediateThrowEvent id=%q>: %d link catch events are named %q in its scope", el.ID, n, el.Event.Name)
		}
	}
}

// compensation joins activities to their compensation handlers through
// the associations of their compensation boundary events.
func (p *parser) compensation(pe *elem, proc *Process) {
	var assocs []*elem
	var walk func(e *elem)
	walk = func(e *elem) {
		for _, c := range e.Children {
			if c.Space != NSModel {
				continue
			}
			if c.Local == "association" {
				assocs = append(assocs, c)
			}
			if c.Local == "subProcess" {
				walk(c)
			}
		}
	}
	walk(pe)
	for _, el := range proc.Elements {
		if el.Kind != "boundaryEvent" || el.Event == nil || el.Event.Kind != EventCompensate {
			continue
		}
		var handler *Element
		for _, a := range assocs {
			if a.get("sourceRef") == el.ID {
				handler = proc.byID[a.get("targetRef")]
			}
		}
		switch {
		case handler == nil:
			p.add(el.Pos, "<boundaryEvent id=%q>: a compensation boundary event needs an association to its handler", el.ID)
		case !handler.ForCompensation:
			p.add(el.Pos, "<boundaryEvent id=%q>: its handler %q is not marked isForCompensation", el.ID, handler.ID)
		default:
			if act := proc.byID[el.AttachedTo]; act != nil {
				act.CompensatedBy = handler.ID
			}
		}
	}
}

func isActivity(kind string) bool {
	switch kind {
	case "task", "userTask", "manualTask", "serviceTask", "sendTask", "receiveTask", "scriptTask",
		"businessRuleTask", "callActivity", "subProcess":
		return true
	}
	return false
}

// flowElements reads the flow elements of a process or sub-process.
func (p *parser) flowElements(container *elem, scope *Element) {
	for _, c := range container.Children {
		if c.Space != NSModel {
			continue // extensions and diagram content of other namespaces
		}
		switch c.Local {
		case "sequenceFlow":
			p.sequenceFlow(c)
		case "startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent",
			"task", "userTask", "manualTask", "serviceTask", "sendTask", "receiveTask", "scriptTask",
			"businessRuleTask", "callActivity", "subProcess",
			"exclusiveGateway", "parallelGateway", "inclusiveGateway", "eventBasedGateway":
			p.flowNode(c, scope)
		case "complexGateway":
			p.refuse(c, "complex gateways are not supported (use an inclusive gateway, or exclusive and parallel gateways)")
		case "transaction":
			p.refuse(c, "transaction sub-processes (and their cancel events) are not supported")
		case "adHocSubProcess":
			p.refuse(c, "ad-hoc sub-processes are not supported")
		case "callChoreography", "choreographyTask", "subChoreography", "implicitThrowEvent":
			p.refuse(c, "choreographies are not executable")
		case "laneSet", "dataObject", "dataObjectReference", "dataStoreReference", "textAnnotation", "association",
			"group", "ioSpecification", "property", "documentation", "extensionElements", "incoming", "outgoing",
			"auditing", "monitoring", "resourceRole", "performer", "potentialOwner", "humanPerformer",
			"correlationSubscription", "supportedInterfaceRef", "category",
			"multiInstanceLoopCharacteristics", "standardLoopCharacteristics":
			// Descriptive content, lanes and data artefacts: kept in the
			// source for drawing, not executed.
		default:
			p.refuse(c, "this element is not supported")
		}
	}
}

func (p *parser) sequenceFlow(c *elem) {
	f := &Flow{ID: c.get("id"), Name: c.get("name"), Source: c.get("sourceRef"), Target: c.get("targetRef"), Pos: c.Pos}
	if f.ID == "" {
		f.ID = fmt.Sprintf("sequenceFlow@%d:%d", c.Pos.Line, c.Pos.Column)
		p.warn(c.Pos, "<sequenceFlow> from %q to %q has no id; it is called %q", f.Source, f.Target, f.ID)
	}
	if ce := c.child(NSModel, "conditionExpression"); ce != nil {
		if strings.TrimSpace(ce.Text) == "" {
			// Descriptive models draw conditional flows with no expression.
			p.warn(ce.Pos, "<sequenceFlow id=%q>: empty condition expression, taken as always true", f.ID)
		} else {
			f.Condition = p.expression(ce, ce.Text, ce.get("language"), exprCondition)
		}
	}
	p.proc.Flows = append(p.proc.Flows, f)
}

func (p *parser) flowNode(c *elem, scope *Element) {
	p.nodes++
	if p.nodes > p.opts.maxNodes {
		if p.nodes == p.opts.maxNodes+1 {
			p.add(c.Pos, "process %q has more than %d flow elements", p.proc.ID, p.opts.maxNodes)
		}
		return
	}
	el := &Element{ID: c.get("id"), Name: strings.TrimSpace(c.get("name")), Kind: c.Local, Pos: c.Pos, Scope: scope, Default: c.get("default")}
	if el.ID == "" {
		p.add(c.Pos, "<%s> has no id", c.Local)
		return
	}
	if prev := p.proc.byID[el.ID]; prev != nil {
		p.add(c.Pos, "<%s id=%q>: id already used at line %d", c.Local, el.ID, prev.Pos.Line)
		return
	}
	p.proc.byID[el.ID] = el
	p.proc.Elements = append(p.proc.Elements, el)
	if scope != nil {
		scope.Children = append(scope.Children, el)
	}
	switch c.Local {
	case "startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent":
		p.event(c, el)
	case "exclusiveGateway":
		el.Gateway = "exclusive"
	case "parallelGateway":
		el.Gateway = "parallel"
	case "inclusiveGateway":
		el.Gateway = "inclusive"
	case "eventBasedGateway":
		el.Gateway = "eventBased"
		if c.get("eventGatewayType") == "Parallel" || c.get("instantiate") == "true" {
			p.refuse(c, "parallel or instantiating event-based gateways are not supported")
		}
	default:
		p.activity(c, el)
	}
}

// ---- events

func (p *parser) event(c *elem, el *Element) {
	var defs []*elem
	for _, d := range c.Children {
		if d.Space == NSModel && strings.HasSuffix(d.Local, "EventDefinition") {
			defs = append(defs, d)
		}
		if d.Space == NSModel && d.Local == "eventDefinitionRef" {
			p.refuse(c, "events referring to global event definitions (eventDefinitionRef) are not supported")
		}
	}
	if len(defs) > 1 {
		p.refuse(c, fmt.Sprintf("an event with %d event definitions (multiple or parallel multiple) is not supported", len(defs)))
		return
	}
	ev := &Event{Kind: EventNone, Pos: c.Pos}
	if len(defs) == 1 {
		ev = p.eventDefinition(c, defs[0])
		if ev == nil {
			return
		}
	}
	el.Event = ev
	switch c.Local {
	case "startEvent":
		el.Interrupting = c.get("isInterrupting") != "false"
	case "boundaryEvent":
		el.AttachedTo = c.get("attachedToRef")
		el.Interrupting = c.get("cancelActivity") != "false"
		if ev.Kind == EventError {
			el.Interrupting = true
		}
	}
	if ev.Kind == EventMessage && c.Local != "startEvent" && c.Local != "boundaryEvent" && c.Local != "intermediateCatchEvent" {
		// Message throw and end events are jobs (as Camunda 8 runs them).
		p.work(c, el)
	}
	if c.Local == "intermediateCatchEvent" || c.Local == "boundaryEvent" {
		p.mappings(c, el)
	}
	if c.Local == "endEvent" || c.Local == "intermediateThrowEvent" {
		p.mappings(c, el)
	}
	p.checkEventPlace(c, el)
}

// checkEventPlace refuses event definitions where BPMN (or Veena) does not
// run them.
func (p *parser) checkEventPlace(c *elem, el *Element) {
	k := el.Event.Kind
	bad := func(what string) { p.refuse(c, what) }
	switch c.Local {
	case "startEvent":
		switch k {
		case EventNone, EventMessage, EventTimer, EventSignal:
		case EventError, EventEscalation, EventCompensate:
			if el.Scope == nil || !isEventSubProcessStart(el) {
				bad(fmt.Sprintf("%s start events are only allowed in event sub-processes", k))
			}
		default:
			bad(fmt.Sprintf("%s start events are not supported", k))
		}
	case "endEvent":
		switch k {
		case EventNone, EventTerminate, EventError, EventEscalation, EventMessage, EventSignal, EventCompensate:
		default:
			bad(fmt.Sprintf("%s end events are not supported", k))
		}
	case "intermediateCatchEvent":
		switch k {
		case EventMessage, EventTimer, EventSignal, EventLink:
		case EventNone:
			bad("an intermediate catch event needs an event definition")
		default:
			bad(fmt.Sprintf("%s intermediate catch events are not supported", k))
		}
	case "intermediateThrowEvent":
		switch k {
		case EventNone, EventMessage, EventSignal, EventLink, EventEscalation, EventCompensate:
		default:
			bad(fmt.Sprintf("%s intermediate throw events are not supported", k))
		}
	case "boundaryEvent":
		switch k {
		case EventMessage, EventTimer, EventSignal, EventError, EventEscalation, EventCompensate:
		case EventNone:
			bad("a boundary event needs an event definition")
		default:
			bad(fmt.Sprintf("%s boundary events are not supported", k))
		}
	}
}

// isEventSubProcessStart reports whether el is the start event of an
// event sub-process (its scope is one).
func isEventSubProcessStart(el *Element) bool { return el.Scope != nil && el.Scope.TriggeredByEvent }

func (p *parser) eventDefinition(c, d *elem) *Event {
	ev := &Event{Pos: d.Pos}
	switch d.Local {
	case "messageEventDefinition":
		ev.Kind = EventMessage
		ev.Ref = localRef(d.get("messageRef"))
		if ev.Ref == "" {
			// Descriptive models leave the message out: the event's name
			// (or id) names it.
			ev.Name = firstNonEmpty(c.get("name"), c.get("id"))
			p.warn(d.Pos, "<%s id=%q> names no <message>; it takes messages named %q", c.Local, c.get("id"), ev.Name)
			return ev
		}
		m := p.messages[ev.Ref]
		if m == nil {
			p.add(d.Pos, "<%s id=%q>: messageRef %q names no <message>", c.Local, c.get("id"), ev.Ref)
			return nil
		}
		ev.Name = m.name
		if m.key != "" {
			ev.CorrelationKey = p.expression(nil, m.key, "", exprValue)
			if ev.CorrelationKey != nil {
				ev.CorrelationKey.Pos = m.keyPos
			}
		}
	case "signalEventDefinition":
		ev.Kind = EventSignal
		ev.Ref = localRef(d.get("signalRef"))
		ev.Name = p.signals[ev.Ref]
		if ev.Name == "" {
			if ev.Ref == "" {
				ev.Name = firstNonEmpty(c.get("name"), c.get("id"))
				p.warn(d.Pos, "<%s id=%q> names no <signal>; its signal is named %q", c.Local, c.get("id"), ev.Name)
			} else {
				ev.Name = ev.Ref // Flowable's rule: an unknown ref is the name itself
			}
		}
	case "errorEventDefinition":
		ev.Kind = EventError
		ev.Ref = localRef(d.get("errorRef"))
		if ev.Ref != "" {
			if code, ok := p.errors[ev.Ref]; ok {
				ev.Name = code
			} else {
				ev.Name = ev.Ref // an unknown errorRef is the error code itself
			}
		}
		if ev.Name == "" && (c.Local == "endEvent" || c.Local == "intermediateThrowEvent") {
			p.warn(d.Pos, "<%s id=%q> throws an error with no code: only catch-all error events catch it", c.Local, c.get("id"))
		}
	case "escalationEventDefinition":
		ev.Kind = EventEscalation
		ev.Ref = localRef(d.get("escalationRef"))
		if ev.Ref != "" {
			if code, ok := p.escalations[ev.Ref]; ok {
				ev.Name = code
			} else {
				ev.Name = ev.Ref
			}
		}
	case "timerEventDefinition":
		ev.Kind = EventTimer
		for _, t := range d.Children {
			if t.Space != NSModel {
				continue
			}
			switch t.Local {
			case "timeDate":
				ev.TimerKind = TimeDate
			case "timeDuration":
				ev.TimerKind = TimeDuration
			case "timeCycle":
				ev.TimerKind = TimeCycle
			default:
				continue
			}
			if strings.TrimSpace(t.Text) == "" {
				p.refuse(c, "a timer with an empty "+t.Local)
				return nil
			}
			ev.Timer = p.expression(t, t.Text, t.get("language"), exprTimer)
			if ev.Timer != nil && ev.Timer.Pos.Line == 0 {
				ev.Timer.Pos = t.Pos
			}
		}
		if ev.Timer == nil {
			if ev.TimerKind == "" {
				p.refuse(c, "a timer event needs a timeDate, timeDuration or timeCycle")
			}
			return nil
		}
		if ev.TimerKind == TimeCycle && c.Local == "intermediateCatchEvent" {
			p.refuse(c, "an intermediate timer catch event takes a date or a duration, not a cycle")
			return nil
		}
		if ev.TimerKind == TimeCycle && c.Local == "boundaryEvent" && c.get("cancelActivity") != "false" {
			p.refuse(c, "an interrupting timer boundary event takes a date or a duration, not a cycle")
			return nil
		}
	case "terminateEventDefinition":
		ev.Kind = EventTerminate
	case "linkEventDefinition":
		ev.Kind = EventLink
		ev.Name = d.get("name")
		if ev.Name == "" {
			ev.Name = c.get("name")
		}
		if ev.Name == "" {
			p.refuse(c, "a link event needs a name")
			return nil
		}
	case "compensateEventDefinition":
		ev.Kind = EventCompensate
		ev.Activity = d.get("activityRef")
		if d.get("waitForCompletion") == "false" {
			p.refuse(c, "compensation that does not wait for completion (waitForCompletion=\"false\") is not supported")
			return nil
		}
	case "conditionalEventDefinition":
		p.refuse(c, "conditional events are not supported")
		return nil
	case "cancelEventDefinition":
		p.refuse(c, "cancel events (of transaction sub-processes) are not supported")
		return nil
	default:
		p.refuse(c, "<"+d.Local+"> is not supported")
		return nil
	}
	return ev
}

// localRef strips a namespace prefix from an id reference (tns:Message_1).
func localRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

// ---- activities

func (p *parser) activity(c *elem, el *Element) {
	el.ForCompensation = c.get("isForCompensation") == "true"
	p.loop(c, el)
	p.mappings(c, el)
	switch c.Local {
	case "task", "manualTask":
	case "userTask":
		p.userTask(c, el)
	case "serviceTask", "sendTask":
		p.work(c, el)
	case "businessRuleTask":
		if ext := c.child(NSModel, "extensionElements"); ext != nil && ext.child(NSZeebe, "calledDecision") != nil {
			p.refuse(c, "DMN decisions (zeebe:calledDecision) are not supported; give the task a zeebe:taskDefinition to run it as a job")
			return
		}
		p.work(c, el)
	case "scriptTask":
		p.script(c, el)
	case "receiveTask":
		ref := localRef(c.get("messageRef"))
		m := p.messages[ref]
		if m == nil {
			p.refuse(c, "a receive task needs a messageRef naming a <message>")
			return
		}
		el.Event = &Event{Kind: EventMessage, Ref: ref, Name: m.name, Pos: c.Pos}
		if m.key != "" {
			el.Event.CorrelationKey = p.expression(nil, m.key, "", exprValue)
			if el.Event.CorrelationKey != nil {
				el.Event.CorrelationKey.Pos = m.keyPos
			}
		}
	case "callActivity":
		p.callActivity(c, el)
	case "subProcess":
		el.TriggeredByEvent = c.get("triggeredByEvent") == "true"
		p.flowElements(c, el)
		p.subProcessStarts(c, el)
	}
}

// subProcessStarts checks a sub-process's start events: an embedded one has
// exactly one none start; an event sub-process exactly one start with a
// trigger.
func (p *parser) subProcessStarts(c *elem, el *Element) {
	var starts []*Element
	for _, ch := range el.Children {
		if ch.Kind == "startEvent" {
			starts = append(starts, ch)
		}
	}
	if el.TriggeredByEvent {
		if len(starts) != 1 {
			p.refuse(c, fmt.Sprintf("an event sub-process needs exactly one start event, not %d", len(starts)))
			return
		}
		if starts[0].Event == nil || starts[0].Event.Kind == EventNone {
			p.refuse(c, "the start event of an event sub-process needs a trigger (message, timer, signal, error, escalation)")
		}
		return
	}
	switch len(starts) {
	case 0:
		// BPMN: with no start event, the elements with no incoming flow start.
		p.warn(c.Pos, "<subProcess id=%q> has no start event: its elements with no incoming sequence flow start it", el.ID)
		return
	case 1:
	default:
		p.refuse(c, fmt.Sprintf("an embedded sub-process needs one none start event, not %d", len(starts)))
		return
	}
	if starts[0].Event != nil && starts[0].Event.Kind != EventNone {
		p.refuse(c, "the start event of an embedded sub-process must be a none start event")
	}
}

func (p *parser) loop(c *elem, el *Element) {
	if s := c.child(NSModel, "standardLoopCharacteristics"); s != nil {
		l := &Loop{TestBefore: s.get("testBefore") == "true", Pos: s.Pos}
		if m := s.get("loopMaximum"); m != "" {
			n, err := strconv.Atoi(strings.TrimSpace(m))
			if err != nil || n < 0 {
				p.add(s.Pos, "<%s id=%q>: loopMaximum %q is not a number", c.Local, el.ID, m)
			}
			l.Maximum = n
		}
		if lc := s.child(NSModel, "loopCondition"); lc != nil && strings.TrimSpace(lc.Text) != "" {
			l.Condition = p.expression(lc, lc.Text, lc.get("language"), exprCondition)
		}
		if l.Condition == nil && l.Maximum == 0 {
			p.refuse(c, "a standard loop needs a loopCondition or a loopMaximum, or it never ends")
		}
		el.Loop = l
		return
	}
	mi := c.child(NSModel, "multiInstanceLoopCharacteristics")
	if mi == nil {
		return
	}
	l := &Loop{MultiInstance: true, Sequential: mi.get("isSequential") == "true", Pos: mi.Pos}
	if lc := mi.child(NSModel, "loopCardinality"); lc != nil && strings.TrimSpace(lc.Text) != "" {
		l.Cardinality = p.expression(lc, lc.Text, lc.get("language"), exprValue)
	}
	if cc := mi.child(NSModel, "completionCondition"); cc != nil && strings.TrimSpace(cc.Text) != "" {
		l.CompletionCondition = p.expression(cc, cc.Text, cc.get("language"), exprCondition)
	}
	if ref := mi.child(NSModel, "loopDataInputRef"); ref != nil && strings.TrimSpace(ref.Text) != "" {
		l.Collection = p.expression(ref, ref.Text, "", exprName)
	}
	if item := mi.child(NSModel, "inputDataItem"); item != nil {
		l.ElementVariable = firstNonEmpty(item.get("name"), item.get("id"))
	}
	if ref := mi.child(NSModel, "loopDataOutputRef"); ref != nil {
		l.OutputCollection = strings.TrimSpace(ref.Text)
	}
	if item := mi.child(NSModel, "outputDataItem"); item != nil {
		if n := firstNonEmpty(item.get("name"), item.get("id")); n != "" {
			l.OutputElement = p.expression(nil, "="+n, "", exprValue)
		}
	}
	if ext := mi.child(NSModel, "extensionElements"); ext != nil {
		if z := ext.child(NSZeebe, "loopCharacteristics"); z != nil {
			if v := z.get("inputCollection"); v != "" {
				l.Collection = p.expression(z, v, "", exprValue)
			}
			if v := z.get("inputElement"); v != "" {
				l.ElementVariable = v
			}
			if v := z.get("outputCollection"); v != "" {
				l.OutputCollection = v
			}
			if v := z.get("outputElement"); v != "" {
				l.OutputElement = p.expression(z, v, "", exprValue)
			}
		}
	}
	if v, ok := mi.attrNS("collection", vendorSpaces...); ok {
		l.Collection = p.expression(mi, v, "", exprName)
	}
	if v, ok := mi.attrNS("elementVariable", vendorSpaces...); ok {
		l.ElementVariable = v
	}
	if l.Cardinality == nil && l.Collection == nil {
		p.refuse(c, "a multi-instance activity needs a loopCardinality or an input collection")
	}
	el.Loop = l
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// mappings reads zeebe:ioMapping and camunda:inputOutput.
func (p *parser) mappings(c *elem, el *Element) {
	ext := c.child(NSModel, "extensionElements")
	if ext == nil {
		return
	}
	if io := ext.child(NSZeebe, "ioMapping"); io != nil {
		for _, m := range io.Children {
			if m.Space != NSZeebe || (m.Local != "input" && m.Local != "output") {
				continue
			}
			target := strings.TrimSpace(m.get("target"))
			if target == "" {
				p.add(m.Pos, "<zeebe:%s> of %q has no target", m.Local, el.ID)
				continue
			}
			src := m.get("source")
			mp := Mapping{Target: target, Source: p.expression(m, src, "", exprValue)}
			if mp.Source == nil {
				continue
			}
			if m.Local == "input" {
				el.Inputs = append(el.Inputs, mp)
			} else {
				el.Outputs = append(el.Outputs, mp)
			}
		}
	}
	for _, space := range vendorSpaces {
		io := ext.child(space, "inputOutput")
		if io == nil {
			continue
		}
		for _, m := range io.Children {
			if m.Space != space || (m.Local != "inputParameter" && m.Local != "outputParameter") {
				continue
			}
			if len(m.Children) > 0 {
				p.add(m.Pos, "<%s> of %q: scripts, lists and maps as parameter values are not supported", m.Local, el.ID)
				continue
			}
			target := strings.TrimSpace(m.get("name"))
			mp := Mapping{Target: target, Source: p.expression(m, m.Text, "", exprValue)}
			if mp.Source == nil || target == "" {
				continue
			}
			if m.Local == "inputParameter" {
				el.Inputs = append(el.Inputs, mp)
			} else {
				el.Outputs = append(el.Outputs, mp)
			}
		}
	}
}

// work reads what makes a task (or a message throw event) a job: the job
// type, headers and retries.
func (p *parser) work(c *elem, el *Element) {
	el.Retries = 3
	ext := c.child(NSModel, "extensionElements")
	if ext != nil {
		if td := ext.child(NSZeebe, "taskDefinition"); td != nil && strings.TrimSpace(td.get("type")) != "" {
			el.JobType = p.expression(td, td.get("type"), "", exprValue)
			if r := strings.TrimSpace(td.get("retries")); r != "" {
				n, err := strconv.Atoi(r)
				if err != nil || n < 0 {
					p.add(td.Pos, "<zeebe:taskDefinition> of %q: retries %q is not a number", el.ID, r)
				}
				el.Retries = n
			}
		}
		if th := ext.child(NSZeebe, "taskHeaders"); th != nil {
			el.Headers = map[string]string{}
			for _, h := range th.childrenNamed(NSZeebe, "header") {
				el.Headers[h.get("key")] = h.get("value")
			}
		}
	}
	if el.JobType == nil {
		for _, space := range vendorSpaces {
			for _, a := range []string{"topic", "class", "delegateExpression", "expression", "type"} {
				v, ok := c.attrNS(a, space)
				if !ok || strings.TrimSpace(v) == "" {
					continue
				}
				if a == "type" && (v == "external" || v == "external-worker") {
					continue // the topic names the job type
				}
				// Veena runs no Java: the class or expression names the job
				// type an outside worker takes.
				el.JobType = &Expr{Text: strings.TrimSpace(v), Pos: c.Pos}
				break
			}
			if el.JobType != nil {
				break
			}
		}
	}
	if el.JobType == nil {
		name := el.ID
		if el.Event != nil && el.Event.Kind == EventMessage && el.Event.Name != "" {
			name = el.Event.Name
		}
		el.JobType = &Expr{Text: name, Pos: c.Pos}
		if c.Local != "sendTask" && c.Local != "endEvent" && c.Local != "intermediateThrowEvent" {
			p.warn(c.Pos, "<%s id=%q> names no job type; its jobs have type %q", c.Local, el.ID, name)
		}
	}
}

func (p *parser) userTask(c *elem, el *Element) {
	a := &Assignment{}
	el.Assignment = a
	ext := c.child(NSModel, "extensionElements")
	if ext != nil {
		if ad := ext.child(NSZeebe, "assignmentDefinition"); ad != nil {
			a.Assignee = p.optExpr(ad, "assignee")
			a.CandidateUsers = p.optExpr(ad, "candidateUsers")
			a.CandidateGroups = p.optExpr(ad, "candidateGroups")
		}
		if ts := ext.child(NSZeebe, "taskSchedule"); ts != nil {
			a.DueDate = p.optExpr(ts, "dueDate")
			a.FollowUpDate = p.optExpr(ts, "followUpDate")
		}
		if pd := ext.child(NSZeebe, "priorityDefinition"); pd != nil {
			a.Priority = p.optExpr(pd, "priority")
		}
		if fd := ext.child(NSZeebe, "formDefinition"); fd != nil {
			a.FormKey = firstNonEmpty(fd.get("formKey"), fd.get("formId"), fd.get("externalReference"))
		}
	}
	for _, space := range vendorSpaces {
		if v, ok := c.attrNS("assignee", space); ok && a.Assignee == nil {
			a.Assignee = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("candidateUsers", space); ok && a.CandidateUsers == nil {
			a.CandidateUsers = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("candidateGroups", space); ok && a.CandidateGroups == nil {
			a.CandidateGroups = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("dueDate", space); ok && a.DueDate == nil {
			a.DueDate = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("followUpDate", space); ok && a.FollowUpDate == nil {
			a.FollowUpDate = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("priority", space); ok && a.Priority == nil {
			a.Priority = p.expression(c, v, "", exprValue)
		}
		if v, ok := c.attrNS("formKey", space); ok && a.FormKey == "" {
			a.FormKey = v
		}
	}
	// BPMN resource roles: humanPerformer (the assignee), potentialOwner
	// (candidates, "user(x), group(y)"; bare names are groups), and
	// MarkLogic's named roles Assignee, Role and Queue.
	var users, groups []string
	for _, r := range c.Children {
		if r.Space != NSModel {
			continue
		}
		switch r.Local {
		case "humanPerformer", "potentialOwner", "performer", "resourceRole":
		default:
			continue
		}
		var fe *elem
		if rae := r.child(NSModel, "resourceAssignmentExpression"); rae != nil {
			fe = rae.child(NSModel, "formalExpression")
			if fe == nil {
				fe = rae.child(NSModel, "expression")
			}
		}
		resName := ""
		if ref := r.child(NSModel, "resourceRef"); ref != nil {
			resName = p.resources[localRef(ref.Text)]
			if resName == "" {
				resName = localRef(ref.Text)
			}
		}
		role := r.get("name")
		switch {
		case fe != nil && strings.TrimSpace(fe.Text) != "":
			text := strings.TrimSpace(fe.Text)
			if r.Local == "potentialOwner" && fe.get("language") == "" && !strings.HasPrefix(text, "=") && !strings.HasPrefix(text, "${") {
				for _, part := range splitList(text) {
					switch {
					case strings.HasPrefix(part, "user(") && strings.HasSuffix(part, ")"):
						users = append(users, strings.TrimSpace(part[5:len(part)-1]))
					case strings.HasPrefix(part, "group(") && strings.HasSuffix(part, ")"):
						groups = append(groups, strings.TrimSpace(part[6:len(part)-1]))
					default:
						groups = append(groups, part)
					}
				}
				continue
			}
			x := p.expression(fe, fe.Text, fe.get("language"), exprValue)
			if r.Local == "potentialOwner" && a.CandidateUsers == nil {
				a.CandidateUsers = x
			} else if a.Assignee == nil {
				a.Assignee = x
			}
		case resName != "":
			switch {
			case role == "Queue":
				a.Queue = resName
			case role == "Role" || r.Local == "potentialOwner":
				groups = append(groups, resName)
			default: // Assignee, humanPerformer, performer
				if a.Assignee == nil {
					a.Assignee = &Expr{Text: resName, Pos: r.Pos}
				}
			}
		}
	}
	if len(users) > 0 && a.CandidateUsers == nil {
		a.CandidateUsers = &Expr{Text: strings.Join(users, ","), Pos: c.Pos}
	}
	if len(groups) > 0 && a.CandidateGroups == nil {
		a.CandidateGroups = &Expr{Text: strings.Join(groups, ","), Pos: c.Pos}
	}
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func (p *parser) optExpr(e *elem, attr string) *Expr {
	v, ok := e.attr(attr)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	return p.expression(e, v, "", exprValue)
}

func (p *parser) script(c *elem, el *Element) {
	if ext := c.child(NSModel, "extensionElements"); ext != nil {
		if s := ext.child(NSZeebe, "script"); s != nil {
			el.ResultVariable = s.get("resultVariable")
			el.ScriptProgram = p.expression(s, s.get("expression"), "", exprValue)
			el.ScriptLang = expr.FEEL
			if el.ResultVariable == "" {
				p.refuse(c, "a FEEL script task needs a resultVariable")
			}
			return
		}
		if ext.child(NSZeebe, "taskDefinition") != nil {
			p.work(c, el) // Camunda 8: a script task may be a job
			return
		}
	}
	format := strings.ToLower(strings.TrimSpace(c.get("scriptFormat")))
	body := ""
	if s := c.child(NSModel, "script"); s != nil {
		body = s.Text
	}
	el.ResultVariable = firstNonEmpty(func() string { v, _ := c.attrNS("resultVariable", vendorSpaces...); return v }())
	switch {
	case strings.TrimSpace(body) == "" && format == "":
		p.warn(c.Pos, "<scriptTask id=%q> has no script; it passes through", el.ID)
	case format == "javascript" || format == "js" || format == "ecmascript" || format == "text/javascript" || format == "application/javascript":
		el.Script = body
		el.ScriptLang = expr.JavaScript
	case format == "feel" || strings.Contains(format, "feel"):
		el.ScriptProgram = p.expression(c, "="+strings.TrimPrefix(strings.TrimSpace(body), "="), "", exprValue)
		el.ScriptLang = expr.FEEL
	case format == "cel":
		el.ScriptProgram = p.expression(c, body, "cel", exprValue)
		el.ScriptLang = expr.CEL
	default:
		p.refuse(c, fmt.Sprintf("script format %q is not supported (JavaScript, FEEL or CEL)", c.get("scriptFormat")))
	}
}

func (p *parser) callActivity(c *elem, el *Element) {
	el.PropagateAll = true
	if ext := c.child(NSModel, "extensionElements"); ext != nil {
		if ce := ext.child(NSZeebe, "calledElement"); ce != nil {
			el.CalledElement = p.expression(ce, ce.get("processId"), "", exprValue)
			if ce.get("propagateAllChildVariables") == "false" {
				el.PropagateAll = false
			}
		}
		for _, space := range vendorSpaces {
			for _, in := range ext.childrenNamed(space, "in") {
				if in.get("variables") == "all" {
					continue
				}
				src := firstNonEmpty(in.get("sourceExpression"), in.get("source"))
				if src == "" {
					continue
				}
				if in.get("source") != "" && in.get("sourceExpression") == "" {
					src = "${" + src + "}"
				}
				el.Inputs = append(el.Inputs, Mapping{Target: in.get("target"), Source: p.expression(in, src, "", exprValue)})
			}
			for _, out := range ext.childrenNamed(space, "out") {
				if out.get("variables") == "all" {
					continue
				}
				src := firstNonEmpty(out.get("sourceExpression"), out.get("source"))
				if src == "" {
					continue
				}
				if out.get("source") != "" && out.get("sourceExpression") == "" {
					src = "${" + src + "}"
				}
				el.Outputs = append(el.Outputs, Mapping{Target: out.get("target"), Source: p.expression(out, src, "", exprValue)})
				el.PropagateAll = false
			}
		}
	}
	if el.CalledElement == nil {
		if v := strings.TrimSpace(c.get("calledElement")); v != "" {
			el.CalledElement = p.expression(c, localRef(v), "", exprValue)
		}
	}
	if el.CalledElement == nil {
		p.refuse(c, "a call activity needs a calledElement (the id of the process it calls)")
	}
}
