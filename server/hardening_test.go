package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/veena-wf/veena/internal/testutil"
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
