package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/memstore"
)

// TestKernelOperationCommands runs, against a server, the CLI commands of
// the engine's Sarasvati operations: finalising a process a listener left
// pending, asynchronous completion and execute-queued, re-evaluating a
// delayed token, and --transient on start, complete and events send.
func TestKernelOperationCommands(t *testing.T) {
	ctx := context.Background()
	k := kernel.New()
	// "held" stays pending completion until it is finalised.
	k.AddDefinitionListener("held", "hold", kernel.ListenerFunc(func(*kernel.Engine, *kernel.Event) kernel.EventActions {
		return kernel.DelayFinalizeComplete
	}), kernel.ProcessPendingComplete)
	// seen records the transient attribute "sig" each command showed.
	var mu sync.Mutex
	var seen []string
	k.AddGlobalListener("sig", kernel.ListenerFunc(func(_ *kernel.Engine, ev *kernel.Event) kernel.EventActions {
		var v any
		var ok bool
		if t := ev.NodeToken(); t != nil {
			v, ok = t.FullEnv().Transient("sig")
		} else {
			v, ok = ev.Process.Env.Transient("sig")
		}
		if ok {
			mu.Lock()
			seen = append(seen, ev.Type.String()+"="+string(mustJSON(t, v)))
			mu.Unlock()
		}
		return 0
	}), kernel.ProcessStarted, kernel.NodeTokenCompleted)
	// "later" delays the execution of its node B until it is executed.
	k.AddDefinitionListener("later", "slow", kernel.ListenerFunc(func(_ *kernel.Engine, ev *kernel.Event) kernel.EventActions {
		if t := ev.NodeToken(); t != nil && t.Node.Name == "B" {
			return kernel.DelayNodeExecution
		}
		return 0
	}), kernel.NodeTokenAccepted)
	// "audit", registered by name, counts the completions of the
	// processes subscribed to it.
	var audited int
	k.RegisterListener("audit", kernel.ListenerFunc(func(_ *kernel.Engine, ev *kernel.Event) kernel.EventActions {
		if ev.Type == kernel.NodeTokenCompleted {
			mu.Lock()
			audited++
			mu.Unlock()
		}
		return 0
	}))
	auditedSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return audited
	}
	took := func() string {
		mu.Lock()
		defer mu.Unlock()
		s := strings.Join(seen, " ")
		seen = nil
		return s
	}
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New(), Kernel: k})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"held":  `<node name="A" type="wait" isStart="true"/>`,
		"abc":   `<node name="A" type="wait" isStart="true"><arc to="B"/></node><node name="B" type="wait"><arc to="C"/></node><node name="C" type="wait"/>`,
		"later": `<node name="A" type="wait" isStart="true"><arc to="B"/></node><node name="B"><arc to="C"/></node><node name="C" type="wait"/>`,
		"join":  `<node name="A" type="wait" isStart="true"><arc to="J"/></node><node name="B" type="wait" isStart="true"><arc to="J"/></node><node name="J" joinType="and" type="wait"/>`,
		"delayed": `<node name="A" type="wait" isStart="true"><arc to="G"/></node>
  <node name="G" type="wait"><guard>if ready then Accept else delay until 1 day after now</guard></node>`,
	} {
		writeFile(t, dir+"/"+name+".wf.xml", `<process-definition name="`+name+`" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">`+src+`</process-definition>`)
	}
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := veenaCmd(args...)
		if code != 0 {
			t.Fatalf("veena %s: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		if out, errOut, code := veenaCmd(args...); code != 1 || !strings.Contains(errOut, want) {
			t.Fatalf("veena %s: %d %s %s, want an error with %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	start := func(def string, args ...string) veena.Process {
		t.Helper()
		var p veena.Process
		if err := json.Unmarshal([]byte(ok(append([]string{"processes", "start", def, "-o", "json"}, args...)...)), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// tokens lists a process's node tokens as NODE:C or NODE:I, and its
	// pending arc tokens as ->NODE:P.
	tokens := func(id string) string {
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
		for _, a := range h.ArcTokens {
			if a.Pending {
				out = append(out, "->"+a.Arc.To+":P")
			}
		}
		return strings.Join(out, " ")
	}
	ok("definitions", "load", dir)

	// Finalising: a process the listener holds pending completion.
	held := start("held")
	ok("node-tokens", "complete", held.ID+".n1")
	if out := ok("processes", "show", held.ID, "-o", "json"); !strings.Contains(out, `"state": "pending_completion"`) {
		t.Fatalf("held process: %s", out)
	}
	refused("(process_not_executing)", "processes", "cancel", held.ID)
	if out := ok("processes", "finalize", held.ID[:13]); !strings.Contains(out, "completed") {
		t.Fatalf("finalize: %s", out)
	}
	if p, _ := eng.Process(ctx, held.ID); p.State != "completed" {
		t.Fatalf("after finalize the process is %s", p.State)
	}
	refused("only a process pending completion or pending cancel", "processes", "finalize", held.ID)

	// Asynchronous completion, then the queued arc tokens; transients on
	// start and complete reach the command's listeners and nothing else.
	p := start("abc", "--transient", "sig=7", "--env", "n=1")
	if got := took(); got != "PROCESS_STARTED=7" {
		t.Fatalf("start --transient: the listener saw %q", got)
	}
	ok("node-tokens", "complete", p.ID+".n1", "--async", "--transient", "sig=signed")
	if got := took(); got != `NODE_TOKEN_COMPLETED="signed"` {
		t.Fatalf("complete --transient: the listener saw %q", got)
	}
	if got := tokens(p.ID); got != "A:C ->B:P" {
		t.Fatalf("after complete --async: %s", got)
	}
	if out := ok("processes", "execute-queued", p.ID); !strings.Contains(out, "waiting at") {
		t.Fatalf("execute-queued: %s", out)
	}
	if got := tokens(p.ID); got != "A:C B:I" {
		t.Fatalf("after execute-queued: %s", got)
	}
	ok("node-tokens", "complete", p.ID+".n2")
	if got := took(); got != "" {
		t.Fatalf("a transient outlived its command: the listener saw %q", got)
	}
	if out := ok("processes", "show", p.ID, "-o", "json"); strings.Contains(out, "sig") {
		t.Fatalf("a transient attribute was stored: %s", out)
	}

	// Events send --transient: on the process, for that command.
	ctxd := start("abc", "--context", "order=o-9")
	ok("events", "send", "--match", "order=o-9", "--transient", "sig=true")
	if got := took(); got != "NODE_TOKEN_COMPLETED=true" {
		t.Fatalf("events send --transient: the listener saw %q", got)
	}
	if got := tokens(ctxd.ID); got != "A:C B:I" {
		t.Fatalf("after the event: %s", got)
	}
	refused("--transient is for unnamed events", "events", "send", "--name", "x", "--match", "a=b", "--transient", "sig=1")
	refused("want NAME=VALUE", "processes", "start", "abc", "--transient", "sig")

	// Re-evaluating a delayed token: delayed again while not ready, then
	// accepted; a token that is not delayed is refused.
	d := start("delayed", "--env", "ready=false")
	ok("node-tokens", "complete", d.ID+".n1")
	g := d.ID + ".n2"
	if out := ok("node-tokens", "show", g); !strings.Contains(out, "delayed:") {
		t.Fatalf("G is not delayed: %s", out)
	}
	ok("node-tokens", "reevaluate", g)
	if out := ok("node-tokens", "show", g); !strings.Contains(out, "delayed:") {
		t.Fatalf("G re-evaluated while not ready is no longer delayed: %s", out)
	}
	ok("processes", "env", d.ID, "ready=true")
	ok("node-tokens", "reevaluate", g, "-o", "json")
	if out := ok("node-tokens", "show", g); strings.Contains(out, "delayed:") {
		t.Fatalf("G re-evaluated when ready is still delayed: %s", out)
	}
	refused("(token_not_delayed)", "node-tokens", "reevaluate", g)

	// Executing a node whose execution the listener delayed.
	l := start("later")
	ok("node-tokens", "complete", l.ID+".n1")
	if got := tokens(l.ID); got != "A:C B:I" {
		t.Fatalf("B's execution is not delayed: %s", got)
	}
	if out := ok("node-tokens", "execute", l.ID[:13]+".n2"); !strings.Contains(out, "waiting at") {
		t.Fatalf("execute: %s", out)
	}
	if got := tokens(l.ID); got != "A:C B:C C:I" {
		t.Fatalf("after execute: %s", got)
	}

	// Retrying the join an arc token waits at: the AND join still lacks B,
	// so the arc token waits on; an unknown arc token is not found.
	j := start("join")
	ok("node-tokens", "complete", j.ID+".n1")
	before := tokens(j.ID)
	ok("arc-tokens", "retry", j.ID[:13]+".a1")
	if got := tokens(j.ID); got != before {
		t.Fatalf("retrying a join that still waits changed the tokens: %s, was %s", got, before)
	}
	ok("node-tokens", "complete", j.ID+".n2")
	if got := tokens(j.ID); !strings.Contains(got, "J:I") {
		t.Fatalf("the join did not fire: %s", got)
	}
	refused("(not_found)", "arc-tokens", "retry", j.ID+".a99")
	refused("is not an arc token id", "arc-tokens", "retry", j.ID+".n1")

	// Subscribing a process to a registered listener, and unsubscribing it.
	a := start("abc")
	ok("processes", "listeners", "add", a.ID[:13], "audit", "--event", "NODE_TOKEN_COMPLETED")
	ok("node-tokens", "complete", a.ID+".n1")
	if n := auditedSoFar(); n != 1 {
		t.Fatalf("the subscribed listener heard %d completions, want 1", n)
	}
	ok("processes", "listeners", "remove", a.ID, "audit")
	ok("node-tokens", "complete", a.ID+".n2")
	if n := auditedSoFar(); n != 1 {
		t.Fatalf("the unsubscribed listener heard %d completions, want 1", n)
	}
	refused("(not_found)", "processes", "listeners", "add", a.ID, "nobody")
	refused("(invalid_argument)", "processes", "listeners", "add", a.ID, "audit", "--event", "NO_SUCH_EVENT")
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
	}
	return b
}

// TestCheckAnalysesEveryDefinition: veena check --analyse, offline,
// analyses every definition a file holds: a schema and its child schema.
func TestCheckAnalysesEveryDefinition(t *testing.T) {
	file := t.TempDir() + "/lookup.yaml"
	writeFile(t, file, `schema: lookup
nodes:
  - {id: start, type: root, actions: [{id: ask, do: emit, with: {event: find, to: children}}], next: [{to: wait}]}
  - {id: wait, type: event, event: {name: found}, next: [{to: done}]}
  - {id: done, type: terminator}
children:
  - schema: finder
    trigger: {event: find, from: parent}
    nodes:
      - {id: look, type: root, actions: [{id: tell, do: emit, with: {event: found, to: parent}}], next: [{to: end}]}
      - {id: end, type: terminator}
`)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check", "--analyse", file}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("check --analyse: %d %s %s", code, out.String(), errb.String())
	}
	for _, want := range []string{file + ": lookup (schema translated into a net", file + ": lookup.finder (schema translated into a net"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no analysis %q in:\n%s", want, out.String())
		}
	}
}
