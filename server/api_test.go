package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/veena-wf/veena/internal/testutil"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
)

// TestAPI runs every endpoint and every error code against each store.
func TestAPI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"definitions", testDefinitions},
		{"hostile definitions", testHostileDefinitions},
		{"processes", testProcesses},
		{"process list and paging", testProcessList},
		{"bad requests", testBadRequests},
		{"complete and backtrack", testCompleteBacktrack},
		{"refusals", testRefusals},
		{"environments", testEnvironments},
		{"events", testEvents},
		{"event stream", testEventStream},
		{"idempotency", testIdempotency},
		{"concurrent completes", testConcurrentCompletes},
		{"operations", testOperations},
		{"inbox gauge", testInboxGauge},
		{"conflict", testConflict},
		{"incoming events", testIncomingEvents},
		{"token sets", testTokenSets},
		{"join progress", testJoinProgress},
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

func testDefinitions(t *testing.T, e *env) {
	r := e.do(req{method: "POST", path: "/api/v1/definitions?file=ab.wf.xml", body: testutil.DefAB, ctype: "application/xml"})
	e.want(r, http.StatusCreated, "")
	var d veena.Definition
	r.decode(t, &d)
	if d.Name != "ab" || d.Version != 1 || d.Format != "sarasvati" || d.Hash == "" || len(d.Nodes) != 2 || len(d.Arcs) != 1 {
		t.Fatalf("definition %+v", d)
	}
	if d.Arcs[0].Name != nil || d.Arcs[0].From != "A" || d.Arcs[0].To != "B" {
		t.Fatalf("arc %+v", d.Arcs[0])
	}
	if loc := r.header.Get("Location"); loc != "/api/v1/definitions/ab/versions/1" {
		t.Fatalf("Location %q", loc)
	}
	// The same content again: the existing version, 200.
	r = e.do(req{method: "POST", path: "/api/v1/definitions", body: testutil.DefAB, ctype: "text/xml"})
	e.want(r, http.StatusOK, "")
	var again veena.Definition
	r.decode(t, &again)
	if again.Version != 1 || again.Hash != d.Hash {
		t.Fatalf("reload made %+v", again)
	}
	// Changed content: version 2.
	r = e.do(req{method: "POST", path: "/api/v1/definitions?format=sarasvati", body: defABv2})
	e.want(r, http.StatusCreated, "")
	e.load(testutil.DefSplit)

	var page struct {
		Items []veena.Definition `json:"items"`
		Next  string             `json:"next"`
	}
	r = e.get("/api/v1/definitions")
	e.want(r, http.StatusOK, "")
	r.decode(t, &page)
	if len(page.Items) != 2 || page.Items[0].Name != "ab" || page.Items[0].Version != 2 || page.Items[1].Name != "split" || page.Next != "" {
		t.Fatalf("list %s", r.body)
	}
	r = e.get("/api/v1/definitions?limit=1")
	r.decode(t, &page)
	if len(page.Items) != 1 || page.Next != "ab" {
		t.Fatalf("first page %s", r.body)
	}
	r = e.get("/api/v1/definitions?limit=1&after=" + page.Next)
	r.decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Name != "split" || page.Next != "" {
		t.Fatalf("second page %s", r.body)
	}

	r = e.get("/api/v1/definitions/ab")
	e.want(r, http.StatusOK, "")
	r.decode(t, &d)
	if d.Version != 2 || len(d.Nodes) != 3 {
		t.Fatalf("latest %s", r.body)
	}
	r = e.get("/api/v1/definitions/ab/versions/1")
	e.want(r, http.StatusOK, "")
	r.decode(t, &d)
	if d.Version != 1 || len(d.Nodes) != 2 {
		t.Fatalf("version 1 %s", r.body)
	}
	r = e.get("/api/v1/definitions/ab/versions")
	e.want(r, http.StatusOK, "")
	r.decode(t, &page)
	if len(page.Items) != 2 || page.Items[0].Version != 1 || page.Items[1].Version != 2 {
		t.Fatalf("versions %s", r.body)
	}
	r = e.get("/api/v1/definitions/ab/versions?limit=1")
	r.decode(t, &page)
	if len(page.Items) != 1 || page.Next != "1" {
		t.Fatalf("versions page %s", r.body)
	}
	r = e.get("/api/v1/definitions/ab/versions/1/source")
	e.want(r, http.StatusOK, "")
	if string(r.body) != testutil.DefAB || !strings.HasPrefix(r.header.Get("Content-Type"), "application/xml") {
		t.Fatalf("source %q (%s)", r.body, r.header.Get("Content-Type"))
	}

	e.want(e.get("/api/v1/definitions/nope"), http.StatusNotFound, "")
	e.want(e.get("/api/v1/definitions/ab/versions/9"), http.StatusNotFound, "")
	e.want(e.get("/api/v1/definitions/ab/versions/9/source"), http.StatusNotFound, "")
	e.want(e.get("/api/v1/definitions/nope/versions"), http.StatusNotFound, "not_found")
	e.want(e.get("/api/v1/definitions/ab/versions/x"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/definitions/ab/versions/0"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/definitions?limit=0"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/definitions?limit=1001"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/definitions/ab/versions?after=x"), http.StatusBadRequest, "invalid_argument")
}

func testHostileDefinitions(t *testing.T, e *env) {
	load := func(body, ctype, query string) *response {
		return e.do(req{method: "POST", path: "/api/v1/definitions" + query, body: body, ctype: ctype})
	}
	// An invalid definition: 422 with the problems and where they are.
	r := load(defInvalid, "application/xml", "?file=bad.wf.xml")
	e.want(r, http.StatusUnprocessableEntity, "definition_invalid")
	p := r.problem(t)
	if len(p.Errors) == 0 || p.Errors[0].Line != 3 || p.Errors[0].Message == "" {
		t.Fatalf("problems %s", r.body)
	}
	// Entity expansion and external entities are refused, not expanded.
	for _, src := range []string{defBomb, defExternalEntity} {
		start := time.Now()
		r = load(src, "application/xml", "")
		e.want(r, http.StatusUnprocessableEntity, "definition_invalid")
		if strings.Contains(string(r.body), "root:") || strings.Contains(string(r.body), "lollollol") {
			t.Fatalf("entity expanded: %s", r.body)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("refusing an entity took %v", time.Since(start))
		}
	}
	e.want(load("this is not XML", "text/plain", ""), http.StatusUnprocessableEntity, "definition_invalid")
	e.want(load(`<?xml version="1.0"?><process-definition`, "application/xml", ""), http.StatusUnprocessableEntity, "definition_invalid")
	// Over the size limit: 413, whether announced or streamed.
	big := "<?xml version=\"1.0\"?>\n<!--" + strings.Repeat("x", 5<<20) + "-->"
	e.want(load(big, "application/xml", ""), http.StatusRequestEntityTooLarge, "payload_too_large")
	e.want(load("", "application/xml", ""), http.StatusBadRequest, "invalid_argument")
	e.want(load(testutil.DefAB, "multipart/form-data; boundary=x", ""), http.StatusUnsupportedMediaType, "unsupported_media_type")
	e.want(load(testutil.DefAB, "application/x-www-form-urlencoded", ""), http.StatusUnsupportedMediaType, "unsupported_media_type")
	e.want(load(testutil.DefAB, "application/xml", "?format=word"), http.StatusBadRequest, "invalid_argument")
	// Nothing of it was kept.
	var page struct {
		Items []veena.Definition `json:"items"`
	}
	e.get("/api/v1/definitions").decode(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("refused definitions were kept: %+v", page.Items)
	}
}

func testProcesses(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", `{"n": 7, "f": 1.5, "s": "x", "b": true, "d": {"date": "2026-01-02T03:04:05Z"}}`)
	if p.ID == "" || p.Definition != "ab" || p.Version != 1 || p.State != "executing" || p.ParentToken != nil {
		t.Fatalf("started %+v", p)
	}
	if got := mustJSON(p.Env); got != `{"b":true,"d":{"date":"2026-01-02T03:04:05Z"},"f":1.5,"n":7,"s":"x"}` {
		t.Fatalf("env %s", got)
	}
	r := e.get("/api/v1/processes/" + p.ID)
	e.want(r, http.StatusOK, "")
	var got veena.Process
	r.decode(t, &got)
	if got.ID != p.ID || got.State != "executing" {
		t.Fatalf("get %s", r.body)
	}
	// The raw JSON has every field of API.md, parentToken null.
	var raw map[string]json.RawMessage
	r.decode(t, &raw)
	for _, f := range []string{"id", "definition", "version", "state", "env", "parentToken", "createdAt", "updatedAt"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("process lacks %q: %s", f, r.body)
		}
	}
	if string(raw["parentToken"]) != "null" {
		t.Fatalf("parentToken %s", raw["parentToken"])
	}

	h := e.history(p.ID)
	if len(h.NodeTokens) != 1 || h.NodeTokens[0].Node != "A" || h.NodeTokens[0].Complete || h.NodeTokens[0].ExecutionType != "forward" {
		t.Fatalf("history %+v", h)
	}
	tok := h.NodeTokens[0].ID
	r = e.get("/api/v1/node-tokens/" + tok)
	e.want(r, http.StatusOK, "")
	var nt veena.NodeToken
	r.decode(t, &nt)
	if nt.ID != tok || nt.Process != p.ID || nt.Node != "A" || nt.Complete || nt.CompletedAt != nil {
		t.Fatalf("node token %s", r.body)
	}
	r.decode(t, &raw)
	for _, f := range []string{"id", "process", "node", "external", "complete", "executionType", "guardAction", "parents", "children", "tokenSets", "env", "createdAt", "completedAt"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("node token lacks %q: %s", f, r.body)
		}
	}

	r = e.complete(tok, "")
	e.want(r, http.StatusOK, "")
	b := e.active(p.ID, "B")
	r = e.complete(b, `{}`)
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if got.State != "completed" {
		t.Fatalf("after completing B: %s", r.body)
	}
	h = e.history(p.ID)
	if len(h.NodeTokens) != 2 || len(h.ArcTokens) != 1 || !h.ArcTokens[0].Complete || h.ArcTokens[0].Child == nil || *h.ArcTokens[0].Child != b || h.ArcTokens[0].Parent != tok {
		t.Fatalf("history %+v", h)
	}

	// Cancel: a running process 200 canceled, a finished one 409.
	q := e.start("ab", "")
	r = e.post("/api/v1/processes/"+q.ID+"/cancel", "")
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if got.State != "canceled" {
		t.Fatalf("cancel %s", r.body)
	}
	e.want(e.post("/api/v1/processes/"+q.ID+"/cancel", "{}"), http.StatusConflict, "process_not_executing")
	e.want(e.post("/api/v1/processes/"+p.ID+"/cancel", "{}"), http.StatusConflict, "process_not_executing")
	e.want(e.post("/api/v1/processes/nope/cancel", "{}"), http.StatusNotFound, "not_found")

	e.want(e.get("/api/v1/processes/nope"), http.StatusNotFound, "not_found")
	e.want(e.get("/api/v1/processes/nope/tokens"), http.StatusNotFound, "not_found")
	e.want(e.get("/api/v1/node-tokens/nope"), http.StatusNotFound, "not_found")
	e.want(e.complete("nope", "{}"), http.StatusNotFound, "not_found")
	e.want(e.post("/api/v1/node-tokens/nope/backtrack", "{}"), http.StatusNotFound, "not_found")
	r = e.post("/api/v1/processes", `{"definition":"nope"}`)
	if r.status != http.StatusNotFound {
		t.Fatalf("start of an unknown definition: %d %s", r.status, r.body)
	}
	r.problem(t)
}

func testProcessList(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	e.load(defOne)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.start("ab", "").ID)
	}
	one := e.start("one", "")
	e.want(e.complete(e.active(one.ID, "A"), ""), http.StatusOK, "")

	list := func(q string) veena.ProcessPage {
		t.Helper()
		r := e.get("/api/v1/processes" + q)
		e.want(r, http.StatusOK, "")
		var p veena.ProcessPage
		r.decode(t, &p)
		return p
	}
	if p := list(""); len(p.Items) != 6 || p.Next != "" {
		t.Fatalf("all: %d items, next %q", len(p.Items), p.Next)
	}
	if p := list("?definition=ab"); len(p.Items) != 5 {
		t.Fatalf("definition=ab: %d", len(p.Items))
	}
	if p := list("?state=completed"); len(p.Items) != 1 || p.Items[0].ID != one.ID {
		t.Fatalf("state=completed: %+v", p.Items)
	}
	if p := list("?definition=one&state=executing"); len(p.Items) != 0 {
		t.Fatalf("one executing: %+v", p.Items)
	}
	if p := list("?parentToken=nope"); len(p.Items) != 0 {
		t.Fatalf("parentToken: %+v", p.Items)
	}
	// Paging: two at a time reaches every process once.
	seen := map[string]int{}
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		p := list("?limit=2&definition=ab&after=" + after)
		if len(p.Items) > 2 {
			t.Fatalf("page of %d", len(p.Items))
		}
		for _, it := range p.Items {
			seen[it.ID]++
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("process %s seen %d times over the pages", id, seen[id])
		}
	}
	e.want(e.get("/api/v1/processes?state=sleeping"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes?limit=-1"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes?limit=x"), http.StatusBadRequest, "invalid_argument")
}

func testBadRequests(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	tok := e.active(p.ID, "A")
	for _, c := range []struct {
		path, body, ctype, code string
		status                  int
	}{
		{"/api/v1/processes", `{"definition": "ab"`, "", "invalid_json", 400},
		{"/api/v1/processes", `{"definition": "ab"} {}`, "", "invalid_json", 400},
		{"/api/v1/processes", `[1,2]`, "", "invalid_argument", 400},
		{"/api/v1/processes", `{"definition": 5}`, "", "invalid_argument", 400},
		{"/api/v1/processes", `{"definiton": "ab"}`, "", "invalid_argument", 400},
		{"/api/v1/processes", `{}`, "", "invalid_argument", 400},
		{"/api/v1/processes", ``, "application/json", "invalid_argument", 400},
		{"/api/v1/processes", `{"definition": "ab", "version": -1}`, "", "invalid_argument", 400},
		{"/api/v1/processes", `{"definition": "ab", "env": {"x": [1,}}`, "", "invalid_json", 400},
		{"/api/v1/processes", `{"definition": "ab"}`, "text/plain", "unsupported_media_type", 415},
		{"/api/v1/processes", `{"definition": "ab"}`, "application/x-www-form-urlencoded", "unsupported_media_type", 415},
		{"/api/v1/node-tokens/" + tok + "/complete", `{"arcs": "x"}`, "", "invalid_argument", 400},
		{"/api/v1/node-tokens/" + tok + "/complete", `{"tokenSet": {"name": "", "count": 2}}`, "", "invalid_argument", 400},
		{"/api/v1/node-tokens/" + tok + "/complete", `{"tokenSet": {"name": "s", "count": 0}}`, "", "invalid_argument", 400},
		{"/api/v1/node-tokens/" + tok + "/complete", `{"tokenSet": {"name": "s", "count": 2, "memberEnv": {"a": 5}}}`, "", "invalid_argument", 400},
		{"/api/v1/node-tokens/" + tok + "/complete", `nonsense`, "", "invalid_json", 400},
		{"/api/v1/processes/" + p.ID + "/cancel", `{"force": true}`, "", "invalid_argument", 400},
		{"/api/v1/node-tokens/" + tok + "/backtrack", `{`, "", "invalid_json", 400},
	} {
		r := e.do(req{method: "POST", path: c.path, body: c.body, ctype: c.ctype})
		if r.status != c.status {
			t.Errorf("POST %s %s: %d, want %d: %s", c.path, c.body, r.status, c.status, r.body)
			continue
		}
		if got := r.problem(t).Code; got != c.code {
			t.Errorf("POST %s %s: code %q, want %q", c.path, c.body, got, c.code)
		}
	}
	// A body over the limit is refused before it is read whole.
	big := `{"definition": "ab", "env": {"x": "` + strings.Repeat("y", 5<<20) + `"}}`
	e.want(e.post("/api/v1/processes", big), http.StatusRequestEntityTooLarge, "payload_too_large")
	// None of that changed anything.
	var page veena.ProcessPage
	e.get("/api/v1/processes").decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("bad requests made processes: %d", len(page.Items))
	}
	if h := e.history(p.ID); len(h.NodeTokens) != 1 || h.NodeTokens[0].Complete {
		t.Fatalf("bad requests changed the process: %+v", h)
	}
	// Unknown routes and methods answer problem+json too.
	e.want(e.get("/api/v1/nothing"), http.StatusNotFound, "not_found")
	r := e.do(req{method: "DELETE", path: "/api/v1/processes/" + p.ID})
	e.want(r, http.StatusMethodNotAllowed, "method_not_allowed")
	if !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	e.want(e.do(req{method: "PUT", path: "/api/v1/definitions", body: testutil.DefAB}), http.StatusMethodNotAllowed, "method_not_allowed")
}

func testCompleteBacktrack(t *testing.T, e *env) {
	e.load(testutil.DefSplit)
	e.load(defChoice)

	// Split and and-join: D waits for both B and C.
	p := e.start("split", "")
	e.want(e.complete(e.active(p.ID, "A"), ""), http.StatusOK, "")
	e.want(e.complete(e.active(p.ID, "B"), ""), http.StatusOK, "")
	for _, tk := range e.history(p.ID).NodeTokens {
		if tk.Node == "D" {
			t.Fatal("the and-join fired with one input")
		}
	}
	e.want(e.complete(e.active(p.ID, "C"), ""), http.StatusOK, "")
	d := e.active(p.ID, "D")
	r := e.complete(d, "")
	e.want(r, http.StatusOK, "")
	var got veena.Process
	r.decode(t, &got)
	if got.State != "completed" {
		t.Fatalf("split ended %s", got.State)
	}

	// Named arcs: "no" leads to N only.
	c := e.start("choice", "")
	a := e.active(c.ID, "A")
	e.want(e.complete(a, `{"arcs": ["no"], "env": {"why": "too dear"}}`), http.StatusOK, "")
	n := e.active(c.ID, "N")
	for _, tk := range e.history(c.ID).NodeTokens {
		if tk.Node == "Y" {
			t.Fatal("completing on no reached Y")
		}
	}
	r = e.get("/api/v1/node-tokens/" + a + "/env")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"why\":\"too dear\"}\n" {
		t.Fatalf("token env %s", r.body)
	}

	// Backtrack to A: N is backtracked, A is active again.
	r = e.post("/api/v1/node-tokens/"+a+"/backtrack", "")
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if got.State != "executing" {
		t.Fatalf("after backtrack: %s", r.body)
	}
	h := e.history(c.ID)
	var active []string
	for _, tk := range h.NodeTokens {
		if tk.ID == n && tk.ExecutionType == "forward" {
			t.Fatalf("N was not backtracked: %+v", tk)
		}
		if !tk.Complete {
			active = append(active, tk.Node)
		}
	}
	again := e.active(c.ID, "A")
	e.want(e.complete(again, `{"arcs": ["yes"]}`), http.StatusOK, "")
	e.active(c.ID, "Y")
	// Completing on no arc ends the branch.
	q := e.start("choice", "")
	r = e.complete(e.active(q.ID, "A"), `{"arcs": []}`)
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if got.State != "completed" {
		t.Fatalf("completing on no arc: %s", r.body)
	}
}

func testRefusals(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	e.load(defNoStart)
	e.load(defBadGuard)
	e.load(defSetJoin)

	// no_start_nodes: nothing is created.
	e.want(e.post("/api/v1/processes", `{"definition":"nostart"}`), http.StatusConflict, "no_start_nodes")

	// token_complete.
	p := e.start("ab", "")
	a := e.active(p.ID, "A")
	e.want(e.complete(a, ""), http.StatusOK, "")
	e.want(e.complete(a, ""), http.StatusConflict, "token_complete")

	// backtrack_not_allowed: an active token cannot be backtracked to.
	b := e.active(p.ID, "B")
	r := e.post("/api/v1/node-tokens/"+b+"/backtrack", "")
	e.want(r, http.StatusConflict, "backtrack_not_allowed")
	if r.problem(t).Detail == "" {
		t.Fatal("backtrack_not_allowed without a reason")
	}

	// process_not_executing: tokens of a canceled process refuse work.
	e.want(e.post("/api/v1/processes/"+p.ID+"/cancel", ""), http.StatusOK, "")
	e.want(e.complete(b, ""), http.StatusConflict, "process_not_executing")

	// execution_failed: the guard cannot be evaluated; the step is rolled back.
	g := e.start("badguard", "")
	ga := e.active(g.ID, "A")
	e.want(e.complete(ga, ""), http.StatusUnprocessableEntity, "execution_failed")
	if h := e.history(g.ID); len(h.NodeTokens) != 1 || h.NodeTokens[0].Complete {
		t.Fatalf("a failed step left changes: %+v", h.NodeTokens)
	}

	// join_not_member: a token outside every token set reaches a tokenSet join.
	s := e.start("setjoin", "")
	e.want(e.complete(e.active(s.ID, "A"), ""), http.StatusConflict, "join_not_member")
	if h := e.history(s.ID); len(h.NodeTokens) != 1 || h.NodeTokens[0].Complete {
		t.Fatalf("a refused join left changes: %+v", h.NodeTokens)
	}
	// A token set makes the same join work.
	s2 := e.start("setjoin", "")
	r = e.complete(e.active(s2.ID, "A"), `{"tokenSet": {"name": "s", "count": 2, "memberEnv": {"i": [0, 1]}}}`)
	e.want(r, http.StatusOK, "")
	var joined int
	for _, tk := range e.history(s2.ID).NodeTokens {
		if tk.Node == "J" {
			joined++
		}
	}
	if joined != 1 {
		t.Fatalf("the token set join made %d tokens", joined)
	}
}

func testEnvironments(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", `{"keep": 1, "drop": "x"}`)
	r := e.get("/api/v1/processes/" + p.ID + "/env")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"drop\":\"x\",\"keep\":1}\n" {
		t.Fatalf("env %s", r.body)
	}
	r = e.do(req{method: "PATCH", path: "/api/v1/processes/" + p.ID + "/env", body: `{"drop": null, "new": 2.5, "flag": false}`})
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"flag\":false,\"keep\":1,\"new\":2.5}\n" {
		t.Fatalf("patched env %s", r.body)
	}
	var got veena.Process
	e.get("/api/v1/processes/"+p.ID).decode(t, &got)
	if mustJSON(got.Env) != `{"flag":false,"keep":1,"new":2.5}` {
		t.Fatalf("process env after patch %s", mustJSON(got.Env))
	}
	tok := e.active(p.ID, "A")
	r = e.do(req{method: "PATCH", path: "/api/v1/node-tokens/" + tok + "/env", body: `{"t": "v"}`})
	e.want(r, http.StatusOK, "")
	r = e.get("/api/v1/node-tokens/" + tok + "/env")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"t\":\"v\"}\n" {
		t.Fatalf("token env %s", r.body)
	}
	for _, path := range []string{"/api/v1/processes/" + p.ID + "/env", "/api/v1/node-tokens/" + tok + "/env"} {
		e.want(e.do(req{method: "PATCH", path: path, body: `{"x": [1}`}), http.StatusBadRequest, "invalid_json")
		e.want(e.do(req{method: "PATCH", path: path, body: `{"x"`}), http.StatusBadRequest, "invalid_json")
		e.want(e.do(req{method: "PATCH", path: path, body: `{"x": 1}`, ctype: "text/plain"}), http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	e.want(e.get("/api/v1/processes/nope/env"), http.StatusNotFound, "not_found")
	e.want(e.get("/api/v1/node-tokens/nope/env"), http.StatusNotFound, "not_found")
	e.want(e.do(req{method: "PATCH", path: "/api/v1/processes/nope/env", body: `{"x": 1}`}), http.StatusNotFound, "not_found")
	e.want(e.do(req{method: "PATCH", path: "/api/v1/node-tokens/nope/env", body: `{"x": 1}`}), http.StatusNotFound, "not_found")
}

func testEvents(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	e.want(e.complete(e.active(p.ID, "A"), ""), http.StatusOK, "")
	r := e.get("/api/v1/processes/" + p.ID + "/events")
	e.want(r, http.StatusOK, "")
	var evs []veena.Event
	r.decode(t, &evs)
	want := []string{"PROCESS_CREATED", "PROCESS_STARTED", "NODE_TOKEN_CREATED", "NODE_TOKEN_ACCEPTED", "NODE_TOKEN_EXECUTED",
		"NODE_TOKEN_COMPLETED", "ARC_TOKEN_CREATED", "ARC_TOKEN_PROCESSED", "NODE_TOKEN_CREATED", "ARC_TOKEN_COMPLETED", "NODE_TOKEN_ACCEPTED", "NODE_TOKEN_EXECUTED"}
	var types []string
	for i, ev := range evs {
		types = append(types, ev.Type)
		if ev.Seq != int64(i+1) || ev.Process != p.ID || ev.At.IsZero() {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n got %v\nwant %v", types, want)
	}
	if evs[5].ArcNames == nil || len(evs[5].ArcNames) != 1 || evs[5].ArcNames[0] != nil {
		t.Fatalf("NODE_TOKEN_COMPLETED arcNames %s", mustJSON(evs[5].ArcNames))
	}
	r = e.get("/api/v1/processes/" + p.ID + "/events?after=10")
	r.decode(t, &evs)
	if len(evs) != 2 || evs[0].Seq != 11 {
		t.Fatalf("after=10: %s", r.body)
	}
	r = e.get("/api/v1/processes/" + p.ID + "/events?after=2&limit=3")
	r.decode(t, &evs)
	if len(evs) != 3 || evs[0].Seq != 3 || evs[2].Seq != 5 {
		t.Fatalf("after=2&limit=3: %s", r.body)
	}
	e.want(e.get("/api/v1/processes/"+p.ID+"/events?after=x"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes/"+p.ID+"/events?limit=0"), http.StatusBadRequest, "invalid_argument")
	e.want(e.get("/api/v1/processes/nope/events"), http.StatusNotFound, "not_found")
}

func testEventStream(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	s, resp := e.stream("/api/v1/processes/"+p.ID+"/events", nil, false)
	if s == nil {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	// The past first.
	for i := 1; i <= 5; i++ {
		ev := s.next(t, 5*time.Second)
		if ev.id != fmt.Sprint(i) {
			t.Fatalf("past event %d has id %s", i, ev.id)
		}
		var got veena.Event
		if err := json.Unmarshal([]byte(ev.data), &got); err != nil || got.Seq != int64(i) {
			t.Fatalf("event data %s", ev.data)
		}
	}
	// Then live events as they fire; heartbeats in between do not disturb.
	time.Sleep(250 * time.Millisecond)
	e.want(e.complete(e.active(p.ID, "A"), ""), http.StatusOK, "")
	for i := 6; i <= 12; i++ {
		ev := s.next(t, 5*time.Second)
		if ev.id != fmt.Sprint(i) {
			t.Fatalf("live event %d has id %s (%s)", i, ev.id, ev.data)
		}
	}
	// Resuming: Last-Event-ID and ?after= skip what was seen.
	s2, _ := e.stream("/api/v1/processes/"+p.ID+"/events", map[string]string{"Last-Event-ID": "10"}, false)
	if ev := s2.next(t, 5*time.Second); ev.id != "11" {
		t.Fatalf("Last-Event-ID 10 resumed at %s", ev.id)
	}
	s3, _ := e.stream("/api/v1/processes/"+p.ID+"/events?after=11", nil, false)
	if ev := s3.next(t, 5*time.Second); ev.id != "12" {
		t.Fatalf("after=11 resumed at %s", ev.id)
	}
	_, resp = e.stream("/api/v1/processes/nope/events", nil, false)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("stream of unknown process: %d", resp.StatusCode)
	}
	_, resp = e.stream("/api/v1/processes/"+p.ID+"/events", map[string]string{"Last-Event-ID": "x"}, false)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Last-Event-ID: %d", resp.StatusCode)
	}
}

func testIdempotency(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	start := func(key string) veena.Process {
		r := e.do(req{method: "POST", path: "/api/v1/processes", body: `{"definition":"ab"}`, header: map[string]string{"Idempotency-Key": key}})
		e.want(r, http.StatusCreated, "")
		var p veena.Process
		r.decode(t, &p)
		return p
	}
	p1, p2 := start("k1"), start("k1")
	if p1.ID != p2.ID {
		t.Fatalf("a retried start made a second process: %s %s", p1.ID, p2.ID)
	}
	a := e.active(p1.ID, "A")
	complete := func() *response {
		return e.do(req{method: "POST", path: "/api/v1/node-tokens/" + a + "/complete", body: `{}`, header: map[string]string{"Idempotency-Key": "c1"}})
	}
	e.want(complete(), http.StatusOK, "")
	e.want(complete(), http.StatusOK, "")
	h := e.history(p1.ID)
	if len(h.NodeTokens) != 2 {
		t.Fatalf("a retried complete ran twice: %d node tokens", len(h.NodeTokens))
	}
	var page veena.ProcessPage
	e.get("/api/v1/processes").decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("%d processes", len(page.Items))
	}
}

func testConcurrentCompletes(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	a := e.active(p.ID, "A")
	const n = 16
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.complete(a, "").status
		}()
	}
	wg.Wait()
	close(statuses)
	ok, conflict := 0, 0
	for s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
			conflict++
		default:
			t.Errorf("status %d", s)
		}
	}
	if ok != 1 || conflict != n-1 {
		t.Fatalf("%d completes succeeded and %d refused; want 1 and %d", ok, conflict, n-1)
	}
	if h := e.history(p.ID); len(h.NodeTokens) != 2 {
		t.Fatalf("%d node tokens after concurrent completes", len(h.NodeTokens))
	}
}

func testOperations(t *testing.T, e *env) {
	r := e.get("/healthz")
	e.want(r, http.StatusOK, "")
	r = e.get("/readyz")
	e.want(r, http.StatusOK, "")
	r = e.get("/metrics")
	e.want(r, http.StatusOK, "")
	for _, want := range []string{`veena_http_requests_total{code="200",method="GET",route="GET /readyz"} 1`, "veena_http_request_duration_seconds_bucket", "go_goroutines"} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
	r = e.get("/api/v1/openapi.json")
	e.want(r, http.StatusOK, "")
	r = e.get("/api/v1/whoami")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"role\":\"open\",\"authRequired\":false}\n" {
		t.Fatalf("whoami %s", r.body)
	}
}

func testConflict(t *testing.T, e *env) {
	e.load(testutil.DefAB)
	start := `{"definition": "ab", "context": {"order": "o-1"}}`
	r := e.post("/api/v1/processes", start)
	e.want(r, http.StatusCreated, "")
	var p veena.Process
	r.decode(t, &p)
	if p.Context["order"] != "o-1" {
		t.Fatalf("context %s", r.body)
	}
	// A second executing process may not hold the same order.
	e.want(e.post("/api/v1/processes", start), http.StatusConflict, "conflict")
	var page veena.ProcessPage
	e.get("/api/v1/processes").decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("a refused start made a process: %d", len(page.Items))
	}
}

// testIncomingEvents checks POST /api/v1/events: delivery by context to the
// one matching process, the refusals, bad bodies and idempotent retries.
func testIncomingEvents(t *testing.T, e *env) {
	e.load(defABv2) // A -> B -> C, all wait nodes
	start := func(context string) veena.Process {
		t.Helper()
		r := e.post("/api/v1/processes", `{"definition": "ab", "context": `+context+`}`)
		e.want(r, http.StatusCreated, "")
		var p veena.Process
		r.decode(t, &p)
		return p
	}
	p1 := start(`{"order": "o-1", "tenant": "t"}`)
	p2 := start(`{"order": "o-2", "tenant": "t"}`)
	send := func(body, key string) *response {
		t.Helper()
		r := req{method: "POST", path: "/api/v1/events", body: body}
		if key != "" {
			r.header = map[string]string{"Idempotency-Key": key}
		}
		return e.do(r)
	}
	// nodes returns "NODE:C" or "NODE:I" (complete, incomplete) per node token.
	nodes := func(id string) string {
		t.Helper()
		var out []string
		for _, tk := range e.history(id).NodeTokens {
			st := "I"
			if tk.Complete {
				st = "C"
			}
			out = append(out, tk.Node+":"+st)
		}
		return strings.Join(out, " ")
	}

	// process decodes an answer (afresh: decoding into a used Process would
	// merge the maps).
	process := func(r *response) veena.Process {
		t.Helper()
		var p veena.Process
		r.decode(t, &p)
		return p
	}

	// Delivered to the process that matches, and to it only: its token on A
	// is completed and env merged into the process environment.
	r := send(`{"match": {"order": "o-2"}, "env": {"paid": true, "amount": 120, "note": "via event"}}`, "")
	e.want(r, http.StatusOK, "")
	got := process(r)
	if got.ID != p2.ID || got.State != "executing" || got.Context["order"] != "o-2" {
		t.Fatalf("event answered %s", r.body)
	}
	if env := mustJSON(got.Env); env != `{"amount":120,"note":"via event","paid":true}` {
		t.Fatalf("env after the event %s", env)
	}
	if h := nodes(p2.ID); h != "A:C B:I" {
		t.Fatalf("process o-2 after the event: %s", h)
	}
	if h := nodes(p1.ID); h != "A:I" {
		t.Fatalf("the event for o-2 changed o-1: %s", h)
	}
	r = e.get("/api/v1/processes/" + p2.ID + "/env")
	e.want(r, http.StatusOK, "")
	if string(r.body) != "{\"amount\":120,\"note\":\"via event\",\"paid\":true}\n" {
		t.Fatalf("stored env %s", r.body)
	}
	// null removes an attribute; several pairs must all match.
	r = send(`{"match": {"order": "o-2", "tenant": "t"}, "node": "B", "env": {"note": null}}`, "")
	e.want(r, http.StatusOK, "")
	got = process(r)
	if got.ID != p2.ID || mustJSON(got.Env) != `{"amount":120,"paid":true}` || nodes(p2.ID) != "A:C B:C C:I" {
		t.Fatalf("second event: %s, tokens %s", r.body, nodes(p2.ID))
	}

	// No executing process matches: 404.
	e.want(send(`{"match": {"order": "nope"}}`, ""), http.StatusNotFound, "not_found")
	e.want(send(`{"match": {"order": "o-1", "tenant": "other"}}`, ""), http.StatusNotFound, "not_found")
	// The process matches but has no active token on the node: 404.
	e.want(send(`{"match": {"order": "o-1"}, "node": "B"}`, ""), http.StatusNotFound, "not_found")
	// Two processes match: 409, and neither is touched.
	e.want(send(`{"match": {"tenant": "t"}}`, ""), http.StatusConflict, "conflict")
	if h := nodes(p1.ID); h != "A:I" {
		t.Fatalf("refused events changed o-1: %s", h)
	}
	if h := nodes(p2.ID); h != "A:C B:C C:I" {
		t.Fatalf("refused events changed o-2: %s", h)
	}
	// A process that is no longer executing is not matched.
	e.want(e.post("/api/v1/processes/"+p2.ID+"/cancel", ""), http.StatusOK, "")
	r = send(`{"match": {"tenant": "t"}, "node": "A"}`, "")
	e.want(r, http.StatusOK, "")
	if got = process(r); got.ID != p1.ID || nodes(p1.ID) != "A:C B:I" {
		t.Fatalf("event after o-2 was canceled: %s, tokens %s", r.body, nodes(p1.ID))
	}

	// Bad bodies: 400 naming the field (415 for another media type).
	for _, c := range []struct {
		body, ctype, code, field string
		status                   int
	}{
		{`{"match": {}}`, "", "invalid_argument", "match", 400},
		{`{"match": null}`, "", "invalid_argument", "match", 400},
		{`{"node": "A"}`, "", "invalid_argument", "match", 400},
		{`{}`, "", "invalid_argument", "match", 400},
		{``, "application/json", "invalid_argument", "body", 400},
		{`{"match": "o-1"}`, "", "invalid_argument", "match", 400},
		{`{"match": ["order", "o-1"]}`, "", "invalid_argument", "match", 400},
		{`{"match": {"order": 1}}`, "", "invalid_argument", "match.order", 400},
		{`{"match": {"order": null}}`, "", "invalid_argument", "match.order", 400},
		{`{"match": {"order": true}}`, "", "invalid_argument", "match.order", 400},
		{`{"match": {"": "o-1"}}`, "", "invalid_argument", "match", 400},
		{`{"match": {"order": "o-1"}, "node": 5}`, "", "invalid_argument", "node", 400},
		{`{"match": {"order": "o-1"}, "nod": "A"}`, "", "invalid_argument", "nod", 400},
		{`{"match": {"order": "o-1"}, "env": []}`, "", "invalid_argument", "env", 400},
		{`[{"match": {"order": "o-1"}}]`, "", "invalid_argument", "body", 400},
		{`{"match": {"order": "o-1"}`, "", "invalid_json", "", 400},
		{`{"match": {"order": "o-1"}} {}`, "", "invalid_json", "", 400},
		{`{"match": {"order": "o-1"}}`, "text/plain", "unsupported_media_type", "", 415},
	} {
		r := e.do(req{method: "POST", path: "/api/v1/events", body: c.body, ctype: c.ctype})
		if r.status != c.status {
			t.Errorf("POST /api/v1/events %s: %d, want %d: %s", c.body, r.status, c.status, r.body)
			continue
		}
		p := r.problem(t)
		if p.Code != c.code {
			t.Errorf("POST /api/v1/events %s: code %q, want %q", c.body, p.Code, c.code)
		}
		if !strings.Contains(p.Detail, c.field) {
			t.Errorf("POST /api/v1/events %s: detail %q does not name %s", c.body, p.Detail, c.field)
		}
	}
	if h := nodes(p1.ID); h != "A:C B:I" {
		t.Fatalf("bad events changed o-1: %s", h)
	}

	// A retry with the same Idempotency-Key answers the first result and
	// completes no second token; without the key the event runs again.
	first := send(`{"match": {"order": "o-1"}, "env": {"step": 1}}`, "ev-1")
	e.want(first, http.StatusOK, "")
	if h := nodes(p1.ID); h != "A:C B:C C:I" {
		t.Fatalf("after the keyed event: %s", h)
	}
	again := send(`{"match": {"order": "o-1"}, "env": {"step": 1}}`, "ev-1")
	e.want(again, http.StatusOK, "")
	if string(again.body) != string(first.body) {
		t.Fatalf("the retry answered\n%s\nnot the first result\n%s", again.body, first.body)
	}
	if h := nodes(p1.ID); h != "A:C B:C C:I" {
		t.Fatalf("a retried event completed another token: %s", h)
	}
	r = send(`{"match": {"order": "o-1"}, "env": {"step": 2}}`, "ev-2")
	e.want(r, http.StatusOK, "")
	if got = process(r); got.State != "completed" || mustJSON(got.Env) != `{"step":2}` {
		t.Fatalf("the next event: %s", r.body)
	}
}

// TestStoreUnavailable checks the answers when the store is gone.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	tok := e.tokenOf(p.ID)
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	r := e.get("/readyz")
	e.want(r, http.StatusServiceUnavailable, "store_unavailable")
	e.want(e.get("/healthz"), http.StatusOK, "")
	// Reads answer 503 too. (Writes are not tried here: they depend on how
	// a store refuses work after Close.)
	r = e.get("/api/v1/processes/" + p.ID)
	e.want(r, http.StatusServiceUnavailable, "store_unavailable")
	e.want(e.get("/api/v1/node-tokens/"+tok), http.StatusServiceUnavailable, "store_unavailable")
}

// TestPanicIsInternal checks that a failing handler answers 500 problem+json
// without details and the server goes on.
func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	srv := server.New(server.Config{Engine: panicky{}, Loopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/api/v1/processes/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(b), `"code":"internal"`) || strings.Contains(string(b), "boom") {
		t.Fatalf("panic answered %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(ts.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after a panic: %v %v", err, resp)
	}
	resp.Body.Close()
}

// panicky is an engine whose every method fails badly.
type panicky struct{ server.Engine }

func (panicky) Process(context.Context, string) (*veena.Process, error) { panic("boom") }

// defReview fans out to a token set of reviewers, joined by a tokenSet
// join, and to three arcs joined by an and join.
const defReview = `<?xml version="1.0"?>
<process-definition name="review" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc name="fan" to="R"/><arc to="B"/><arc to="C"/><arc to="D"/></node>
  <node name="R" type="wait"><arc to="J"/></node>
  <node name="J" type="wait" joinType="tokenSet" joinParam="reviewers"/>
  <node name="B" type="wait"><arc to="K"/></node>
  <node name="C" type="wait"><arc to="K"/></node>
  <node name="D" type="wait"><arc to="K"/></node>
  <node name="K" type="wait" joinType="and"/>
</process-definition>
`

// testTokenSets: GET /processes/{id}/token-sets serves each token set with
// its shared environment and its members' own, by member index.
func testTokenSets(t *testing.T, e *env) {
	e.load(defReview)
	p := e.start("review", "")
	if r := e.get("/api/v1/processes/" + p.ID + "/token-sets"); r.status != http.StatusOK || string(r.body) != "[]\n" {
		t.Fatalf("token sets before any: %d %s", r.status, r.body)
	}
	e.want(e.complete(e.active(p.ID, "A"), `{"arcs": ["fan"], "tokenSet": {"name": "reviewers", "count": 3, "env": {"topic": "pricing"}, "memberEnv": {"reviewer": ["ann", "bob", "cy"], "round": [1, 2, 1]}}}`), http.StatusOK, "")

	r := e.get("/api/v1/processes/" + p.ID + "/token-sets")
	e.want(r, http.StatusOK, "")
	var sets []veena.TokenSet
	r.decode(t, &sets)
	if len(sets) != 1 {
		t.Fatalf("token sets %s", r.body)
	}
	s := sets[0]
	if s.ID != p.ID+".s0" || s.Process != p.ID || s.Name != "reviewers" || s.Members != 3 || s.Level != 1 || fmt.Sprint(s.Env) != "map[topic:pricing]" {
		t.Fatalf("token set %s", r.body)
	}
	if got := fmt.Sprint(s.MemberEnvs); got != "[map[reviewer:ann round:1] map[reviewer:bob round:2] map[reviewer:cy round:1]]" {
		t.Fatalf("member environments %s, from %s", got, r.body)
	}
	e.want(e.get("/api/v1/processes/no-such-process/token-sets"), http.StatusNotFound, "not_found")
}

// testJoinProgress: a process read says how far each waiting join has
// come, counted as its strategy counts: one reviewer of three at the
// tokenSet join, two of three arcs at the and join. Lists leave it out.
func testJoinProgress(t *testing.T, e *env) {
	e.load(defReview)
	p := e.start("review", "")
	e.want(e.complete(e.active(p.ID, "A"), `{"arcs": ["fan"], "tokenSet": {"name": "reviewers", "count": 3}}`), http.StatusOK, "")
	q := e.start("review", "")
	e.want(e.complete(e.active(q.ID, "A"), `{"arcs": [null]}`), http.StatusOK, "")
	var reviewers []string
	for _, tk := range e.history(p.ID).NodeTokens {
		if tk.Node == "R" {
			reviewers = append(reviewers, tk.ID)
		}
	}
	e.want(e.complete(reviewers[1], ""), http.StatusOK, "")
	e.want(e.complete(e.active(q.ID, "B"), ""), http.StatusOK, "")
	e.want(e.complete(e.active(q.ID, "D"), ""), http.StatusOK, "")
	progress := func(id, node string) string {
		t.Helper()
		var got veena.Process
		r := e.get("/api/v1/processes/" + id)
		e.want(r, http.StatusOK, "")
		r.decode(t, &got)
		for _, w := range got.WaitingAt {
			if w.Node == node && w.Kind == veena.WaitJoin {
				return fmt.Sprintf("%+v", w.Progress)
			}
		}
		t.Fatalf("process %s does not wait at join %s: %s", id, node, r.body)
		return ""
	}
	if got, want := progress(p.ID, "J"), "[{Group:reviewers Arrived:1 Needs:3 Of:members}]"; got != want {
		t.Errorf("tokenSet join progress %s, want %s", got, want)
	}
	if got, want := progress(q.ID, "K"), "[{Group: Arrived:2 Needs:3 Of:arcs}]"; got != want {
		t.Errorf("and join progress %s, want %s", got, want)
	}
	r := e.get("/api/v1/processes?definition=review")
	e.want(r, http.StatusOK, "")
	if strings.Contains(string(r.body), `"progress"`) {
		t.Errorf("the process list gives join progress: %s", r.body)
	}
}
