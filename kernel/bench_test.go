package kernel

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/veena-wf/veena/graph"
)

// Benchmarks of the token game alone, with full token history and events
// kept, as the targets state them. Run with
//
//	go test ./kernel -run XXX -bench . -benchmem
func linearGraph(b testing.TB, n int, typ string) *graph.Graph {
	nodes := make([]N, n)
	for i := range nodes {
		nodes[i] = N{Name: fmt.Sprintf("N%d", i), Type: typ}
		if i+1 < n {
			nodes[i].Arcs = []string{fmt.Sprintf("N%d", i+1)}
		}
	}
	nodes[0].Start = true
	return mkGraph(b, "linear", nodes...)
}

func splitJoinGraph(b testing.TB, branches int) *graph.Graph {
	nodes := []N{{Name: "S", Start: true}}
	for i := 0; i < branches; i++ {
		name := fmt.Sprintf("B%d", i)
		nodes[0].Arcs = append(nodes[0].Arcs, name)
		nodes = append(nodes, N{Name: name, Arcs: []string{"J"}})
	}
	nodes = append(nodes, N{Name: "J", Join: graph.JoinAnd})
	return mkGraph(b, "split", nodes...)
}

func benchStart(b *testing.B, g *graph.Graph) {
	k := New()
	id := 0
	k.NewID = func() string { id++; return "p" }
	e := k.Engine(t0)
	if err := k.Prepare(g); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := e.Start(g, nil)
		if err != nil {
			b.Fatal(err)
		}
		if p.State != Completed {
			b.Fatalf("state %s", p.State)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/process")
}

func BenchmarkOneNode(b *testing.B)        { benchStart(b, linearGraph(b, 1, graph.TypeNode)) }
func BenchmarkLinear10(b *testing.B)       { benchStart(b, linearGraph(b, 10, graph.TypeNode)) }
func BenchmarkSplitJoin10(b *testing.B)    { benchStart(b, splitJoinGraph(b, 10)) }
func BenchmarkFanOutJoin1000(b *testing.B) { benchStart(b, splitJoinGraph(b, 1000)) }

// BenchmarkLinear10Wait starts a 10-node process of wait nodes and completes
// its tokens one by one, as commands from outside would.
func BenchmarkLinear10Wait(b *testing.B) {
	g := linearGraph(b, 10, graph.TypeWait)
	k := New()
	k.NewID = func() string { return "p" }
	e := k.Engine(t0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, err := e.Start(g, nil)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			t := p.NodeTokens[len(p.NodeTokens)-1]
			if err := e.Complete(t); err != nil {
				b.Fatal(err)
			}
		}
		if p.State != Completed {
			b.Fatalf("state %s", p.State)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/process")
}

// BenchmarkParkedMemory reports the heap held per process parked at a wait node.
func BenchmarkParkedMemory(b *testing.B) {
	g := linearGraph(b, 2, graph.TypeWait)
	k := New()
	e := k.Engine(t0)
	const n = 10000
	for i := 0; i < b.N; i++ {
		held := make([]*Process, 0, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for j := 0; j < n; j++ {
			p, err := e.Start(g, nil)
			if err != nil {
				b.Fatal(err)
			}
			p.Events = nil // a store would have taken them
			held = append(held, p)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/process")
		runtime.KeepAlive(held)
	}
}

// BenchmarkCommandWithParked measures starting and completing one process
// while 1 or 100,000 other processes are held in memory, parked at a wait
// node: the kernel's cost of a command must not depend on how many
// processes exist. The parked processes are held in a slice; holding them
// in a map keyed by id would add that map's own cost (cache misses on
// 100,000 keys), which belongs to whoever indexes them, not to the kernel.
func BenchmarkCommandWithParked(b *testing.B) {
	for _, parked := range []int{1, 100000} {
		b.Run(fmt.Sprintf("parked=%d", parked), func(b *testing.B) {
			g := linearGraph(b, 2, graph.TypeWait)
			k := New()
			e := k.Engine(t0)
			held := make([]*Process, 0, parked)
			for j := 0; j < parked; j++ {
				p, err := e.Start(g, nil)
				if err != nil {
					b.Fatal(err)
				}
				p.Events = nil
				held = append(held, p)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := e.Start(g, nil)
				if err != nil {
					b.Fatal(err)
				}
				p.Events = nil // after each command the store takes the events, as the engine does
				if err := e.Complete(p.NodeTokens[0]); err != nil {
					b.Fatal(err)
				}
				p.Events = nil
				if err := e.Complete(p.NodeTokens[1]); err != nil {
					b.Fatal(err)
				}
			}
			runtime.KeepAlive(held)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/process")
		})
	}
}
