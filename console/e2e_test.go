package console

// The console's end-to-end test: a real headless Chromium, driven over the
// DevTools protocol, uses the console of a real `veena serve`. The test builds
// the binary from this working tree, starts it on a free loopback port with a
// fresh SQLite database and an admin and a viewer access token, and plays the
// console's scenarios through the page.
//
// Settings: VEENA_E2E_CHROMIUM (the browser; default chromium from PATH) and
// VEENA_ARTIFACTS (where screenshots go; default ../artifacts, the
// repository's artifacts/). The test skips, saying why, when there is no
// browser or the console's libraries were not built (make console).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/veena-wf/veena/internal/testutil"
)

// orderReview has a split (two default arcs out of "split") and an and-join.
const orderReview = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="order-review" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="receive" isStart="true">
    <arc to="split"/>
  </node>
  <node name="split">
    <arc to="check-stock"/>
    <arc to="check-credit"/>
  </node>
  <node name="check-stock" type="wait">
    <arc to="join"/>
  </node>
  <node name="check-credit" type="wait">
    <guard>Accept</guard>
    <arc name="approved" to="join"/>
    <arc name="rejected" to="reject"/>
  </node>
  <node name="join" joinType="and">
    <arc to="ship"/>
  </node>
  <node name="ship" type="wait">
    <arc to="done"/>
  </node>
  <node name="reject">
    <arc to="done"/>
  </node>
  <node name="done"/>
</process-definition>
`

const approval = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="approval" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="review" type="wait" isStart="true">
    <arc name="ok" to="sign"/>
    <arc name="redo" to="review-again"/>
  </node>
  <node name="review-again" type="wait">
    <arc to="sign"/>
  </node>
  <node name="sign">
    <arc to="archive"/>
  </node>
  <node name="archive"/>
</process-definition>
`

// inspection is started as a nested process by shipment.
const inspection = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="inspection" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="inspect" type="wait" isStart="true">
    <arc to="report"/>
  </node>
  <node name="report"/>
</process-definition>
`

// shipment runs inspection as a nested process, and has a guard that
// discards its token and one that skips its node unless the process says
// otherwise.
const shipment = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="shipment" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="pack" isStart="true">
    <arc to="inspection"/>
    <arc to="gift-wrap"/>
    <arc to="insure"/>
  </node>
  <node name="inspection" type="nested">
    <arc to="dispatch"/>
    <custom><graphName>inspection</graphName></custom>
  </node>
  <node name="gift-wrap">
    <guard>if giftWrap then Accept else Discard</guard>
    <arc to="dispatch"/>
  </node>
  <node name="insure">
    <guard>if insured then Accept else Skip</guard>
    <arc to="dispatch"/>
  </node>
  <node name="dispatch" type="wait"/>
</process-definition>
`

// bigDefinition is a 200-node graph: 192 own nodes (38 stages of 5, a begin
// and a finish) plus two instances of approval (4 nodes each), with joins,
// guards and named arcs.
func bigDefinition() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<process-definition name="big-flow" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">` + "\n")
	const stages, width = 38, 5
	name := func(s, i int) string { return fmt.Sprintf("s%02d-%c", s, 'a'+i) }
	b.WriteString(`  <node name="begin" isStart="true">`)
	for i := 0; i < width; i++ {
		fmt.Fprintf(&b, `<arc to="%s"/>`, name(0, i))
	}
	b.WriteString("</node>\n")
	for s := 0; s < stages; s++ {
		for i := 0; i < width; i++ {
			typ := []string{"node", "wait", "node", "script", "node"}[(s+i)%5]
			join := ""
			if s > 0 && i%2 == 0 {
				join = ` joinType="and"`
			}
			fmt.Fprintf(&b, `  <node name="%s" type="%s"%s>`, name(s, i), typ, join)
			if (s*width+i)%7 == 3 {
				b.WriteString(`<guard>if large then Accept else Skip</guard>`)
			}
			switch {
			case s == stages-1:
				b.WriteString(`<arc to="finish"/>`)
			case s == 19 && i == 0:
				b.WriteString(`<arc external="first-approval" to="review"/>`)
			case s == 19 && i == 4:
				b.WriteString(`<arc external="second-approval" to="review"/>`)
			default:
				fmt.Fprintf(&b, `<arc to="%s"/>`, name(s+1, i))
				if i+1 < width && (s+i)%3 == 0 {
					fmt.Fprintf(&b, `<arc name="escalate" to="%s"/>`, name(s+1, i+1))
				}
			}
			if typ == "script" {
				b.WriteString(`<custom><execute type="js">env.setAttribute("seen", true)</execute></custom>`)
			}
			b.WriteString("</node>\n")
		}
	}
	b.WriteString(`  <node name="finish" joinType="or"/>` + "\n")
	b.WriteString(`  <external name="first-approval" processDefinition="approval"><arc from="archive" to="s20-a"/></external>` + "\n")
	b.WriteString(`  <external name="second-approval" processDefinition="approval"><arc from="archive" to="s20-e"/></external>` + "\n")
	b.WriteString("</process-definition>\n")
	return b.String()
}

type e2eServer struct {
	base          string
	admin, viewer string
	bin           string // the veena binary, for the command line
}

func randomToken(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// buildVeena builds cmd/veena, with the console as it is in this working
// tree, into a temporary directory.
func buildVeena(t *testing.T) string {
	bin, err := testutil.BuildVeena(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startServer builds and starts `veena serve` on a free loopback port, with a
// fresh database and an admin and a viewer access token, and waits until it
// answers /healthz.
func startServer(t *testing.T) e2eServer {
	srv := e2eServer{admin: "admin-" + randomToken(t), viewer: "viewer-" + randomToken(t)}
	began := time.Now()
	bin := buildVeena(t)
	t.Logf("built veena in %s", time.Since(began).Round(time.Millisecond))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	args := []string{"serve", "--addr", addr, "--db", filepath.Join(dir, "veena.db"), "--drain", "2s",
		"--token", "admin=" + srv.admin, "--token", "viewer=" + srv.viewer}
	cmd := exec.Command(bin, args...)
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start veena serve: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logFile.Name())
			t.Logf("veena serve output:\n%s", out)
		}
	})
	srv.base = "http://" + addr
	srv.bin = bin
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(srv.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(logFile.Name())
			t.Fatalf("veena serve %s exited before it answered /healthz:\n%s", strings.Join(args, " "), out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("veena serve did not answer /healthz within 30s (last error: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("server: veena serve at %s", srv.base)
	return srv
}

// checkShownIDs checks the ids the links under css show (at least want of
// them, processes started in a burst): each is the start of its process's
// id, which the link's title gives in full, and the command line, given
// just what is shown, finds that process.
func checkShownIDs(t *testing.T, srv e2eServer, b *browser, css string, want int) {
	t.Helper()
	var links []struct{ Href, Title, Text string }
	if err := json.Unmarshal([]byte(b.str(fmt.Sprintf(`JSON.stringify([...document.querySelectorAll(%q)].map((a) => ({ href: decodeURIComponent(a.getAttribute('href')), title: a.title, text: a.innerText })))`, css))), &links); err != nil {
		t.Fatal(err)
	}
	if len(links) < want {
		t.Fatalf("%d links under %s, want %d or more", len(links), css, want)
	}
	for _, l := range links {
		id := strings.TrimPrefix(l.Href, "#/processes/")
		shown := strings.TrimSuffix(strings.TrimSpace(l.Text), "…")
		if l.Title != id {
			t.Errorf("the link to %s has title %q, want the full id", id, l.Title)
		}
		if len(shown) < 8 || !strings.HasPrefix(id, shown) {
			t.Errorf("the link to %s shows %q, want the start of the id", id, l.Text)
			continue
		}
		cmd := exec.Command(srv.bin, "processes", "show", shown, "--url", srv.base, "--token", srv.admin)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "Process "+id+"\n") {
			t.Errorf("veena processes show %s (as shown for %s): %v\n%s", shown, id, err, out)
		}
	}
}

// apiCall is the test's own client of the HTTP API, for changes the page
// must notice by itself.
func apiCall(t *testing.T, srv e2eServer, method, path string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.base+"/api/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+srv.admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %s %s", method, path, res.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

func findChromium() string {
	if p := os.Getenv("VEENA_E2E_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func artifactsDir(t *testing.T) string {
	dir := os.Getenv("VEENA_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// browser is one Chromium tab with the helpers the test needs.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls a JavaScript predicate until it is true.
func (b *browser) wait(what, predicate string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v\npage: %s", what, predicate, err, b.str(`document.querySelector('main').innerText.slice(0, 1500)`))
	}
}

func (b *browser) str(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

func (b *browser) num(expr string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return n
}

// click clicks an element with the mouse. The page rebuilds parts of itself
// on live updates, so an element found may be replaced before the click
// lands; the click is then tried again on the new one.
func (b *browser) click(css string) {
	b.t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		_, err = chromedp.Run(ctx, chromedp.Click(chromedp.CSS(css)))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "not attached") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("click %s: %v", css, err)
	}
}

// focus gives an element the keyboard focus, again if a live update
// replaced it meanwhile (as click does).
func (b *browser) focus(css string) {
	b.t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		_, err = chromedp.Run(ctx, chromedp.Focus(chromedp.CSS(css)))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "not attached") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("focus %s: %v", css, err)
	}
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	b.do("tidy the page for the screenshot", chromedp.Evaluate[chromedp.Void](
		`window.scrollTo(0, 0); document.getElementById('toast').hidden = true; document.activeElement && document.activeElement.blur && document.activeElement.blur()`))
	time.Sleep(150 * time.Millisecond)
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
}

func (b *browser) goTo(route string) {
	b.t.Helper()
	b.do("go to "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, route)))
}

// loadDefinition loads a definition file through the page's dialog and
// waits for its definition page.
func (b *browser) loadDefinition(name, text string) {
	b.t.Helper()
	b.goTo("#/definitions")
	b.wait("the definitions page", `document.querySelector('[data-action=load-definition]') !== null`)
	b.click("[data-action=load-definition]")
	b.do("paste the definition", chromedp.SetValue(chromedp.ID("def-text"), text))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the page of "+name, fmt.Sprintf(`location.hash.startsWith('#/definitions/%s/') && document.querySelector('.graph-host.laid-out') !== null`, name))
}

func (b *browser) login(token string) {
	b.t.Helper()
	b.wait("the login form", `document.querySelector('#token') !== null`)
	b.do("type the access token", chromedp.SendKeys(chromedp.ID("token"), token))
	b.click("[data-action=login]")
	b.wait("being logged in", `document.querySelector('[data-role]') !== null && !location.hash.startsWith('#/login')`)
}

func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := findChromium()
	if chromium == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the console was not tested in a browser")
	}
	if _, err := embedded.Open("web/" + vendorMarker); err != nil {
		t.Skip("SKIPPED: the console's libraries are not built into this test binary; run `make console` first")
	}
	srv := startServer(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", chromium, err)
	}

	// Every uncaught exception in the page fails the test.
	var mu sync.Mutex
	var exceptions []string
	msgs := chromedp.Console(ctx)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.Logf("browser console: %s", m)
			if m.IsException() {
				mu.Lock()
				exceptions = append(exceptions, m.String())
				mu.Unlock()
			}
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	}()
	// Close the browser and let the console reader finish before the
	// exceptions are counted and the test ends.
	defer func() {
		cancel()
		select {
		case <-logged:
		case <-time.After(5 * time.Second):
		}
	}()

	b := &browser{t: t, ctx: ctx, base: srv.base, dir: artifactsDir(t)}
	// The same page size for every screenshot, whatever the window's frame takes.
	b.do("set the viewport", chromedp.EmulateViewport(1440, 900))
	b.do("open the console", chromedp.Navigate(srv.base+"/"))

	// 1. The server has access tokens: the console asks for one. Log in as an admin.
	b.login(srv.admin)

	// 2. A definition that fails to load is explained with its line.
	b.wait("the definitions page", `document.querySelector('[data-action=load-definition]') !== null`)
	b.click("[data-action=load-definition]")
	b.do("paste a broken definition", chromedp.SetValue(chromedp.ID("def-text"), "<process-definition name=\"broken\">\n<node name=\"a\">\n</process-definition>"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the load error", `(() => { const e = document.querySelector('dialog .error-box'); return e && !e.hidden && /could not be loaded/.test(e.innerText) && /line \d+/.test(e.innerText); })()`)
	b.click("dialog [data-action=dialog-cancel]")

	// 3. Load the definitions; the split/join one is drawn.
	b.loadDefinition("approval", approval)
	b.loadDefinition("big-flow", bigDefinition())
	if got := b.str(`document.querySelector('.graph-status').textContent`); !strings.HasPrefix(got, "200 nodes") {
		t.Errorf("big-flow graph status = %q, want 200 nodes", got)
	}
	b.screenshot("definition-large.png")
	b.click(`table.nodes tr[data-key="first-approval/review"] button`)
	b.click(".graph-tools button[aria-label='Zoom out']")
	b.screenshot("definition-large-externals.png")
	b.loadDefinition("order-review", orderReview)
	if got := b.str(`document.querySelector('.graph-status').textContent`); got != "8 nodes, 9 arcs" {
		t.Errorf("graph status = %q, want 8 nodes, 9 arcs", got)
	}
	if got := b.str(`document.querySelector('table.nodes tr[data-key=join]').innerText`); !strings.Contains(got, "and-join") {
		t.Errorf("the join row reads %q, want and-join", got)
	}
	b.screenshot("definition.png")

	// Hovering a node shows its guard.
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ X, Y float64 }](`document.querySelector('.graph-host').nodeScreenPosition('check-credit')`))
	if err != nil {
		t.Fatalf("position of check-credit: %v", err)
	}
	b.do("hover check-credit", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y))
	b.wait("the guard tooltip", `(() => { const t = document.querySelector('.graph-tip'); return t && !t.hidden && /guard: Accept/.test(t.innerText); })()`)
	b.screenshot("definition-hover.png")
	b.do("move away", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 5, 5))

	// The source file is the one loaded.
	b.click(".source-panel summary")
	b.wait("the source file", `/<node name="check-credit" type="wait">/.test(document.querySelector('pre.source').textContent)`)

	// 4. Start a process with an attribute.
	b.click(".page-head [data-action=start-process]")
	b.click("dialog .attrs button.small")
	b.do("fill the attribute",
		chromedp.SetValue(chromedp.CSS("dialog .attr-name"), "amount"),
		chromedp.SetValue(chromedp.CSS("dialog .attr-value"), "250"))
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the process page", `location.hash.startsWith('#/processes/') && document.querySelector('.token-card [data-action=complete][data-node="check-stock"]') !== null`)
	b.wait("the overlay", `/check-credit=active/.test(document.querySelector('.graph-host').dataset.tokenState || '') && /check-stock=active/.test(document.querySelector('.graph-host').dataset.tokenState || '')`)
	procID := strings.TrimPrefix(b.str(`decodeURIComponent(location.hash)`), "#/processes/")
	if got := b.str(`document.querySelector('table.env').innerText`); !strings.Contains(got, "amount") || !strings.Contains(got, "250") {
		t.Errorf("process environment shows %q, want amount 250", got)
	}
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__veenaSamePage = 'yes'`))
	events := b.num(`document.querySelectorAll('.timeline li.ev').length`)

	// 5. Complete check-stock from the page: the arc waits at the and-join.
	b.click(`.token-card [data-action=complete][data-node="check-stock"]`)
	b.wait("the complete dialog", `document.querySelector('dialog input[type=checkbox]') !== null`)
	b.click("dialog [data-action=dialog-submit]")
	b.wait("check-stock completed and join waiting in the graph",
		`(() => { const s = document.querySelector('.graph-host').dataset.tokenState || ''; return /check-stock=completed/.test(s) && /join=waiting/.test(s); })()`)
	b.wait("the timeline to grow", fmt.Sprintf(`document.querySelectorAll('.timeline li.ev').length > %d && document.querySelector('.timeline li[data-type=ARC_TOKEN_INCOMPLETE_JOIN]') !== null`, events))
	if got := b.str(`document.querySelector('.graph-host').dataset.waitingArcs`); got != "check-stock->join" {
		t.Errorf("waiting arcs = %q, want check-stock->join", got)
	}
	b.screenshot("process-join-waiting.png")

	// 6. Backtrack to check-stock from the page: it is active again.
	b.click(`tr [data-action=backtrack][data-node="check-stock"]`)
	b.click("dialog [data-action=dialog-submit]")
	b.wait("check-stock active again", `/check-stock=active/.test(document.querySelector('.graph-host').dataset.tokenState || '') && !(document.querySelector('.graph-host').dataset.waitingArcs || '').includes('check-stock')`)

	// 7. Complete it again with the keyboard only.
	b.focus(`.token-card [data-action=complete][data-node="check-stock"]`)
	b.do("press Enter", chromedp.KeyEvent(kb.Enter))
	b.wait("the complete dialog", `document.activeElement && document.activeElement.closest('dialog') !== null`)
	b.focus("dialog [data-action=dialog-submit]")
	b.do("press Enter", chromedp.KeyEvent(kb.Enter))
	b.wait("join waiting again", `/join=waiting/.test(document.querySelector('.graph-host').dataset.tokenState || '')`)

	// 8. Someone else completes check-credit on arc "approved" through the API:
	// the page follows the event stream and shows the join firing.
	var tokens struct {
		NodeTokens []struct {
			ID       string `json:"id"`
			Node     string `json:"node"`
			Complete bool   `json:"complete"`
		} `json:"nodeTokens"`
	}
	apiCall(t, srv, "GET", "/processes/"+procID+"/tokens", nil, &tokens)
	credit := ""
	for _, nt := range tokens.NodeTokens {
		if nt.Node == "check-credit" && !nt.Complete {
			credit = nt.ID
		}
	}
	if credit == "" {
		t.Fatalf("no active check-credit token in %+v", tokens)
	}
	apiCall(t, srv, "POST", "/node-tokens/"+credit+"/complete", map[string]any{"arcs": []string{"approved"}}, nil)
	b.wait("the join to fire and ship to wait, from the event stream",
		`(() => { const s = document.querySelector('.graph-host').dataset.tokenState || ''; return /join=completed/.test(s) && /ship=active/.test(s) && /check-credit=completed/.test(s); })()`)
	b.wait("the join's and ship's tokens in the timeline", `(() => {
		const created = [...document.querySelectorAll('.timeline li[data-type=NODE_TOKEN_CREATED] strong')].map((e) => e.textContent);
		return created.includes('join') && created.includes('ship');
	})()`)
	if b.str(`String(window.__veenaSamePage)`) != "yes" {
		t.Errorf("the page was reloaded; it should update in place")
	}
	b.screenshot("process.png")

	b.goTo("#/processes?definition=order-review")
	b.wait("the processes list", `document.querySelector('table.processes a[data-process]') !== null`)
	b.screenshot("processes.png")

	// The list pages with the server's cursor: 27 processes are 25 and 2.
	for i := 0; i < 26; i++ {
		apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "order-review"}, nil)
	}
	b.goTo("#/processes?definition=order-review&state=executing")
	b.wait("the first page", `document.querySelectorAll('table.processes tbody tr').length === 25 && document.querySelector('[data-pager=next]') !== null`)
	b.click("[data-pager=next]")
	b.wait("the second page", `document.querySelectorAll('table.processes tbody tr').length === 2 && document.querySelector('[data-pager=next]') === null`)
	b.click("[data-pager=previous]")
	b.wait("the first page again", `document.querySelectorAll('table.processes tbody tr').length === 25`)
	checkShownIDs(t, srv, b, "table.processes tbody a[data-process]", 25)

	// 9. On a narrow screen the page stacks.
	b.do("narrow viewport", chromedp.EmulateViewport(390, 844))
	b.goTo("#/definitions")
	b.goTo("#/processes/" + procID)
	b.wait("the narrow process page", `document.querySelector('.graph-host.laid-out') !== null && document.querySelector('.token-card') !== null`)
	if w := b.num(`document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("narrow page is %dpx wide, want it to fit 390px", w)
	}
	b.screenshot("process-narrow.png")
	b.do("wide viewport", chromedp.EmulateViewport(1440, 900))

	// 10. Guards that discard and skip, and a nested process, linked both ways.
	b.loadDefinition("inspection", inspection)
	b.loadDefinition("shipment", shipment)
	var parent struct {
		ID string `json:"id"`
	}
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "shipment", "env": map[string]any{"giftWrap": false, "insured": false}}, &parent)
	b.goTo("#/processes/" + parent.ID)
	b.wait("the shipment's token state", `(() => {
		const s = document.querySelector('.graph-host.laid-out') && document.querySelector('.graph-host').dataset.tokenState || '';
		return /gift-wrap=discarded/.test(s) && /insure=skipped/.test(s) && /inspection=active/.test(s) && /dispatch=active/.test(s);
	})()`)
	b.wait("the guard results in the history and the timeline", `(() => {
		const row = (node) => [...document.querySelectorAll('table.tokens tbody tr')].find((r) => r.cells[0].innerText === node);
		const ev = (type) => document.querySelector('.timeline li.ev-discard[data-type=' + type + ']');
		return row('gift-wrap') && row('gift-wrap').classList.contains('tok-discarded') && row('gift-wrap').cells[3].innerText === 'discard'
			&& row('insure') && row('insure').classList.contains('tok-skipped') && row('insure').cells[3].innerText === 'skip'
			&& ev('NODE_TOKEN_DISCARDED') && ev('NODE_TOKEN_SKIPPED');
	})()`)
	b.wait("the link to the nested process", `document.querySelector('.relations a[data-rel=child]') !== null`)
	if n := b.num(`document.querySelectorAll('.token-card[data-node=inspection] [data-action=complete]').length`); n != 0 {
		t.Errorf("the nested node's token offers Complete while its nested process runs")
	}
	b.screenshot("process-nested-parent.png")
	b.click(".relations a[data-rel=child]")
	b.wait("the nested process page", `document.querySelector('.relations a[data-rel=parent]') !== null && document.querySelector('.graph-host.laid-out') !== null && document.querySelector('.token-card [data-action=complete][data-node=inspect]') !== null`)
	if got := b.str(`document.querySelector('.relations').innerText`); !strings.Contains(got, "at node inspection") {
		t.Errorf("the nested process's relations read %q, want the parent's node inspection", got)
	}
	childID := strings.TrimPrefix(b.str(`decodeURIComponent(location.hash)`), "#/processes/")
	b.screenshot("process-nested-child.png")
	b.click(`.token-card [data-action=complete][data-node=inspect]`)
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the nested process to complete", `document.querySelector('.badge-slot').dataset.state === 'completed' && /report=completed/.test(document.querySelector('.graph-host').dataset.tokenState || '')`)
	b.click(".relations a[data-rel=parent]")
	b.wait("the parent to have moved on", fmt.Sprintf(`(() => {
		const s = document.querySelector('.graph-host.laid-out') && document.querySelector('.graph-host').dataset.tokenState || '';
		const child = document.querySelector('.relations a[data-rel=child]');
		return decodeURIComponent(location.hash) === %q && /inspection=completed/.test(s) && /dispatch=active/.test(s)
			&& child !== null && /completed/.test(child.parentElement.innerText);
	})()`, "#/processes/"+parent.ID))
	b.screenshot("process-nested-done.png")
	// The list filtered by the parent token shows the nested process and leads back.
	var child struct {
		ParentToken string `json:"parentToken"`
	}
	apiCall(t, srv, "GET", "/processes/"+childID, nil, &child)
	b.goTo("#/processes?parentToken=" + child.ParentToken)
	b.wait("the nested processes list", fmt.Sprintf(`document.querySelectorAll('table.processes tbody tr').length === 1 && document.querySelector('table.processes a[data-process=%q]') !== null`, childID))
	b.click("table.processes tbody tr button.link")
	b.wait("the parent process page", fmt.Sprintf(`decodeURIComponent(location.hash) === %q && document.querySelector('[data-action=cancel-process]') !== null`, "#/processes/"+parent.ID))

	// 11. Cancel the parent from the page: it ends, and its tokens offer nothing more.
	b.click("[data-action=cancel-process]")
	b.click("dialog [data-action=dialog-submit]")
	b.wait("the process to be canceled", `document.querySelector('.badge-slot').dataset.state === 'canceled' && document.querySelectorAll('main [data-action]').length === 0`)

	// 12. A viewer sees the same pages without any action that changes
	// something (analysing a net only reads).
	b.do("log out", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`))
	b.do("reopen", chromedp.Navigate(srv.base+"/#/definitions"))
	b.login(srv.viewer)
	if got := b.str(`document.querySelector('[data-role]').dataset.role`); got != "viewer" {
		t.Errorf("role shown = %q, want viewer", got)
	}
	for _, route := range []string{"#/definitions", "#/definitions/order-review", "#/processes", "#/processes/" + parent.ID, "#/processes/" + procID} {
		b.goTo(route)
		b.wait("the page "+route, `document.querySelector('main h1') !== null && (!document.querySelector('.graph-host') || document.querySelector('.graph-host.laid-out') !== null)`)
		time.Sleep(300 * time.Millisecond)
		if n := b.num(`document.querySelectorAll('main [data-action]:not([data-action=analyse])').length`); n != 0 {
			t.Errorf("viewer sees %d action controls on %s: %s", n, route,
				b.str(`[...document.querySelectorAll('main [data-action]:not([data-action=analyse])')].map(e => e.dataset.action).join(', ')`))
		}
	}
	b.wait("the viewer's process page to follow the stream", `document.querySelector('.live') && document.querySelector('.live').dataset.state === 'live'`)
	b.screenshot("process-viewer.png")
}
