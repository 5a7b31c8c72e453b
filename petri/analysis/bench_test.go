package analysis_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/petri/analysis"
)

// BenchmarkExplore explores the reachability graph of every contest
// instance in the corpus (Kanban only with VEENA_PETRI_BIG set) and
// reports states found per second of wall time and per second of this
// process's CPU time (which other load on the machine moves much less),
// and the bytes each state takes. /graph keeps the edges, as the
// liveness, reversibility and soundness questions need; /set keeps the
// visited set and the BFS tree only.
func BenchmarkExplore(b *testing.B) {
	for _, dir := range mccDirs(b) {
		name := filepath.Base(dir)
		if big[name] && os.Getenv("VEENA_PETRI_BIG") == "" {
			continue
		}
		n := loadNet(b, filepath.Join(dir, "model.pnml"))
		for _, mode := range []struct {
			name    string
			noGraph bool
		}{{"set", true}, {"graph", false}} {
			b.Run(name+"/"+mode.name, func(b *testing.B) {
				var states, edges int64
				var bps float64
				cpu0, t0 := cpustat.Self(), time.Now()
				for b.Loop() {
					r := analysis.Analyze(n, analysis.Options{MaxStates: 5_000_000, NoGraph: mode.noGraph})
					states += *r.States
					edges += *r.Edges
					bps = r.BytesPerState
				}
				wall, cpu := time.Since(t0).Seconds(), (cpustat.Self() - cpu0).Seconds()
				b.ReportMetric(float64(states)/wall, "states/s")
				if cpu > 0 {
					b.ReportMetric(float64(states)/cpu, "states/cpu-s")
					b.ReportMetric(float64(edges)/cpu, "firings/cpu-s")
				}
				b.ReportMetric(bps, "bytes/state")
			})
		}
	}
}

// BenchmarkKanban explores the 2.5-million-state Kanban instance once,
// whole (liveness included), and reports the memory it took from the
// system. It runs with VEENA_PETRI_BIG set.
func BenchmarkKanban(b *testing.B) {
	if os.Getenv("VEENA_PETRI_BIG") == "" {
		b.Skip("set VEENA_PETRI_BIG=1 to explore the Kanban instance")
	}
	dirs := mccDirs(b)
	var dir string
	for _, d := range dirs {
		if filepath.Base(d) == "Kanban-PT-00005" {
			dir = d
		}
	}
	if dir == "" {
		b.Skip("Kanban-PT-00005 is not in the corpus")
	}
	n := loadNet(b, filepath.Join(dir, "model.pnml"))
	for b.Loop() {
		runtime.GC()
		cpu0, t0 := cpustat.Self(), time.Now()
		r := analysis.Analyze(n, analysis.Options{MaxStates: 5_000_000})
		wall, cpu := time.Since(t0).Seconds(), (cpustat.Self() - cpu0).Seconds()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if !r.Complete || *r.States != 2546432 {
			b.Fatalf("incomplete or wrong: %+v", r)
		}
		b.ReportMetric(float64(*r.States)/wall, "states/s")
		b.ReportMetric(float64(*r.States)/cpu, "states/cpu-s")
		b.ReportMetric(r.BytesPerState, "bytes/state")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "MiB-from-os")
	}
}
