package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/veena-wf/veena"
)

const shopBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" targetNamespace="t">
  <message id="paid" name="payment received"><extensionElements><zeebe:subscription correlationKey="= orderId"/></extensionElements></message>
  <signal id="stop" name="shutdown"/>
  <process id="shop" name="Shop" isExecutable="true">
    <startEvent id="s" name="Order"/><sequenceFlow id="f0" sourceRef="s" targetRef="wait"/>
    <intermediateCatchEvent id="wait" name="Paid"><messageEventDefinition messageRef="paid"/></intermediateCatchEvent>
    <sequenceFlow id="f1" sourceRef="wait" targetRef="e"/><endEvent id="e"/>
  </process>
  <process id="watch" isExecutable="true">
    <startEvent id="w0"><signalEventDefinition signalRef="stop"/></startEvent>
    <sequenceFlow id="w1" sourceRef="w0" targetRef="w2"/><endEvent id="w2"/>
  </process>
</definitions>`

// BPMN over HTTP: a file of two processes loads as two definitions with
// labels and kinds; messages and signals reach processes; bad input is
// refused with the API's codes.
func TestBPMNOverHTTP(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b, envOptions{})
			d := e.load(shopBPMN)
			if d.Name != "shop" || d.Format != "bpmn" || d.Label != "Shop" || strings.Join(d.Related, ",") != "watch" {
				t.Fatalf("definition %+v", d)
			}
			if d.Nodes[1].Kind != "intermediateCatchEvent" || d.Nodes[1].Label != "Paid" || d.Arcs[0].Name == nil || *d.Arcs[0].Name != "f0" {
				t.Fatalf("nodes %+v arcs %+v", d.Nodes[1], d.Arcs[0])
			}
			e.want(e.get("/api/v1/definitions/watch"), http.StatusOK, "")
			p := e.start("shop", `{"orderId": "o-1"}`)
			r := e.post("/api/v1/messages", `{"name": "payment received", "correlationKey": "o-1", "env": {"paid": [1, 2]}}`)
			e.want(r, http.StatusOK, "")
			var res veena.PublishResult
			r.decode(t, &res)
			if res.Process == nil || *res.Process != p.ID || res.Buffered {
				t.Fatalf("publish %+v", res)
			}
			var got veena.Process
			e.get("/api/v1/processes/"+p.ID).decode(t, &got)
			if got.State != "completed" || got.Env["paid"].String() != "[1,2]" {
				t.Fatalf("process %+v", got)
			}
			r = e.post("/api/v1/messages", `{"name": "payment received", "correlationKey": "o-2", "ttl": "PT1H", "messageId": "x"}`)
			e.want(r, http.StatusOK, "")
			e.want(e.post("/api/v1/messages", `{"name": "payment received", "correlationKey": "o-2", "ttl": "1h", "messageId": "x"}`), http.StatusConflict, "conflict")
			r = e.post("/api/v1/signals", `{"name": "shutdown"}`)
			e.want(r, http.StatusOK, "")
			var sig veena.SignalResult
			r.decode(t, &sig)
			if sig.Delivered != 0 || len(sig.Started) != 1 {
				t.Fatalf("signal %+v", sig)
			}
			for _, c := range []struct{ path, body, code string }{
				{"/api/v1/messages", `{}`, "invalid_argument"},
				{"/api/v1/messages", `{"name": "m", "ttl": "soon"}`, "invalid_argument"},
				{"/api/v1/messages", `{"name": "m", "ttl": "P1M"}`, "invalid_argument"},
				{"/api/v1/messages", `{"name": "m", "extra": 1}`, "invalid_argument"},
				{"/api/v1/signals", `{"name": ""}`, "invalid_argument"},
			} {
				e.want(e.post(c.path, c.body), http.StatusBadRequest, c.code)
			}
			// Timer start events are the definition's timers.
			e.load(strings.NewReplacer(`id="shop"`, `id="tick"`, `<startEvent id="s" name="Order"/>`, `<startEvent id="s" name="Order"><timerEventDefinition><timeCycle>R3/PT1H</timeCycle></timerEventDefinition></startEvent>`,
				`id="watch"`, `id="watch2"`).Replace(shopBPMN))
			var timers struct{ Items []veena.StartTimer }
			e.get("/api/v1/definitions/tick/start-timers").decode(t, &timers)
			if len(timers.Items) != 1 || timers.Items[0].Node != "s" || timers.Items[0].DueAt == nil || timers.Items[0].Fired != 0 {
				t.Fatalf("start timers %+v", timers)
			}
			e.want(e.get("/api/v1/definitions/nope/start-timers"), http.StatusNotFound, "not_found")
			// A construct Veena cannot run: 422 naming it, with line and column.
			bad := strings.Replace(shopBPMN, `<endEvent id="e"/>`, `<complexGateway id="cx"/>`, 1)
			r = e.do(req{method: "POST", path: "/api/v1/definitions", body: bad, ctype: "application/xml"})
			e.want(r, http.StatusUnprocessableEntity, "definition_invalid")
			if !strings.Contains(string(r.body), `complexGateway id=\"cx\"`) || !strings.Contains(string(r.body), `"line":8`) {
				t.Fatalf("422 body %s", r.body)
			}
		})
	}
}
