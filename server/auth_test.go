package server_test

import (
	"github.com/veena-wf/veena/internal/testutil"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/server"
)

const (
	viewerSecret   = "viewer-secret-0123456789"
	operatorSecret = "operator-secret-0123456789"
	adminSecret    = "admin-secret-0123456789"
)

// TestAccessControl checks roles, missing and wrong credentials, the token
// file and the event stream's query token.
func TestAccessControl(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[1], envOptions{static: []string{"viewer=" + viewerSecret, "operator=" + operatorSecret, "admin=" + adminSecret}})

	// No credentials, wrong credentials: 401 with a Bearer challenge.
	for _, r := range []*response{
		e.do(req{method: "GET", path: "/api/v1/definitions"}),
		e.do(req{method: "GET", path: "/api/v1/whoami"}),
		e.do(req{method: "GET", path: "/api/v1/definitions", token: "wrong-token-0123456789"}),
		e.do(req{method: "GET", path: "/api/v1/definitions", header: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}}),
		e.do(req{method: "GET", path: "/metrics"}),
		e.do(req{method: "POST", path: "/api/v1/definitions", body: testutil.DefAB, ctype: "application/xml"}),
	} {
		e.want(r, http.StatusUnauthorized, "unauthorized")
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
		}
	}
	// Public: health, readiness, the OpenAPI document.
	for _, path := range []string{"/healthz", "/readyz", "/api/v1/openapi.json"} {
		e.want(e.do(req{method: "GET", path: path}), http.StatusOK, "")
	}

	as := func(secret string) func(r req) *response {
		return func(r req) *response { r.token = secret; return e.do(r) }
	}
	viewer, operator, admin := as(viewerSecret), as(operatorSecret), as(adminSecret)

	for secret, role := range map[string]string{viewerSecret: "viewer", operatorSecret: "operator", adminSecret: "admin"} {
		r := as(secret)(req{method: "GET", path: "/api/v1/whoami"})
		e.want(r, http.StatusOK, "")
		if !strings.Contains(string(r.body), `"role":"`+role+`"`) || !strings.Contains(string(r.body), `"authRequired":true`) {
			t.Fatalf("whoami as %s: %s", role, r.body)
		}
	}

	// Definitions: admin only.
	loadDef := req{method: "POST", path: "/api/v1/definitions", body: testutil.DefAB, ctype: "application/xml"}
	e.want(viewer(loadDef), http.StatusForbidden, "forbidden")
	e.want(operator(loadDef), http.StatusForbidden, "forbidden")
	e.want(admin(loadDef), http.StatusCreated, "")

	// Start, complete, backtrack, cancel, env patches, events: operator and admin.
	start := req{method: "POST", path: "/api/v1/processes", body: `{"definition":"ab"}`}
	e.want(viewer(start), http.StatusForbidden, "forbidden")
	r := operator(start)
	e.want(r, http.StatusCreated, "")
	var p struct{ ID string }
	r.decode(t, &p)
	e.want(admin(start), http.StatusCreated, "")

	e.token = viewerSecret
	a := e.active(p.ID, "A")
	for _, w := range []req{
		{method: "POST", path: "/api/v1/node-tokens/" + a + "/complete", body: "{}"},
		{method: "POST", path: "/api/v1/node-tokens/" + a + "/backtrack", body: "{}"},
		{method: "POST", path: "/api/v1/processes/" + p.ID + "/cancel", body: "{}"},
		{method: "PATCH", path: "/api/v1/processes/" + p.ID + "/env", body: `{"x":1}`},
		{method: "PATCH", path: "/api/v1/node-tokens/" + a + "/env", body: `{"x":1}`},
		{method: "POST", path: "/api/v1/events", body: `{"match":{"x":"y"}}`},
	} {
		e.want(viewer(w), http.StatusForbidden, "forbidden")
	}
	// The viewer's refused writes changed nothing.
	if h := e.history(p.ID); len(h.NodeTokens) != 1 || h.NodeTokens[0].Complete {
		t.Fatalf("a viewer changed the process: %+v", h)
	}
	// The viewer reads everything.
	for _, path := range []string{"/api/v1/definitions", "/api/v1/definitions/ab", "/api/v1/definitions/ab/versions", "/api/v1/definitions/ab/versions/1",
		"/api/v1/definitions/ab/versions/1/source", "/api/v1/processes", "/api/v1/processes/" + p.ID, "/api/v1/processes/" + p.ID + "/tokens",
		"/api/v1/processes/" + p.ID + "/events", "/api/v1/processes/" + p.ID + "/env", "/api/v1/node-tokens/" + a, "/api/v1/node-tokens/" + a + "/env", "/metrics"} {
		e.want(viewer(req{method: "GET", path: path}), http.StatusOK, "")
	}
	e.want(operator(req{method: "POST", path: "/api/v1/node-tokens/" + a + "/complete", body: "{}"}), http.StatusOK, "")
	// Events are an operator's: past the role check, no process matches.
	e.want(operator(req{method: "POST", path: "/api/v1/events", body: `{"match":{"x":"y"}}`}), http.StatusNotFound, "not_found")

	// ?access_token= works on the event stream only.
	e.token = ""
	s, resp := e.stream("/api/v1/processes/"+p.ID+"/events?access_token="+viewerSecret, nil, true)
	if s == nil {
		t.Fatalf("stream with access_token: %d", resp.StatusCode)
	}
	if ev := s.next(t, 5*time.Second); ev.id != "1" {
		t.Fatalf("first streamed event %s", ev.id)
	}
	_, resp = e.stream("/api/v1/processes/"+p.ID+"/events?access_token=wrong-0123456789abcdef", nil, true)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("stream with a wrong access_token: %d", resp.StatusCode)
	}
	e.want(e.do(req{method: "GET", path: "/api/v1/processes/" + p.ID + "?access_token=" + viewerSecret}), http.StatusUnauthorized, "unauthorized")
	e.want(e.do(req{method: "POST", path: "/api/v1/processes?access_token=" + operatorSecret, body: `{"definition":"ab"}`}), http.StatusUnauthorized, "unauthorized")

	// Cross-site writes are refused even with a valid token.
	e.want(operator(req{method: "POST", path: "/api/v1/processes", body: `{"definition":"ab"}`, header: map[string]string{"Origin": "https://evil.example"}}), http.StatusForbidden, "forbidden")
	e.want(operator(req{method: "POST", path: "/api/v1/processes", body: `{"definition":"ab"}`, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}), http.StatusForbidden, "forbidden")
}

// TestTokenFile checks tokens created and revoked in the file while the
// server runs.
func TestTokenFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[0], envOptions{})
	// No tokens yet: open.
	r := e.get("/api/v1/whoami")
	if !strings.Contains(string(r.body), `"role":"open"`) {
		t.Fatalf("whoami without tokens: %s", r.body)
	}
	secret, err := auth.Create(e.tokens, "ci", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Create(e.tokens, "ci", auth.RoleViewer); err == nil {
		t.Fatal("a second token named ci was created")
	}
	// The file holds the hash, never the secret.
	if b, _ := readFile(e.tokens); strings.Contains(b, secret) || !strings.Contains(b, auth.Hash(secret)) {
		t.Fatalf("token file: %s", b)
	}
	waitFor(t, func() bool { return e.get("/api/v1/whoami").status == http.StatusUnauthorized })
	r = e.do(req{method: "GET", path: "/api/v1/whoami", token: secret})
	e.want(r, http.StatusOK, "")
	if !strings.Contains(string(r.body), `"role":"operator"`) || !strings.Contains(string(r.body), `"name":"ci"`) {
		t.Fatalf("whoami: %s", r.body)
	}
	if err := auth.Revoke(e.tokens, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Create(e.tokens, "other", auth.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return e.do(req{method: "GET", path: "/api/v1/whoami", token: secret}).status == http.StatusUnauthorized
	})
	if err := auth.Revoke(e.tokens, "nope"); err == nil {
		t.Fatal("revoking an unknown token succeeded")
	}
}

// TestNotLoopback checks that a server beyond loopback without tokens
// refuses every API request, and that an open loopback server refuses
// requests for other host names (DNS rebinding).
func TestNotLoopback(t *testing.T) {
	t.Parallel()
	no := false
	e := newEnv(t, backends(t)[0], envOptions{loopback: &no})
	r := e.get("/api/v1/definitions")
	e.want(r, http.StatusUnauthorized, "unauthorized")
	if !strings.Contains(r.problem(t).Detail, "no access tokens") {
		t.Fatalf("detail %q", r.problem(t).Detail)
	}
	e.want(e.do(req{method: "GET", path: "/api/v1/whoami"}), http.StatusUnauthorized, "unauthorized")

	open := newEnv(t, backends(t)[0], envOptions{})
	hr, _ := http.NewRequest("GET", open.ts.URL+"/api/v1/definitions", nil)
	hr.Host = "attacker.example:80"
	resp, err := open.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("open server answered Host attacker.example with %d", resp.StatusCode)
	}
	if !server.IsLoopbackAddr("127.0.0.1:0") || !server.IsLoopbackAddr("[::1]:80") || !server.IsLoopbackAddr("localhost:7700") ||
		server.IsLoopbackAddr(":7700") || server.IsLoopbackAddr("0.0.0.0:7700") || server.IsLoopbackAddr("10.1.2.3:7700") {
		t.Fatal("IsLoopbackAddr is wrong")
	}
}

// TestSlowClients checks that stalled clients are cut off by the timeouts.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends(t)[0], envOptions{})
	hs := server.HTTPServer(e.srv, nil)
	if hs.ReadHeaderTimeout == 0 || hs.ReadTimeout == 0 || hs.WriteTimeout == 0 || hs.IdleTimeout == 0 || hs.MaxHeaderBytes == 0 {
		t.Fatalf("timeouts not all set: %+v", hs)
	}
	hs.ReadHeaderTimeout = 300 * time.Millisecond
	hs.ReadTimeout = 600 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	stalled := func(what, partial string) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, partial); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, _ = io.ReadAll(conn) // returns when the server closes the connection
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s: the server held the stalled connection for %v", what, d)
		}
	}
	stalled("headers", "GET /api/v1/definitions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	stalled("body", "POST /api/v1/processes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"defin")

	// Oversized headers are refused.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "+strings.Repeat("a", 200<<10)+"\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(conn)
	if !strings.Contains(string(b), "431") {
		t.Fatalf("oversized headers answered %q", firstLine(string(b)))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
