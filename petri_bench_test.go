package veena_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// cycleNet is a ring of three places and three transitions with no
// annotations: each fire command fires one transition.
const cycleNet = `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="cycle"><page id="p">
<place id="a"><initialMarking><text>1</text></initialMarking></place><place id="b"/><place id="c"/>
<transition id="ab"/><transition id="bc"/><transition id="ca"/>
<arc id="1" source="a" target="ab"/><arc id="2" source="ab" target="b"/>
<arc id="3" source="b" target="bc"/><arc id="4" source="bc" target="c"/>
<arc id="5" source="c" target="ca"/><arc id="6" source="ca" target="a"/>
</page></net></pnml>`

// chainNet: an event starts a run of 100 transitions that fire by
// themselves (the net drives work: pass() actions), in one step.
func chainNet(n int) string {
	s := `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="chain"><page id="p"><place id="p0"/>`
	s += `<transition id="go"><name><text>go</text></name></transition><arc id="g" source="go" target="p0"/>`
	for i := range n {
		s += fmt.Sprintf(`<place id="p%d"/><transition id="t%d"><name><text>/pass#%d()</text></name></transition>`, i+1, i, i)
		s += fmt.Sprintf(`<arc id="i%d" source="p%d" target="t%d"/><arc id="o%d" source="t%d" target="p%d"/>`, i, i, i, i, i, i+1)
	}
	return s + `</page></net></pnml>`
}

func benchStores(b *testing.B) map[string]func() store.Store {
	return map[string]func() store.Store{
		"memory": func() store.Store { return memstore.New() },
		"sqlite": func() store.Store {
			s, err := sqlitestore.Open(filepath.Join(b.TempDir(), "veena.db"), sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
}

// BenchmarkNetFire fires transitions of net processes through the
// engine's fire command, one transition per command (each a store
// transaction), from 8 goroutines on 64 processes, and reports
// transitions/s and the CPU time each took in this process.
func BenchmarkNetFire(b *testing.B) {
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			e, err := veena.Open(ctx, veena.Options{Store: benchStores(b)[name]()})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if _, _, err := e.LoadDefinition(ctx, "cycle.pnml", []byte(cycleNet), ""); err != nil {
				b.Fatal(err)
			}
			const procs = 64
			ids := make([]string, procs)
			for i := range ids {
				p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "cycle"})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = p.ID
			}
			next := []string{"ab", "bc", "ca"}
			var n atomic.Int64
			var step [procs]int
			var mu [procs]sync.Mutex
			cpu0, t0 := cpustat.Self(), time.Now()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; ; i += 8 {
						if n.Add(1) > int64(b.N) {
							return
						}
						k := i % procs
						mu[k].Lock()
						tr := next[step[k]%3]
						step[k]++
						_, err := e.FireTransition(ctx, ids[k], tr, "")
						mu[k].Unlock()
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			wall, cpu := time.Since(t0).Seconds(), (cpustat.Self() - cpu0).Seconds()
			b.ReportMetric(float64(b.N)/wall, "transitions/s")
			b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-µs/transition")
		})
	}
}

// BenchmarkNetChain sends an event that fires a chain of 100 transitions
// with actions in one step (one store transaction), and reports
// transitions/s: the marking kernel's speed with the step's persistence.
func BenchmarkNetChain(b *testing.B) {
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			e, err := veena.Open(ctx, veena.Options{Store: benchStores(b)[name]()})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if _, _, err := e.LoadDefinition(ctx, "chain.pnml", []byte(chainNet(100)), ""); err != nil {
				b.Fatal(err)
			}
			cpu0, t0 := cpustat.Self(), time.Now()
			fired := 0
			for b.Loop() {
				p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "chain"})
				if err != nil {
					b.Fatal(err)
				}
				r, err := e.SendTransitionEvent(ctx, p.ID, "go", nil, "")
				if err != nil || len(r.Fired) != 1 {
					b.Fatalf("go: %v %+v", err, r)
				}
				fired += 101
			}
			wall, cpu := time.Since(t0).Seconds(), (cpustat.Self() - cpu0).Seconds()
			b.ReportMetric(float64(fired)/wall, "transitions/s")
			b.ReportMetric(cpu/float64(fired)*1e6, "cpu-µs/transition")
		})
	}
}
