package schema_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
)

// TestHTTP drives the chat-bot through the HTTP API: loading the schema
// with its child, named events (a trigger's 201, then 200), the almanac
// and its patch, node instances, and the errors of each endpoint.
func TestHTTP(t *testing.T) {
	b := newBot()
	b.statuses["B-0001"] = []string{"delivered"}
	h := open(t, nil, b)
	srv := httptest.NewServer(server.New(server.Config{Engine: h.e, Schemas: h.rt, Loopback: true}))
	defer srv.Close()

	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, raw, want)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	src, err := os.ReadFile(botFile)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/definitions", bytes.NewReader(src))
	req.Header.Set("Content-Type", "application/yaml")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var def map[string]any
	_ = json.NewDecoder(res.Body).Decode(&def)
	res.Body.Close()
	if res.StatusCode != 201 || def["format"] != "schema" || def["name"] != "order-status-bot" {
		t.Fatalf("load: %d %v", res.StatusCode, def)
	}
	if rel, _ := def["related"].([]any); len(rel) != 1 || rel[0] != "order-status-bot.order-lookup" {
		t.Errorf("related: %v", def["related"])
	}
	nodes, _ := def["nodes"].([]any)
	first, _ := nodes[0].(map[string]any)
	if first["kind"] != "root" || first["detail"] == nil {
		t.Errorf("first node: %v", first)
	}

	// An invalid schema: 422 with line and column.
	bad := do("POST", "/api/v1/definitions?format=schema", "schema: broken\nnodes:\n  - {id: a, type: root, next: [{to: nowhere}]}\n", 422)
	errs, _ := bad["errors"].([]any)
	if len(errs) == 0 || !strings.Contains(bad["detail"].(string), "nowhere") {
		t.Errorf("invalid schema: %v", bad)
	}

	ev := `{"name": "chat.message", "context": {"channel": "web", "userId": "u7"}, "payload": {"text": "/order"}, "id": "m1"}`
	p := do("POST", "/api/v1/events", ev, 201)
	id := p["id"].(string)
	// The same id again: the first answer, nothing new.
	if again := do("POST", "/api/v1/events", ev, 200); again["id"] != id {
		t.Errorf("a retried event went to %v", again["id"])
	}
	h.settle(id)
	do("POST", "/api/v1/events", `{"name": "chat.message", "match": {"channel": "web", "userId": "u7"}, "payload": {"text": "B-0001 please"}}`, 200)
	h.ended(id) // the look-up child answers, the conversation says goodbye and ends

	alm := do("GET", "/api/v1/processes/"+id+"/almanac", "", 200)
	if alm["orderNo"] != "B-0001" || alm["status"] != "delivered" {
		t.Errorf("almanac: %v", alm)
	}
	ni := do("GET", "/api/v1/processes/"+id+"/nodes", "", 200)
	items, _ := ni["items"].([]any)
	if len(items) < 5 {
		t.Fatalf("nodes: %v", ni)
	}
	last, _ := items[len(items)-1].(map[string]any)
	if last["node"] != "goodbye" || last["state"] != "completed" {
		t.Errorf("last node instance: %v", last)
	}
	acts, _ := last["actions"].([]any)
	a0, _ := acts[0].(map[string]any)
	if a0["name"] != "bye" || a0["state"] != "completed" || a0["attempts"] != 1.0 {
		t.Errorf("action instance: %v", a0)
	}

	// The almanac can be patched (here of a new conversation, still running).
	p2 := do("POST", "/api/v1/events", `{"name": "chat.message", "context": {"channel": "web", "userId": "u8"}, "payload": {"text": "/order"}}`, 201)
	id2 := p2["id"].(string)
	h.settle(id2)
	patched := do("PATCH", "/api/v1/processes/"+id2+"/almanac", `{"attempts": 5, "note": "vip"}`, 200)
	if patched["attempts"] != 5.0 || patched["note"] != "vip" {
		t.Errorf("patched almanac: %v", patched)
	}
	// attempts 5 > 2: the next unparsable message gives up.
	do("POST", "/api/v1/events", `{"name": "chat.message", "context": {"channel": "web", "userId": "u8"}, "payload": {"text": "??"}}`, 200)
	h.settle(id2)
	if got := do("GET", "/api/v1/processes/"+id2, "", 200); got["state"] != "completed" {
		t.Errorf("conversation u8 is %v after giving up", got["state"])
	}

	// Errors.
	do("POST", "/api/v1/events", `{"name": "chat.message", "context": {"channel": "web", "userId": "u9"}, "payload": {"text": "hi"}}`, 404) // no instance, trigger condition false
	do("POST", "/api/v1/events", `{"name": "nobody.listens", "context": {"k": "v"}}`, 404)
	do("POST", "/api/v1/events", `{"name": "x", "context": {"a": "b"}, "match": {"a": "b"}}`, 400)
	do("POST", "/api/v1/events", `{"name": "x", "context": {"a": "b"}, "node": "n"}`, 400)
	do("POST", "/api/v1/events", `{"match": {"a": "b"}, "payload": 1}`, 400)
	do("GET", "/api/v1/processes/nope/almanac", "", 404)
	do("GET", "/api/v1/processes/nope/nodes", "", 404)
	do("PATCH", "/api/v1/processes/"+id2+"/almanac", `[1]`, 400)

	// A server without the schema runtime says so.
	bare := httptest.NewServer(server.New(server.Config{Engine: h.e, Loopback: true}))
	defer bare.Close()
	r2, err := http.Get(bare.URL + "/api/v1/processes/" + id + "/almanac")
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 501 {
		t.Errorf("almanac without a schema runtime: %d", r2.StatusCode)
	}
}

// TestNoBacktrack: a schema instance refuses backtracking (its actions ran,
// some outside Veena).
func TestNoBacktrack(t *testing.T) {
	b := newBot()
	h := open(t, nil, b, botFile)
	res := h.send("u1", "/order")
	h.settle(res.Process.ID)
	_, err := h.e.Backtrack(context.Background(), veena.NodeTokenID(res.Process.ID, 0), "")
	if veena.Code(err) != "backtrack_not_allowed" {
		t.Fatalf("backtrack: %v", err)
	}
}
