package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
)

const (
	// stall: A splits to the waits B and C, which an and-join J joins.
	defStall = `<?xml version="1.0"?>
<process-definition name="stall" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" isStart="true"><arc to="B"/><arc to="C"/></node>
  <node name="B" type="wait"><arc to="J"/></node>
  <node name="C" type="wait"><arc to="J"/></node>
  <node name="J" type="wait" joinType="and"/>
</process-definition>
`
	// late: W's guard delays its token for a second unless ready.
	defLate = `<?xml version="1.0"?>
<process-definition name="late" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" isStart="true"><arc to="W"/></node>
  <node name="W" type="wait"><guard>if ready then Accept else delay until 1 second after now</guard></node>
</process-definition>
`
)

// TestOperator checks, on every backend, what an operator finds trouble and
// work with: stalled processes, failing timers, the filtered process list
// and the waiting work.
func TestOperator(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"stalled process", testStalled},
		{"failing timer", testFailingTimer},
		{"process list filters", testListFilters},
		{"waiting work", testWaitingWork},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, newEnv(t, b, envOptions{}))
				})
			}
		})
	}
}

func (e *env) process(id string) veena.Process {
	e.t.Helper()
	r := e.get("/api/v1/processes/" + url.PathEscape(id))
	e.want(r, http.StatusOK, "")
	var p veena.Process
	r.decode(e.t, &p)
	return p
}

func (e *env) list(query string) veena.ProcessPage {
	e.t.Helper()
	r := e.get("/api/v1/processes" + query)
	e.want(r, http.StatusOK, "")
	var p veena.ProcessPage
	r.decode(e.t, &p)
	return p
}

// gauge reads a gauge of /metrics.
func (e *env) gauge(name string) string {
	e.t.Helper()
	r := e.get("/metrics")
	e.want(r, http.StatusOK, "")
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(r.body)
	if m == nil {
		e.t.Fatalf("/metrics has no %s:\n%s", name, r.body)
	}
	return string(m[1])
}

func itemIDs(p veena.ProcessPage) []string {
	out := []string{}
	for _, it := range p.Items {
		out = append(out, it.ID)
	}
	return out
}

func testStalled(t *testing.T, e *env) {
	e.load(defStall)
	p := e.start("stall", "")
	other := e.start("stall", "")
	if p.Stalled || len(p.WaitingAt) != 2 || p.WaitingAt[0].Node != "B" || p.WaitingAt[1].Node != "C" || p.WaitingAt[0].Kind != "token" {
		t.Fatalf("a fresh process: stalled %v, waiting at %+v", p.Stalled, p.WaitingAt)
	}
	e.want(e.complete(e.active(p.ID, "B"), ""), http.StatusOK, "")
	// C's branch ends on no arc: the and-join can never fire.
	c := e.active(p.ID, "C")
	r := e.complete(c, `{"arcs": []}`)
	e.want(r, http.StatusOK, "")
	var after veena.Process
	r.decode(t, &after)
	if !after.Stalled || after.State != "executing" {
		t.Fatalf("after the dead end: state %s, stalled %v", after.State, after.Stalled)
	}
	wantStall := []veena.StalledJoin{{Node: "J", Join: "and",
		Waiting: []veena.Arc{{From: "B", To: "J"}}, Missing: []veena.Arc{{From: "C", To: "J"}}}}
	for what, got := range map[string]veena.Process{"the command's answer": after, "GET": e.process(p.ID)} {
		if !got.Stalled || mustJSON(got.Stall) != mustJSON(wantStall) {
			t.Errorf("%s: stalled %v, stall %s; want %s", what, got.Stalled, mustJSON(got.Stall), mustJSON(wantStall))
		}
		if len(got.WaitingAt) != 1 || got.WaitingAt[0].Node != "J" || got.WaitingAt[0].Kind != "join" || got.WaitingAt[0].Arcs != 1 {
			t.Errorf("%s: waiting at %+v, want the join J with one arc", what, got.WaitingAt)
		}
	}
	stalled := e.list("?stalled=true")
	if !slices.Equal(itemIDs(stalled), []string{p.ID}) || stalled.Total != 1 || !stalled.Items[0].Stalled {
		t.Fatalf("?stalled=true: %v (total %d)", itemIDs(stalled), stalled.Total)
	}
	if got := e.list("?stalled=false"); got.Total != 2 {
		t.Errorf("?stalled=false lists %d, want both", got.Total)
	}
	if got := e.gauge("veena_processes_stalled"); got != "1" {
		t.Errorf("veena_processes_stalled = %s, want 1", got)
	}
	// Backtracking to C makes it active again: no longer stalled.
	r = e.post("/api/v1/node-tokens/"+c+"/backtrack", "")
	e.want(r, http.StatusOK, "")
	after = veena.Process{}
	r.decode(t, &after)
	if after.Stalled || len(after.Stall) != 0 {
		t.Fatalf("after the backtrack: stalled %v %+v", after.Stalled, after.Stall)
	}
	if got := e.list("?stalled=true"); len(got.Items) != 0 || got.Total != 0 {
		t.Errorf("?stalled=true after the backtrack: %v", itemIDs(got))
	}
	if got := e.gauge("veena_processes_stalled"); got != "0" {
		t.Errorf("veena_processes_stalled = %s after the backtrack, want 0", got)
	}
	// A process that ends waits nowhere.
	e.want(e.post("/api/v1/processes/"+other.ID+"/cancel", ""), http.StatusOK, "")
	if got := e.process(other.ID); got.Stalled || len(got.WaitingAt) != 0 {
		t.Errorf("a canceled process: stalled %v, waiting at %+v", got.Stalled, got.WaitingAt)
	}
}

func testFailingTimer(t *testing.T, e *env) {
	e.load(defLate)
	p := e.start("late", `{"ready": false}`)
	if len(p.WaitingAt) != 1 || p.WaitingAt[0].Kind != "delayed" || p.WaitingAt[0].Until == nil {
		t.Fatalf("waiting at %+v, want W delayed with its time", p.WaitingAt)
	}
	// A string where the guard reads a boolean: its next run fails.
	e.want(e.do(req{method: "PATCH", path: "/api/v1/processes/" + p.ID + "/env", body: `{"ready": "soon"}`}), http.StatusOK, "")
	var got veena.Process
	deadline := time.Now().Add(15 * time.Second)
	// The failure is kept on the timer, then its incident opens.
	for {
		got = e.process(p.ID)
		if len(got.TimerFailures) > 0 && got.TimerFailures[0].Incident != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got.TimerFailures) != 1 {
		t.Fatalf("no timer failure with its incident on the process after 15 s: %+v", got)
	}
	f := got.TimerFailures[0]
	if f.Node != "W" || f.Incident == "" || !strings.Contains(f.Message, "ready") || f.Token != e.active(p.ID, "W") {
		t.Errorf("timer failure %+v: want W's token, its incident and a message naming ready", f)
	}
	// The token waits for its incident now, with no timer firing meanwhile.
	if len(got.WaitingAt) != 1 || got.WaitingAt[0].Kind != "incident" {
		t.Errorf("waiting at %+v, want W holding an incident", got.WaitingAt)
	}
	inc, err := e.eng.Incident(context.Background(), f.Incident)
	if err != nil || inc.Kind != "timer_failed" || inc.State != "open" || inc.NodeToken != f.Token {
		t.Fatalf("incident %s: %+v, %v", f.Incident, inc, err)
	}
	if g := e.gauge("veena_timers_failing"); g != "1" {
		t.Errorf("veena_timers_failing = %s, want 1", g)
	}
	// Fixing the attribute and resolving the incident runs the guard again.
	e.want(e.do(req{method: "PATCH", path: "/api/v1/processes/" + p.ID + "/env", body: `{"ready": true}`}), http.StatusOK, "")
	if _, err := e.eng.ResolveIncident(context.Background(), f.Incident, veena.ResolveIncidentRequest{}); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	got = e.process(p.ID)
	if len(got.TimerFailures) != 0 || len(got.WaitingAt) != 1 || got.WaitingAt[0].Kind != "token" {
		t.Fatalf("after the fix: failures %+v, waiting at %+v; want W accepted", got.TimerFailures, got.WaitingAt)
	}
	if g := e.gauge("veena_timers_failing"); g != "0" {
		t.Errorf("veena_timers_failing = %s after the fix, want 0", g)
	}
}

func testListFilters(t *testing.T, e *env) {
	e.load(defStall)
	e.load(defOne)
	var ids []string
	for i := range 4 {
		r := e.post("/api/v1/processes", fmt.Sprintf(`{"definition": "stall", "context": {"order": "o-%d", "shop": "north"}}`, i))
		e.want(r, http.StatusCreated, "")
		var p veena.Process
		r.decode(t, &p)
		ids = append(ids, p.ID)
		time.Sleep(2 * time.Millisecond) // ids are time-ordered to the millisecond
	}
	one := e.start("one", "")
	e.want(e.complete(e.active(one.ID, "A"), ""), http.StatusOK, "")
	e.want(e.complete(e.active(ids[1], "B"), ""), http.StatusOK, "")
	e.want(e.post("/api/v1/processes/"+ids[2]+"/cancel", ""), http.StatusOK, "")

	// Newest first, with the total; the "waiting at" of each.
	all := e.list("")
	if want := []string{one.ID, ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(itemIDs(all), want) || all.Total != 5 || all.TotalCapped {
		t.Fatalf("all: %v total %d, want %v total 5", itemIDs(all), all.Total, want)
	}
	if w := all.Items[3].WaitingAt; len(w) != 2 || w[0].Node != "C" || w[1].Node != "J" || w[1].Kind != "join" {
		t.Errorf("process 1 waits at %+v, want C and the join J", w)
	}
	if c := all.Items[1].Context; c["order"] != "o-3" {
		t.Errorf("the list shows the context %v", c)
	}
	check := func(q string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		got := e.list(q)
		if !slices.Equal(itemIDs(got), want) || got.Total != len(want) {
			t.Errorf("%s: %v (total %d), want %v", q, itemIDs(got), got.Total, want)
		}
	}
	check("?order=oldest", ids[0], ids[1], ids[2], ids[3], one.ID)
	check("?state=executing,completed", one.ID, ids[3], ids[1], ids[0])
	check("?definition=stall&state=canceled", ids[2])
	check("?definition=stall&version=1&state=executing", ids[3], ids[1], ids[0])
	check("?node=J", ids[1])
	check("?node=B", ids[3], ids[0])
	check("?context=order=o-2", ids[2]) // canceled, and still found by its context
	check("?context=shop=north&context=order=o-1", ids[1])
	check("?q=o-3", ids[3])
	check("?id="+ids[0], ids[0])
	check("?q="+one.ID[:len(one.ID)-4], one.ID)
	check("?id=ffff")
	check("?createdAfter="+url.QueryEscape(all.Items[0].CreatedAt.Format(time.RFC3339Nano)), one.ID)
	check("?createdBefore="+url.QueryEscape(all.Items[4].CreatedAt.Add(time.Millisecond).Format(time.RFC3339Nano)), ids[0])
	// Pages of two follow the order; the total stays that of the filter.
	p1 := e.list("?limit=2")
	p2 := e.list("?limit=2&after=" + p1.Next)
	if !slices.Equal(itemIDs(p1), []string{one.ID, ids[3]}) || !slices.Equal(itemIDs(p2), []string{ids[2], ids[1]}) || p2.Total != 5 {
		t.Errorf("pages: %v then %v (total %d)", itemIDs(p1), itemIDs(p2), p2.Total)
	}
	if p := e.list("?total=false&limit=1"); p.Total != 0 || len(p.Items) != 1 {
		t.Errorf("?total=false: total %d, %d items", p.Total, len(p.Items))
	}
	for _, q := range []string{"?stalled=maybe", "?order=random", "?createdAfter=yesterday", "?context=nokey", "?version=1", "?version=0&definition=stall", "?state=executing,sleeping"} {
		e.want(e.get("/api/v1/processes"+q), http.StatusBadRequest, "invalid_argument")
	}
}

func testWaitingWork(t *testing.T, e *env) {
	e.load(defStall)
	e.load(defLate)
	a := e.start("stall", "")
	time.Sleep(2 * time.Millisecond)
	b := e.post("/api/v1/processes", `{"definition": "late", "env": {"ready": false}, "context": {"order": "o-9"}}`)
	e.want(b, http.StatusCreated, "")
	var late veena.Process
	b.decode(t, &late)
	e.want(e.complete(e.active(a.ID, "B"), ""), http.StatusOK, "")
	done := e.start("stall", "")
	e.want(e.post("/api/v1/processes/"+done.ID+"/cancel", ""), http.StatusOK, "")

	waiting := func(q string) veena.WaitingPage {
		t.Helper()
		r := e.get("/api/v1/waiting" + q)
		e.want(r, http.StatusOK, "")
		var p veena.WaitingPage
		r.decode(t, &p)
		return p
	}
	w := waiting("")
	var got []string
	for _, it := range w.Items {
		got = append(got, it.Process[len(it.Process)-4:]+" "+it.Node+" "+it.Kind)
		if it.Since.IsZero() || it.Definition == "" {
			t.Errorf("item %+v lacks its since or definition", it)
		}
	}
	short := func(id string) string { return id[len(id)-4:] }
	want := []string{short(a.ID) + " C token", short(a.ID) + " J join", short(late.ID) + " W delayed"}
	if !slices.Equal(got, want) || w.Total != 2 {
		t.Fatalf("waiting work, oldest first: %v (total %d), want %v", got, w.Total, want)
	}
	if it := w.Items[2]; it.Context["order"] != "o-9" || it.Until == nil || it.Token == "" {
		t.Errorf("the delayed token's item %+v: want its context, its time and its token", it)
	}
	if w := waiting("?node=J"); len(w.Items) != 1 || w.Items[0].Node != "J" || w.Items[0].Arcs != 1 {
		t.Errorf("?node=J: %+v", w.Items)
	}
	if w := waiting("?order=newest&limit=1"); len(w.Items) != 1 || w.Items[0].Process != late.ID || w.Next == "" {
		t.Errorf("?order=newest&limit=1: %+v next %q", w.Items, w.Next)
	}
	if w := waiting("?context=order=o-9"); len(w.Items) != 1 || w.Items[0].Process != late.ID {
		t.Errorf("?context=order=o-9: %+v", w.Items)
	}
	e.want(e.get("/api/v1/waiting?state=completed"), http.StatusBadRequest, "invalid_argument")
}
