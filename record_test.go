package veena_test

import (
	"context"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena"
)

func auditActions(t *testing.T, e *veena.Engine, id string) []string {
	t.Helper()
	page, err := e.Audit(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range page.Items {
		s := a.Action
		if a.Node != nil {
			s += " " + *a.Node
		}
		if a.User != nil {
			s += " by " + *a.User
		}
		out = append(out, s)
	}
	return out
}

// The record of a process: audit trail with the user of every task
// action, metrics, attachments, the document in JSON and XML; kept after
// completion and across a restart.
func TestProcessRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		mk := b.place(t)
		e := open(t, mk(), veena.Options{Clock: clk.Now})
		load(t, e, "approval")
		p := start(t, e, veena.StartRequest{Definition: "approval", User: "ann", Env: map[string]any{"priority": 60, "amount": 40},
			Attachments: []veena.Attachment{{Name: "InitiatingAttachment", URI: "/orders/17.json"}, {Name: "Quote", URI: ""}}})
		task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
		clk.Advance(time.Minute)
		if _, err := e.ClaimTask(ctx, task.ID, alice, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SaveTask(ctx, task.ID, veena.SaveTaskRequest{Actor: alice, Data: map[string]any{"note": "ok"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SetAttachment(ctx, p.ID, veena.Attachment{Name: "Quote", URI: "/quotes/9.pdf"}, "alice", ""); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
			t.Fatal(err)
		}
		job := activate(t, e, "charge-card", "w1")[0]
		clk.Advance(2 * time.Second)
		if _, err := e.CompleteJob(ctx, job.ID, veena.CompleteJobRequest{Worker: "w1"}); err != nil {
			t.Fatal(err)
		}
		if b.durable {
			e.Close()
			e = open(t, mk(), veena.Options{Clock: clk.Now})
		}
		defer e.Close()
		want := []string{
			"process_started by ann", "step_completed start", "task_created review", "task_claimed review by alice",
			"task_saved review by alice", "attachment_set by alice", "task_completed review by alice", "step_completed review",
			"job_created charge", "job_completed charge by w1", "step_completed charge", "step_completed done", "process_completed",
		}
		if got := auditActions(t, e, p.ID); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("audit trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// Paging: two at a time, all of them once.
		var seen []string
		after := ""
		for i := 0; i < 20; i++ {
			page, err := e.Audit(ctx, p.ID, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page.Items {
				seen = append(seen, a.Action)
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
		if len(seen) != len(want) {
			t.Fatalf("paged audit trail has %d entries, want %d: %v", len(seen), len(want), seen)
		}

		metrics, err := e.Metrics(ctx, p.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var ms []string
		for _, m := range metrics.Items {
			ms = append(ms, m.Node)
			if !m.Success {
				t.Fatalf("metric %+v: no success", m)
			}
			if m.Node == "review" && m.DurationMs != 120_000 {
				t.Fatalf("review took %d ms, want 120000", m.DurationMs)
			}
		}
		if strings.Join(ms, " ") != "start review charge done" {
			t.Fatalf("metrics %v", ms)
		}

		doc, err := e.Document(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if doc.State != "completed" || doc.End == nil || len(doc.AuditTrail) != len(want) || len(doc.Metrics) != 4 ||
			doc.Data["note"].Str() != "ok" || len(doc.Attachments) != 2 || doc.Attachments[1].URI != "/quotes/9.pdf" {
			t.Fatalf("document %+v", doc)
		}
		// The XML is MarkLogic Workflow's wf:process.
		var x struct {
			XMLName xml.Name `xml:"http://marklogic.com/workflow process"`
			ID      string   `xml:"id,attr"`
			Data    struct {
				Inner string `xml:",innerxml"`
			} `xml:"http://marklogic.com/workflow data"`
			Attachments []struct {
				Name        string `xml:"name,attr"`
				URI         string `xml:"uri,attr"`
				Cardinality int    `xml:"cardinality,attr"`
			} `xml:"http://marklogic.com/workflow attachments>attachment"`
			Audits []struct {
				When        string `xml:"when"`
				Category    string `xml:"category"`
				State       string `xml:"state"`
				Description string `xml:"description"`
				Detail      string `xml:"detail"`
			} `xml:"http://marklogic.com/workflow audit-trail>audit"`
			Metrics []struct {
				State    string `xml:"state"`
				Duration string `xml:"duration"`
				Success  bool   `xml:"success"`
			} `xml:"http://marklogic.com/workflow metrics>metric"`
			Name string `xml:"http://marklogic.com/workflow process-definition-name"`
		}
		if err := xml.Unmarshal(doc.XML(), &x); err != nil {
			t.Fatalf("XML: %v\n%s", err, doc.XML())
		}
		if x.ID != p.ID || x.Name != "approval__1__0" || len(x.Attachments) != 2 || x.Attachments[0].Name != "InitiatingAttachment" ||
			x.Attachments[0].Cardinality != 1 || len(x.Audits) != len(want) || len(x.Metrics) != 4 {
			t.Fatalf("XML %+v", x)
		}
		if !strings.Contains(x.Data.Inner, "<amount>40</amount>") || !strings.Contains(x.Data.Inner, "<note>ok</note>") {
			t.Fatalf("wf:data %s", x.Data.Inner)
		}
		if a := x.Audits[3]; a.Description != "task_claimed" || a.State != "review" || a.Category != "task" || !strings.Contains(a.Detail, "alice") {
			t.Fatalf("audit entry %+v", a)
		}
		if x.Metrics[1].Duration != "PT120S" {
			t.Fatalf("review's wf:duration %s", x.Metrics[1].Duration)
		}
	})
}

// Metrics of tokens that were backtracked or cancelled show no success.
func TestMetricsOfUnsuccessfulSteps(t *testing.T) {
	ctx := context.Background()
	e := open(t, nil, veena.Options{})
	defer e.Close()
	load(t, e, "approval")
	p := start(t, e, veena.StartRequest{Definition: "approval", Env: map[string]any{"priority": 50}})
	task := oneTask(t, e, veena.TaskFilter{Process: p.ID})
	if _, err := e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: alice, Outcome: "approve"}); err != nil {
		t.Fatal(err)
	}
	h, _ := e.Tokens(ctx, p.ID)
	if _, err := e.Backtrack(ctx, h.NodeTokens[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CancelProcess(ctx, p.ID, ""); err != nil {
		t.Fatal(err)
	}
	page, err := e.Metrics(ctx, p.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page.Items {
		got = append(got, m.Node+map[bool]string{true: "+", false: "-"}[m.Success])
	}
	// start (backtracked), review (backtracked), charge (its job: ended by
	// the backtrack), start again, review again (cancelled).
	if strings.Join(got, " ") != "start- review- charge- start+ review-" {
		t.Fatalf("metrics %v", got)
	}
	actions := auditActions(t, e, p.ID)
	if !contains(actions, "process_canceled") || !contains(actions, "backtracked start") {
		t.Fatalf("audit %v", actions)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
