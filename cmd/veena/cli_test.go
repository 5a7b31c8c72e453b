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

// TestEnvValueKeepsDigits: a number that the API cannot hold exactly (an
// integer beyond 64 bits, a decimal with more digits than a float keeps)
// is sent as a string, with every digit.
func TestEnvValueKeepsDigits(t *testing.T) {
	for in, want := range map[string]string{
		"1180591620717411303425": `"1180591620717411303425"`,
		"-9223372036854775809":   `"-9223372036854775809"`,
		"9223372036854775807":    `9223372036854775807`,
		"3.14159265358979323846": `"3.14159265358979323846"`,
		"0.1":                    `0.1`,
		"1.50":                   `1.50`,
		"1e400":                  `"1e400"`,
		"12345678901234567890.5": `"12345678901234567890.5"`,
		"2.5e-3":                 `2.5e-3`,
	} {
		if got := string(envValue(in)); got != want {
			t.Errorf("envValue(%q) = %s, want %s", in, got, want)
		}
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
	if out, errOut, code := veenaCmd("tokens", "complete", h.NodeTokens[0].ID, "--arc", "go", "--env", "ok=true"); code != 0 || !strings.Contains(out, "waiting at") {
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

// TestEventCommands runs processes start --context and events send in
// process against a server.
func TestEventCommands(t *testing.T) {
	ctx := context.Background()
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	file := t.TempDir() + "/abc.wf.xml"
	writeFile(t, file, `<?xml version="1.0"?>
<process-definition name="abc" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"><arc to="C"/></node>
  <node name="C" type="wait"/>
</process-definition>
`)
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, errOut, code := veenaCmd("definitions", "load", file); code != 0 {
		t.Fatalf("load: %d %s %s", code, out, errOut)
	}
	start := func(pairs ...string) veena.Process {
		t.Helper()
		args := []string{"processes", "start", "abc", "-o", "json"}
		for _, p := range pairs {
			args = append(args, "--context", p)
		}
		out, errOut, code := veenaCmd(args...)
		var p veena.Process
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("start: %d %s %s", code, out, errOut)
		}
		return p
	}
	// nodes lists a process's node tokens as NODE:C (complete) or NODE:I.
	nodes := func(id string) string {
		t.Helper()
		h, err := eng.Tokens(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range h.NodeTokens {
			st := "I"
			if tk.Complete {
				st = "C"
			}
			out = append(out, tk.Node+":"+st)
		}
		return strings.Join(out, " ")
	}
	p1 := start("order=o-1", "tenant=t")
	p2 := start("order=o-2", "tenant=t")
	if p1.Context["order"] != "o-1" || p1.Context["tenant"] != "t" || p2.Context["order"] != "o-2" {
		t.Fatalf("contexts %v %v", p1.Context, p2.Context)
	}
	if out, _, _ := veenaCmd("processes", "show", p1.ID); !strings.Contains(out, "context:    order=o-1, tenant=t") {
		t.Fatalf("processes show lacks the context:\n%s", out)
	}

	// The event goes to o-2 only: its token on A completes, env is merged.
	out, errOut, code := veenaCmd("events", "send", "--match", "order=o-2", "--env", "paid=true", "--env", "amount=120", "-o", "json")
	var got veena.Process
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("events send: %d %s %s", code, out, errOut)
	}
	if got.ID != p2.ID || !got.Env["paid"].BoolValue() || nodes(p2.ID) != "A:C B:I" || nodes(p1.ID) != "A:I" {
		t.Fatalf("event delivered as %s; o-1 %s, o-2 %s", out, nodes(p1.ID), nodes(p2.ID))
	}
	// Text output shows the process; --node picks the token; pairs all match.
	out, errOut, code = veenaCmd("events", "send", "--match", "order=o-1", "--match", "tenant=t", "--node", "A")
	if code != 0 || !strings.Contains(out, "Process "+p1.ID) || !strings.Contains(out, "waiting at") || nodes(p1.ID) != "A:C B:I" {
		t.Fatalf("events send --node A: %d %s %s", code, out, errOut)
	}

	// Refusals.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--match", "tenant=t"}, "(conflict)"},
		{[]string{"--match", "order=nope"}, "(not_found)"},
		{[]string{"--match", "order=o-1", "--node", "C"}, "(not_found)"},
		{nil, "at least one --match"},
		{[]string{"--match", "order"}, "want KEY=VALUE"},
		{[]string{"--match", "order=o-1", "--match", "order=o-2"}, "given twice"},
	} {
		_, errOut, code := veenaCmd(append([]string{"events", "send"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("events send %v: %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
	if _, errOut, code := veenaCmd("processes", "start", "abc", "--context", "=x"); code != 1 || !strings.Contains(errOut, "--context") {
		t.Errorf("start --context =x: %d %s", code, errOut)
	}
	if nodes(p1.ID) != "A:C B:I" || nodes(p2.ID) != "A:C B:I" {
		t.Fatalf("refused events changed processes: o-1 %s, o-2 %s", nodes(p1.ID), nodes(p2.ID))
	}

	// A retry with the same idempotency key prints the first result and
	// completes no second token.
	first, _, code := veenaCmd("events", "send", "--match", "order=o-2", "--idempotency-key", "ev-1", "-o", "json")
	again, _, code2 := veenaCmd("events", "send", "--match", "order=o-2", "--idempotency-key", "ev-1", "-o", "json")
	if code != 0 || code2 != 0 || first != again || nodes(p2.ID) != "A:C B:C C:I" {
		t.Fatalf("retried event: %d %d\n%s\n%s\ntokens %s", code, code2, first, again, nodes(p2.ID))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
