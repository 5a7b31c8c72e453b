package server_test

import (
	"net/http"
	"strings"
	"testing"

	veena "github.com/veena-wf/veena"
)

// The record endpoints: audit trail, metrics, attachments, the document in
// JSON and XML.
func TestRecordEndpoints(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, envOptions{})
			e.load(defApproval)
			r := e.post("/api/v1/processes", `{"definition":"approval","env":{"priority":50},"user":"ann",
				"attachments":[{"name":"InitiatingAttachment","uri":"/orders/1.json"},{"name":"Quote","uri":""}]}`)
			e.want(r, 201, "")
			var p veena.Process
			r.decode(t, &p)
			e.want(e.post("/api/v1/processes", `{"definition":"approval","attachments":[{"name":""}]}`), 400, "invalid_argument")
			e.want(e.post("/api/v1/processes", `{"definition":"approval","attachments":[{"name":"a"},{"name":"a"}]}`), 400, "invalid_argument")
			base := "/api/v1/processes/" + p.ID
			e.want(e.do(req{method: "PUT", path: base + "/attachments/Quote", body: `{"uri":"/quotes/3.pdf","cardinality":2,"user":"bob"}`}), 200, "")
			e.want(e.do(req{method: "PUT", path: base + "/attachments/Quote", body: `{"uri":"x","cardinality":-1}`}), 400, "invalid_argument")
			e.want(e.do(req{method: "PUT", path: "/api/v1/processes/nope/attachments/Quote", body: `{"uri":"x"}`}), 404, "not_found")
			r = e.get(base + "/attachments")
			e.want(r, 200, "")
			if !strings.Contains(string(r.body), `{"name":"Quote","uri":"/quotes/3.pdf","cardinality":2}`) {
				t.Fatalf("attachments %s", r.body)
			}
			task := e.taskOf(p.ID)
			e.want(e.post("/api/v1/tasks/"+task.ID+"/complete", `{"user":"alice","outcome":"reject"}`), 200, "")

			r = e.get(base + "/audit")
			e.want(r, 200, "")
			var audit veena.AuditPage
			r.decode(t, &audit)
			var acts []string
			for _, a := range audit.Items {
				acts = append(acts, a.Action)
			}
			if got := strings.Join(acts, " "); got != "process_started step_completed task_created attachment_set task_completed step_completed step_completed process_completed" {
				t.Fatalf("audit %s", got)
			}
			if u := audit.Items[0].User; u == nil || *u != "ann" {
				t.Fatalf("started by %v", u)
			}
			e.want(e.get(base+"/audit?after=x"), 400, "invalid_argument")
			e.want(e.get("/api/v1/processes/nope/audit"), 404, "not_found")
			r = e.get(base + "/audit?limit=3")
			r.decode(t, &audit)
			if len(audit.Items) != 3 || audit.Next == "" {
				t.Fatalf("first page %+v", audit)
			}
			r = e.get(base + "/metrics")
			e.want(r, 200, "")
			var metrics veena.MetricPage
			r.decode(t, &metrics)
			if len(metrics.Items) != 3 || metrics.Items[1].Node != "review" || !metrics.Items[1].Success {
				t.Fatalf("metrics %s", r.body)
			}
			r = e.get(base + "/document")
			e.want(r, 200, "")
			var doc veena.ProcessDocument
			r.decode(t, &doc)
			if doc.ID != p.ID || doc.End == nil || len(doc.Attachments) != 2 || len(doc.AuditTrail) != 8 {
				t.Fatalf("document %s", r.body)
			}
			r = e.do(req{method: "GET", path: base + "/document", header: map[string]string{"Accept": "application/xml"}})
			e.want(r, 200, "")
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/xml") ||
				!strings.Contains(string(r.body), `<wf:process id="`+p.ID+`" xmlns:wf="http://marklogic.com/workflow">`) ||
				!strings.Contains(string(r.body), `<wf:attachment name="InitiatingAttachment" uri="/orders/1.json" cardinality="1"/>`) ||
				!strings.Contains(string(r.body), "<wf:process-definition-name>approval__1__0</wf:process-definition-name>") {
				t.Fatalf("XML document (%s):\n%s", ct, r.body)
			}
		})
	}
}

// Subscriptions start processes for the documents they match.
func TestSubscriptionsAndDocuments(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, envOptions{})
			e.load(defApproval)
			e.want(e.post("/api/v1/subscriptions", `{"name":"big-orders","definition":"approval","match":"\"orders\" in collections && content.total > 100"}`), 201, "")
			e.want(e.post("/api/v1/subscriptions", `{"name":"big-orders","definition":"approval","match":"true"}`), 409, "conflict")
			e.want(e.post("/api/v1/subscriptions", `{"name":"x","definition":"approval","match":"total >"}`), 422, "match_invalid")
			e.want(e.post("/api/v1/subscriptions", `{"name":"x","definition":"approval","match":"nothing == 1"}`), 422, "match_invalid")
			e.want(e.post("/api/v1/subscriptions", `{"name":"x","definition":"approval","match":"uri"}`), 422, "match_invalid")
			e.want(e.post("/api/v1/subscriptions", `{"name":"x","definition":"nope","match":"true"}`), 404, "")
			e.want(e.post("/api/v1/subscriptions", `{"name":"bad name!","definition":"approval","match":"true"}`), 400, "invalid_argument")
			// A condition that fails on some documents is reported, not swallowed.
			e.want(e.post("/api/v1/subscriptions", `{"name":"fragile","definition":"approval","match":"content.customer.vip"}`), 201, "")

			r := e.post("/api/v1/documents", `{"uri":"/orders/1.json","collections":["orders"],"content":{"total":250,"customer":{"vip":false}}}`)
			e.want(r, 200, "")
			var res veena.DocumentResult
			r.decode(t, &res)
			if len(res.Started) != 1 || len(res.Errors) != 0 {
				t.Fatalf("result %s", r.body)
			}
			r = e.get("/api/v1/processes/" + res.Started[0] + "/attachments")
			if !strings.Contains(string(r.body), `"name":"InitiatingAttachment","uri":"/orders/1.json","cardinality":1`) {
				t.Fatalf("attachments %s", r.body)
			}
			// Nothing matches: nothing changes.
			r = e.post("/api/v1/documents", `{"uri":"/orders/2.json","collections":["orders"],"content":{"total":5,"customer":{"vip":false}}}`)
			r.decode(t, &res)
			if len(res.Started) != 0 || len(res.Errors) != 0 {
				t.Fatalf("result %s", r.body)
			}
			// The fragile condition fails on this one; the other still starts.
			r = e.post("/api/v1/documents", `{"uri":"/orders/3.json","collections":["orders"],"content":{"total":900}}`)
			r.decode(t, &res)
			if len(res.Started) != 1 || len(res.Errors) != 1 || res.Errors[0].Subscription != "fragile" {
				t.Fatalf("result %s", r.body)
			}
			// A retry with the same key starts nothing twice.
			send := func() veena.DocumentResult {
				r := e.do(req{method: "POST", path: "/api/v1/documents", body: `{"uri":"/orders/4.json","collections":["orders"],"content":{"total":300,"customer":{"vip":true}}}`,
					header: map[string]string{"Idempotency-Key": "doc-4"}})
				e.want(r, 200, "")
				var res veena.DocumentResult
				r.decode(t, &res)
				return res
			}
			first, again := send(), send()
			if len(first.Started) != 2 || strings.Join(first.Started, ",") != strings.Join(again.Started, ",") {
				t.Fatalf("first %+v, again %+v", first, again)
			}
			e.want(e.post("/api/v1/documents", `{"collections":["orders"]}`), 400, "invalid_argument")
			e.want(e.post("/api/v1/documents", `{"uri":"/x","content":{"a":}}`), 400, "invalid_json")

			r = e.get("/api/v1/subscriptions")
			if !strings.Contains(string(r.body), `"name":"big-orders"`) || !strings.Contains(string(r.body), `"name":"fragile"`) {
				t.Fatalf("subscriptions %s", r.body)
			}
			e.want(e.get("/api/v1/subscriptions/big-orders"), 200, "")
			e.want(e.do(req{method: "DELETE", path: "/api/v1/subscriptions/big-orders"}), 200, "")
			e.want(e.do(req{method: "DELETE", path: "/api/v1/subscriptions/big-orders"}), 404, "not_found")
			e.want(e.get("/api/v1/subscriptions/big-orders"), http.StatusNotFound, "not_found")
		})
	}
}
