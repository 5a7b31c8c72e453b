package petri_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri"
)

// netXML builds a PNML file from short lines:
//
//	place ID [LABEL] [=N]
//	transition ID [LABEL]
//	arc SOURCE TARGET [*W] [!] [codes=a,b]
//
// Labels are written with "_" for spaces-free names as they are; a label
// in quotes may hold spaces.
func netXML(spec string) string {
	var b strings.Builder
	b.WriteString(`<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="n"><page id="pg">`)
	arcs := 0
	for _, line := range strings.Split(strings.TrimSpace(spec), "\n") {
		f := fields(strings.TrimSpace(line))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "place", "transition":
			fmt.Fprintf(&b, `<%s id="%s">`, f[0], f[1])
			for _, x := range f[2:] {
				if strings.HasPrefix(x, "=") {
					fmt.Fprintf(&b, `<initialMarking><text>%s</text></initialMarking>`, x[1:])
				} else {
					fmt.Fprintf(&b, `<name><text>%s</text></name>`, xmlEscape(x))
				}
			}
			fmt.Fprintf(&b, `</%s>`, f[0])
		case "arc":
			arcs++
			fmt.Fprintf(&b, `<arc id="a%d" source="%s" target="%s">`, arcs, f[1], f[2])
			for _, x := range f[3:] {
				switch {
				case strings.HasPrefix(x, "*"):
					fmt.Fprintf(&b, `<inscription><text>%s</text></inscription>`, x[1:])
				case x == "!":
					b.WriteString(`<type value="inhibitor"/>`)
				case strings.HasPrefix(x, "codes="):
					fmt.Fprintf(&b, `<name><text>%s</text></name>`, x[6:])
				}
			}
			b.WriteString(`</arc>`)
		}
	}
	b.WriteString(`</page></net></pnml>`)
	return b.String()
}

func fields(s string) []string {
	var out []string
	for len(s) > 0 {
		s = strings.TrimSpace(s)
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func machine(t *testing.T, spec string, actions map[string]petri.ActionFunc) *petri.Machine {
	t.Helper()
	g, err := pnml.Load("test.pnml", []byte(netXML(spec)))
	if err != nil {
		t.Fatalf("load: %v\n%s", err, netXML(spec))
	}
	m := &petri.Machine{Net: petri.Compiled(g)}
	if actions != nil {
		m.Actions = func(name string) (petri.ActionFunc, bool) { f, ok := actions[name]; return f, ok }
	}
	return m
}

// marking renders the non-empty places as "a=1 b=2", sorted by id.
func marking(m *petri.Machine, s *petri.State) string {
	var parts []string
	for p, c := range s.Marking {
		if c != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", m.Net.Places[p].ID, c))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func varsString(v map[string]petri.Value) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+"="+v[k].String())
	}
	return strings.Join(parts, " ")
}

func ids(m *petri.Machine, ts []int) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, m.Net.Transitions[t].ID)
	}
	return out
}

var t0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// The seed's events: one transition accepts an event only when its place
// holds a token, another (no input place) always accepts it; both fire on
// one event (match-all), and the second alone on the next.
func TestEventsConditionalAndAlways(t *testing.T) {
	m := machine(t, `
		place ready =1
		place served
		place counted
		transition cond ping
		transition always ping#2
		arc ready cond
		arc cond served
		arc always counted`, nil)
	s := m.Net.NewState()
	vars := map[string]petri.Value{}
	for i, want := range []struct {
		fired   string
		marking string
	}{
		{"cond always", "counted=1 served=1"},
		{"always", "counted=2 served=1"},
	} {
		st := m.Begin(s, vars, t0, "p")
		fired, err := st.Event("ping", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(m, fired), " "); got != want.fired {
			t.Errorf("event %d fired %q, want %q", i, got, want.fired)
		}
		if got := marking(m, s); got != want.marking {
			t.Errorf("after event %d: %s, want %s", i, got, want.marking)
		}
	}
	st := m.Begin(s, vars, t0, "p")
	fired, _ := st.Event("pong", nil)
	if len(fired) != 0 || st.Effects[len(st.Effects)-1].Kind != petri.Ignored {
		t.Errorf("unknown event: fired %v, effects %v", fired, st.Effects)
	}
}

// Match-all re-checks each candidate: the first to fire takes the only
// token, so the second does not fire.
func TestEventMatchAllInConflict(t *testing.T) {
	m := machine(t, `
		place p =1
		place a
		place b
		transition first go
		transition second go#2
		arc p first
		arc p second
		arc first a
		arc second b`, nil)
	s := m.Net.NewState()
	fired, err := m.Begin(s, nil, t0, "p").Event("go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(m, fired); !slices.Equal(got, []string{"first"}) || marking(m, s) != "a=1" {
		t.Errorf("fired %v, marking %s; want [first], a=1", got, marking(m, s))
	}
}

// Value arguments select, binding arguments copy; a missing argument does
// not welcome.
func TestEventArguments(t *testing.T) {
	m := machine(t, `
		place open =2
		place mine
		place logged
		transition select order(customer)
		transition bind login(&user)
		arc open select
		arc select mine
		arc bind logged`, nil)
	s := m.Net.NewState()
	vars := map[string]petri.Value{"customer": kernel.String("acme")}
	step := func(name string, args map[string]petri.Value) []string {
		f, err := m.Begin(s, vars, t0, "p").Event(name, args)
		if err != nil {
			t.Fatal(err)
		}
		return ids(m, f)
	}
	if f := step("order", map[string]petri.Value{"customer": kernel.String("other")}); len(f) != 0 {
		t.Errorf("order for another customer fired %v", f)
	}
	if f := step("order", nil); len(f) != 0 {
		t.Errorf("order without customer fired %v", f)
	}
	if f := step("order", map[string]petri.Value{"customer": kernel.String("acme")}); !slices.Equal(f, []string{"select"}) {
		t.Errorf("order for acme fired %v", f)
	}
	if f := step("login", nil); len(f) != 0 {
		t.Errorf("login without user fired %v", f)
	}
	if f := step("login", map[string]petri.Value{"user": kernel.String("alice"), "extra": kernel.Int(1)}); !slices.Equal(f, []string{"bind"}) {
		t.Errorf("login fired %v", f)
	}
	if got := varsString(vars); got != `customer=acme user=alice` {
		t.Errorf("variables %s", got)
	}
	if got := marking(m, s); got != "VAR:user=1 logged=1 mine=1 open=1" {
		t.Errorf("marking %s", got)
	}
}

// An activity's result code chooses the arcs: arcs naming it are
// preferred, arcs naming no code take every other code (and no code).
func TestResultCodes(t *testing.T) {
	spec := `
		place start =1
		place check check(order)
		place approved
		place rejected
		place manual
		transition go /pass()
		transition ok
		transition no
		transition other
		arc start go
		arc go check
		arc check ok codes=ok,fine
		arc ok approved
		arc check no codes=fail
		arc no rejected
		arc check other
		arc other manual`
	for _, c := range []struct{ code, want string }{
		{"ok", "approved=1"}, {" fine ", "approved=1"}, {"fail", "rejected=1"}, {"odd", "manual=1"}, {"", "manual=1"},
	} {
		m := machine(t, spec, nil)
		s := m.Net.NewState()
		st := m.Begin(s, nil, t0, "p")
		if err := st.Start(); err != nil {
			t.Fatal(err)
		}
		if len(s.Activities) != 1 || marking(m, s) != "check=1" {
			t.Fatalf("after start: %s, %d activities", marking(m, s), len(s.Activities))
		}
		if st.Done() {
			t.Fatal("done while the activity runs")
		}
		st = m.Begin(s, nil, t0, "p")
		if err := st.Deliver(s.Activities[0].ID, c.code, true); err != nil {
			t.Fatal(err)
		}
		if got := marking(m, s); got != c.want {
			t.Errorf("code %q: %s, want %s", c.code, got, c.want)
		}
		if len(s.Activities) != 0 || !st.Done() {
			t.Errorf("code %q: activities %d, done %v", c.code, len(s.Activities), st.Done())
		}
	}
}

// The seed's LDAP query: an activity with multiple outputs delivers
// intermediate results whose arc leads back to its own place (the activity
// runs on), then a final one.
func TestMultiOutputActivity(t *testing.T) {
	m := machine(t, `
		place idle =1
		place query ldap(base)
		place entries
		place done
		transition ask /pass()
		transition "found entry"
		transition finish
		arc idle ask
		arc ask query
		arc query "found entry" codes=entry
		arc "found entry" query
		arc "found entry" entries
		arc query finish codes=done
		arc finish done`, nil)
	s := m.Net.NewState()
	st := m.Begin(s, nil, t0, "p")
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, e := range st.Effects {
		if e.Kind == petri.StartActivity {
			starts++
		}
	}
	id := s.Activities[0].ID
	for i := range 3 {
		st := m.Begin(s, nil, t0, "p")
		if err := st.Deliver(id, "entry", false); err != nil {
			t.Fatal(err)
		}
		for _, e := range st.Effects {
			if e.Kind == petri.StartActivity {
				starts++
			}
		}
		if got, want := marking(m, s), fmt.Sprintf("entries=%d query=1", i+1); got != want {
			t.Fatalf("after entry %d: %s, want %s", i+1, got, want)
		}
		if len(s.Activities) != 1 || s.Activities[0].ID != id || s.Activities[0].Token != petri.Busy {
			t.Fatalf("after entry %d: activities %+v", i+1, s.Activities[0])
		}
	}
	if starts != 1 {
		t.Errorf("%d activities started; the intermediate results should keep the first", starts)
	}
	st = m.Begin(s, nil, t0, "p")
	if err := st.Deliver(id, "done", true); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "done=1 entries=3" || !st.Done() {
		t.Errorf("after the final result: %s, done %v", got, st.Done())
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(id, "late", false); !errors.Is(err, petri.ErrNoActivity) {
		t.Errorf("result after the end: %v", err)
	}
}

// A result that arrives while the activity's token is away waits for it.
func TestResultWaitsForToken(t *testing.T) {
	m := machine(t, `
		place query ldap() =1
		place entries
		place gate
		transition hold
		transition back open
		arc query hold codes=entry
		arc hold gate
		arc gate back
		arc back query
		arc back entries`, nil)
	s := m.Net.NewState()
	st := m.Begin(s, nil, t0, "p")
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	id := s.Activities[0].ID
	if err := m.Begin(s, nil, t0, "p").Deliver(id, "entry", false); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "gate=1" {
		t.Fatalf("after entry: %s", got)
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(id, "entry", false); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "gate=1" || len(s.Activities[0].Queue) != 1 {
		t.Fatalf("second entry while away: %s, queue %v", got, s.Activities[0].Queue)
	}
	if _, err := m.Begin(s, nil, t0, "p").Event("open", nil); err != nil {
		t.Fatal(err)
	}
	// The token came back, took the queued result and went to the gate again.
	if got := marking(m, s); got != "entries=1 gate=1" || len(s.Activities[0].Queue) != 0 {
		t.Fatalf("after open: %s, queue %v", got, s.Activities[0].Queue)
	}
}

// Actions: Success keeps what they wrote, Failure blocks the transition
// (an incident) and keeps nothing, Defer sets a timer and the retry sees
// the earlier deferrals.
func TestActions(t *testing.T) {
	var calls []string
	outcome := map[string]petri.Result{}
	actions := map[string]petri.ActionFunc{
		"book": func(c *petri.ActionCall) petri.Result {
			calls = append(calls, fmt.Sprintf("book deferrals=%d first=%v last=%v", c.Deferrals, c.FirstDeferred.Sub(t0), c.LastDelay))
			if err := c.Set("seat", kernel.String("12A")); err != nil {
				t.Error(err)
			}
			if err := c.Set("other", kernel.Int(1)); err == nil {
				t.Error("an action wrote a variable it does not bind")
			}
			return outcome["book"]
		},
	}
	m := machine(t, `
		place want =1
		place booked
		transition t "/book(flight, &seat)"
		arc want t
		arc t booked`, actions)
	s := m.Net.NewState()
	vars := map[string]petri.Value{"flight": kernel.String("KL123")}

	outcome["book"] = petri.DeferBy(time.Minute)
	st := m.Begin(s, vars, t0, "p")
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	if marking(m, s) != "VAR:seat=1 want=1" || len(s.Deferred) != 1 || !s.Deferred[0].Until.Equal(t0.Add(time.Minute)) {
		t.Fatalf("deferred: %s %+v", marking(m, s), s.Deferred)
	}
	if _, ok := vars["seat"]; ok {
		t.Error("a deferred action's write was kept")
	}
	// Too early: nothing happens.
	if err := m.Begin(s, vars, t0.Add(30*time.Second), "p").Retry(0); err != nil || len(calls) != 1 {
		t.Fatalf("early retry: %v, %d calls", err, len(calls))
	}
	outcome["book"] = petri.DeferBy(2 * time.Minute)
	if err := m.Begin(s, vars, t0.Add(time.Minute), "p").Retry(0); err != nil {
		t.Fatal(err)
	}
	outcome["book"] = petri.Fail("no seats")
	if err := m.Begin(s, vars, t0.Add(3*time.Minute), "p").Retry(0); err != nil {
		t.Fatal(err)
	}
	if len(s.Blocked) != 1 || s.Blocked[0].Message != "no seats" || marking(m, s) != "VAR:seat=1 want=1" {
		t.Fatalf("failed: %s blocked %+v", marking(m, s), s.Blocked)
	}
	// Blocked: another step does not try it.
	st = m.Begin(s, vars, t0.Add(4*time.Minute), "p")
	if _, err := st.Event("nothing", nil); err != nil || len(calls) != 3 {
		t.Fatalf("blocked transition tried again: %v, %d calls", err, len(calls))
	}
	if st.Done() {
		t.Error("done with a blocked transition enabled")
	}
	// Resolving tries again; a failure again fails the command.
	if err := m.Begin(s.Clone(), vars, t0.Add(5*time.Minute), "p").Resolve(0); !errors.Is(err, petri.ErrActionFailed) {
		t.Errorf("resolve that fails again: %v", err)
	}
	outcome["book"] = petri.Succeed()
	st = m.Begin(s, vars, t0.Add(6*time.Minute), "p")
	if err := st.Resolve(0); err != nil {
		t.Fatal(err)
	}
	if marking(m, s) != "VAR:seat=1 booked=1" || vars["seat"] != kernel.String("12A") || !st.Done() {
		t.Errorf("resolved: %s %s done %v", marking(m, s), varsString(vars), st.Done())
	}
	want := []string{
		"book deferrals=0 first=-2562047h47m16.854775808s last=0s",
		"book deferrals=1 first=0s last=1m0s",
		"book deferrals=2 first=0s last=2m0s",
		"book deferrals=0 first=-2562047h47m16.854775808s last=0s",
		"book deferrals=0 first=-2562047h47m16.854775808s last=0s",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}

// Built-in actions, and an action nobody registered.
func TestBuiltins(t *testing.T) {
	m := machine(t, `
		place p =1
		place q
		place r
		place s
		transition a "/set(&copy, src)"
		transition b /inc(&n)
		transition c /nothing()
		arc p a
		arc a q
		arc q b
		arc b r
		arc r c
		arc c s`, nil)
	s := m.Net.NewState()
	vars := map[string]petri.Value{"src": kernel.Int(7), "n": kernel.Int(41)}
	if err := m.Begin(s, vars, t0, "p").Start(); err != nil {
		t.Fatal(err)
	}
	if got := varsString(vars); got != "copy=7 n=42 src=7" {
		t.Errorf("variables %s", got)
	}
	if len(s.Blocked) != 1 || s.Blocked[0].Message != "no action nothing is registered" {
		t.Errorf("unregistered action: %+v", s.Blocked)
	}
}

// Nets that fire for ever stop at the step budget.
func TestBudget(t *testing.T) {
	m := machine(t, `
		place a =1
		place b
		transition f /pass()
		transition g
		arc a f
		arc f b
		arc b g
		arc g a`, nil)
	m.Budget = 100
	err := m.Begin(m.Net.NewState(), nil, t0, "p").Start()
	if !errors.Is(err, petri.ErrBudget) {
		t.Fatalf("endless net: %v", err)
	}
}

// A net that drives nothing fires only by command: Fire refuses a
// transition that is not enabled and fires one that is.
func TestFireByCommand(t *testing.T) {
	m := machine(t, `
		place a =1
		place b
		transition t1 "move it"
		transition t2 "move back"
		arc a t1
		arc t1 b
		arc b t2
		arc t2 a`, nil)
	s := m.Net.NewState()
	if err := m.Begin(s, nil, t0, "p").Start(); err != nil || marking(m, s) != "a=1" {
		t.Fatalf("start: %v %s", err, marking(m, s))
	}
	if err := m.Begin(s, nil, t0, "p").Fire(1); !errors.Is(err, petri.ErrNotEnabled) {
		t.Errorf("fire a disabled transition: %v", err)
	}
	if err := m.Begin(s, nil, t0, "p").Fire(0); err != nil || marking(m, s) != "b=1" {
		t.Errorf("fire: %v %s", err, marking(m, s))
	}
}

// Generated locks keep two activities that write the same variable apart:
// the second starts only when the first has ended and given the lock back.
func TestVariableLocks(t *testing.T) {
	m := machine(t, `
		place jobs =2
		place work update(&total)
		place done
		transition begin
		transition end
		arc jobs begin
		arc begin work
		arc work end
		arc end done`, nil)
	s := m.Net.NewState()
	if err := m.Begin(s, nil, t0, "p").Start(); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "jobs=1 work=1" || len(s.Activities) != 1 {
		t.Fatalf("after start: %s, %d activities (the lock should let one in)", got, len(s.Activities))
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(s.Activities[0].ID, "", true); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "done=1 work=1" || len(s.Activities) != 1 {
		t.Fatalf("after the first: %s, %d activities", got, len(s.Activities))
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(s.Activities[0].ID, "", true); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "VAR:total=1 done=2" {
		t.Fatalf("after both: %s", got)
	}
}

// The seed's superposition: two nets drawn apart share the place
// "Failed" and hand work over through "start" and "done"; loaded as one
// bundle they are one net. The requester holds a token of its own next to
// the shared place (a guarded shared place), so the worker's tokens do not
// spill into it.
func TestSuperposedBundle(t *testing.T) {
	src := `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
	<net id="requester"><page id="r">
	  <place id="r1"><name><text>ready</text></name><initialMarking><text>2</text></initialMarking></place>
	  <place id="r2"><name><text>start</text></name></place>
	  <place id="r3"><name><text>done</text></name></place>
	  <place id="r4"><name><text>Failed</text></name></place>
	  <place id="r5"><name><text>waiting</text></name></place>
	  <place id="r6"><name><text>finished</text></name></place>
	  <transition id="rt1"><name><text>/pass#1()</text></name></transition>
	  <transition id="rt2"><name><text>collect it</text></name></transition>
	  <arc id="ra1" source="r1" target="rt1"/><arc id="ra2" source="rt1" target="r2"/><arc id="ra3" source="rt1" target="r5"/>
	  <arc id="ra4" source="r3" target="rt2"/><arc id="ra5" source="r5" target="rt2"/><arc id="ra6" source="rt2" target="r6"/>
	</page></net>
	<net id="worker"><page id="w">
	  <place id="w1"><name><text>start</text></name></place>
	  <place id="w2"><name><text>work(job)</text></name></place>
	  <place id="w3"><name><text>done</text></name></place>
	  <place id="w4"><name><text>Failed</text></name></place>
	  <transition id="wt1"/><transition id="wt2"/><transition id="wt3"/>
	  <arc id="wa1" source="w1" target="wt1"/><arc id="wa2" source="wt1" target="w2"/>
	  <arc id="wa3" source="w2" target="wt2"><name><text>ok</text></name></arc><arc id="wa4" source="wt2" target="w3"/>
	  <arc id="wa5" source="w2" target="wt3"><name><text>error</text></name></arc><arc id="wa6" source="wt3" target="w4"/>
	</page></net></pnml>`
	g, err := pnml.Load("bundle.pnml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := &petri.Machine{Net: petri.Compiled(g)}
	if len(m.Net.Places) != 7 {
		t.Fatalf("%d places, want 7 (start, done and Failed shared)", len(m.Net.Places))
	}
	s := m.Net.NewState()
	if err := m.Begin(s, nil, t0, "p").Start(); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "r5=2 w2=2" || len(s.Activities) != 2 {
		t.Fatalf("after start: %s, %d activities", got, len(s.Activities))
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(s.Activities[0].ID, "ok", true); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "r5=1 r6=1 w2=1" {
		t.Errorf("after the first job: %s, want r5=1 r6=1 w2=1 (done collected)", got)
	}
	if err := m.Begin(s, nil, t0, "p").Deliver(s.Activities[0].ID, "error", true); err != nil {
		t.Fatal(err)
	}
	if got := marking(m, s); got != "r4=1 r5=1 r6=1" {
		t.Errorf("after the failed job: %s, want the shared Failed marked", got)
	}
}
