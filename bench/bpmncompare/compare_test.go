package bpmncompare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"text/tabwriter"
	"time"

	lib "github.com/nitram509/lib-bpmn-engine/pkg/bpmn_engine"

	"github.com/veena-wf/veena"
	bpmnrun "github.com/veena-wf/veena/bpmn"
	fbpmn "github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/kernel"
)

// cpu reports the CPU time (user and system, this process) per operation
// beside the wall time: on a machine shared with other work, wall time
// moves with the load, CPU time much less.
func cpu(b *testing.B) func() {
	return cpuExcept(b, nil)
}

// cpuExcept is cpu less the CPU time *aside names (work the benchmark
// does with its timer stopped, such as making a fresh engine).
func cpuExcept(b *testing.B, aside *time.Duration) func() {
	start := cpustat.Self()
	return func() {
		if b.N > 0 {
			used := cpustat.Self() - start
			if aside != nil {
				used -= *aside
			}
			b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
		}
	}
}

// workloads are the files compared, with the variables each instance starts with.
var workloads = []struct {
	file string
	vars map[string]any
}{
	{"one-task.bpmn", nil},
	{"chain-10.bpmn", nil},
	{"parallel-10.bpmn", nil},
	{"exclusive.bpmn", map[string]any{"amount": 150}},
	{"timer.bpmn", nil},
}

func read(tb testing.TB, file string) []byte {
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// ---- Veena, kernel alone

func veenaKernel(b *testing.B, file string, vars map[string]any) {
	gs, err := fbpmn.Load(file, read(b, file))
	if err != nil {
		b.Fatal(err)
	}
	g := gs[0]
	g.Version = 1
	k := kernel.New()
	bpmnrun.Register(k)
	if err := k.Prepare(g); err != nil {
		b.Fatal(err)
	}
	env, err := kernel.EnvFromMap(vars)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	// One engine (the kernel's command runner at a time) for every
	// process, as lib-bpmn-engine keeps one engine state: it reuses its
	// undo journal's buffers from command to command.
	e := k.Engine(now)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpu(b)()
	for b.Loop() {
		p, err := e.Start(g, env)
		if err != nil {
			b.Fatal(err)
		}
		// The token history stays in p.Events; the effects (jobs offered
		// and ended) are taken after each command, as a caller does.
		p.Effects = p.Effects[:0]
		for p.State == kernel.Executing {
			done := false
			for _, t := range p.NodeTokens {
				if t.Holds(kernel.HoldsJob) {
					if err := e.CompleteJob(t, kernel.WorkResult{}); err != nil {
						b.Fatal(err)
					}
					p.Effects = p.Effects[:0]
					done = true
				}
			}
			if !done {
				b.Fatalf("process stuck:\n%s", p.History())
			}
		}
		if p.State != kernel.Completed {
			b.Fatalf("process %s", p.State)
		}
	}
}

// ---- Veena, engine on the in-memory store

func veenaEngine(b *testing.B, file string, vars map[string]any) {
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _, err := e.LoadDefinition(ctx, file, read(b, file), "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer cpu(b)()
	for b.Loop() {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: d.Name, Env: vars})
		if err != nil {
			b.Fatal(err)
		}
		for p.State == "executing" {
			jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "work", Worker: "w", MaxJobs: 100, LockFor: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if len(jobs) == 0 {
				b.Fatalf("process %s waits for no job", p.ID)
			}
			for _, j := range jobs {
				if p, err = e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: "w"}); err != nil {
					b.Fatal(err)
				}
			}
		}
		if p.State != "completed" {
			b.Fatalf("process %s", p.State)
		}
	}
}

// ---- lib-bpmn-engine

// libEngine runs the workload on lib-bpmn-engine. It keeps every
// instance it ran in memory and some of its steps look through all of
// them, so that an engine's cost per instance grows with the instances it
// holds: a fresh engine every 100 instances (made outside the timing)
// measures it at its best.
func libEngine(b *testing.B, file string, vars map[string]any) {
	src := read(b, file)
	var e lib.BpmnEngineState
	var info *lib.ProcessInfo
	fresh := func() {
		e = lib.New()
		e.NewTaskHandler().Type("work").Handler(func(job lib.ActivatedJob) { job.Complete() })
		var err error
		if info, err = e.LoadFromBytes(src); err != nil {
			b.Fatal(err)
		}
	}
	fresh()
	b.ReportAllocs()
	b.ResetTimer()
	var aside time.Duration // the CPU time of the fresh engines, not counted
	defer cpuExcept(b, &aside)()
	i := 0
	for b.Loop() {
		if i++; i%100 == 0 {
			b.StopTimer()
			c := cpustat.Self()
			fresh()
			aside += cpustat.Self() - c
			b.StartTimer()
		}
		v := map[string]any{}
		for k, x := range vars {
			v[k] = x
		}
		inst, err := e.CreateAndRunInstance(info.ProcessKey, v)
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; inst.GetState() != lib.Completed; n++ {
			if n > 1000 {
				b.Fatalf("instance is %s", inst.GetState())
			}
			if inst, err = e.RunOrContinueInstance(inst.GetInstanceKey()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// libLoad is the cost of the fresh engine libEngine makes every 100
// instances (timer stopped): for measures that cannot stop a timer, such
// as instruction counts, a hundredth of it is to be taken off libEngine's.
func libLoad(b *testing.B, file string, vars map[string]any) {
	src := read(b, file)
	b.ReportAllocs()
	for b.Loop() {
		e := lib.New()
		e.NewTaskHandler().Type("work").Handler(func(job lib.ActivatedJob) { job.Complete() })
		if _, err := e.LoadFromBytes(src); err != nil {
			b.Fatal(err)
		}
	}
}

var engines = []struct {
	name string
	run  func(b *testing.B, file string, vars map[string]any)
}{
	{"veena-kernel", veenaKernel},
	{"veena-engine-memory", veenaEngine},
	{"lib-bpmn-engine", libEngine},
	{"floor", floorBench},
}

func BenchmarkLibLoad(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.file, func(b *testing.B) { libLoad(b, w.file, w.vars) })
	}
}

func BenchmarkCompare(b *testing.B) {
	for _, w := range workloads {
		for _, en := range engines {
			b.Run(w.file+"/"+en.name, func(b *testing.B) { en.run(b, w.file, w.vars) })
		}
	}
}

// TestCompare runs the benchmarks side by side and prints one table.
func TestCompare(t *testing.T) {
	if os.Getenv("VEENA_BPMN_COMPARE") == "" {
		t.Skip("set VEENA_BPMN_COMPARE=1 to compare the engines (takes about a minute)")
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CPU µs per process (wall µs)\tveena kernel\tveena engine (memory)\tlib-bpmn-engine\tfloor\tlib ÷ kernel\tlib ÷ engine\tlib ÷ floor\t")
	for _, w := range workloads {
		var cpuNs, wall [4]float64
		for i, en := range engines {
			// The best of three runs: the machine's other work only adds.
			for range 3 {
				r := testing.Benchmark(func(b *testing.B) { en.run(b, w.file, w.vars) })
				c := r.Extra["cpu-ns/op"]
				if cpuNs[i] == 0 || c < cpuNs[i] {
					cpuNs[i], wall[i] = c, float64(r.NsPerOp())
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%.2f (%.2f)\t%.2f (%.2f)\t%.2f (%.2f)\t%.2f (%.2f)\t%.1f×\t%.1f×\t%.1f×\t\n", w.file,
			cpuNs[0]/1e3, wall[0]/1e3, cpuNs[1]/1e3, wall[1]/1e3, cpuNs[2]/1e3, wall[2]/1e3, cpuNs[3]/1e3, wall[3]/1e3,
			cpuNs[2]/cpuNs[0], cpuNs[2]/cpuNs[1], cpuNs[2]/cpuNs[3])
	}
	tw.Flush()
}

// The comparison runs the same model on both: a sanity check that the
// files load on both and every workload completes.
func TestWorkloadsRun(t *testing.T) {
	for _, w := range workloads {
		gs, err := fbpmn.Load(w.file, read(t, w.file))
		if err != nil || len(gs) != 1 {
			t.Fatalf("%s: %v", w.file, err)
		}
		var _ *graph.Graph = gs[0]
		e := lib.New()
		if _, err := e.LoadFromBytes(read(t, w.file)); err != nil {
			t.Fatalf("lib-bpmn-engine loads %s: %v", w.file, err)
		}
	}
	r := testing.Benchmark(func(b *testing.B) { veenaKernel(b, "parallel-10.bpmn", nil) })
	if r.N == 0 {
		t.Fatal("the kernel benchmark did not run")
	}
}
