package veena_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri"
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

const actionNet = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="booking" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="want"><initialMarking><text>1</text></initialMarking></place>
   <place id="booked"/>
   <transition id="book"><name><text>/book(flight, &amp;seat)</text></name></transition>
   <arc id="1" source="want" target="book"/><arc id="2" source="book" target="booked"/>
  </page>
 </net>
</pnml>`

// TestNetActions: a registered action that defers is tried again by a
// durable timer with the earlier deferrals; one that fails opens an
// action_failed incident and keeps nothing; resolving the incident tries
// it again, and its success fires the transition and keeps what it wrote.
func TestNetActions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := newClock()
		var mu sync.Mutex
		var calls []string
		outcomes := []petri.Result{petri.DeferBy(time.Minute), petri.DeferBy(2 * time.Minute), petri.Fail("no seats left"), petri.Succeed()}
		newEngine := func() *veena.Engine {
			e := open(t, b.place(t)(), veena.Options{Clock: clock.Now, TimerInterval: 5 * time.Millisecond})
			e.RegisterAction("book", func(c *petri.ActionCall) petri.Result {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, fmt.Sprintf("deferrals=%d last=%v", c.Deferrals, c.LastDelay))
				v, _ := c.Arg("flight")
				if err := c.Set("seat", kernel.String(v.Str()+"/12A")); err != nil {
					t.Error(err)
				}
				r := outcomes[0]
				if len(outcomes) > 1 {
					outcomes = outcomes[1:]
				}
				return r
			})
			return e
		}
		e := newEngine()
		defer e.Close()
		loadNetText(t, e, actionNet)
		p := start(t, e, veena.StartRequest{Definition: "booking", Env: map[string]any{"flight": "KL123"}})
		m := marking(t, e, p.ID)
		if nonEmpty(m) != "VAR:seat=1 want=1" || m.Deferred["book"] == "" || m.Variables["seat"] != (kernel.Value{}) {
			t.Fatalf("after start: %s deferred %v variables %v", nonEmpty(m), m.Deferred, m.Variables)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor := func(what string, ok func(m *veena.Marking) bool) *veena.Marking {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				m := marking(t, e, p.ID)
				if ok(m) {
					return m
				}
				if time.Now().After(deadline) {
					t.Fatalf("waiting for %s: marking %s deferred %v blocked %v", what, nonEmpty(m), m.Deferred, m.Blocked)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		clock.Advance(61 * time.Second)
		waitFor("the second deferral", func(m *veena.Marking) bool {
			mu.Lock()
			defer mu.Unlock()
			return len(calls) == 2 && m.Deferred["book"] != ""
		})
		clock.Advance(121 * time.Second)
		m = waitFor("the failure", func(m *veena.Marking) bool { return m.Blocked["book"] != "" })
		if nonEmpty(m) != "VAR:seat=1 want=1" || len(m.Deferred) != 0 || m.Variables["seat"] != (kernel.Value{}) {
			t.Fatalf("after the failure: %s deferred %v variables %v", nonEmpty(m), m.Deferred, m.Variables)
		}
		page, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("incidents %+v %v", page, err)
		}
		inc := page.Items[0]
		if inc.Kind != "action_failed" || inc.Node != "book" || !strings.Contains(inc.Message, "no seats left") {
			t.Errorf("incident %+v", inc)
		}
		if _, err := e.ResolveIncident(ctx, inc.ID, veena.ResolveIncidentRequest{}); err != nil {
			t.Fatal(err)
		}
		m = marking(t, e, p.ID)
		if nonEmpty(m) != "VAR:seat=1 booked=1" || m.Variables["seat"] != kernel.String("KL123/12A") || m.State != "completed" {
			t.Errorf("after resolving: %s variables %v state %s", nonEmpty(m), m.Variables, m.State)
		}
		mu.Lock()
		want := []string{"deferrals=0 last=0s", "deferrals=1 last=1m0s", "deferrals=2 last=2m0s", "deferrals=0 last=0s"}
		if !slices.Equal(calls, want) {
			t.Errorf("calls %v, want %v", calls, want)
		}
		mu.Unlock()
		evs, _ := e.Events(ctx, p.ID, 0, 0)
		var types []string
		for _, ev := range evs {
			if strings.HasPrefix(ev.Type, "ACTION") || strings.HasPrefix(ev.Type, "TRANSITION") || strings.HasPrefix(ev.Type, "INCIDENT") {
				types = append(types, ev.Type)
			}
		}
		if want := "INCIDENT_OPENED INCIDENT_RESOLVED ACTION_COMPLETED TRANSITION_FIRED"; strings.Join(types, " ") != want {
			t.Errorf("events %v, want %s", types, want)
		}
	})
}

// TestNetTokensNotByHand: the node token holding an activity's job cannot
// be completed through the token API (its job can), nor backtracked.
func TestNetTokensNotByHand(t *testing.T) {
	ctx := context.Background()
	e := open(t, backends()[0].place(t)(), veena.Options{})
	defer e.Close()
	loadNetText(t, e, workerNet)
	p := start(t, e, veena.StartRequest{Definition: "orders"})
	if _, err := e.SendTransitionEvent(ctx, p.ID, "order", map[string]any{"customer": "x"}, ""); err != nil {
		t.Fatal(err)
	}
	m := marking(t, e, p.ID)
	_, err := e.CompleteToken(ctx, m.Activities[0].NodeToken, veena.CompleteRequest{})
	wantCode(t, err, "invalid_argument")
	if !strings.Contains(err.Error(), "complete its job") {
		t.Errorf("error %v", err)
	}
	_, err = e.Backtrack(ctx, m.Activities[0].NodeToken, "")
	if err == nil {
		t.Error("backtracked a net process")
	}
	if m2 := marking(t, e, p.ID); nonEmpty(m2) != nonEmpty(m) || len(m2.Activities) != 1 {
		t.Errorf("the marking changed: %s", nonEmpty(m2))
	}
}
