package console

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// routeBPMN is an exclusive gateway with no default flow: a process whose
// kind matches neither condition stops there with an incident.
const routeBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"
    xmlns:dc="http://www.omg.org/spec/DD/20100524/DC"
    xmlns:di="http://www.omg.org/spec/DD/20100524/DI"
    id="route-defs" targetNamespace="http://veena.example/route">
  <process id="route" name="Route" isExecutable="true">
    <startEvent id="in"/>
    <sequenceFlow id="f0" sourceRef="in" targetRef="which"/>
    <exclusiveGateway id="which" name="Kind?"/>
    <sequenceFlow id="isA" name="a" sourceRef="which" targetRef="outA">
      <conditionExpression>= kind = "a"</conditionExpression>
    </sequenceFlow>
    <sequenceFlow id="isB" name="b" sourceRef="which" targetRef="outB">
      <conditionExpression>= kind = "b"</conditionExpression>
    </sequenceFlow>
    <endEvent id="outA" name="A"/>
    <endEvent id="outB" name="B"/>
  </process>
  <bpmndi:BPMNDiagram id="d">
    <bpmndi:BPMNPlane id="p" bpmnElement="route">
      <bpmndi:BPMNShape id="in_di" bpmnElement="in"><dc:Bounds x="152" y="102" width="36" height="36"/></bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="which_di" bpmnElement="which" isMarkerVisible="true"><dc:Bounds x="245" y="95" width="50" height="50"/></bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="outA_di" bpmnElement="outA"><dc:Bounds x="352" y="52" width="36" height="36"/></bpmndi:BPMNShape>
      <bpmndi:BPMNShape id="outB_di" bpmnElement="outB"><dc:Bounds x="352" y="152" width="36" height="36"/></bpmndi:BPMNShape>
      <bpmndi:BPMNEdge id="f0_di" bpmnElement="f0"><di:waypoint x="188" y="120"/><di:waypoint x="245" y="120"/></bpmndi:BPMNEdge>
      <bpmndi:BPMNEdge id="isA_di" bpmnElement="isA"><di:waypoint x="270" y="95"/><di:waypoint x="270" y="70"/><di:waypoint x="352" y="70"/></bpmndi:BPMNEdge>
      <bpmndi:BPMNEdge id="isB_di" bpmnElement="isB"><di:waypoint x="270" y="145"/><di:waypoint x="270" y="170"/><di:waypoint x="352" y="170"/></bpmndi:BPMNEdge>
    </bpmndi:BPMNPlane>
  </bpmndi:BPMNDiagram>
</definitions>
`

// TestBPMNConsoleInBrowser loads the example order (testdata/examples/
// order.bpmn) through the page and checks that it is drawn by bpmn-js from
// its own diagram; starts an order and checks the live overlay (an active
// token and a waiting task on the review, a click on the element selecting
// its token); completes the review from the page, does the card charge as
// a worker and checks the completed path; then a process of another model
// stops at an exclusive gateway with no way out and its incident is shown
// on the diagram and in the open work. Screenshots go to artifacts/
// (bpmn-definition.png, bpmn-process.png, bpmn-completed.png,
// bpmn-incident.png).
func TestBPMNConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if findChromium() == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the BPMN view was not tested in a browser")
	}
	if _, err := embedded.Open("web/vendor/bpmn-navigated-viewer.production.min.js"); err != nil {
		t.Skip("SKIPPED: bpmn-js is not built into this test binary; run `make console` first")
	}
	order, err := os.ReadFile(filepath.Join("..", "testdata", "examples", "order.bpmn"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t)
	b := newBrowser(t, srv, 1000)
	b.login(srv.admin)

	// The definition: drawn from the file's own diagram, every shape there.
	b.loadDefinition("order", string(order))
	b.wait("the BPMN diagram", `document.querySelector('.bpmn-canvas[data-ready=true]') !== null`)
	for _, id := range []string{"placed", "review", "tooSlow", "escalate", "decision", "charge", "shipped", "declined", "approved", "rejected"} {
		if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element[data-element-id="` + id + `"]').length`); n != 1 {
			t.Errorf("the diagram draws %s %d times", id, n)
		}
	}
	if got := b.str(`document.querySelector('.bpmn-canvas').innerText`); !strings.Contains(got, "Review the order") || !strings.Contains(got, "Approved?") {
		t.Errorf("the diagram's labels: %q", got)
	}
	b.screenshot("bpmn-definition.png")

	// A process: its token waits at the review, a task for sales.
	var p struct{ ID string }
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "order", "env": map[string]any{"amount": 1500}}, &p)
	b.goTo("#/processes/" + p.ID)
	b.wait("the overlay on the review", `document.querySelector('.veena-badge-active[data-element=review]') !== null && document.querySelector('.veena-badge-work[data-work=review]') !== null`)
	if got := b.str(`document.querySelector('.veena-badge-active[data-element=review]').textContent`); got != "1" {
		t.Errorf("active tokens on review: %q", got)
	}
	if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element.veena-done[data-element-id=placed]').length`); n != 1 {
		t.Errorf("the start event is not drawn as done")
	}
	if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element.veena-taken[data-element-id=toReview]').length`); n != 1 {
		t.Errorf("the flow taken to the review is not marked")
	}
	work := b.str(`document.querySelector('.bpmn-work').innerText`)
	if !strings.Contains(work, "Review the order") || !strings.Contains(work, "for sales") {
		t.Errorf("open work: %q", work)
	}
	if n := b.num(`document.querySelectorAll('[data-action=complete], [data-action=backtrack]').length`); n != 0 {
		t.Errorf("a BPMN token offers to be completed or backtracked by hand (%d buttons); its task is what is completed", n)
	}
	// A click on the review selects its token.
	b.click(`.bpmn-canvas .djs-element[data-element-id=review] .djs-hit`)
	b.wait("the review's token selected", `/review/.test(document.querySelector('.token-detail').innerText) && /waiting|active|executing/i.test(document.querySelector('.token-detail').innerText)`)
	b.do("a tall viewport", chromedp.EmulateViewport(1440, 1500))
	b.screenshot("bpmn-process.png")
	b.do("the usual viewport", chromedp.EmulateViewport(1440, 1000))

	// The review completed from the page, approving the order.
	b.click(`[data-action=complete-task][data-node=review]`)
	b.wait("the task dialog", `document.querySelector('dialog fieldset.attrs') !== null`)
	b.click(`dialog fieldset.attrs > button.small`)
	b.do("approve", chromedp.SetValue(chromedp.CSS(`dialog .attr-name`), "approved"),
		chromedp.SetValue(chromedp.CSS(`dialog .attr-value`), "true"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the charge job", `document.querySelector('.veena-badge-work[data-work=charge]') !== null && document.querySelector('.work-item.job') !== null`)
	if got := b.str(`document.querySelector('.work-item.job').innerText`); !strings.Contains(got, "charge-card") {
		t.Errorf("open job: %q", got)
	}
	var act struct {
		Jobs []struct{ ID string } `json:"jobs"`
	}
	apiCall(t, srv, "POST", "/jobs/activate", map[string]any{"type": "charge-card", "worker": "w1", "maxJobs": 1, "lockFor": "1m"}, &act)
	if len(act.Jobs) != 1 {
		t.Fatalf("activated %d jobs", len(act.Jobs))
	}
	apiCall(t, srv, "POST", "/jobs/"+act.Jobs[0].ID+"/complete", map[string]any{"worker": "w1", "env": map[string]any{"charged": true}}, nil)
	b.wait("the completed path", `document.querySelector('.bpmn-canvas .djs-element.veena-done[data-element-id=shipped]') !== null && document.querySelector('.veena-badge-active') === null`)
	for _, id := range []string{"placed", "review", "decision", "charge", "shipped", "toReview", "toDecision", "approved", "toShipped"} {
		if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element:is(.veena-done, .veena-taken)[data-element-id="` + id + `"]').length`); n != 1 {
			t.Errorf("%s is not on the completed path", id)
		}
	}
	for _, id := range []string{"declined", "rejected", "escalate"} {
		if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element:is(.veena-done, .veena-taken)[data-element-id="` + id + `"]').length`); n != 0 {
			t.Errorf("%s is marked on the path though no token went there", id)
		}
	}
	b.wait("no open work", `/No task, job or incident is open/.test(document.querySelector('.bpmn-work').innerText)`)
	b.screenshot("bpmn-completed.png")

	// An incident: no condition of the gateway holds and it has no default.
	req, _ := http.NewRequest("POST", srv.base+"/api/v1/definitions", strings.NewReader(routeBPMN))
	req.Header.Set("Authorization", "Bearer "+srv.admin)
	req.Header.Set("Content-Type", "application/xml")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		t.Fatalf("load route: %s %s", res.Status, body)
	}
	var q struct{ ID string }
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "route", "env": map[string]any{"kind": "c"}}, &q)
	b.goTo("#/processes/" + q.ID)
	b.wait("the incident on the gateway", `document.querySelector('.veena-badge-incident[data-incident=which]') !== null && document.querySelector('.work-item.incident') !== null`)
	if got := b.str(`document.querySelector('.work-item.incident').innerText`); !strings.Contains(got, "which") {
		t.Errorf("incident: %q", got)
	}
	if n := b.num(`document.querySelectorAll('.bpmn-canvas .djs-element.veena-incident[data-element-id=which]').length`); n != 1 {
		t.Errorf("the gateway is not marked with its incident")
	}
	b.screenshot("bpmn-incident.png")
}
