package console

// The browser test of what an operator does in the console: finding
// processes and waiting work, seeing what is stalled or failed, editing
// environments, starting with a context, completing with a token set,
// sending events, large graphs, dialogs that belong to their page, and
// narrow screens. It drives the real veena serve in headless Chromium, as
// TestConsoleInBrowser does, with screenshots in artifacts/.

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// cycleFlow has a loop back to an earlier node (a back edge) beside a
// forward path, and a join.
const cycleFlow = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="cycle-flow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="draft" type="wait" isStart="true"><arc to="review"/><arc to="translate"/></node>
  <node name="review" type="wait"><arc name="ok" to="publish"/><arc name="rework" to="draft"/></node>
  <node name="translate" type="wait"><arc to="publish"/><arc name="unclear" to="draft"/></node>
  <node name="publish" type="wait" joinType="and"><arc to="archive"/><arc name="recall" to="review"/></node>
  <node name="archive"/>
</process-definition>
`

// stallFlow stalls when one of its checks ends its branch.
const stallFlow = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="stall-flow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="check-stock"/><arc to="check-credit"/></node>
  <node name="check-stock" type="wait"><arc to="ship"/></node>
  <node name="check-credit" type="wait"><arc to="ship"/></node>
  <node name="ship" type="wait" joinType="and"/>
</process-definition>
`

// remindFlow delays its reminder a day unless paid; paid="soon" (a string)
// makes the guard fail when its time comes.
const remindFlow = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="remind-flow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="invoice" isStart="true"><arc to="remind"/></node>
  <node name="remind" type="wait"><guard>if paid then Discard else delay until 1 second after sent</guard></node>
</process-definition>
`

// fanFlow hands work to a token set of reviewers.
const fanFlow = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="fan-flow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="assign" type="wait" isStart="true"><arc name="review" to="review"/></node>
  <node name="review" type="wait"><arc to="decide"/></node>
  <node name="decide" type="wait" joinType="tokenSet"><join>reviewers</join></node>
</process-definition>
`

// newBrowser starts headless Chromium for a test, 1440 pixels wide and
// height high, on the console's first page, with every uncaught exception
// of the page failing the test.
func newBrowser(t *testing.T, srv e2eServer, height int) *browser {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the console was not tested in a browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, height),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start Chromium %s: %v", chromium, err)
	}
	var mu sync.Mutex
	var exceptions []string
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.IsException() {
				mu.Lock()
				exceptions = append(exceptions, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-logged:
		case <-time.After(5 * time.Second):
		}
		cancelAlloc()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	b := &browser{t: t, ctx: ctx, base: srv.base, dir: artifactsDir(t)}
	b.do("set the viewport", chromedp.EmulateViewport(1440, int64(height)))
	b.do("open the console", chromedp.Navigate(srv.base+"/"))
	return b
}

// waitPage waits until a route's page has rendered (and its graph, if any,
// has been laid out).
func (b *browser) waitPage(what string) {
	b.t.Helper()
	b.wait(what, `document.querySelector('main h1') !== null && (!document.querySelector('.graph-host') || document.querySelector('.graph-host.laid-out') !== null)`)
}

func TestOperatorConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if _, err := embedded.Open("web/" + vendorMarker); err != nil {
		t.Skip("SKIPPED: the console's libraries are not built into this test binary; run `make console` first")
	}
	srv := startServer(t)
	b := newBrowser(t, srv, 900)
	b.login(srv.admin)

	for _, src := range []string{cycleFlow, stallFlow, remindFlow, fanFlow, approval, bigDefinition()} {
		r := postDefinition(t, srv, src)
		if r != 201 {
			t.Fatalf("load: %d", r)
		}
	}

	t.Run("dialogs close when the page changes", func(t *testing.T) { testDialogsClose(t, b, srv) })
	t.Run("start with a context, edit environments, token set, event", func(t *testing.T) { testActions(t, b, srv) })
	t.Run("stalled, failed timer, canceled, delayed", func(t *testing.T) { testTrouble(t, b, srv) })
	t.Run("lists, search, waiting work, ids", func(t *testing.T) { testLists(t, b, srv) })
	t.Run("large graphs and cycles", func(t *testing.T) { testLargeGraphs(t, b, srv) })
	t.Run("narrow screens", func(t *testing.T) { testNarrow(t, b, srv) })
	t.Run("viewer", func(t *testing.T) { testViewer(t, b, srv) })
}

// postDefinition loads a definition through the API and returns the status.
func postDefinition(t *testing.T, srv e2eServer, src string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.base+"/api/v1/definitions", strings.NewReader(src))
	req.Header.Set("Authorization", "Bearer "+srv.admin)
	req.Header.Set("Content-Type", "application/xml")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

type proc struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	Stalled    bool              `json:"stalled"`
	Context    map[string]string `json:"context"`
	Env        map[string]any    `json:"env"`
	ParentTok  *string           `json:"parentToken"`
	WaitingAt  []map[string]any  `json:"waitingAt"`
	TimerFails []map[string]any  `json:"timerFailures"`
}

func startProc(t *testing.T, srv e2eServer, body map[string]any) proc {
	t.Helper()
	var p proc
	apiCall(t, srv, "POST", "/processes", body, &p)
	return p
}

// activeToken is the id of the active token of a process on a node.
func activeToken(t *testing.T, srv e2eServer, id, node string) string {
	t.Helper()
	var h struct {
		NodeTokens []struct {
			ID, Node string
			Complete bool
		} `json:"nodeTokens"`
	}
	apiCall(t, srv, "GET", "/processes/"+id+"/tokens", nil, &h)
	for _, tk := range h.NodeTokens {
		if tk.Node == node && !tk.Complete {
			return tk.ID
		}
	}
	t.Fatalf("no active token on %s in %s", node, id)
	return ""
}

func testDialogsClose(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	// A Load dialog does not survive a change of page.
	b.goTo("#/definitions")
	b.wait("the definitions page", `document.querySelector('[data-action=load-definition]') !== null`)
	b.click("[data-action=load-definition]")
	b.wait("the load dialog", `document.querySelector('dialog[open]') !== null`)
	b.goTo("#/processes")
	b.waitPage("the processes page")
	b.wait("no dialog left open", `document.querySelector('dialog') === null`)

	// A Complete dialog opened on one process closes when another opens:
	// it cannot act on the wrong one.
	p1 := startProc(t, srv, map[string]any{"definition": "approval"})
	p2 := startProc(t, srv, map[string]any{"definition": "approval"})
	b.goTo("#/processes/" + p1.ID)
	b.waitPage("process 1")
	b.wait("its token card", `document.querySelector('.token-card [data-action=complete][data-node=review]') !== null`)
	b.click(`.token-card [data-action=complete][data-node=review]`)
	b.wait("the complete dialog", `document.querySelector('dialog[open]') !== null`)
	b.goTo("#/processes/" + p2.ID)
	b.waitPage("process 2")
	b.wait("the dialog closed with the page", `document.querySelector('dialog') === null`)
	var got proc
	apiCall(t, srv, "GET", "/processes/"+p1.ID, nil, &got)
	if len(got.WaitingAt) != 1 || got.WaitingAt[0]["node"] != "review" {
		t.Fatalf("process 1 changed after its dialog closed: %+v", got.WaitingAt)
	}
	// The browser's back button closes a dialog too.
	b.click(`.token-card [data-action=complete][data-node=review]`)
	b.wait("the complete dialog", `document.querySelector('dialog[open]') !== null`)
	b.do("go back", chromedp.Evaluate[chromedp.Void](`history.back()`))
	b.wait("back on process 1 with no dialog", fmt.Sprintf(`decodeURIComponent(location.hash) === %q && document.querySelector('dialog') === null`, "#/processes/"+p1.ID))
}

func testActions(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	// Start with a context from the definition page.
	b.goTo("#/definitions/fan-flow")
	b.waitPage("the fan-flow page")
	b.click(".page-head [data-action=start-process]")
	b.wait("the start dialog", `document.querySelector('dialog [data-add=pair]') !== null`)
	b.click("dialog .attrs:not(.pairs) [data-add=attribute]")
	b.do("an attribute", chromedp.SetValue(chromedp.CSS("dialog .attr-name"), "owner"), chromedp.SetValue(chromedp.CSS("dialog .attr-value"), "ann"))
	b.click("dialog [data-add=pair]")
	b.do("a context pair",
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 key']"), "case"),
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 value']"), "c-77"))
	b.screenshot("operator-start-with-context.png")
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the new process page", `location.hash.startsWith('#/processes/') && document.querySelector('.context-chips') !== null && document.querySelector('.graph-host.laid-out') !== null`)
	id := strings.TrimPrefix(b.str(`decodeURIComponent(location.hash)`), "#/processes/")
	var p proc
	apiCall(t, srv, "GET", "/processes/"+id, nil, &p)
	if p.Context["case"] != "c-77" || p.Env["owner"] != "ann" {
		t.Fatalf("started with context %v and env %v", p.Context, p.Env)
	}
	if got := b.str(`document.querySelector('.context-line').innerText`); !strings.Contains(got, "case=c-77") {
		t.Errorf("the page shows the context as %q", got)
	}

	// Edit the process environment: change one, add one, remove one.
	b.click("[data-action=edit-process-env]")
	b.wait("the env dialog", `document.querySelectorAll('dialog .attr-row').length === 1`)
	b.do("change owner", chromedp.SetValue(chromedp.CSS("dialog .attr-value"), "bob"))
	b.click("dialog [data-add=attribute]")
	b.do("add a limit",
		chromedp.SetValue(chromedp.CSS("dialog .attr-row:nth-child(2) .attr-name"), "limit"),
		chromedp.SetValue(chromedp.CSS("dialog .attr-row:nth-child(2) .attr-value"), "250"))
	b.screenshot("operator-edit-env.png")
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the saved environment", `(() => { const t = [...document.querySelectorAll('table.env')].pop().innerText; return t.includes('"bob"') && t.includes('250'); })()`)
	apiCall(t, srv, "GET", "/processes/"+id, nil, &p)
	if p.Env["owner"] != "bob" || p.Env["limit"] != float64(250) {
		t.Fatalf("env after the edit: %v", p.Env)
	}
	b.click("[data-action=edit-process-env]")
	b.wait("the env dialog", `document.querySelectorAll('dialog .attr-row').length === 2`)
	b.click(`dialog .attr-row:nth-child(1) button.icon`) // limit sorts first: remove it
	b.click("dialog [data-action=dialog-submit]")
	b.wait("limit removed", `!document.querySelector('table.env') || ![...document.querySelectorAll('table.env')].pop().innerText.includes('limit')`)

	// Edit a token's own environment.
	tok := activeToken(t, srv, id, "assign")
	b.click(fmt.Sprintf(`.token-card[data-token=%q] button`, tok))
	b.wait("the token's details", `document.querySelector('[data-action=edit-token-env]') !== null`)
	b.click("[data-action=edit-token-env]")
	b.wait("the token env dialog", `document.querySelector('dialog .attr-name') !== null`)
	b.do("a token attribute", chromedp.SetValue(chromedp.CSS("dialog .attr-name"), "note"), chromedp.SetValue(chromedp.CSS("dialog .attr-value"), "urgent"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the token env shows it", `document.querySelector('.token-detail').innerText.includes('urgent')`)

	// Complete with a token set of three members, each with its reviewer.
	b.click(`.token-card [data-action=complete][data-node=assign]`)
	b.wait("the complete dialog", `document.querySelector('dialog #ts-on') !== null`)
	b.click("dialog #ts-on")
	b.do("the set",
		chromedp.SetValue(chromedp.ID("ts-name"), "reviewers"),
		chromedp.SetValue(chromedp.ID("ts-count"), "3"))
	b.click("dialog .token-set-fields fieldset:last-child [data-add=attribute]")
	b.do("member attributes",
		chromedp.SetValue(chromedp.CSS("dialog .token-set-fields fieldset:last-child .attr-name"), "reviewer"),
		chromedp.SetValue(chromedp.CSS("dialog .token-set-fields fieldset:last-child .attr-value"), "ann, bob, cy"))
	b.screenshot("operator-complete-token-set.png")
	b.click("dialog [data-action=dialog-submit]")
	b.wait("three reviewers", `document.querySelectorAll('.token-card[data-node=review]').length === 3`)
	var h struct {
		NodeTokens []struct {
			Node      string
			Complete  bool
			Env       map[string]any
			TokenSets []struct {
				Name   string
				Member int
			} `json:"tokenSets"`
		} `json:"nodeTokens"`
	}
	apiCall(t, srv, "GET", "/processes/"+id+"/tokens", nil, &h)
	members := 0
	for _, tk := range h.NodeTokens {
		if tk.Node == "review" && len(tk.TokenSets) == 1 && tk.TokenSets[0].Name == "reviewers" {
			members++
		}
	}
	if members != 3 {
		t.Fatalf("%d members of reviewers, want 3: %+v", members, h.NodeTokens)
	}
	// The set's card shows each member's own attributes, and each
	// reviewer's token card its member's reviewer.
	b.wait("the token set's card with each member's reviewer", `(() => {
		const c = document.querySelector('.token-set-card');
		const rows = c ? [...c.querySelectorAll('table.member-env tbody tr')].map((r) => r.innerText.replace(/\s+/g, ' ').trim()) : [];
		return rows.join('|') === '#0 "ann"|#1 "bob"|#2 "cy"';
	})()`)
	if got := b.str(`[...document.querySelectorAll('.token-card[data-node=review] .membership')].map((m) => m.dataset.member + ' ' + m.innerText).sort().join('|')`); got != `0 reviewers #0 (reviewer="ann")|1 reviewers #1 (reviewer="bob")|2 reviewers #2 (reviewer="cy")` {
		t.Errorf("the reviewers' token cards read %q, want each member's reviewer", got)
	}
	b.screenshot("operator-token-set-done.png")

	// Send an event routed by the context: it completes a reviewer.
	b.goTo("#/processes")
	b.waitPage("the processes page")
	b.click("[data-action=send-event]")
	b.wait("the event dialog", `document.querySelector('dialog #event-node') !== null`)
	b.do("match and node",
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 key']"), "case"),
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 value']"), "c-77"),
		chromedp.SetValue(chromedp.ID("event-node"), "assign"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the refusal: assign is complete", `(() => { const e = document.querySelector('dialog .error-box'); return e && !e.hidden && e.innerText.length > 0; })()`)
	if got := b.str(`document.querySelector('dialog .error-box').innerText`); !strings.HasPrefix(got, "Not delivered: ") || !strings.Contains(got, `"assign"`) || strings.Contains(got, "does not exist") {
		t.Errorf("the refusal reads %q, want why the event was not delivered", got)
	}
	b.screenshot("operator-send-event-refused.png")
	// There are three reviewer tokens: an event needs the node and would
	// still find three; it is refused, saying so.
	b.do("node review", chromedp.SetValue(chromedp.ID("event-node"), "review"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("a refusal naming several tokens", `(() => { const e = document.querySelector('dialog .error-box'); return e && !e.hidden && /3 candidates/.test(e.innerText); })()`)
	b.click("dialog [data-action=dialog-cancel]")
	// A process with one waiting token takes the event.
	one := startProc(t, srv, map[string]any{"definition": "approval", "context": map[string]string{"case": "c-78"}})
	b.click("[data-action=send-event]")
	b.wait("the event dialog", `document.querySelector('dialog #event-node') !== null`)
	b.do("match",
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 key']"), "case"),
		chromedp.SetValue(chromedp.CSS("dialog [aria-label='pair 1 value']"), "c-78"))
	b.click("dialog [data-add=attribute]")
	b.do("an attribute", chromedp.SetValue(chromedp.CSS("dialog .attrs:last-of-type .attr-name"), "approvedBy"), chromedp.SetValue(chromedp.CSS("dialog .attrs:last-of-type .attr-value"), "dan"))
	b.screenshot("operator-send-event.png")
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the process page of the event's process", fmt.Sprintf(`decodeURIComponent(location.hash) === %q && document.querySelector('.graph-host.laid-out') !== null`, "#/processes/"+one.ID))
	apiCall(t, srv, "GET", "/processes/"+one.ID, nil, &p)
	if p.Env["approvedBy"] != "dan" || len(p.WaitingAt) != 0 || p.State != "completed" && (len(p.WaitingAt) == 0 || p.WaitingAt[0]["node"] == "review") {
		t.Fatalf("after the event: %s, env %v, waiting at %v", p.State, p.Env, p.WaitingAt)
	}
	// One reviewer of three completes: the tokenSet join at decide waits
	// for the other two, on the process page and in the waiting work.
	apiCall(t, srv, "POST", "/node-tokens/"+activeToken(t, srv, id, "review")+"/complete", map[string]any{}, nil)
	b.goTo("#/processes/" + id)
	b.waitPage("the reviewers' process")
	b.wait("the join card", `(() => { const c = document.querySelector('.join-card[data-join=decide] .join-progress'); return c && c.innerText === 'reviewers: 1 of 3 members arrived'; })()`)
	b.wait("the join's label on the graph", `document.querySelector('.graph-host').graphLabels().some((l) => l.includes('◷ join: 1 of 3 arrived'))`)
	b.screenshot("operator-join-progress.png")
	b.goTo("#/waiting?node=decide")
	b.waitPage("waiting at decide")
	b.wait("the join row", fmt.Sprintf(`(() => { const s = document.querySelector(%q); return s && s.dataset.progress === 'yes' && s.textContent.trim() === '(reviewers: 1 of 3 members arrived)'; })()`,
		fmt.Sprintf(`tr[data-wait="%s decide join"] .join-progress`, id)))
}

func testTrouble(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	// A stalled process says which join waits for which arc.
	st := startProc(t, srv, map[string]any{"definition": "stall-flow"})
	apiCall(t, srv, "POST", "/node-tokens/"+activeToken(t, srv, st.ID, "check-stock")+"/complete", map[string]any{}, nil)
	apiCall(t, srv, "POST", "/node-tokens/"+activeToken(t, srv, st.ID, "check-credit")+"/complete", map[string]any{"arcs": []string{}}, nil)
	b.goTo("#/processes/" + st.ID)
	b.waitPage("the stalled process")
	b.wait("the stalled banner", `(() => { const a = document.querySelector('[data-attention=stalled]'); return a && a.innerText.includes('ship') && a.innerText.includes('check-stock') && a.innerText.includes('check-credit'); })()`)
	// The and join says how many of its arcs arrived.
	if got := b.str(`document.querySelector('[data-attention=stalled] li[data-join=ship]').innerText`); !strings.Contains(got, "(and join): 1 of 2 arcs arrived; arrived from check-stock; still needs check-credit") {
		t.Errorf("the stalled join reads %q, want 1 of 2 arcs arrived", got)
	}
	if got := b.str(`document.querySelector('.badge-slot').innerText`); !strings.Contains(got, "stalled") {
		t.Errorf("the state reads %q, want stalled", got)
	}
	if got := b.str(`[...document.querySelectorAll('ol.timeline li')].map((li) => li.innerText).filter((x) => x.includes('check-credit') && x.includes('completed')).join(' | ')`); !strings.Contains(got, "on no arc: its branch ends") {
		t.Errorf("the timeline says of check-credit's completion: %q, want that it ended its branch", got)
	}
	b.screenshot("operator-stalled.png")
	// The banner names the token that ended the missing branch; backtracking
	// to it from there makes check-credit active again.
	var hist struct {
		NodeTokens []struct {
			ID, Node string
			Complete bool
		} `json:"nodeTokens"`
	}
	apiCall(t, srv, "GET", "/processes/"+st.ID+"/tokens", nil, &hist)
	credit := ""
	for _, tk := range hist.NodeTokens {
		if tk.Node == "check-credit" {
			credit = tk.ID
		}
	}
	b.click(fmt.Sprintf(`[data-attention=stalled] [data-action=backtrack][data-token=%q]`, credit))
	b.wait("the backtrack dialog", `document.querySelector('dialog[open]') !== null`)
	b.click("dialog [data-action=dialog-submit]")
	b.wait("check-credit waits again, nothing stalled", `document.querySelector('[data-attention=stalled]') === null && document.querySelector('.token-card [data-action=complete][data-node=check-credit]') !== null`)
	var rescued proc
	apiCall(t, srv, "GET", "/processes/"+st.ID, nil, &rescued)
	if rescued.Stalled || len(rescued.WaitingAt) == 0 {
		t.Fatalf("after the backtrack from the banner: stalled %v, waiting at %v", rescued.Stalled, rescued.WaitingAt)
	}
	// Stall it again for the lists below.
	apiCall(t, srv, "POST", "/node-tokens/"+activeToken(t, srv, st.ID, "check-credit")+"/complete", map[string]any{"arcs": []string{}}, nil)

	// A delayed token shows until when, and completing it now warns that
	// its guard is skipped.
	sent := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	dl := startProc(t, srv, map[string]any{"definition": "remind-flow", "env": map[string]any{"paid": false, "sent": map[string]string{"date": sent}}})
	b.goTo("#/processes/" + dl.ID)
	b.waitPage("the delayed process")
	b.wait("the delayed card", `(() => { const c = document.querySelector('.token-card.delayed'); return c && c.querySelector('[data-delay-until]') !== null && /Complete now/.test(c.innerText); })()`)
	b.click(`.token-card [data-action=complete][data-node=remind]`)
	b.wait("the warning", `(() => { const w = document.querySelector('dialog [data-warning=delayed]'); return w && /guard is not evaluated again/.test(w.innerText); })()`)
	b.screenshot("operator-delayed-complete.png")
	b.click("dialog [data-action=dialog-cancel]")

	// A guard that fails when its time comes: the process says so. (It
	// delays first; then paid becomes text, which the guard cannot read as
	// a boolean when the engine runs it again.)
	fl := startProc(t, srv, map[string]any{"definition": "remind-flow", "env": map[string]any{"paid": false, "sent": map[string]string{"date": time.Now().UTC().Format(time.RFC3339)}}})
	apiCall(t, srv, "PATCH", "/processes/"+fl.ID+"/env", map[string]any{"paid": "soon"}, nil)
	b.goTo("#/processes/" + fl.ID)
	b.waitPage("the process whose timer failed")
	b.wait("the timer banner (the engine fires the timer within seconds)", `(() => { const a = document.querySelector('[data-attention=timer-failed]'); return a && /paid/.test(a.innerText) && /incident/i.test(a.innerText); })()`)
	b.screenshot("operator-timer-failed.png")
	// Fix the cause, then resolve the incident from the banner: the guard
	// runs again, discards the reminder, and the process ends.
	apiCall(t, srv, "PATCH", "/processes/"+fl.ID+"/env", map[string]any{"paid": true}, nil)
	b.click("[data-attention=timer-failed] [data-action=resolve-incident]")
	b.wait("the banner gone, the process completed", `document.querySelector('[data-attention=timer-failed]') === null && document.querySelector('.badge-slot').innerText.includes('completed')`)

	// A canceled process shows the tokens it left as stopped, offering nothing.
	cn := startProc(t, srv, map[string]any{"definition": "approval"})
	apiCall(t, srv, "POST", "/processes/"+cn.ID+"/cancel", map[string]any{}, nil)
	b.goTo("#/processes/" + cn.ID)
	b.waitPage("the canceled process")
	b.wait("stopped tokens", `document.querySelector('#h-active').innerText === 'Stopped by the cancel' && document.querySelector('.token-card.stopped') !== null && document.querySelectorAll('main [data-action=complete]').length === 0`)
	if got := b.str(`document.querySelector('.graph-host').dataset.tokenState`); !strings.Contains(got, "review=stopped") {
		t.Errorf("the graph shows %q, want review=stopped", got)
	}
	if got := b.str(`[...document.querySelectorAll('table.tokens .badge')].map((x) => x.innerText).join(' ')`); strings.Contains(got, "active") {
		t.Errorf("the history of a canceled process shows active tokens: %s", got)
	}
	// Every row of the history keeps its last cell (actions, here none) a
	// table cell, bordered like the others.
	if n := b.num(`[...document.querySelectorAll('table.tokens tbody td:last-child')].filter((td) => getComputedStyle(td).display !== 'table-cell').length`); n != 0 {
		t.Errorf("%d action cells of the token history are not table cells", n)
	}
	b.screenshot("operator-canceled.png")
}

func testLists(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	for i := 0; i < 3; i++ {
		startProc(t, srv, map[string]any{"definition": "approval", "context": map[string]string{"order": fmt.Sprintf("o-%d", 100+i)}})
	}
	b.goTo("#/processes")
	b.waitPage("the processes list")
	b.wait("the count and the columns", `document.querySelector('.count') !== null && document.querySelector('table.processes thead').innerText.toLowerCase().includes('waiting at')`)
	var all struct{ Total int }
	apiCall(t, srv, "GET", "/processes?limit=1", nil, &all)
	if total := b.num(`Number(document.querySelector('.count').dataset.total)`); total != all.Total || total < 10 {
		t.Errorf("the count says %d processes; the API, %d", total, all.Total)
	}
	// Newest first: the first row is the last started.
	if got := b.str(`document.querySelector('table.processes tbody tr td:nth-child(5)').innerText`); !strings.Contains(got, "o-102") {
		t.Errorf("the first row's context is %q, want o-102 (newest first)", got)
	}
	b.screenshot("operator-processes.png")
	// Search by a context value.
	b.do("search o-101", chromedp.SetValue(chromedp.ID("f-q"), "o-101"))
	b.click("[data-action-filter=apply]")
	b.wait("one match", `document.querySelectorAll('table.processes tbody tr').length === 1 && document.querySelector('.count').dataset.total === '1'`)
	id := b.str(`document.querySelector('table.processes tbody tr').dataset.row`)
	// By the start of its id (enough to be unique: the last digits differ).
	b.goTo("#/processes?q=" + id[:len(id)-6])
	b.waitPage("the id search")
	b.wait("the id found", fmt.Sprintf(`[...document.querySelectorAll('table.processes tbody tr')].some((r) => r.dataset.row === %q)`, id))
	// By node, and stalled ones.
	b.goTo("#/processes?node=ship&stalled=true")
	b.waitPage("the stalled ones")
	b.wait("the stalled process", `document.querySelectorAll('table.processes tbody tr.stalled').length === 1 && document.querySelector('table.processes').innerText.includes('ship (join)')`)
	b.screenshot("operator-processes-stalled.png")
	// Waiting work.
	b.goTo("#/waiting")
	b.waitPage("the waiting work")
	b.wait("rows of waiting work", `document.querySelectorAll('table.waiting tbody tr').length >= 5 && document.querySelector('table.waiting').innerText.includes('review')`)
	checkShownIDs(t, srv, b, "table.waiting tbody a[data-process]", 5)
	// Times read on a 24-hour clock, as the timeline's do, with their zone.
	if got := b.str(`document.querySelector('table.waiting tbody tr td:nth-child(3)').innerText`); !regexp.MustCompile(`\d{4}, (?:[01]\d|2[0-3]):\d\d:\d\d \S+$`).MatchString(got) || regexp.MustCompile(`\b[AP]M\b`).MatchString(got) {
		t.Errorf("a waiting row's time reads %q, want the date, a 24-hour time and the zone", got)
	}
	b.screenshot("operator-waiting.png")
	b.goTo("#/waiting?node=review")
	b.waitPage("waiting at review")
	b.wait("only review", `[...document.querySelectorAll('table.waiting tbody tr')].every((r) => r.dataset.wait.includes(' review '))`)
	// The process page shows the full id with a copy button.
	b.goTo("#/processes/" + id)
	b.waitPage("a process")
	if got := b.str(`document.querySelector('.process-title .full-id').innerText`); got != id {
		t.Errorf("the page shows the id %q, want %q", got, id)
	}
	b.click(".process-title button.copy")
	b.wait("copied", `document.querySelector('.process-title button.copy').dataset.copied !== undefined`)
}

func testLargeGraphs(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	// A 200-node graph opens on where its process waits: the active
	// tokens are in view and the minimap shows the whole.
	p := startProc(t, srv, map[string]any{"definition": "big-flow", "env": map[string]any{"large": true}})
	b.goTo("#/processes/" + p.ID)
	b.waitPage("the big process")
	b.wait("focused on the waiting tokens", `(document.querySelector('.graph-host').dataset.focused || '').length > 0`)
	if hidden := b.str(`String(document.querySelector('.graph-minimap').hidden)`); hidden != "false" {
		t.Errorf("no minimap on a 200-node graph")
	}
	inView := b.num(`(() => {
		const host = document.querySelector('.graph-host');
		const box = host.querySelector('.graph-canvas').getBoundingClientRect();
		return (host.dataset.focused || '').split(' ').filter((k) => {
			const p = host.nodeScreenPosition(k);
			return p && p.x >= box.left && p.x <= box.right && p.y >= box.top && p.y <= box.bottom;
		}).length;
	})()`)
	if inView == 0 {
		t.Errorf("none of the waiting nodes is in view")
	}
	b.screenshot("operator-large-focus.png")
	// Node search goes to a node far away.
	b.do("search s37-c", chromedp.SetValue(chromedp.CSS(".graph-search"), "s37-c"))
	b.do("submit", chromedp.Evaluate[chromedp.Void](`document.querySelector('.graph-find').requestSubmit()`))
	b.wait("s37-c found and in view", `(() => {
		const host = document.querySelector('.graph-host');
		const box = host.querySelector('.graph-canvas').getBoundingClientRect();
		const p = host.nodeScreenPosition('s37-c');
		return host.dataset.found === 's37-c' && p && p.x >= box.left && p.x <= box.right && p.y >= box.top && p.y <= box.bottom;
	})()`)
	time.Sleep(400 * time.Millisecond)
	b.screenshot("operator-large-search.png")
	// No arc is drawn through a node in the big graph.
	if got := b.str(`document.querySelector('.graph-host').edgeCrossings().join('; ')`); got != "" {
		t.Errorf("arcs drawn over nodes in big-flow: %s", got)
	}
	// Cycles: the back edges go around, over no node.
	b.goTo("#/definitions/cycle-flow")
	b.waitPage("the cycle definition")
	if got := b.str(`document.querySelector('.graph-host').edgeCrossings().join('; ')`); got != "" {
		t.Errorf("arcs drawn over nodes in cycle-flow: %s", got)
	}
	b.screenshot("operator-cycle.png")
}

func testNarrow(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	b.do("narrow viewport", chromedp.EmulateViewport(390, 844))
	defer b.do("wide viewport", chromedp.EmulateViewport(1440, 900))
	for _, r := range []struct{ route, shot string }{
		{"#/processes", "operator-narrow-processes.png"},
		{"#/waiting", "operator-narrow-waiting.png"},
		{"#/definitions", ""},
	} {
		b.goTo(r.route)
		b.waitPage(r.route)
		if w := b.num(`document.documentElement.scrollWidth`); w > 392 {
			t.Errorf("%s is %dpx wide on a 390px screen", r.route, w)
		}
		// Tables fit or scroll inside their own box.
		if n := b.num(`[...document.querySelectorAll('main table')].filter((tb) => {
			const wrap = tb.closest('.table-wrap, .nodes-wrap');
			return tb.getBoundingClientRect().width > 392 && (!wrap || getComputedStyle(wrap).overflowX === 'visible');
		}).length`); n != 0 {
			t.Errorf("%s: %d tables overflow the screen without scrolling in their box", r.route, n)
		}
		if r.shot != "" {
			b.screenshot(r.shot)
		}
	}
	p := startProc(t, srv, map[string]any{"definition": "stall-flow", "context": map[string]string{"order": "o-narrow"}})
	b.goTo("#/processes/" + p.ID)
	b.waitPage("a process on a narrow screen")
	if w := b.num(`document.documentElement.scrollWidth`); w > 392 {
		t.Errorf("the process page is %dpx wide on a 390px screen", w)
	}
	// Laid out top to bottom, every arc is drawn, over no node.
	if got := b.str(`document.querySelector('.graph-host').edgeCrossings().join('; ')`); got != "" {
		t.Errorf("arcs drawn over nodes (or not at all) on a narrow screen: %s", got)
	}
	b.screenshot("operator-narrow-process.png")
}

func testViewer(t *testing.T, b *browser, srv e2eServer) {
	b.t = t
	b.do("log out", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`))
	b.do("reopen", chromedp.Navigate(srv.base+"/#/processes"))
	b.login(srv.viewer)
	var page struct{ Items []proc }
	apiCall(t, srv, "GET", "/processes?state=executing&definition=fan-flow", nil, &page)
	if len(page.Items) == 0 {
		t.Fatal("no fan-flow process")
	}
	for _, route := range []string{"#/processes", "#/waiting", "#/definitions/fan-flow", "#/processes/" + page.Items[0].ID} {
		b.goTo(route)
		b.waitPage(route)
		time.Sleep(200 * time.Millisecond)
		if n := b.num(`document.querySelectorAll('main [data-action]:not([data-action=analyse])').length`); n != 0 {
			t.Errorf("the viewer sees %d action controls on %s: %s", n, route,
				b.str(`[...document.querySelectorAll('main [data-action]:not([data-action=analyse])')].map(e => e.dataset.action).join(', ')`))
		}
	}
}
