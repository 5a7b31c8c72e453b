package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// nightly is Perpetuum's traffic light with night service, as GreatSPN
// draws it (positions, two inhibitor arcs).
const nightly = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="nightly" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="page0">
   <place id="green"><name><text>green</text></name><graphics><position x="80" y="80"/></graphics></place>
   <place id="yellow"><name><text>yellow</text></name><graphics><position x="160" y="80"/></graphics><initialMarking><text>1</text></initialMarking></place>
   <place id="red"><name><text>red</text></name><graphics><position x="240" y="80"/></graphics></place>
   <place id="night_service"><name><text>night_service</text></name><graphics><position x="200" y="150"/></graphics></place>
   <transition id="caution"><name><text>caution</text></name><graphics><position x="120" y="40"/></graphics></transition>
   <transition id="stop"><name><text>stop</text></name><graphics><position x="200" y="40"/></graphics></transition>
   <transition id="go"><name><text>go</text></name><graphics><position x="280" y="80"/></graphics></transition>
   <transition id="dawn"><name><text>dawn</text></name><graphics><position x="130" y="150"/></graphics></transition>
   <transition id="sunset"><name><text>sunset</text></name><graphics><position x="270" y="150"/></graphics></transition>
   <arc id="1" source="green" target="caution"/><arc id="2" source="caution" target="yellow"/>
   <arc id="3" source="yellow" target="stop"/><arc id="4" source="stop" target="red"/>
   <arc id="5" source="red" target="go"/><arc id="6" source="go" target="green"><graphics><position x="280" y="20"/><position x="80" y="20"/></graphics></arc>
   <arc id="7" source="night_service" target="stop"><type value="inhibitor"/></arc>
   <arc id="8" source="dawn" target="night_service"/><arc id="9" source="night_service" target="sunset"/>
   <arc id="10" source="night_service" target="dawn"><type value="inhibitor"/></arc>
  </page>
 </net>
</pnml>`

// orders drives work: an event with a binding argument, an activity whose
// job's result code chooses the arc (weights 2 on the way in), a generated
// lock place.
const orders = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="orders" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="inbox"/>
   <place id="check"><name><text>check_credit(customer, &amp;limit)</text></name></place>
   <place id="approved"/><place id="rejected"/>
   <transition id="receive"><name><text>order(&amp;customer)</text></name></transition>
   <transition id="start"><name><text>/pass()</text></name></transition>
   <transition id="ok"/><transition id="no"/>
   <arc id="1" source="receive" target="inbox"><inscription><text>2</text></inscription></arc>
   <arc id="2" source="inbox" target="start"><inscription><text>2</text></inscription></arc>
   <arc id="3" source="start" target="check"/>
   <arc id="4" source="check" target="ok"><name><text>ok</text></name></arc><arc id="5" source="ok" target="approved"/>
   <arc id="6" source="check" target="no"/><arc id="7" source="no" target="rejected"/>
  </page>
 </net>
</pnml>`

const stuckJoin = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="choose-then-join" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="receive" type="wait" isStart="true"><arc to="ship" name="accept"/><arc to="refuse" name="reject"/></node>
  <node name="ship"><arc to="close"/></node>
  <node name="refuse"><arc to="close"/></node>
  <node name="close" joinType="and"/>
</process-definition>`

// TestNetConsoleInBrowser: Petri nets in the console: the net drawn with
// its tokens, weights and inhibitor arcs; the analysis on the definition
// page (a net's, and a Sarasvati graph's stuck AND join); a net process's
// marking, firing an enabled transition, sending an event, a running
// activity and its job's result moving the marking.
func TestNetConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if findChromium() == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the net views were not tested in a browser")
	}
	if _, err := embedded.Open("web/" + vendorMarker); err != nil {
		t.Skip("SKIPPED: the console's libraries are not built into this test binary; run `make console` first")
	}
	srv := startServer(t)
	b := newBrowser(t, srv, 900)
	b.login(srv.admin)

	// 1. The traffic light: drawn at its own positions, a token in yellow,
	// the two inhibitor arcs; its analysis says live, reversible, bounded.
	b.loadDefinition("nightly", nightly)
	b.wait("the net drawn", `document.querySelector('.net-host.laid-out') !== null`)
	if got := b.str(`document.querySelector('.graph-status').textContent`); got != "4 places, 5 transitions, 10 arcs" {
		t.Errorf("net status %q", got)
	}
	if got := b.str(`JSON.stringify(document.querySelector('.net-host').netState()['yellow'])`); !strings.Contains(got, `"tokens":1`) {
		t.Errorf("yellow %s, want one token", got)
	}
	if n := b.num(`document.querySelector('.net-host').netLabels().length`); n != 19 {
		t.Errorf("%d drawn elements, want 19 (9 nodes, 10 arcs)", n)
	}
	b.click("[data-read=analyse]")
	b.wait("the analysis", `document.querySelector('[data-analysis=live]') !== null`)
	for k, want := range map[string]string{"explored": "6 states, 11 edges", "live": "yes", "reversible": "yes", "deadlock-free": "yes", "bounded": "yes (at most 1 token in a place)"} {
		if got := b.str(fmt.Sprintf(`document.querySelector('[data-analysis=%q]').textContent`, k)); got != want {
			t.Errorf("analysis %s = %q, want %q", k, got, want)
		}
	}
	b.screenshot("net-definition.png")

	// 2. A Sarasvati graph whose AND join follows a choice: the analysis
	// names the stuck join with a firing sequence.
	b.loadDefinition("choose-then-join", stuckJoin)
	b.click("[data-read=analyse]")
	b.wait("the stuck joins", `document.querySelectorAll('.stuck-joins li').length === 2`)
	if got := b.str(`document.querySelector('.stuck-joins').innerText`); !strings.Contains(got, "and join of close waits on ship->close after receive leaves 'accept'") {
		t.Errorf("stuck joins read %q", got)
	}
	if got := b.str(`document.querySelector('[data-analysis=sound]').textContent`); got != "no" {
		t.Errorf("sound = %q", got)
	}
	b.screenshot("analysis-stuck-join.png")

	// 3. A process of the traffic light: fire stop with its button, send
	// the event dawn with the form; the drawing follows.
	var p struct{ ID string }
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "nightly"}, &p)
	b.goTo("#/processes/" + p.ID)
	b.wait("the net panel", `document.querySelectorAll('[data-action=fire]').length === 2`)
	b.click(`[data-action=fire][data-transition=stop]`)
	b.wait("red marked", `(() => { const s = document.querySelector('.net-host').netState(); return s.red.tokens === 1 && s.yellow.tokens === 0; })()`)
	b.do("name the event", chromedp.SetValue(chromedp.ID("net-event-name"), "dawn"))
	b.click("[data-action=send-event]")
	b.wait("night service", `(() => { const s = document.querySelector('.net-host').netState(); return s.night_service.tokens === 1 && /enabled/.test(s.sunset.classes) && !/enabled/.test(s.dawn.classes); })()`)
	if got := b.str(`document.querySelector('.net-event-result').textContent`); got != "Fired dawn." {
		t.Errorf("event result %q", got)
	}
	b.screenshot("net-process.png")

	// 4. orders: the event with an argument brings two tokens (weight 2),
	// the start transition fires by itself, the activity's place is busy;
	// the job's result code "no-credit" takes the catch-all arc.
	b.loadDefinition("orders", orders)
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "orders"}, &p)
	b.goTo("#/processes/" + p.ID)
	b.wait("the net panel", `document.querySelector('.net-event-form') !== null && document.querySelector('.net-host.laid-out') !== null`)
	b.do("name the event", chromedp.SetValue(chromedp.ID("net-event-name"), "order"))
	b.do("give its argument", chromedp.SetValue(chromedp.ID("net-event-args"), `{"customer": "acme"}`))
	b.click("[data-action=send-event]")
	b.wait("the activity running", `document.querySelector('[data-activity=check]') !== null && /busy/.test(document.querySelector('.net-host').netState().check.classes)`)
	if got := b.str(`document.querySelector('.net-vars').innerText`); !strings.Contains(got, "acme") {
		t.Errorf("variables read %q", got)
	}
	b.screenshot("net-activity.png")
	var act struct{ Jobs []struct{ ID string } }
	apiCall(t, srv, "POST", "/jobs/activate", map[string]any{"type": "check_credit", "worker": "w", "maxJobs": 1, "lockFor": "1m"}, &act)
	if len(act.Jobs) != 1 {
		t.Fatalf("jobs %+v", act)
	}
	apiCall(t, srv, "POST", "/jobs/"+act.Jobs[0].ID+"/complete", map[string]any{"worker": "w", "result": "no-credit", "env": map[string]any{"limit": 0}}, nil)
	b.wait("rejected", `(() => { const s = document.querySelector('.net-host').netState(); return s.rejected.tokens === 1 && !/busy/.test(s.check.classes); })()`)
	b.screenshot("net-activity-done.png")
}
