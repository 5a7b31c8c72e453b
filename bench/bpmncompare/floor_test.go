package bpmncompare

import (
	"testing"
	"time"

	bpmnrun "github.com/veena-wf/veena/bpmn"
	fbpmn "github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

// The floor is what a process of a workload costs when nothing runs it:
// no graph is read, no guard or join decides anything, and the history a
// run leaves (its node tokens, arc tokens, events and jobs) is written
// straight into memory in the fewest operations Go allows. No engine can
// record the same history for less, so an engine can be at most
// lib-bpmn-engine ÷ floor times faster than lib-bpmn-engine.

// shape counts what one process of a workload leaves in Veena's memory:
// the records of its history and the commands that wrote them.
type shape struct {
	nodeTokens, arcTokens, events, jobs, commands int
}

// shapeOf runs the workload once on the kernel and counts its history.
func shapeOf(tb testing.TB, file string, vars map[string]any) shape {
	gs, err := fbpmn.Load(file, read(tb, file))
	if err != nil {
		tb.Fatal(err)
	}
	g := gs[0]
	g.Version = 1
	k := kernel.New()
	bpmnrun.Register(k)
	if err := k.Prepare(g); err != nil {
		tb.Fatal(err)
	}
	env, err := kernel.EnvFromMap(vars)
	if err != nil {
		tb.Fatal(err)
	}
	e := k.Engine(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	p, err := e.Start(g, env)
	if err != nil {
		tb.Fatal(err)
	}
	s := shape{commands: 1}
	for p.State == kernel.Executing {
		done := false
		for _, t := range p.NodeTokens {
			if t.Holds(kernel.HoldsJob) {
				if err := e.CompleteJob(t, kernel.WorkResult{}); err != nil {
					tb.Fatal(err)
				}
				s.jobs++
				s.commands++
				done = true
			}
		}
		if !done {
			tb.Fatalf("%s: process stuck", file)
		}
	}
	s.nodeTokens, s.arcTokens, s.events = len(p.NodeTokens), len(p.ArcTokens), len(p.Events)
	return s
}

// record is one entry of a floor process's history: a node token, an arc
// token, an event or a job, in 32 bytes and no pointers (nothing for the
// garbage collector to scan).
type record struct {
	kind       uint8
	a, b, c    int32
	start, end int64
}

// floorProcess is a process as the floor keeps it: an id and one block
// of records.
type floorProcess struct {
	id      int64
	records []record
}

var (
	floorIDs  int64
	floorSink *floorProcess
)

// floor writes one process of shape s: an id from a counter, one
// allocation for all its records, one clock reading per command.
func floor(s shape) *floorProcess {
	floorIDs++
	n := s.nodeTokens + s.arcTokens + s.events + s.jobs
	p := &floorProcess{id: floorIDs, records: make([]record, n)}
	per := (n + s.commands - 1) / s.commands
	var now int64
	for i := range p.records {
		if i%per == 0 {
			now = time.Now().UnixNano()
		}
		r := &p.records[i]
		r.kind, r.a, r.b, r.c, r.start, r.end = uint8(i&3), int32(i), int32(i+1), int32(i-1), now, now
	}
	return p
}

func floorBench(b *testing.B, file string, vars map[string]any) {
	s := shapeOf(b, file, vars)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpu(b)()
	for b.Loop() {
		floorSink = floor(s)
	}
}
