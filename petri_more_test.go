package veena_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veena-wf/veena"
)

// TestPerpetuumNetsRun loads every net of Perpetuum's corpus as a
// definition, analyses it, starts a process of it and fires its enabled
// transitions in turn for a while, on every backend: each step leaves a
// consistent marking (the transition fired is gone from the enabled set
// or still enabled by the tokens left; no error other than a refusal).
func TestPerpetuumNetsRun(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(perpetuum, "*.pnml"))
	if len(files) == 0 {
		t.Skip("the shared corpus is absent")
	}
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		for _, f := range files {
			d := loadNetFile(t, e, f)
			if _, err := e.AnalyseDefinition(ctx, d.Name, d.Version, veena.AnalyseOptions{}); err != nil {
				t.Fatalf("%s: analysis: %v", d.Name, err)
			}
			p := start(t, e, veena.StartRequest{Definition: d.Name})
			fired := 0
			for step := 0; step < 25; step++ {
				m := marking(t, e, p.ID)
				if len(m.Enabled) == 0 {
					break
				}
				tr := m.Enabled[step%len(m.Enabled)]
				if _, err := e.FireTransition(ctx, p.ID, tr, ""); err != nil {
					if veena.Code(err) == "action_failed" {
						break // an action of the net is not registered with this engine
					}
					t.Fatalf("%s step %d: fire %s (enabled %v): %v", d.Name, step, tr, m.Enabled, err)
				}
				fired++
			}
			m := marking(t, e, p.ID)
			if b.name == "memory" {
				t.Logf("%-40s %-10s fired %2d, now %s; enabled %v", d.Name, m.State, fired, nonEmpty(m), m.Enabled)
			}
		}
	})
}

const racyNet = `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="racy"><page id="p">
 <place id="in"><initialMarking><text>40</text></initialMarking></place>
 <place id="out"/><place id="keep"><initialMarking><text>1</text></initialMarking></place>
 <transition id="take"/>
 <transition id="never"><name><text>never(x)</text></name></transition>
 <arc id="a1" source="in" target="take"/><arc id="a2" source="take" target="out"/>
 <arc id="a3" source="keep" target="never"/>
</page></net></pnml>`

// TestNetConcurrentFire: two engines over one durable store fire the same
// net process's transition at once, from many goroutines, twice as often
// as it has tokens: exactly as many firings succeed as there were tokens,
// the others are refused, and the marking and the history agree.
func TestNetConcurrentFire(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		if !b.durable {
			t.Skip("two engines need a shared durable store")
		}
		ctx := context.Background()
		newStore := b.place(t)
		e1 := open(t, newStore(), veena.Options{})
		defer e1.Close()
		e2 := open(t, newStore(), veena.Options{})
		defer e2.Close()
		loadNetText(t, e1, racyNet)
		p := start(t, e1, veena.StartRequest{Definition: "racy"})
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 80)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				e := e1
				if i%2 == 1 {
					e = e2
				}
				for j := 0; j < 10; j++ {
					_, err := e.FireTransition(ctx, p.ID, "take", "")
					switch {
					case err == nil:
						ok.Add(1)
					case veena.Code(err) == "transition_not_enabled":
						refused.Add(1)
					default:
						errs <- err
						return
					}
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("fire: %v", err)
		}
		if ok.Load() != 40 || refused.Load() != 40 {
			t.Fatalf("%d firings succeeded and %d were refused, want 40 and 40", ok.Load(), refused.Load())
		}
		for _, e := range []*veena.Engine{e1, e2} {
			m := marking(t, e, p.ID)
			if got := nonEmpty(m); got != "keep=1 out=40" {
				t.Fatalf("marking %s, want keep=1 out=40", got)
			}
		}
		evs, err := e2.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Type == "TRANSITION_FIRED" {
				n++
			}
		}
		if n != 40 {
			t.Fatalf("%d TRANSITION_FIRED events, want 40", n)
		}
	})
}
