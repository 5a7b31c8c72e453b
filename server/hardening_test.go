package server_test

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/testutil"
	"github.com/veena-wf/veena/kernel"
)

// TestBigIntegersRefused: an integer attribute beyond 64 bits is refused
// with 400 naming the attribute, wherever attributes are sent, and nothing
// is changed.
func TestBigIntegersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[0], envOptions{})
	e.load(testutil.DefAB)
	const big = `1180591620717411303425`
	r := e.post("/api/v1/processes", `{"definition":"ab","env":{"n":`+big+`}}`)
	e.want(r, http.StatusBadRequest, "invalid_argument")
	if p := r.problem(t); !strings.Contains(p.Detail, `"n"`) {
		t.Fatalf("the problem does not name the attribute: %s", r.body)
	}
	p := e.start("ab", `{"n": 9223372036854775807}`)
	a := e.active(p.ID, "A")
	for _, c := range []struct{ method, path, body, name string }{
		{"POST", "/api/v1/node-tokens/" + a + "/complete", `{"env":{"big":` + big + `}}`, `"big"`},
		{"PATCH", "/api/v1/processes/" + p.ID + "/env", `{"m":-` + big + `}`, `"m"`},
		{"PATCH", "/api/v1/node-tokens/" + a + "/env", `{"t":` + big + `}`, `"t"`},
		{"POST", "/api/v1/node-tokens/" + a + "/complete", `{"tokenSet":{"name":"s","count":1,"memberEnv":{"k":[` + big + `]}}}`, `"k"`},
	} {
		r := e.do(req{method: c.method, path: c.path, body: c.body})
		e.want(r, http.StatusBadRequest, "invalid_argument")
		if p := r.problem(t); !strings.Contains(p.Detail, c.name) {
			t.Fatalf("%s %s: the problem does not name %s: %s", c.method, c.path, c.name, r.body)
		}
	}
	r = e.get("/api/v1/processes/" + p.ID + "/env")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"n\":9223372036854775807}\n" {
		t.Fatalf("env %s", r.body)
	}
	if e.active(p.ID, "A") != a {
		t.Fatal("a refused completion changed the process")
	}
}

// TestAccessTokenOnlyOnEventStreams: ?access_token= authenticates only
// the event stream (an EventSource cannot send headers), not the JSON list
// of events nor any other path that happens to end in /events.
func TestAccessTokenOnlyOnEventStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[0], envOptions{static: []string{"viewer=" + viewerSecret, "admin=" + adminSecret}})
	e.token = adminSecret
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	e.token = ""
	for _, path := range []string{
		"/api/v1/processes/" + p.ID + "/events?access_token=" + viewerSecret,
		"/api/v1/definitions/x%2Fevents?access_token=" + viewerSecret,
		"/api/v1/processes/" + p.ID + "%2Fevents?access_token=" + viewerSecret,
		"/api/v1/processes?x=/events&access_token=" + viewerSecret,
	} {
		e.want(e.do(req{method: "GET", path: path}), http.StatusUnauthorized, "unauthorized")
	}
	// With a stream on another path the query token does not count either.
	s, resp := e.stream("/api/v1/definitions/x%2Fevents?access_token="+viewerSecret, nil, true)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("stream on a definition path with access_token: %d", resp.StatusCode)
	}
	if s != nil {
		s.resp.Body.Close()
	}
	s, resp = e.stream("/api/v1/processes/"+p.ID+"/events?access_token="+viewerSecret, nil, true)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the event stream with access_token: %d", resp.StatusCode)
	}
	s.resp.Body.Close()
}

const (
	defNestedChild = `<process-definition name="nchild" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="C" type="wait" isStart="true"/>
</process-definition>`
	defNestedParent = `<process-definition name="nparent" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="P" type="nested" isStart="true"><arc to="Q"/><custom><graphName>nchild</graphName></custom></node>
  <node name="Q" type="wait"/>
</process-definition>`
)

// TestCompleteNestedTokenConflict: completing a node token whose nested
// process runs answers 409 nested_process_active naming the child, and
// changes nothing.
func TestCompleteNestedTokenConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(defNestedChild)
	e.load(defNestedParent)
	p := e.start("nparent", "")
	pt := e.active(p.ID, "P")
	r := e.get("/api/v1/processes?parentToken=" + pt)
	e.want(r, http.StatusOK, "")
	var kids struct{ Items []struct{ ID, State string } }
	r.decode(t, &kids)
	if len(kids.Items) != 1 || kids.Items[0].State != "executing" {
		t.Fatalf("nested processes: %s", r.body)
	}
	child := kids.Items[0].ID
	r = e.complete(pt, `{}`)
	e.want(r, http.StatusConflict, "nested_process_active")
	if !strings.Contains(r.problem(t).Detail, child) {
		t.Fatalf("the problem does not name the child %s: %s", child, r.body)
	}
	if e.active(p.ID, "P") != pt {
		t.Fatal("the refused completion changed the parent")
	}
	e.want(e.complete(e.active(child, "C"), `{}`), http.StatusOK, "")
	e.active(p.ID, "Q")
}

const (
	defSelfLoop = `<process-definition name="loop" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" isStart="true"><arc to="B"/></node>
  <node name="B"><arc to="A"/></node>
</process-definition>`
	defBombScript = `<process-definition name="bomb" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="W" type="wait" isStart="true"><arc to="S"/></node>
  <node name="S" type="script"><custom><execute type="js">var a = []; for (;;) a.push([1, 2, 3, 4, 5, 6, 7, 8]);</execute></custom></node>
</process-definition>`
	defSlowScript = `<process-definition name="slow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="W" type="wait" isStart="true"><arc to="S"/></node>
  <node name="S" type="script"><custom><execute type="js">for (;;) {}</execute></custom></node>
</process-definition>`
)

// TestRunawayInputsAnswered: a definition that loops without waiting, a
// request for a million-member token set, scripts that allocate or loop
// without end — each fails with a stable code, changes nothing, and the
// server answers the next request at once, with its memory bounded.
func TestRunawayInputsAnswered(t *testing.T) {
	e := newEnv(t, backends(t)[1], envOptions{engine: func(o *veena.Options) {
		o.Kernel = kernel.New()
		o.Kernel.ScriptTimeout = time.Second
		o.Kernel.ScriptMemory = 32 << 20
		o.Limits.CommandTime = 3 * time.Second
	}})
	e.load(testutil.DefAB)
	e.load(defSelfLoop)
	e.load(defBombScript)
	e.load(defSlowScript)
	p := e.start("ab", "")
	a := e.active(p.ID, "A")
	slow := e.start("slow", "")
	bomb := e.start("bomb", "")
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, c := range []struct {
		name      string
		do        func() *response
		code      string
		within    time.Duration
		unchanged string // a process that must be as it was
	}{
		{"cycle without a wait state", func() *response { return e.post("/api/v1/processes", `{"definition":"loop"}`) }, "budget_exceeded", 20 * time.Second, ""},
		{"a million-member token set", func() *response {
			return e.complete(a, `{"tokenSet":{"name":"s","count":1000000}}`)
		}, "limit_exceeded", 5 * time.Second, p.ID},
		{"a script that allocates without end", func() *response { return e.complete(e.active(bomb.ID, "W"), `{}`) }, "execution_failed", 10 * time.Second, bomb.ID},
		{"a script that never ends", func() *response { return e.complete(e.active(slow.ID, "W"), `{}`) }, "execution_failed", 3 * time.Second, slow.ID},
	} {
		var history string
		if c.unchanged != "" {
			history = string(e.get("/api/v1/processes/" + c.unchanged + "/tokens").body)
		}
		began := time.Now()
		r := c.do()
		took := time.Since(began)
		e.want(r, http.StatusUnprocessableEntity, c.code)
		if took > c.within {
			t.Fatalf("%s: answered after %s", c.name, took)
		}
		if c.unchanged != "" && string(e.get("/api/v1/processes/"+c.unchanged+"/tokens").body) != history {
			t.Fatalf("%s: the process changed", c.name)
		}
		// The next request is answered at once.
		began = time.Now()
		e.want(e.get("/healthz"), http.StatusOK, "")
		q := e.start("ab", "")
		e.want(e.complete(e.active(q.ID, "A"), `{}`), http.StatusOK, "")
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("after %s the next requests took %s", c.name, d)
		}
		t.Logf("%s: %s after %s", c.name, r.problem(t).Detail, took.Round(time.Millisecond))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Fatalf("the Go heap grew by %d MiB and stayed", grew>>20)
	}
}

// TestLoadWarnsOfRunawayCycles: loading a definition with a cycle that a
// token can go round without reaching a wait state answers the definition
// with a warning naming the cycle's nodes and where the first is; the
// definition still loads. A definition without one has no warnings.
func TestLoadWarnsOfRunawayCycles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[0], envOptions{})
	for _, path := range []string{"", "/api/v1/definitions/loop"} {
		var d veena.Definition
		if path == "" {
			d = e.load(defSelfLoop)
		} else {
			r := e.get(path)
			e.want(r, http.StatusOK, "")
			r.decode(t, &d)
		}
		if len(d.Warnings) != 1 || d.Warnings[0].Line != 2 || d.Warnings[0].Column == 0 ||
			!strings.Contains(d.Warnings[0].Message, "A, B") || !strings.Contains(d.Warnings[0].Message, "without a wait state") {
			t.Fatalf("warnings %+v", d.Warnings)
		}
	}
	r := e.do(req{method: "POST", path: "/api/v1/definitions", body: testutil.DefAB, ctype: "application/xml"})
	if strings.Contains(string(r.body), "warnings") {
		t.Fatalf("a definition without a runaway cycle has warnings: %s", r.body)
	}
}

// TestTokenAndEventPaging: the token history and the events are paged
// with limit, after and next; following the pages gives exactly the whole
// list, which is still answered (as a stream) without paging.
func TestTokenAndEventPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	e.want(e.complete(e.active(p.ID, "A"), `{"tokenSet":{"name":"s","count":40}}`), http.StatusOK, "")
	whole := e.history(p.ID)
	if len(whole.NodeTokens) != 41 || len(whole.ArcTokens) != 40 || whole.Next != "" {
		t.Fatalf("whole history: %d node and %d arc tokens, next %q", len(whole.NodeTokens), len(whole.ArcTokens), whole.Next)
	}
	var nodes, arcs []string
	after, pages := "", 0
	for {
		r := e.get("/api/v1/processes/" + p.ID + "/tokens?limit=7&after=" + after)
		e.want(r, http.StatusOK, "")
		var h veena.TokenHistory
		r.decode(t, &h)
		if n := len(h.NodeTokens) + len(h.ArcTokens); n > 7 || (n < 7 && h.Next != "") {
			t.Fatalf("page %d: %d tokens, next %q", pages, n, h.Next)
		}
		for _, x := range h.NodeTokens {
			nodes = append(nodes, x.ID)
		}
		for _, x := range h.ArcTokens {
			arcs = append(arcs, x.ID)
		}
		pages++
		if h.Next == "" {
			break
		}
		after = h.Next
	}
	if pages != 12 {
		t.Fatalf("%d pages of 7 for 81 tokens", pages)
	}
	for i, x := range whole.NodeTokens {
		if nodes[i] != x.ID {
			t.Fatalf("node token %d: paged %s, whole %s", i, nodes[i], x.ID)
		}
	}
	for i, x := range whole.ArcTokens {
		if arcs[i] != x.ID {
			t.Fatalf("arc token %d: paged %s, whole %s", i, arcs[i], x.ID)
		}
	}
	if len(nodes) != 41 || len(arcs) != 40 {
		t.Fatalf("paged %d node and %d arc tokens", len(nodes), len(arcs))
	}
	e.want(e.get("/api/v1/processes/"+p.ID+"/tokens?after=x"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes/"+p.ID+"/tokens?limit=0"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes/nope/tokens"), http.StatusNotFound, "not_found")
	e.want(e.get("/api/v1/processes/nope/tokens?limit=5"), http.StatusNotFound, "not_found")

	// Events: the whole list, and the same through pages.
	r := e.get("/api/v1/processes/" + p.ID + "/events")
	e.want(r, http.StatusOK, "")
	var all []veena.Event
	r.decode(t, &all)
	if len(all) < 200 {
		t.Fatalf("%d events", len(all))
	}
	var paged []veena.Event
	next := "/api/v1/processes/" + p.ID + "/events?limit=50"
	for next != "" {
		r := e.get(next)
		e.want(r, http.StatusOK, "")
		var evs []veena.Event
		r.decode(t, &evs)
		paged = append(paged, evs...)
		next = ""
		if link := r.header.Get("Link"); link != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(strings.Split(link, ";")[0], "<"), ">")
			if r.header.Get("Veena-Next") != strconvItoa(evs[len(evs)-1].Seq) {
				t.Fatalf("Veena-Next %q", r.header.Get("Veena-Next"))
			}
		}
	}
	if len(paged) != len(all) {
		t.Fatalf("%d events in pages, %d in the whole list", len(paged), len(all))
	}
	for i := range all {
		if paged[i].Seq != all[i].Seq || paged[i].Type != all[i].Type {
			t.Fatalf("event %d differs", i)
		}
	}
}

func strconvItoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestIdempotencyKeyReusedAnswers422: the same Idempotency-Key on a
// different request answers 422 idempotency_key_reused and changes
// nothing; the same request again answers as the first time.
func TestIdempotencyKeyReusedAnswers422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(testutil.DefAB)
	p1, p2 := e.start("ab", ""), e.start("ab", "")
	a1, a2 := e.active(p1.ID, "A"), e.active(p2.ID, "A")
	key := map[string]string{"Idempotency-Key": "K"}
	first := e.do(req{method: "POST", path: "/api/v1/node-tokens/" + a1 + "/complete", body: `{}`, header: key})
	e.want(first, http.StatusOK, "")
	again := e.do(req{method: "POST", path: "/api/v1/node-tokens/" + a1 + "/complete", body: `{}`, header: key})
	e.want(again, http.StatusOK, "")
	if string(again.body) != string(first.body) {
		t.Fatalf("a retry answered differently:\n%s\n%s", first.body, again.body)
	}
	for _, r := range []req{
		{method: "POST", path: "/api/v1/node-tokens/" + a2 + "/complete", body: `{}`, header: key},
		{method: "POST", path: "/api/v1/node-tokens/" + a1 + "/complete", body: `{"arcs":[]}`, header: key},
		{method: "POST", path: "/api/v1/processes/" + p2.ID + "/cancel", body: `{}`, header: key},
		{method: "PATCH", path: "/api/v1/processes/" + p2.ID + "/env", body: `{"x":1}`, header: key},
		{method: "POST", path: "/api/v1/processes", body: `{"definition":"ab"}`, header: key},
	} {
		e.want(e.do(r), http.StatusUnprocessableEntity, "idempotency_key_reused")
	}
	if e.active(p2.ID, "A") != a2 {
		t.Fatal("a refused request changed p2")
	}
}

const defDelayed = `<process-definition name="delayed" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="G"/></node>
  <node name="G" type="wait"><guard>if ready then Accept else delay until 1 day after now</guard></node>
</process-definition>`

// TestKernelOperationsOverHTTP: the engine's Sarasvati operations over
// HTTP: asynchronous completion and execute-queued, re-evaluating a
// delayed token, finalising a process left pending, process listeners and
// transient attributes (never answered).
func TestKernelOperationsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{engine: func(o *veena.Options) {
		o.Kernel = kernel.New()
		o.Kernel.AddDefinitionListener("ab", "hold", kernel.ListenerFunc(func(*kernel.Engine, *kernel.Event) kernel.EventActions {
			return kernel.DelayFinalizeComplete
		}), kernel.ProcessPendingComplete)
		o.Kernel.RegisterListener("audit", kernel.ListenerFunc(func(*kernel.Engine, *kernel.Event) kernel.EventActions { return 0 }))
	}})
	e.load(testutil.DefAB)
	e.load(defDelayed)
	r := e.post("/api/v1/processes", `{"definition":"delayed","env":{"ready":false},"transient":{"secret":{"a":[1,2]}}}`)
	e.want(r, http.StatusCreated, "")
	if strings.Contains(string(r.body), "secret") {
		t.Fatalf("a transient attribute was answered: %s", r.body)
	}
	var p veena.Process
	r.decode(t, &p)
	e.want(e.complete(e.active(p.ID, "A"), `{"async":true,"transient":{"x":1}}`), http.StatusOK, "")
	if h := e.history(p.ID); len(h.ArcTokens) != 1 || !h.ArcTokens[0].Pending {
		t.Fatalf("after an asynchronous completion: %+v", h.ArcTokens)
	}
	e.want(e.post("/api/v1/processes/"+p.ID+"/execute-queued", `{}`), http.StatusOK, "")
	g := e.active(p.ID, "G")
	e.want(e.post("/api/v1/node-tokens/"+g+"/reevaluate", ``), http.StatusOK, "") // still not ready: delayed again
	e.want(e.do(req{method: "PATCH", path: "/api/v1/processes/" + p.ID + "/env", body: `{"ready":true}`}), http.StatusOK, "")
	e.want(e.post("/api/v1/node-tokens/"+g+"/reevaluate", `{}`), http.StatusOK, "")
	e.want(e.post("/api/v1/node-tokens/"+g+"/reevaluate", `{}`), http.StatusConflict, "token_not_delayed")
	e.want(e.post("/api/v1/processes/"+p.ID+"/finalize-complete", `{}`), http.StatusConflict, "process_not_executing")
	e.want(e.post("/api/v1/arc-tokens/"+p.ID+".a9/retry", `{}`), http.StatusNotFound, "not_found")
	e.want(e.post("/api/v1/processes/"+p.ID+"/listeners", `{"name":"nobody"}`), http.StatusNotFound, "not_found")
	e.want(e.post("/api/v1/processes/"+p.ID+"/listeners", `{"name":"audit","events":["NODE_TOKEN_COMPLETED"]}`), http.StatusOK, "")
	e.want(e.do(req{method: "DELETE", path: "/api/v1/processes/" + p.ID + "/listeners/audit"}), http.StatusOK, "")

	// A listener holds "ab" pending completion; finalize-complete ends it.
	q := e.start("ab", "")
	for _, n := range []string{"A", "B"} {
		e.want(e.complete(e.active(q.ID, n), `{}`), http.StatusOK, "")
	}
	r = e.get("/api/v1/processes/" + q.ID)
	if !strings.Contains(string(r.body), `"state":"pending_completion"`) {
		t.Fatalf("process held by the listener: %s", r.body)
	}
	e.want(e.post("/api/v1/processes/"+q.ID+"/cancel", `{}`), http.StatusConflict, "process_not_executing")
	r = e.post("/api/v1/processes/"+q.ID+"/finalize-complete", `{}`)
	e.want(r, http.StatusOK, "")
	if !strings.Contains(string(r.body), `"state":"completed"`) {
		t.Fatalf("after finalize-complete: %s", r.body)
	}
	e.want(e.post("/api/v1/processes/"+q.ID+"/finalize-cancel", `{}`), http.StatusConflict, "process_not_executing")
}
