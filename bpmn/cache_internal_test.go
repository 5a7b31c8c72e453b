package bpmn

import (
	"runtime"
	"sync"
	"testing"
	"time"

	fbpmn "github.com/veena-wf/veena/format/bpmn"
)

// entries counts a cache's entries.
func entries(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestCachesForgetGraphs: the reach the runtime works out once per graph
// goes when the graph does, so that a program opening and closing engines
// does not keep every graph it ever ran. (A node's out-arcs are worked
// out by the importer, in its element: they go with the graph.)
func TestCachesForgetGraphs(t *testing.T) {
	src := `<?xml version="1.0"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">
<process id="p" isExecutable="true">
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="a"/>
<task id="a"/><sequenceFlow id="f1" sourceRef="a" targetRef="b"/>
<task id="b"/><sequenceFlow id="f2" sourceRef="b" targetRef="e"/><endEvent id="e"/>
</process></definitions>`
	base := entries(&reaches)
	func() {
		gs, err := fbpmn.Load("cache.bpmn", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			r := reachOf(g)
			if !r.reaches(g.Node("a"), g.Node("e")) || r.reaches(g.Node("e"), g.Node("a")) {
				t.Fatal("reach is wrong")
			}
		}
		if entries(&reaches) != base+1 {
			t.Fatalf("cached: %d reaches (before: %d)", entries(&reaches), base)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for entries(&reaches) > base {
		if time.Now().After(deadline) {
			t.Fatalf("after the graph went: %d reaches (before: %d)", entries(&reaches), base)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
