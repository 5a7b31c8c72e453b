package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// Definitions the tests load.
const (
	defABv2 = `<?xml version="1.0"?>
<process-definition name="ab" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"><arc to="C"/></node>
  <node name="C" type="wait"/>
</process-definition>
`
	// split: A (wait) splits to B and C (waits), joined by an and-join at D.
	// choice: A (wait) leaves on "yes" to Y or "no" to N.
	defChoice = `<?xml version="1.0"?>
<process-definition name="choice" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc name="yes" to="Y"/><arc name="no" to="N"/></node>
  <node name="Y" type="wait"/>
  <node name="N" type="wait"/>
</process-definition>
`
	// one: a single wait node; completing it ends the process.
	defOne = `<?xml version="1.0"?>
<process-definition name="one" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"/>
</process-definition>
`
	// nostart: loads, but cannot be started on its own.
	defNoStart = `<?xml version="1.0"?>
<process-definition name="nostart" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait"/>
</process-definition>
`
	// badguard: B's guard names nothing that exists, so executing it fails.
	defBadGuard = `<?xml version="1.0"?>
<process-definition name="badguard" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"><guard>if undefinedThing then Accept else Discard</guard></node>
</process-definition>
`
	// setjoin: A reaches a tokenSet join without being in a token set.
	defSetJoin = `<?xml version="1.0"?>
<process-definition name="setjoin" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="J"/></node>
  <node name="J" type="wait" joinType="tokenSet" joinParam="s"/>
</process-definition>
`
	defInvalid = `<?xml version="1.0"?>
<process-definition name="bad" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="nowhere"/></node>
</process-definition>
`
	defBomb = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<process-definition name="lolz" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="a" isStart="true"><custom><lol>&lol9;</lol></custom></node>
</process-definition>
`
	defExternalEntity = `<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<process-definition name="xxe" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="a" isStart="true"><custom><x>&xxe;</x></custom></node>
</process-definition>
`
)

// backend opens a fresh store.
type backend struct {
	name string
	open func(t testing.TB) store.Store
}

func backends(t testing.TB) []backend {
	bs := []backend{
		{"memory", func(t testing.TB) store.Store { return memstore.New() }},
		{"sqlite", func(t testing.TB) store.Store {
			st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "veena.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	if pg := postgresBackend(t); pg != nil {
		bs = append(bs, *pg)
	}
	return bs
}

// env is one server under test.
type env struct {
	t      testing.TB
	eng    *veena.Engine
	st     store.Store
	srv    *server.Server
	ts     *httptest.Server
	token  string // sent as bearer token unless a request says otherwise
	tokens string // token file
}

type envOptions struct {
	static   []string // ROLE=SECRET
	loopback *bool
	maxBody  int64
	engine   func(*veena.Options) // changes the engine's options
}

func newEnv(t testing.TB, b backend, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	st := b.open(t)
	opts := veena.Options{Store: st, UniqueContextKeys: []string{"order"}}
	if o.engine != nil {
		o.engine(&opts)
	}
	eng, err := veena.Open(ctx, opts)
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	authn, err := auth.NewAuthenticator(tokens, o.static)
	if err != nil {
		t.Fatal(err)
	}
	loopback := true
	if o.loopback != nil {
		loopback = *o.loopback
	}
	srv := server.New(server.Config{Engine: eng, Auth: authn, Loopback: loopback, Heartbeat: 100 * time.Millisecond, MaxBody: o.maxBody})
	ts := httptest.NewUnstartedServer(srv)
	ts.Config = server.HTTPServer(srv, nil)
	ts.Start()
	e := &env{t: t, eng: eng, st: st, srv: srv, ts: ts, tokens: tokens}
	t.Cleanup(func() {
		ts.Close()
		eng.Stop()
		_ = eng.Close()
	})
	return e
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) problem(t testing.TB) server.Problem {
	t.Helper()
	var p server.Problem
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (body %s)", ct, r.body)
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem: %v in %s", err, r.body)
	}
	if p.Status != r.status || p.Code == "" || p.Title == "" || p.Type == "" {
		t.Fatalf("incomplete problem %s for status %d", r.body, r.status)
	}
	return p
}

func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

type req struct {
	method, path string
	body         string
	ctype        string
	header       map[string]string
	noAuth       bool
	token        string
}

func (e *env) do(r req) *response {
	e.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, e.ts.URL+r.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	} else if r.body != "" && (r.method != http.MethodPost || r.path != "/api/v1/definitions") {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	token := e.token
	if r.token != "" {
		token = r.token
	}
	if token != "" && !r.noAuth {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.ts.Client().Do(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) get(path string) *response { return e.do(req{method: "GET", path: path}) }

func (e *env) post(path, body string) *response {
	return e.do(req{method: "POST", path: path, body: body})
}

// want checks the status (and, for errors, the code) of an answer.
func (e *env) want(r *response, status int, code string) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" {
		if p := r.problem(e.t); p.Code != code {
			e.t.Fatalf("code %q, want %q: %s", p.Code, code, r.body)
		}
	}
}

func (e *env) load(src string) veena.Definition {
	e.t.Helper()
	r := e.do(req{method: "POST", path: "/api/v1/definitions", body: src, ctype: "application/xml"})
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		e.t.Fatalf("load: %d %s", r.status, r.body)
	}
	var d veena.Definition
	r.decode(e.t, &d)
	return d
}

func (e *env) start(def string, envJSON string) veena.Process {
	e.t.Helper()
	body := `{"definition":"` + def + `"}`
	if envJSON != "" {
		body = `{"definition":"` + def + `","env":` + envJSON + `}`
	}
	r := e.post("/api/v1/processes", body)
	e.want(r, http.StatusCreated, "")
	var p veena.Process
	r.decode(e.t, &p)
	return p
}

func (e *env) history(id string) veena.TokenHistory {
	e.t.Helper()
	r := e.get("/api/v1/processes/" + id + "/tokens")
	e.want(r, http.StatusOK, "")
	var h veena.TokenHistory
	r.decode(e.t, &h)
	return h
}

// active returns the id of the active node token on the named node.
func (e *env) active(processID, node string) string {
	e.t.Helper()
	for _, t := range e.history(processID).NodeTokens {
		if t.Node == node && !t.Complete {
			return t.ID
		}
	}
	e.t.Fatalf("no active token on %s in process %s", node, processID)
	return ""
}

// tokenOf returns the id of the first node token of a process.
func (e *env) tokenOf(processID string) string {
	e.t.Helper()
	return e.history(processID).NodeTokens[0].ID
}

func (e *env) complete(tokenID, body string) *response {
	return e.post("/api/v1/node-tokens/"+tokenID+"/complete", body)
}

// sse reads a server-sent event stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

type sseEvent struct {
	id   string
	data string
}

func (e *env) stream(path string, header map[string]string, noAuth bool) (*sse, *http.Response) {
	e.t.Helper()
	hr, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	hr.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	if e.token != "" && !noAuth {
		hr.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := e.ts.Client().Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	return &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}, resp
}

// next returns the next event (skipping comments), or fails after timeout.
func (s *sse) next(t testing.TB, timeout time.Duration) sseEvent {
	t.Helper()
	type result struct {
		ev  sseEvent
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var ev sseEvent
		for s.sc.Scan() {
			line := s.sc.Text()
			switch {
			case line == "":
				if ev.data != "" {
					ch <- result{ev: ev}
					return
				}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
		ch <- result{err: io.ErrUnexpectedEOF}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("stream ended: %v", r.err)
		}
		return r.ev
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
	}
	return sseEvent{}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
