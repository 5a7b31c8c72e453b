package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/sqlitestore"
)

const shopBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="t">
  <message id="paid" name="payment received"><extensionElements><zeebe:subscription correlationKey="= orderId"/></extensionElements></message>
  <signal id="stop" name="shutdown"/>
  <process id="shop" isExecutable="true">
    <startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="wait"/>
    <intermediateCatchEvent id="wait"><messageEventDefinition messageRef="paid"/></intermediateCatchEvent>
    <sequenceFlow id="f1" sourceRef="wait" targetRef="halt"/>
    <intermediateCatchEvent id="halt"><signalEventDefinition signalRef="stop"/></intermediateCatchEvent>
    <sequenceFlow id="f2" sourceRef="halt" targetRef="e"/><endEvent id="e"/>
  </process>
  <process id="watch" isExecutable="true">
    <startEvent id="w0"><signalEventDefinition signalRef="stop"/></startEvent>
    <sequenceFlow id="w1" sourceRef="w0" targetRef="w2"/><endEvent id="w2"/>
  </process>
</definitions>`

// The message and signal commands against a server on a SQLite file: a
// message reaches the token waiting with its key and merges its variables,
// one nobody waits for is buffered for its TTL and handed over when the
// subscription opens, a message id is refused the second time; a signal
// reaches every waiting token and starts the signal start's process.
func TestMessageAndSignalCommands(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "veena.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := veena.Open(ctx, veena.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	file := filepath.Join(t.TempDir(), "shop.bpmn")
	writeFile(t, file, shopBPMN)
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, errOut, code := veenaCmd("definitions", "load", file); code != 0 {
		t.Fatalf("load: %d %s %s", code, out, errOut)
	}
	start := func(order string) veena.Process {
		t.Helper()
		p, err := eng.StartProcess(ctx, veena.StartRequest{Definition: "shop", Env: map[string]any{"orderId": order}})
		if err != nil {
			t.Fatal(err)
		}
		return *p
	}
	// waiting lists the nodes a process's active tokens are at.
	waiting := func(id string) string {
		t.Helper()
		h, err := eng.Tokens(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range h.NodeTokens {
			if !tk.Complete {
				out = append(out, tk.Node)
			}
		}
		return strings.Join(out, " ")
	}
	process := func(id string) *veena.Process {
		t.Helper()
		p, err := eng.Process(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1, p2 := start("o-1"), start("o-2")

	// Delivered to o-1's token, with its variables; o-2 still waits.
	out, errOut, code := veenaCmd("messages", "publish", "payment received", "--key", "o-1", "--env", "amount=120", "--env", "paid=true", "-o", "json")
	var res veena.PublishResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("publish: %d %s %s", code, out, errOut)
	}
	if res.Process == nil || *res.Process != p1.ID || res.Buffered {
		t.Fatalf("publish answered %s", out)
	}
	if got := process(p1.ID); got.Env["amount"].String() != "120" || !got.Env["paid"].BoolValue() || waiting(p1.ID) != "halt" || waiting(p2.ID) != "wait" {
		t.Fatalf("after the message: o-1 env %v at %q, o-2 at %q", got.Env, waiting(p1.ID), waiting(p2.ID))
	}

	// No one waits for o-3 yet: buffered for its TTL, then taken by the
	// process that comes to wait for it. Its id is refused a second time.
	out, errOut, code = veenaCmd("messages", "publish", "payment received", "--key", "o-3", "--ttl", "1h", "--id", "pay-3", "--env", "amount=7")
	if code != 0 || !strings.Contains(out, "buffered") {
		t.Fatalf("publish o-3: %d %q %s", code, out, errOut)
	}
	if _, errOut, code = veenaCmd("messages", "publish", "payment received", "--key", "o-3", "--ttl", "1h", "--id", "pay-3"); code != 1 || !strings.Contains(errOut, "(conflict)") {
		t.Fatalf("publish with a known id: %d %s", code, errOut)
	}
	p3 := start("o-3")
	if got := process(p3.ID); waiting(p3.ID) != "halt" || got.Env["amount"].String() != "7" {
		t.Fatalf("the buffered message did not reach o-3: at %q, env %v", waiting(p3.ID), got.Env)
	}
	// Without a TTL, a message nobody waits for is dropped.
	out, errOut, code = veenaCmd("messages", "publish", "payment received", "--key", "o-9")
	if code != 0 || !strings.Contains(out, "dropped") {
		t.Fatalf("publish o-9: %d %q %s", code, out, errOut)
	}
	// Text output names the process.
	out, errOut, code = veenaCmd("messages", "publish", "payment received", "--key", "o-2")
	if code != 0 || out != "delivered to process "+p2.ID+"\n" || waiting(p2.ID) != "halt" {
		t.Fatalf("publish o-2: %d %q %s", code, out, errOut)
	}

	// The signal reaches the three waiting tokens and starts a watch.
	out, errOut, code = veenaCmd("signals", "broadcast", "shutdown", "--env", "reason=maintenance", "-o", "json")
	var sig veena.SignalResult
	if code != 0 || json.Unmarshal([]byte(out), &sig) != nil {
		t.Fatalf("broadcast: %d %s %s", code, out, errOut)
	}
	if sig.Delivered != 3 || len(sig.Started) != 1 {
		t.Fatalf("broadcast answered %s", out)
	}
	for _, p := range []veena.Process{p1, p2, p3} {
		if got := process(p.ID); got.State != "completed" || got.Env["reason"].String() != "maintenance" {
			t.Fatalf("process %s after the signal: %s, env %v", p.ID, got.State, got.Env)
		}
	}
	if w := process(sig.Started[0]); w.Definition != "watch" || w.State != "completed" {
		t.Fatalf("the signal started %+v", w)
	}
	out, errOut, code = veenaCmd("signals", "broadcast", "shutdown")
	if code != 0 || !strings.Contains(out, "delivered to 0 waiting token(s)") || !strings.Contains(out, "started process ") {
		t.Fatalf("broadcast text: %d %q %s", code, out, errOut)
	}

	// Refusals.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"messages", "publish"}, "accepts 1 arg"},
		{[]string{"messages", "publish", " "}, "needs a name"},
		{[]string{"messages", "publish", "x", "--env", "novalue"}, "want NAME=VALUE"},
		{[]string{"messages", "publish", "x", "--ttl", "soon"}, "(invalid_argument)"},
		{[]string{"messages", "publish", "x", "-o", "yaml"}, "output format"},
		{[]string{"signals", "broadcast"}, "accepts 1 arg"},
		{[]string{"signals", "broadcast", ""}, "needs a name"},
	} {
		if _, errOut, code := veenaCmd(c.args...); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
}
