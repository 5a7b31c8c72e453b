package console

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/veena-wf/veena/internal/auth"
)

// purchase asks the sales group to approve a purchase, then a worker to
// order it.
const purchase = `<?xml version="1.0" encoding="UTF-8"?>
<process-definition name="purchase" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="request" isStart="true"><arc to="approve"/></node>
  <node name="approve" type="wait">
    <arc name="approve" to="order"/>
    <arc name="reject" to="rejected"/>
    <custom>
      <task>
        <label>Approve the purchase</label>
        <candidateGroups>sales</candidateGroups>
        <priority env="priority"/>
        <due>P1D</due>
      </task>
    </custom>
  </node>
  <node name="order" type="wait">
    <arc to="done"/>
    <custom><job type="place-order" retries="1"/></custom>
  </node>
  <node name="done"/>
  <node name="rejected"/>
</process-definition>
`

// startWorkServer starts `veena serve` with a token file holding an admin
// and two users of the sales group, alice and bob.
func startWorkServer(t *testing.T) (base string, tokens map[string]string) {
	bin := buildVeena(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	tokens = map[string]string{}
	for _, u := range []struct {
		name   string
		role   auth.Role
		groups []string
	}{{"root", auth.RoleAdmin, nil}, {"alice", auth.RoleOperator, []string{"sales"}}, {"bob", auth.RoleOperator, []string{"sales"}}} {
		secret, err := auth.Create(file, u.name, u.role, u.groups...)
		if err != nil {
			t.Fatal(err)
		}
		tokens[u.name] = secret
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--db", filepath.Join(dir, "veena.db"), "--drain", "2s", "--tokens-file", file)
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
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
	base = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return base, tokens
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("veena serve did not answer /healthz: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTasklistInBrowser: alice and bob, both of the sales group, each in a
// tab of their own. Alice claims the task; bob sees it taken and cannot
// claim it; alice saves it for later and completes it with an outcome;
// the process page shows the audit trail and the metrics; an incident is
// resolved in the incidents view. Screenshots go to artifacts/
// (tasklist-alice.png, tasklist-bob-taken.png, task-saved.png,
// process-record.png, incidents.png).
func TestTasklistInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium := findChromium()
	if chromium == "" {
		t.Skip("SKIPPED: no Chromium found (apt-get install chromium, or set VEENA_E2E_CHROMIUM); the Tasklist was not tested in a browser")
	}
	if _, err := embedded.Open("web/" + vendorMarker); err != nil {
		t.Skip("SKIPPED: the console's libraries are not built into this test binary; run `make console` first")
	}
	base, tokens := startWorkServer(t)
	srv := e2eServer{base: base, admin: tokens["root"]}
	loadDef(t, srv, purchase)
	var p1, p2 struct{ ID string }
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "purchase", "env": map[string]any{"priority": 80, "amount": 1200, "approved": false, "comment": ""}}, &p1)
	apiCall(t, srv, "POST", "/processes", map[string]any{"definition": "purchase", "env": map[string]any{"priority": 30, "amount": 90, "approved": false, "comment": ""}}, &p2)

	// Each user has a browser of their own, as two people would.
	newBrowser := func() context.Context {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("no-first-run", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 1000))
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		t.Cleanup(cancelAlloc)
		ctx, cancel := chromedp.NewContext(allocCtx)
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("start Chromium %s: %v", chromium, err)
		}
		return ctx
	}
	aliceCtx, bobCtx := newBrowser(), newBrowser()
	dir := artifactsDir(t)
	alice := &browser{t: t, ctx: aliceCtx, base: base, dir: dir}
	bob := &browser{t: t, ctx: bobCtx, base: base, dir: dir}
	for i, b := range []*browser{alice, bob} {
		who := []string{"alice", "bob"}[i]
		b.do("open the console for "+who, chromedp.Navigate(base+"/"))
		b.do("set the viewport for "+who, chromedp.EmulateViewport(1440, 1000))
	}
	alice.login(tokens["alice"])
	bob.login(tokens["bob"])

	// Both see the two tasks in their inbox, the more urgent first.
	for _, b := range []*browser{alice, bob} {
		b.goTo("#/tasks")
		b.wait("the inbox", `document.querySelectorAll('table.tasks tbody tr').length === 2`)
	}
	if got := alice.str(`document.querySelector('table.tasks tbody tr strong').textContent`); got != "Approve the purchase" {
		t.Fatalf("first task %q", got)
	}
	first := alice.str(`document.querySelector('table.tasks tbody tr').dataset.task`)
	if !strings.HasPrefix(first, p1.ID+".t") {
		t.Fatalf("the first task %s is not the priority 80 one of %s", first, p1.ID)
	}

	// Alice claims it.
	alice.click(fmt.Sprintf(`tr[data-task="%s"]`, first))
	alice.wait("the task panel", `document.querySelector('[data-action=claim]') !== null`)
	alice.click("[data-action=claim]")
	alice.wait("the claim", `document.querySelector('[data-field=held-by]') && document.querySelector('[data-field=held-by]').textContent.startsWith('alice')`)
	alice.wait("the row held by alice", fmt.Sprintf(`document.querySelector('tr[data-task="%s"] .held.mine') !== null`, first))
	alice.screenshot("tasklist-alice.png")

	// Bob sees it taken, and cannot claim it.
	bob.click("[data-action=refresh-tasks]")
	bob.wait("the task taken by alice", fmt.Sprintf(`document.querySelector('tr[data-task="%s"] [data-held-by=alice]') !== null`, first))
	bob.click(fmt.Sprintf(`tr[data-task="%s"]`, first))
	bob.wait("the notice", `document.querySelector('[data-notice=taken]') !== null`)
	if n := bob.num(`document.querySelectorAll('[data-action=complete], [data-action=save]').length`); n != 0 {
		t.Fatalf("bob may save or complete a task alice holds (%d buttons)", n)
	}
	bob.click("[data-action=claim]")
	bob.wait("the refusal", `(document.querySelector('.task-panel [data-error=task_claimed]') || {}).textContent?.includes('claimed by alice')`)
	bob.screenshot("tasklist-bob-taken.png")

	// Alice saves for later: the data stays, the lock too.
	alice.do("write a comment", chromedp.SetValue(`[data-field=comment]`, "checked with finance"))
	alice.click("[data-action=save]")
	alice.wait("the saved data", `document.querySelector('[data-ok]') !== null && document.querySelector('[data-field=comment]').value === 'checked with finance'`)
	var saved struct {
		State     string
		ClaimedBy string
		Data      map[string]any
	}
	apiCall(t, srv, "GET", "/tasks/"+first, nil, &saved)
	if saved.State != "claimed" || saved.ClaimedBy != "alice" || saved.Data["comment"] != "checked with finance" {
		t.Fatalf("task after save: %+v", saved)
	}
	alice.screenshot("task-saved.png")

	// Alice approves and completes it.
	alice.click(`[data-field=approved]`)
	alice.do("choose the outcome", chromedp.SetValue(`#outcome`, "approve"))
	alice.click("[data-action=complete]")
	alice.wait("the task gone from the inbox", fmt.Sprintf(`document.querySelector('tr[data-task="%s"]') === null && document.querySelectorAll('table.tasks tbody tr').length === 1`, first))
	var done struct {
		State       string
		CompletedBy string
	}
	apiCall(t, srv, "GET", "/tasks/"+first, nil, &done)
	var proc struct {
		Env map[string]any
	}
	apiCall(t, srv, "GET", "/processes/"+p1.ID, nil, &proc)
	if done.State != "completed" || done.CompletedBy != "alice" || proc.Env["approved"] != true || proc.Env["comment"] != "checked with finance" {
		t.Fatalf("after completion: task %+v, env %v", done, proc.Env)
	}

	// The job fails for good: an incident, resolved in the incidents view.
	var act struct {
		Jobs []struct{ ID string }
	}
	apiCall(t, srv, "POST", "/jobs/activate", map[string]any{"type": "place-order", "worker": "w1"}, &act)
	if len(act.Jobs) != 1 {
		t.Fatalf("jobs %+v", act)
	}
	apiCall(t, srv, "POST", "/jobs/"+act.Jobs[0].ID+"/fail", map[string]any{"worker": "w1", "retries": 0, "message": "supplier offline"}, nil)
	alice.goTo("#/incidents")
	alice.wait("the incident", `document.querySelector('table.incidents [data-action=resolve]') !== null`)
	if got := alice.str(`document.querySelector('table.incidents td.message').textContent`); got != "supplier offline" {
		t.Fatalf("incident message %q", got)
	}
	alice.screenshot("incidents.png")
	alice.click("table.incidents [data-action=resolve]")
	alice.wait("no open incident", `document.querySelector('table.incidents') === null && document.querySelector('main').innerText.includes('No open incidents.')`)
	apiCall(t, srv, "POST", "/jobs/activate", map[string]any{"type": "place-order", "worker": "w2"}, &act)
	apiCall(t, srv, "POST", "/jobs/"+act.Jobs[0].ID+"/complete", map[string]any{"worker": "w2"}, nil)

	// The process page shows the audit trail, with who did what, and the metrics.
	alice.goTo("#/processes/" + p1.ID)
	alice.wait("the audit trail", `document.querySelector('table.audit-trail tr[data-audit=process_completed]') !== null`)
	trail := alice.str(`Array.from(document.querySelectorAll('table.audit-trail tbody tr')).map((r) => r.dataset.audit + ':' + r.querySelector('[data-user]').dataset.user).join(' ')`)
	for _, want := range []string{"task_claimed:alice", "task_saved:alice", "task_completed:alice", "job_failed:w1", "incident_resolved:alice", "job_completed:w2"} {
		if !strings.Contains(trail, want) {
			t.Errorf("the audit trail lacks %s: %s", want, trail)
		}
	}
	// Actions read as words, not as their codes.
	if said := alice.str(`document.querySelector('table.audit-trail tr[data-audit=task_saved] td:nth-child(2)').textContent`); said != "task saved for later" {
		t.Errorf("the audit trail says %q for task_saved, want %q", said, "task saved for later")
	}
	if n := alice.num(`document.querySelectorAll('table.metric-table tbody tr').length`); n != 4 {
		t.Errorf("%d metrics, want 4", n)
	}
	alice.do("scroll to the record", chromedp.Evaluate[chromedp.Void](`document.querySelector('.record').scrollIntoView()`))
	buf, err := chromedp.Run(aliceCtx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "process-record.png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadDef loads a definition through the HTTP API as the admin.
func loadDef(t *testing.T, srv e2eServer, src string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.base+"/api/v1/definitions", strings.NewReader(src))
	req.Header.Set("Authorization", "Bearer "+srv.admin)
	req.Header.Set("Content-Type", "application/xml")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 && res.StatusCode != 200 {
		t.Fatalf("load definition: %s", res.Status)
	}
}
