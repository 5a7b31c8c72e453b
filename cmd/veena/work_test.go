package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/memstore"
)

const approvalDef = `<?xml version="1.0"?>
<process-definition name="approval" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="review"/></node>
  <node name="review" type="wait">
    <arc to="charge" name="approve"/>
    <arc to="rejected" name="reject"/>
    <custom><task><label>Review the order</label><candidateGroups>sales</candidateGroups></task></custom>
  </node>
  <node name="charge" type="wait">
    <arc to="done"/>
    <custom><job type="charge-card" retries="1"/></custom>
  </node>
  <node name="done"/>
  <node name="rejected"/>
</process-definition>
`

// The task, job and incident commands and the shell worker, against a
// server in process.
func TestWorkCommands(t *testing.T) {
	ctx := context.Background()
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	file := filepath.Join(t.TempDir(), "approval.wf.xml")
	writeFile(t, file, approvalDef)
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := veenaCmd(args...)
		if code != 0 {
			t.Fatalf("veena %s: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	must("definitions", "load", file)
	var p veena.Process
	if err := json.Unmarshal([]byte(must("processes", "start", "approval", "-o", "json")), &p); err != nil {
		t.Fatal(err)
	}
	out := must("tasks", "list", "--mine", "--user", "alice", "--groups", "sales")
	if !strings.Contains(out, "Review the order") || !strings.Contains(out, "@sales") {
		t.Fatalf("inbox: %s", out)
	}
	if out := must("tasks", "list", "--mine", "--user", "carol", "--groups", "support"); !strings.Contains(out, "No tasks.") {
		t.Fatalf("carol's inbox: %s", out)
	}
	var page veena.TaskPage
	json.Unmarshal([]byte(must("tasks", "list", "-o", "json")), &page)
	id := page.Items[0].ID
	if out := must("tasks", "claim", id, "--user", "alice"); !strings.Contains(out, "held by alice") {
		t.Fatalf("claim: %s", out)
	}
	if _, errOut, code := veenaCmd("tasks", "claim", id, "--user", "bob"); code != 1 || !strings.Contains(errOut, "(task_claimed)") {
		t.Fatalf("bob's claim: %d %s", code, errOut)
	}
	if out := must("tasks", "save", id, "note=call back", "--user", "alice"); !strings.Contains(out, `"call back"`) {
		t.Fatalf("save: %s", out)
	}
	if out := must("tasks", "show", id); !strings.Contains(out, "held by:    alice") {
		t.Fatalf("show: %s", out)
	}
	must("tasks", "complete", id, "approved=true", "--outcome", "approve", "--user", "alice")
	if out := must("jobs", "list", "--process", p.ID); !strings.Contains(out, "charge-card") || !strings.Contains(out, "open") {
		t.Fatalf("jobs: %s", out)
	}

	// A shell worker fails the job (exit 2); with one retry an incident
	// opens; resolving it offers the job again and a second worker pays.
	// The first worker leases for 5 s only: the long poll it cuts short
	// when it stops can still be waiting on the server when the incident
	// is resolved, and lease the job before the server sees the hang-up;
	// the job is then offered again when that lease runs out.
	script := filepath.Join(t.TempDir(), "charge.sh")
	writeFile(t, script, "#!/bin/sh\nread vars\necho \"card declined for $VEENA_PROCESS\" >&2\nexit 2\n")
	os.Chmod(script, 0o755)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		var o, e bytes.Buffer
		done <- run(wctx, []string{"worker", "--type", "charge-card", "--lock-for", "5s", "--url", ts.URL, "--", script}, strings.NewReader(""), &o, &e)
	}()
	deadline := time.Now().Add(30 * time.Second)
	var incidents veena.IncidentPage
	for len(incidents.Items) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		json.Unmarshal([]byte(must("incidents", "list", "-o", "json")), &incidents)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("worker exit %d", code)
	}
	if len(incidents.Items) != 1 || !strings.Contains(incidents.Items[0].Message, "card declined for "+p.ID) {
		t.Fatalf("incidents %+v", incidents)
	}
	if out := must("incidents", "list"); !strings.Contains(out, "job_failed") {
		t.Fatalf("incidents list: %s", out)
	}
	must("incidents", "resolve", incidents.Items[0].ID, "--retries", "1")
	writeFile(t, script, "#!/bin/sh\ncat >/dev/null\necho '{\"receipt\": \"R-9\"}'\n")
	wctx, stop = context.WithCancel(ctx)
	var workerErr bytes.Buffer
	go func() {
		var o bytes.Buffer
		done <- run(wctx, []string{"worker", "--type", "charge-card", "--url", ts.URL, "--", script}, strings.NewReader(""), &o, &workerErr)
	}()
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		q, _ := eng.Process(ctx, p.ID)
		if q.State == "completed" {
			if q.Env["receipt"].Str() != "R-9" || !q.Env["approved"].BoolValue() {
				t.Fatalf("env %v", q.Env)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done
	if q, _ := eng.Process(ctx, p.ID); q.State != "completed" {
		t.Fatalf("process %s; jobs:\n%s\nincidents:\n%s\nworker:\n%s", q.State,
			must("jobs", "list", "--process", p.ID), must("incidents", "list"), workerErr.String())
	}
	if _, errOut, code := veenaCmd("worker", "--type", "x"); code != 1 || !strings.Contains(errOut, "--") {
		t.Fatalf("worker without command: %d %s", code, errOut)
	}

	// The record of the process.
	if out := must("processes", "audit", p.ID); !strings.Contains(out, "task_claimed") || !strings.Contains(out, "alice") || !strings.Contains(out, "job_failed") {
		t.Fatalf("audit: %s", out)
	}
	if out := must("processes", "metrics", p.ID); !strings.Contains(out, "review") || !strings.Contains(out, "true") {
		t.Fatalf("metrics: %s", out)
	}
	must("processes", "attach", p.ID, "Receipt", "/receipts/9.pdf")
	if out := must("processes", "document", p.ID, "--xml"); !strings.Contains(out, `<wf:attachment name="Receipt" uri="/receipts/9.pdf" cardinality="1"/>`) {
		t.Fatalf("document: %s", out)
	}

	// Subscriptions and documents.
	must("subscriptions", "create", "orders", "--definition", "approval", "--match", `"orders" in collections`)
	if out := must("subscriptions", "list"); !strings.Contains(out, "orders") {
		t.Fatalf("subscriptions: %s", out)
	}
	content := filepath.Join(t.TempDir(), "order.json")
	writeFile(t, content, `{"total": 12}`)
	if out := must("documents", "submit", "/orders/5.json", "--collection", "orders", "--content", content); !strings.Contains(out, "started ") {
		t.Fatalf("submit: %s", out)
	}
	if out := must("documents", "submit", "/other.json"); !strings.Contains(out, "No subscription matched.") {
		t.Fatalf("submit: %s", out)
	}
	if _, errOut, code := veenaCmd("subscriptions", "create", "bad", "--definition", "approval", "--match", "uri =="); code != 1 || !strings.Contains(errOut, "match_invalid") {
		t.Fatalf("bad match: %d %s", code, errOut)
	}
	must("subscriptions", "delete", "orders")
}

// The README's "People and programs" example, with its files.
func TestPeopleAndProgramsExample(t *testing.T) {
	ctx := context.Background()
	eng, err := veena.Open(ctx, veena.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	defer ts.Close()
	veenaCmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(ctx, append(args, "--url", ts.URL), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := veenaCmd(args...)
		if code != 0 {
			t.Fatalf("veena %s: %d %s %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	must("definitions", "load", "../../testdata/work/purchase.wf.xml")
	var paper, rare veena.Process
	json.Unmarshal([]byte(must("processes", "start", "purchase", "--env", "priority=70", "--env", "item=paper", "-o", "json")), &paper)
	json.Unmarshal([]byte(must("processes", "start", "purchase", "--env", "priority=40", "--env", "item=unobtainium", "-o", "json")), &rare)
	var page veena.TaskPage
	json.Unmarshal([]byte(must("tasks", "list", "--mine", "--user", "alice", "--groups", "sales", "-o", "json")), &page)
	if len(page.Items) != 2 || page.Items[0].Process != paper.ID {
		t.Fatalf("alice's inbox %+v", page.Items)
	}
	for _, task := range page.Items {
		must("tasks", "claim", task.ID, "--user", "alice")
		must("tasks", "save", task.ID, "note=call the supplier", "--user", "alice")
		must("tasks", "complete", task.ID, "approved=true", "--outcome", "approve", "--user", "alice")
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		var o, e bytes.Buffer
		done <- run(wctx, []string{"worker", "--type", "place-order", "--url", ts.URL, "--", "../../testdata/work/place-order.sh"}, strings.NewReader(""), &o, &e)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		a, _ := eng.Process(ctx, paper.ID)
		b, _ := eng.Process(ctx, rare.ID)
		if a.State == "completed" && b.State == "completed" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done
	a, _ := eng.Process(ctx, paper.ID)
	if a.State != "completed" || a.Env["supplier"].Str() != "acme" || !strings.HasPrefix(a.Env["orderNumber"].Str(), "PO-") || a.Env["note"].Str() != "call the supplier" {
		t.Fatalf("paper: %s %v", a.State, a.Env)
	}
	h, _ := eng.Tokens(ctx, rare.ID)
	if last := h.NodeTokens[len(h.NodeTokens)-1]; last.Node != "out-of-stock" {
		t.Fatalf("unobtainium ended at %s", last.Node)
	}
	if out := must("processes", "audit", paper.ID); !strings.Contains(out, "task_completed") || !strings.Contains(out, "alice") {
		t.Fatalf("audit: %s", out)
	}
}
