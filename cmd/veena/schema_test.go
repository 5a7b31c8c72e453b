package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/memstore"
)

// TestSchemaCommands: a named event sent from the CLI creates a schema
// instance through its trigger and reaches it by context; veena schema
// almanac shows and patches its almanac; veena schema nodes lists its node
// and action instances.
func TestSchemaCommands(t *testing.T) {
	ctx := context.Background()
	rt := schema.New()
	k := kernel.New()
	rt.Register(k)
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New(), Kernel: k})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rt.Attach(eng)
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Schemas: rt, Loopback: true}))
	defer ts.Close()
	file := t.TempDir() + "/guestbook.yaml"
	writeFile(t, file, `schema: guestbook
context: {keys: [book]}
trigger: {event: sign}
almanac: {signatures: 0}
nodes:
  - id: open
    type: root
    actions: [{id: first, do: almanac.set, with: {signatures: 1, last: "= event.payload.name"}}]
    next: [{to: more}]
  - id: more
    type: event
    event: {name: sign}
    actions: [{id: add, do: almanac.set, with: {signatures: "= almanac.signatures + 1", last: "= event.payload.name"}}]
    next: [{to: closed, when: "almanac.signatures >= 3"}, {to: more}]
  - {id: closed, type: terminator}
`)
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	// veena check validates a schema file without its actions' program.
	var out0, err0 bytes.Buffer
	if code := run(ctx, []string{"check", file, "../../format/schema/testdata/invalid/cycle-without-wait.yaml"}, strings.NewReader(""), &out0, &err0); code != 1 ||
		!strings.Contains(out0.String(), "guestbook.yaml: ok") || !strings.Contains(out0.String()+err0.String(), "cycle-without-wait.yaml:15:12: ") {
		t.Errorf("veena check: %d\n%s\n%s", code, out0.String(), err0.String())
	}
	if out, errOut, code := veenaCmd("definitions", "load", file); code != 0 {
		t.Fatalf("load: %d %s %s", code, out, errOut)
	}
	out, errOut, code := veenaCmd("events", "send", "--name", "sign", "--match", "book=b1", "--payload", `{"name": "Ada"}`, "-o", "json")
	var p veena.Process
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Definition != "guestbook" {
		t.Fatalf("events send --name: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := veenaCmd("events", "send", "--name", "sign", "--match", "book=b1", "--payload", `{"name": "Bo"}`); code != 0 || !strings.Contains(out, p.ID) {
		t.Fatalf("second signature: %d %s %s", code, out, errOut)
	}
	out, _, code = veenaCmd("schema", "almanac", p.ID)
	if code != 0 || !strings.Contains(out, "signatures  2") || !strings.Contains(out, `last        "Bo"`) {
		t.Fatalf("schema almanac:\n%s", out)
	}
	out, _, code = veenaCmd("schema", "almanac", p.ID, "--set", "signatures=5", "-o", "json")
	if code != 0 || !strings.Contains(out, `"signatures": 5`) {
		t.Fatalf("schema almanac --set:\n%s", out)
	}
	out, _, code = veenaCmd("schema", "nodes", p.ID)
	if code != 0 || !strings.Contains(out, "open (root)") || !strings.Contains(out, "add: almanac.set") || !strings.Contains(out, "more (event)          waiting") {
		t.Fatalf("schema nodes:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "send", "--name", "sign", "--match", "book=b1", "--payload", "{nope"}, "--payload is not JSON"},
		{[]string{"events", "send", "--name", "sign", "--match", "book=b1", "--node", "more"}, "--node and --env are for unnamed events"},
		{[]string{"events", "send", "--match", "book=b1", "--payload", "{}"}, "give --name"},
		{[]string{"schema", "almanac", "nope"}, "(not_found)"},
	} {
		_, errOut, code := veenaCmd(c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
}
