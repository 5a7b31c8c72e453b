package console

// The console's end-to-end test: a real headless Chromium, driven over the
// DevTools protocol, uses the console against a Veena server.
//
// By default the server is the in-memory stand-in of e2e_fake_test.go with
// the console Handler mounted at "/". To run against the real binary, set
// VEENA_E2E_SERVE to a command line template; the test fills in
//
//	{addr}    a free 127.0.0.1:port to listen on
//	{dir}     an empty temporary directory (for a database file)
//	{admin}   an access token that must have the admin role
//	{viewer}  an access token that must have the viewer role
//
// for example
//
//	VEENA_E2E_SERVE='bin/veena serve --listen {addr} --db {dir}/veena.db --token admin={admin} --token viewer={viewer}'
//
// and waits for GET /healthz. Other settings: VEENA_E2E_CHROMIUM (the browser;
// default chromium from PATH), VEENA_ARTIFACTS (where screenshots go; default
// ../artifacts, the repository's artifacts/). The test skips, saying why,
// when there is no browser or the console was not built (make console).

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
	"net/http/httptest"
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
				b.WriteString(`<guard>amount &gt; 100 ? Accept : Skip</guard>`)
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
}

func randomToken(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startServer starts the real `veena serve` when VEENA_E2E_SERVE says how,
// else the stand-in.
func startServer(t *testing.T) e2eServer {
	srv := e2eServer{admin: "admin-" + randomToken(t), viewer: "viewer-" + randomToken(t)}
	tmpl := os.Getenv("VEENA_E2E_SERVE")
	if tmpl == "" {
		fake := newFakeServer(map[string]string{srv.admin: "admin", srv.viewer: "viewer"})
		mux := http.NewServeMux()
		mux.Handle("/api/", fake.handler())
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		mux.Handle("/", Handler())
		ts := httptest.NewServer(mux)
		t.Cleanup(func() { fake.close(); ts.CloseClientConnections(); ts.Close() })
		srv.base = ts.URL
		t.Logf("server: in-memory stand-in at %s", ts.URL)
		return srv
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	line := strings.NewReplacer("{addr}", addr, "{dir}", t.TempDir(), "{admin}", srv.admin, "{viewer}", srv.viewer).Replace(tmpl)
	args := strings.Fields(line)
	cmd := exec.Command(args[0], args[1:]...)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", line, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			out, _ := os.ReadFile(logFile.Name())
			t.Logf("veena serve output:\n%s", out)
		}
	})
	srv.base = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(srv.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not answer /healthz within 30s (last error: %v)", line, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("server: %s at %s", line, srv.base)
	return srv
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

func (b *browser) click(css string) {
	b.t.Helper()
	b.do("click "+css, chromedp.Click(chromedp.CSS(css)))
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
	go func() {
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

	b := &browser{t: t, ctx: ctx, base: srv.base, dir: artifactsDir(t)}
	b.do("open the console", chromedp.Navigate(srv.base+"/"))

	// 1. Log in as an admin.
	first, err := chromedp.Run(ctx, chromedp.Poll[int](`document.querySelector('#token') ? 1 : document.querySelector('[data-role]') ? 2 : 0`,
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the console did not show a page: %v", err)
	}
	authRequired := first == 1
	if authRequired {
		b.login(srv.admin)
	} else {
		t.Log("the server runs open: login and the viewer role are not checked")
	}

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
	b.do("focus Complete", chromedp.Focus(chromedp.CSS(`.token-card [data-action=complete][data-node="check-stock"]`)))
	b.do("press Enter", chromedp.KeyEvent(kb.Enter))
	b.wait("the complete dialog", `document.activeElement && document.activeElement.closest('dialog') !== null`)
	b.do("focus the dialog's Complete", chromedp.Focus(chromedp.CSS("dialog [data-action=dialog-submit]")))
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
	b.wait("the merge in the timeline", `document.querySelector('.timeline li[data-type=ARC_TOKEN_MERGED]') !== null`)
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

	if !authRequired {
		return
	}
	// 10. A viewer sees the same pages without any action.
	b.do("log out", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`))
	b.do("reopen", chromedp.Navigate(srv.base+"/#/definitions"))
	b.login(srv.viewer)
	if got := b.str(`document.querySelector('[data-role]').dataset.role`); got != "viewer" {
		t.Errorf("role shown = %q, want viewer", got)
	}
	for _, route := range []string{"#/definitions", "#/definitions/order-review", "#/processes", "#/processes/" + procID} {
		b.goTo(route)
		b.wait("the page "+route, `document.querySelector('main h1') !== null && (!document.querySelector('.graph-host') || document.querySelector('.graph-host.laid-out') !== null)`)
		time.Sleep(300 * time.Millisecond)
		if n := b.num(`document.querySelectorAll('main [data-action]').length`); n != 0 {
			t.Errorf("viewer sees %d action controls on %s: %s", n, route,
				b.str(`[...document.querySelectorAll('main [data-action]')].map(e => e.dataset.action).join(', ')`))
		}
	}
	b.wait("the viewer's process page to follow the stream", `document.querySelector('.live') && document.querySelector('.live').dataset.state === 'live'`)
	b.screenshot("process-viewer.png")
}
