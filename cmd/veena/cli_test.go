package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/memstore"
)

func sp(s string) *string { return &s }

func TestHistoryTree(t *testing.T) {
	// A completed and-join, a backtracked token, token-set members and a
	// pending arc token.
	h := &veena.TokenHistory{
		NodeTokens: []veena.NodeToken{
			{ID: "n1", Node: "A", Complete: true, ExecutionType: "forward", Children: []string{"a1", "a2"}},
			{ID: "n2", Node: "B", Complete: true, ExecutionType: "forward_backtracked", Children: []string{"a3"}, TokenSets: []veena.TokenSetRef{{Set: "s1", Name: "s", Member: 0}}},
			{ID: "n3", Node: "C", External: "x", Complete: false, ExecutionType: "forward"},
			{ID: "n4", Node: "D", Complete: false, ExecutionType: "uturn"},
		},
		ArcTokens: []veena.ArcToken{
			{ID: "a1", Arc: veena.Arc{From: "A", To: "B"}, Parent: "n1", Child: sp("n2"), Complete: true, ExecutionType: "forward"},
			{ID: "a2", Arc: veena.Arc{From: "A", To: "C", ToExternal: "x"}, Parent: "n1", Child: sp("n3"), Complete: true, ExecutionType: "forward"},
			{ID: "a3", Arc: veena.Arc{From: "B", To: "E"}, Parent: "n2", Pending: true, ExecutionType: "backtracked"},
		},
	}
	want := `[1 A C F]
  (C F 2)
  (C F 3)
[2 B C FB s 0]
  (P B E)
[3 x:C I F]
[4 D I U]
`
	if got := historyTree(h); got != want {
		t.Fatalf("tree\n%s\nwant\n%s", got, want)
	}
}

func TestEnvValue(t *testing.T) {
	for in, want := range map[string]string{
		"42":                              `42`,
		"1.5":                             `1.5`,
		"true":                            `true`,
		"hello":                           `"hello"`,
		`"42"`:                            `"42"`,
		"[1,2]":                           `"[1,2]"`,
		`{"a":1}`:                         `"{\"a\":1}"`,
		`{"date":"2026-01-02T03:04:05Z"}`: `{"date":"2026-01-02T03:04:05Z"}`,
		"":                                `""`,
	} {
		if got := string(envValue(in)); got != want {
			t.Errorf("envValue(%q) = %s, want %s", in, got, want)
		}
	}
	if _, err := parseEnv([]string{"novalue"}); err == nil {
		t.Error("parseEnv accepted a pair without =")
	}
}

func TestDescribeErrors(t *testing.T) {
	ae := &apiError{Status: 422, Code: "definition_invalid", Title: "The definition is invalid", file: "order.wf.xml"}
	ae.Errors = append(ae.Errors, lineProblem{3, 5, `arc to unknown node "x"`})
	if got := ae.describe(); !strings.Contains(got, `order.wf.xml:3:5: arc to unknown node "x"`) {
		t.Errorf("definition problems read %q", got)
	}
	ae = &apiError{Status: 409, Code: "token_complete", Title: "The node token is already complete", Detail: "node token n1 is already complete"}
	if got := ae.describe(); got != "veena: node token n1 is already complete (token_complete)" {
		t.Errorf("refusal reads %q", got)
	}
	ae = &apiError{Status: 401, Code: "unauthorized", Detail: "this server needs an access token"}
	if got := ae.describe(); !strings.Contains(got, "VEENA_TOKEN") {
		t.Errorf("401 reads %q", got)
	}
}

// TestClientCommands runs client commands in process against a server.
func TestClientCommands(t *testing.T) {
	ctx := context.Background()
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	dir := t.TempDir()
	file := dir + "/ab.wf.xml"
	writeFile(t, file, `<?xml version="1.0"?>
<process-definition name="ab" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc name="go" to="B"/></node>
  <node name="B" type="wait"/>
</process-definition>
`)
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, errOut, code := veenaCmd("definitions", "load", file); code != 0 || !strings.Contains(out, "loaded ab version 1") {
		t.Fatalf("load: %d %s %s", code, out, errOut)
	}
	out, _, _ := veenaCmd("processes", "start", "ab", "--env", "n=3", "-o", "json")
	var p veena.Process
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("start: %v %s", err, out)
	}
	h, _ := eng.Tokens(ctx, p.ID)
	if out, errOut, code := veenaCmd("tokens", "complete", h.NodeTokens[0].ID, "--arc", "go", "--env", "ok=true"); code != 0 || !strings.Contains(out, "active node tokens") {
		t.Fatalf("complete: %d %s %s", code, out, errOut)
	}
	if out, _, _ := veenaCmd("tokens", "show", h.NodeTokens[0].ID); !strings.Contains(out, "ok") || !strings.Contains(out, "complete") {
		t.Fatalf("tokens show: %s", out)
	}
	if _, errOut, code := veenaCmd("tokens", "complete", h.NodeTokens[0].ID); code != 1 || !strings.Contains(errOut, "(token_complete)") {
		t.Fatalf("second complete: %d %s", code, errOut)
	}
	if out, _, _ := veenaCmd("processes", "env", p.ID, "m=x", "n="); !strings.Contains(out, `m  = "x"`) || strings.Contains(out, "n  =") {
		t.Fatalf("env patch: %s", out)
	}
	var errb bytes.Buffer
	if code := run(ctx, []string{"processes", "list", "--url", "http://127.0.0.1:1"}, nil, &bytes.Buffer{}, &errb); code != 1 || !strings.Contains(errb.String(), "is `veena serve` running?") {
		t.Fatalf("unreachable server: %d %s", code, errb.String())
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
