package bpmn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/veena-wf/veena/graph"
)

// Node types of the bpmn package, one per kind of flow element.
const (
	TypeStart        = "bpmn.start"
	TypeEnd          = "bpmn.end"
	TypeCatch        = "bpmn.catch"
	TypeThrow        = "bpmn.throw"
	TypeBoundary     = "bpmn.boundary"
	TypeTask         = "bpmn.task"
	TypeUserTask     = "bpmn.userTask"
	TypeJob          = "bpmn.job"
	TypeScript       = "bpmn.script"
	TypeReceive      = "bpmn.receive"
	TypeCall         = "bpmn.call"
	TypeSubProcess   = "bpmn.subProcess"
	TypeEventSub     = "bpmn.eventSubProcess"
	TypeExclusive    = "bpmn.exclusive"
	TypeParallel     = "bpmn.parallel"
	TypeInclusive    = "bpmn.inclusive"
	TypeEventGateway = "bpmn.eventGateway"
	JoinInclusive    = "bpmn.inclusive" // the inclusive gateway's join strategy
)

// Load parses a BPMN file and compiles each of its processes that is to
// run into a graph: the processes marked isExecutable="true" or, when the
// file marks none (MarkLogic Workflow's models, descriptive models), every
// process that has flow elements. The graphs share the file's source and
// hash and are named after their process ids, or after the file's
// MarkLogic model name (name__major__minor) when it has a single process.
func Load(file string, src []byte, opts ...Option) ([]*graph.Graph, error) {
	d, warnings, err := Parse(file, src, opts...)
	if err != nil {
		return nil, err
	}
	return Compile(d, warnings)
}

// Compile turns the processes of a parsed file into graphs.
func Compile(d *Definitions, warnings []graph.Problem) ([]*graph.Graph, error) {
	var run []*Process
	for _, p := range d.Processes {
		if p.Executable {
			run = append(run, p)
		}
	}
	if len(run) == 0 {
		for _, p := range d.Processes {
			if len(p.Elements) > 0 {
				run = append(run, p)
			}
		}
		if len(run) > 0 {
			warnings = append(warnings, graph.Problem{Line: run[0].Pos.Line, Column: run[0].Pos.Column,
				Message: "no process is marked isExecutable=\"true\"; every process with flow elements is loaded, as MarkLogic Workflow does"})
		}
	}
	if len(run) == 0 {
		lerr := &graph.LoadError{File: d.File}
		lerr.Add(graph.Pos{Line: 1, Column: 1}, "no process has flow elements: nothing to run")
		return nil, lerr
	}
	sum := sha256.Sum256(d.Source)
	hash := hex.EncodeToString(sum[:])
	var out []*graph.Graph
	lerr := &graph.LoadError{File: d.File}
	for _, p := range run {
		g, err := compileProcess(d, p, hash)
		if err != nil {
			lerr.Add(p.Pos, "process %q: %v", p.ID, err)
			continue
		}
		for _, w := range warnings {
			if w.Line >= p.Pos.Line || len(run) == 1 {
				g.Warnings = append(g.Warnings, w)
			}
		}
		g.Warnings = append(g.Warnings, check(g, p)...)
		out = append(out, g)
	}
	if err := finish(lerr); err != nil {
		return nil, err
	}
	return out, nil
}

// modelName reads MarkLogic's versioned model name name__major__minor. It
// is compiled at its first use: a program that loads no BPMN does not keep
// it on the heap.
var modelName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.+)__(\d+)__(\d+)$`)
})

// SplitModelName splits a MarkLogic model name (myprocess__1__0) into its
// name and version numbers; ok is false for other names.
func SplitModelName(s string) (name string, major, minor int, ok bool) {
	m := modelName().FindStringSubmatch(s)
	if m == nil {
		return "", 0, 0, false
	}
	major, _ = strconv.Atoi(m[2])
	minor, _ = strconv.Atoi(m[3])
	return m[1], major, minor, true
}

func compileProcess(d *Definitions, p *Process, hash string) (*graph.Graph, error) {
	name := p.ID
	if n, _, _, ok := SplitModelName(name); ok {
		name = n // myprocess__1__0 is version 1.0 of myprocess
	}
	label := p.Name
	if label == "" {
		label = d.Participants[p.ID]
	}
	g := &graph.Graph{Name: name, Format: Format, Hash: hash, File: d.File, Source: d.Source, Label: label}
	props := &Props{Process: p, Listeners: map[string][]string{}}
	nodes := map[string]*graph.Node{}
	for _, el := range p.Elements {
		n := &graph.Node{Name: el.ID, Label: el.Name, Kind: el.Kind, Pos: el.Pos, Props: el, Join: graph.JoinOr}
		switch el.Kind {
		case "startEvent":
			n.Type = TypeStart
			if el.Scope == nil && el.Event.Kind == EventNone {
				n.IsStart = true
			}
			if el.Scope == nil && el.Event.Kind != EventNone {
				props.StartEvents = append(props.StartEvents, el)
			}
		case "endEvent":
			n.Type = TypeEnd
		case "intermediateCatchEvent":
			n.Type = TypeCatch
		case "intermediateThrowEvent":
			n.Type = TypeThrow
		case "boundaryEvent":
			n.Type = TypeBoundary
		case "task", "manualTask":
			n.Type = TypeTask
		case "userTask":
			n.Type = TypeUserTask
		case "serviceTask", "sendTask", "businessRuleTask":
			n.Type = TypeJob
		case "scriptTask":
			n.Type = TypeScript
			if el.JobType != nil {
				n.Type = TypeJob
			}
		case "receiveTask":
			n.Type = TypeReceive
		case "callActivity":
			n.Type = TypeCall
		case "subProcess":
			n.Type = TypeSubProcess
			props.HasScopes = true
			if el.TriggeredByEvent {
				n.Type = TypeEventSub
				scope := ""
				if el.Scope != nil {
					scope = el.Scope.ID
				}
				props.Listeners[scope] = append(props.Listeners[scope], el.ID)
			}
		case "exclusiveGateway":
			n.Type = TypeExclusive
		case "parallelGateway":
			n.Type = TypeParallel
			n.Join = graph.JoinAnd
		case "inclusiveGateway":
			n.Type = TypeInclusive
		case "eventBasedGateway":
			n.Type = TypeEventGateway
		default:
			return nil, fmt.Errorf("element <%s id=%q> has no node type", el.Kind, el.ID)
		}
		if el.Loop != nil && el.Loop.MultiInstance {
			props.HasScopes = true
		}
		if el.ForCompensation {
			props.HasScopes = true
		}
		nodes[el.ID] = n
		g.Nodes = append(g.Nodes, n)
	}
	flows := map[*graph.Arc]*Flow{}
	for _, f := range p.Flows {
		from, to := nodes[f.Source], nodes[f.Target]
		if from == nil || to == nil {
			continue // reported by the parser
		}
		a := &graph.Arc{From: from, To: to, Name: f.ID, Pos: f.Pos}
		flows[a] = f
		g.Arcs = append(g.Arcs, a)
	}
	// A link throw leads to its catch like a sequence flow: an unnamed arc.
	for _, el := range p.Elements {
		if el.Kind != "intermediateThrowEvent" || el.Event.Kind != EventLink {
			continue
		}
		for _, c := range p.Elements {
			if c.Kind == "intermediateCatchEvent" && c.Event.Kind == EventLink && c.Event.Name == el.Event.Name && c.Scope == el.Scope {
				g.Arcs = append(g.Arcs, &graph.Arc{From: nodes[el.ID], To: nodes[c.ID], Pos: el.Pos})
			}
		}
	}
	g.Finish()
	for _, n := range g.Nodes {
		outgoing(n, n.Props.(*Element), flows)
	}
	// An inclusive gateway with several incoming flows joins by the
	// non-local rule.
	for _, n := range g.Nodes {
		if n.Type == TypeInclusive && len(n.InArcs()) > 1 {
			n.Join = graph.JoinClass
			n.JoinParam = JoinInclusive
			props.HasScopes = true
		}
	}
	g.Props = props
	return g, nil
}

// outgoing sets an element's outgoing arcs (Element.OutNames, OutFlows,
// AllOut) from its node's out-arcs.
func outgoing(n *graph.Node, el *Element, flows map[*graph.Arc]*Flow) {
	arcs := n.OutArcs()
	el.OutNames = make([]string, len(arcs))
	el.OutFlows = make([]*Flow, len(arcs))
	el.AllOut = len(arcs) > 0 && el.Default == ""
	for i, a := range arcs {
		f := flows[a]
		el.OutNames[i], el.OutFlows[i] = a.Name, f
		if f != nil && f.Condition != nil {
			el.AllOut = false
		}
	}
}
