package veena_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
)

const perpetuum = "../shared/corpus/pnml/perpetuum"

func loadNetFile(t *testing.T, e *veena.Engine, path string) *veena.Definition {
	t.Helper()
	src, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is not there (the shared corpus is absent)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := e.LoadDefinition(context.Background(), filepath.Base(path), src, "")
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return d
}

func loadNetText(t *testing.T, e *veena.Engine, src string) *veena.Definition {
	t.Helper()
	d, _, err := e.LoadDefinition(context.Background(), "net.pnml", []byte(src), "")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return d
}

func marking(t *testing.T, e *veena.Engine, id string) *veena.Marking {
	t.Helper()
	m, err := e.NetMarking(context.Background(), id)
	if err != nil {
		t.Fatalf("marking of %s: %v", id, err)
	}
	return m
}

// nonEmpty renders the marked places as "a=1 b=2", sorted.
func nonEmpty(m *veena.Marking) string {
	var parts []string
	for p, c := range m.Places {
		if c != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", p, c))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// TestNetTraceDurable replays Perpetuum's traffic-light trace through the
// engine's fire command on every backend, restarting the engine half way
// on the durable ones: each step's marking and enabled transitions are the
// trace's, and a transition the trace does not enable is refused.
func TestNetTraceDurable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		newStore := b.place(t)
		e := open(t, newStore(), veena.Options{})
		loadNetFile(t, e, filepath.Join(perpetuum, "traffic_light_nightly.pnml"))
		p := start(t, e, veena.StartRequest{Definition: "traffic_light_nightly"})
		steps := []struct {
			marking string
			enabled []string
		}{
			{"yellow=1", []string{"dawn", "stop"}},
			{"night_service=1 yellow=1", []string{"sunset"}},
			{"yellow=1", []string{"stop", "dawn"}},
			{"red=1", []string{"dawn", "go"}},
			{"night_service=1 red=1", []string{"sunset", "go"}},
			{"red=1", []string{"go", "dawn"}},
			{"green=1", []string{"dawn", "caution"}},
			{"green=1 night_service=1", []string{"caution", "sunset"}},
			{"night_service=1 yellow=1", []string{"sunset"}},
		}
		for i, s := range steps {
			if i == 4 && b.durable {
				e.Close()
				e = open(t, newStore(), veena.Options{})
			}
			m := marking(t, e, p.ID)
			got := slices.Clone(m.Enabled)
			want := slices.Clone(s.enabled)
			slices.Sort(got)
			slices.Sort(want)
			if nonEmpty(m) != s.marking || !slices.Equal(got, want) || m.State != "executing" {
				t.Fatalf("step %d: marking %s enabled %v (%s), want %s %v", i, nonEmpty(m), m.Enabled, m.State, s.marking, s.enabled)
			}
			for _, tr := range []string{"caution", "stop", "go", "dawn", "sunset"} {
				if !slices.Contains(s.enabled, tr) {
					_, err := e.FireTransition(ctx, p.ID, tr, "")
					wantCode(t, err, "transition_not_enabled")
				}
			}
			if _, err := e.FireTransition(ctx, p.ID, s.enabled[0], ""); err != nil {
				t.Fatalf("step %d: fire %s: %v", i, s.enabled[0], err)
			}
		}
		_, err := e.FireTransition(ctx, p.ID, "nothing", "")
		wantCode(t, err, "not_found")
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var fired []string
		for _, ev := range evs {
			if ev.Type == "TRANSITION_FIRED" {
				fired = append(fired, *ev.ArcNames[0])
			}
		}
		if want := "dawn sunset stop dawn sunset go dawn caution sunset"; strings.Join(fired, " ") != want {
			t.Errorf("TRANSITION_FIRED events %v, want %s", fired, want)
		}
		e.Close()
	})
}

const workerNet = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="orders" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="new"><name><text>new</text></name></place>
   <place id="check"><name><text>check_credit(customer, &amp;limit)</text></name></place>
   <place id="approved"/><place id="rejected"/><place id="manual"/>
   <transition id="receive"><name><text>order(&amp;customer)</text></name></transition>
   <transition id="ok"/><transition id="no"/><transition id="other"/>
   <arc id="a1" source="receive" target="new"/>
   <arc id="a0" source="new" target="start"/>
   <transition id="start"><name><text>/inc(&amp;checks)</text></name></transition>
   <arc id="a2" source="start" target="check"/>
   <arc id="a3" source="check" target="ok"><name><text>ok</text></name></arc>
   <arc id="a4" source="ok" target="approved"/>
   <arc id="a5" source="check" target="no"><name><text>refused, blocked</text></name></arc>
   <arc id="a6" source="no" target="rejected"/>
   <arc id="a7" source="check" target="other"/>
   <arc id="a8" source="other" target="manual"/>
  </page>
 </net>
</pnml>`

// TestNetActivityJobs: an event starts work, an activity offers a job, and
// the worker's result code chooses the arc; the process completes when
// nothing is enabled and no activity runs.
func TestNetActivityJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e := open(t, b.place(t)(), veena.Options{})
		defer e.Close()
		loadNetText(t, e, workerNet)
		p := start(t, e, veena.StartRequest{Definition: "orders"})
		if p.State != "executing" {
			t.Fatalf("started %s", p.State)
		}
		r, err := e.SendTransitionEvent(ctx, p.ID, "order", map[string]any{"customer": "acme"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Fired, []string{"receive"}) {
			t.Fatalf("fired %v", r.Fired)
		}
		m := marking(t, e, p.ID)
		if nonEmpty(m) != "VAR:checks=1 VAR:customer=1 check=1" || len(m.Activities) != 1 || m.Activities[0].Place != "check" {
			t.Fatalf("after the order: %s, activities %+v", nonEmpty(m), m.Activities)
		}
		if m.Variables["customer"] != kernel.String("acme") || m.Variables["checks"] != kernel.Int(1) {
			t.Errorf("variables %v", m.Variables)
		}
		jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "check_credit", Worker: "w1", MaxJobs: 5, LockFor: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("activate: %v %v", jobs, err)
		}
		j := jobs[0]
		if j.ID != m.Activities[0].Job || j.Node != "check" || j.Env["customer"] != kernel.String("acme") {
			t.Errorf("job %+v, activity %+v", j, m.Activities[0])
		}
		// An event while the activity runs: the place's token is busy.
		if _, err := e.FireTransition(ctx, p.ID, "other", ""); veena.Code(err) != "transition_not_enabled" {
			t.Errorf("fire while busy: %v", err)
		}
		done, err := e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: "w1", Result: "blocked", Env: map[string]any{"limit": 0}})
		if err != nil {
			t.Fatal(err)
		}
		m = marking(t, e, p.ID)
		if nonEmpty(m) != "VAR:checks=1 VAR:customer=1 VAR:limit=1 rejected=1" || len(m.Activities) != 0 {
			t.Errorf("after the job: %s %+v", nonEmpty(m), m.Activities)
		}
		// receive is a source transition: the process never ends by itself.
		if done.State != "executing" || m.Variables["limit"] != kernel.Int(0) {
			t.Errorf("process %s, variables %v", done.State, m.Variables)
		}
		jr, err := e.Job(ctx, j.ID)
		if err != nil || jr.State != "completed" {
			t.Errorf("job afterwards: %+v %v", jr, err)
		}
	})
}
