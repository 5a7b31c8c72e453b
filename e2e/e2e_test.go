// Package e2e holds Veena's end-to-end tests: they build the veena binary,
// run `veena serve` on a fresh directory and drive it with the CLI, as a
// person would from a shell.
package e2e

import (
	"bufio"
	"bytes"
	"context"
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
	"syscall"
	"testing"
	"time"

	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/internal/testutil"
)

const (
	defBad = `<?xml version="1.0"?>
<process-definition name="bad" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="nowhere"/></node>
</process-definition>
`
	splitTree = `[1 A C F]
  (C F 2)
  (C F 3)
[2 B C F]
  (C F 4)
[3 C C F]
  (C F 4)
[4 D C F]
`
)

// veenaBinary is the veena command, built once per test run.
func veenaBinary(t *testing.T) string { return testutil.Veena(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveVeena()
	os.Exit(code)
}

// cleanEnv is the environment without any VEENA_ setting.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VEENA_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// serverProc is a running `veena serve`.
type serverProc struct {
	cmd    *exec.Cmd
	url    string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
	mu     *sync.Mutex
	done   chan error
	ready  time.Duration
}

// lockedBuffer is an io.Writer into a buffer that others read under mu.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// serve starts `veena serve args…` in dir and waits until it says where it
// listens.
func serve(t *testing.T, dir string, env []string, args ...string) *serverProc {
	t.Helper()
	cmd := exec.Command(veenaBinary(t), append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	p := &serverProc{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(lockedBuffer{p.mu, p.stdout}, pw)
	cmd.Stderr = lockedBuffer{p.mu, p.stderr}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.done <- cmd.Wait()
		pw.Close()
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		url := ""
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "Veena is serving on "); ok {
				url = strings.TrimSpace(rest)
			}
			// The last line of the start-up message says who may connect.
			if url != "" && (strings.HasPrefix(line, "  open:") || strings.HasPrefix(line, "  access:")) {
				found <- url
				break
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case u, ok := <-found:
		p.ready = time.Since(start)
		if !ok {
			t.Fatalf("veena serve ended before it was ready:\n%s\n%s", p.out(), p.errOut())
		}
		p.url = u
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("veena serve did not start within 30 s:\n%s\n%s", p.out(), p.errOut())
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *serverProc) out() string    { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *serverProc) errOut() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// stop sends SIGTERM and waits for a clean exit.
func (p *serverProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("veena serve exited with %v:\n%s\n%s", err, p.out(), p.errOut())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("veena serve did not stop within 30 s of SIGTERM")
	}
	if !strings.Contains(p.out(), "Veena stopped") {
		t.Fatalf("no clean stop:\n%s\n%s", p.out(), p.errOut())
	}
}

// cli runs a client command; it returns stdout, stderr and the exit code.
type cli struct {
	t   *testing.T
	dir string
	env []string
}

func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(veenaBinary(c.t), args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ok runs a command that must succeed and returns its output.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("veena %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// fails runs a command that must fail and returns its stderr.
func (c *cli) fails(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code == 0 {
		c.t.Fatalf("veena %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	return errOut
}

func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("veena %s: %v in %s", strings.Join(args, " "), err, out)
	}
}

type process struct {
	ID, Definition, State string
	Version               int
}

// processPage is the JSON of processes list: the processes, the cursor of
// the next page and how many there are.
type processPage struct {
	Items []process
	Next  string
	Total int
}

type history struct {
	NodeTokens []struct {
		ID, Node string
		Complete bool
	}
}

// drive completes active tokens of a process until it completes.
func (c *cli) drive(id string) {
	c.t.Helper()
	for i := 0; i < 20; i++ {
		var p process
		c.json(&p, "processes", "show", id, "-o", "json")
		if p.State == "completed" {
			return
		}
		var h history
		c.json(&h, "processes", "tokens", id, "--format", "json")
		for _, tk := range h.NodeTokens {
			if !tk.Complete {
				c.ok("tokens", "complete", tk.ID)
				break
			}
		}
	}
	c.t.Fatalf("process %s did not complete", id)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeAndCLI is the end-to-end test: serve a fresh directory, load
// definitions, drive processes to completion through the CLI, restart the
// server and find everything still there; then turn on access tokens.
func TestServeAndCLI(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "definitions")
	write(t, filepath.Join(defs, "ab.wf.xml"), testutil.DefAB)
	write(t, filepath.Join(dir, "split.wf.xml"), testutil.DefSplit)
	write(t, filepath.Join(dir, "bad.wf.xml"), defBad)
	db := filepath.Join(dir, "data", "veena.db")
	os.MkdirAll(filepath.Dir(db), 0o755)

	srv := serve(t, dir, cleanEnv(), "--addr", "127.0.0.1:0", "--db", db, "--definitions", defs)
	t.Logf("veena serve was ready after %v", srv.ready)
	for _, want := range []string{"data:    " + db, "console: " + srv.url + "/", "open: no access tokens configured, listening on loopback only"} {
		if !strings.Contains(srv.out(), want) {
			t.Fatalf("start-up message lacks %q:\n%s", want, srv.out())
		}
	}
	c := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL=" + srv.url)}

	// Definitions: ab came from --definitions; split is loaded by the CLI.
	if out := c.ok("definitions", "load", "split.wf.xml"); !strings.Contains(out, "loaded split version 1") {
		t.Fatalf("load: %s", out)
	}
	if out := c.ok("definitions", "load", "split.wf.xml"); !strings.Contains(out, "unchanged") {
		t.Fatalf("reload: %s", out)
	}
	errOut := c.fails("definitions", "load", "bad.wf.xml")
	if !strings.Contains(errOut, "bad.wf.xml:3:") || !strings.Contains(errOut, "nowhere") {
		t.Fatalf("an invalid definition was reported as:\n%s", errOut)
	}
	list := c.ok("definitions", "list")
	if !strings.Contains(list, "ab ") || !strings.Contains(list, "split ") || strings.Contains(list, "bad") {
		t.Fatalf("definitions list:\n%s", list)
	}
	if out := c.ok("definitions", "show", "split"); !strings.Contains(out, "joinType") && !strings.Contains(out, "and") {
		t.Fatalf("definitions show:\n%s", out)
	}
	if out := c.ok("definitions", "source", "ab"); out != testutil.DefAB {
		t.Fatalf("definitions source:\n%s", out)
	}

	// Drive processes to completion.
	var split, ab, canceled process
	c.json(&split, "processes", "start", "split", "--env", "n=1", "--env", "who=ann", "-o", "json")
	c.json(&ab, "processes", "start", "ab", "-o", "json")
	c.json(&canceled, "processes", "start", "ab", "-o", "json")
	if split.State != "executing" || split.ID == "" {
		t.Fatalf("started %+v", split)
	}
	c.drive(split.ID)
	tree := c.ok("processes", "tokens", split.ID, "--format", "tree")
	if tree != splitTree {
		t.Fatalf("token tree\n%s\nwant\n%s", tree, splitTree)
	}
	if out := c.ok("processes", "tokens", split.ID); !strings.Contains(out, "NODE TOKEN") || strings.Count(out, "complete") < 4 {
		t.Fatalf("token table:\n%s", out)
	}
	events := c.ok("processes", "events", split.ID)
	if !strings.Contains(events, "NODE_TOKEN_CREATED D") || !strings.Contains(events, "PROCESS_COMPLETED") {
		t.Fatalf("events:\n%s", events)
	}

	// Follow the events of ab while it is driven to completion.
	follow := exec.Command(veenaBinary(t), "processes", "events", ab.ID, "--follow")
	follow.Env = c.env
	var (
		followMu  sync.Mutex
		followBuf bytes.Buffer
	)
	follow.Stdout = lockedBuffer{mu: &followMu, b: &followBuf}
	followOut := func() string { followMu.Lock(); defer followMu.Unlock(); return followBuf.String() }
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	// Drive the process only once the command follows it (it prints the
	// past events first), so that what follows arrives live.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(followOut(), "PROCESS_STARTED"); {
		if time.Now().After(deadline) {
			t.Fatalf("events --follow printed no past events within 10 s:\n%s", followOut())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var h history
	c.json(&h, "processes", "tokens", ab.ID, "--format", "json")
	first := h.NodeTokens[0].ID
	c.ok("tokens", "complete", first)
	// Backtrack to A, then drive to the end.
	if out := c.ok("tokens", "backtrack", first); !strings.Contains(out, "executing") {
		t.Fatalf("backtrack:\n%s", out)
	}
	c.drive(ab.ID)
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()
	select {
	case err := <-followDone:
		if err != nil || !strings.Contains(followOut(), "PROCESS_COMPLETED") || !strings.Contains(followOut(), "NODE_TOKEN_BACKTRACKED") {
			t.Fatalf("events --follow: %v\n%s", err, followOut())
		}
	case <-time.After(15 * time.Second):
		follow.Process.Kill()
		t.Fatalf("events --follow did not end with the process:\n%s", followOut())
	}

	// Refusals read well.
	errOut = c.fails("tokens", "complete", first)
	if !strings.Contains(errOut, "token_complete") && !strings.Contains(errOut, "process_not_executing") {
		t.Fatalf("completing a complete token:\n%s", errOut)
	}
	if out := c.ok("processes", "cancel", canceled.ID); !strings.Contains(out, "canceled") {
		t.Fatalf("cancel: %s", out)
	}
	if errOut := c.fails("processes", "cancel", canceled.ID); !strings.Contains(errOut, "process_not_executing") {
		t.Fatalf("cancel twice: %s", errOut)
	}
	if errOut := c.fails("processes", "show", "no-such-process"); !strings.Contains(errOut, "not_found") {
		t.Fatalf("show unknown: %s", errOut)
	}
	if errOut := c.fails("processes", "start", "nope"); !strings.Contains(errOut, "nope") {
		t.Fatalf("start unknown: %s", errOut)
	}

	var before processPage
	c.json(&before, "processes", "list", "-o", "json")
	if len(before.Items) != 3 || before.Total != 3 {
		t.Fatalf("%d processes, total %d", len(before.Items), before.Total)
	}
	if out := c.ok("processes", "list", "--state", "completed"); strings.Count(out, "completed") != 2 {
		t.Fatalf("list --state completed:\n%s", out)
	}

	// Restart: everything is still there.
	srv.stop(t)
	if errOut := c.fails("processes", "list"); !strings.Contains(errOut, "cannot reach the Veena server") {
		t.Fatalf("a stopped server was reported as:\n%s", errOut)
	}
	srv = serve(t, dir, cleanEnv(), "--addr", "127.0.0.1:0", "--db", db, "--definitions", defs)
	c.env = cleanEnv("VEENA_URL=" + srv.url)
	var after processPage
	c.json(&after, "processes", "list", "-o", "json")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after restart\n%v\nbefore\n%v", after, before)
	}
	if tree := c.ok("processes", "tokens", split.ID, "--format", "tree"); tree != splitTree {
		t.Fatalf("token tree after restart\n%s", tree)
	}
	if out := c.ok("definitions", "list"); !strings.Contains(out, "split ") {
		t.Fatalf("definitions after restart:\n%s", out)
	}
	var more process
	c.json(&more, "processes", "start", "split", "-o", "json")
	c.drive(more.ID)

	// Access tokens made with the CLI take effect on the running server.
	tc := &cli{t: t, dir: dir, env: cleanEnv("VEENA_DB=" + db)}
	viewer := strings.TrimSpace(tc.ok("access-token", "create", "--role", "viewer", "--name", "watcher"))
	operator := strings.TrimSpace(tc.ok("access-token", "create", "--role", "operator", "--name", "ci"))
	if !strings.HasPrefix(viewer, "veena_") || viewer == operator {
		t.Fatalf("tokens %q %q", viewer, operator)
	}
	if out := tc.ok("access-token", "list"); !strings.Contains(out, "watcher") || !strings.Contains(out, "operator") || strings.Contains(out, viewer) {
		t.Fatalf("token list:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(db), "veena-tokens.json")); strings.Contains(string(b), viewer) {
		t.Fatal("the token file holds a secret")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, errOut, code := c.run("processes", "list")
		if code != 0 {
			if !strings.Contains(errOut, "access token") {
				t.Fatalf("without a token:\n%s", errOut)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not start asking for tokens")
		}
		time.Sleep(200 * time.Millisecond)
	}
	vc := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL="+srv.url, "VEENA_TOKEN="+viewer)}
	vc.ok("processes", "list")
	if errOut := vc.fails("processes", "start", "ab"); !strings.Contains(errOut, "not allowed") {
		t.Fatalf("a viewer starting a process:\n%s", errOut)
	}
	oc := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL="+srv.url, "VEENA_TOKEN="+operator)}
	var op process
	oc.json(&op, "processes", "start", "ab", "-o", "json")
	if errOut := oc.fails("definitions", "load", "split.wf.xml"); !strings.Contains(errOut, "not allowed") {
		t.Fatalf("an operator loading a definition:\n%s", errOut)
	}
	// An open event stream does not hold up the stop.
	streamReq, _ := http.NewRequest("GET", srv.url+"/api/v1/processes/"+ab.ID+"/events", nil)
	streamReq.Header.Set("Accept", "text/event-stream")
	streamReq.Header.Set("Authorization", "Bearer "+viewer)
	stream, err := http.DefaultClient.Do(streamReq)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", err, stream)
	}
	defer stream.Body.Close()

	tc.ok("access-token", "revoke", "ci")
	deadline = time.Now().Add(5 * time.Second)
	for {
		if _, _, code := oc.run("processes", "list"); code != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked token still works")
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopStart := time.Now()
	srv.stop(t)
	t.Logf("stopped after %v with an event stream open", time.Since(stopStart))
	if d := time.Since(stopStart); d > 10*time.Second {
		t.Fatalf("stopping with an open event stream took %v", d)
	}
	if _, err := io.Copy(io.Discard, stream.Body); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Logf("event stream ended with %v", err)
	}
}

// TestServeDefaults runs `veena serve` with no flags in a fresh directory:
// SQLite in the working directory, loopback, open.
func TestServeDefaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		t.Skipf("the default address 127.0.0.1:8080 is taken: %v", err)
	}
	ln.Close()
	dir := t.TempDir()
	srv := serve(t, dir, cleanEnv())
	t.Logf("veena serve with no flags was ready after %v", srv.ready)
	if srv.url != "http://127.0.0.1:8080" {
		t.Fatalf("serving on %s", srv.url)
	}
	if _, err := os.Stat(filepath.Join(dir, "veena.db")); err != nil {
		t.Fatalf("no veena.db in the working directory: %v", err)
	}
	c := &cli{t: t, dir: dir, env: cleanEnv()}
	if out := c.ok("whoami"); !strings.Contains(out, "open") {
		t.Fatalf("whoami: %s", out)
	}
	srv.stop(t)
}

// TestServeRefusesOpenNetwork checks that a server without tokens does not
// listen beyond loopback.
func TestServeRefusesOpenNetwork(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(veenaBinary(t), "serve", "--addr", "0.0.0.0:0", "--db", "memory")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = ctx
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("veena serve --addr 0.0.0.0:0 without tokens started:\n%s", out)
	}
	if !strings.Contains(string(out), "without access tokens") {
		t.Fatalf("refusal reads:\n%s", out)
	}
	// With a token it listens.
	srv := serve(t, dir, cleanEnv(), "--addr", "0.0.0.0:0", "--db", "memory", "--token", "admin=0123456789abcdef0123")
	if !strings.Contains(srv.out(), "bearer tokens required") {
		t.Fatalf("start-up message:\n%s", srv.out())
	}
	srv.stop(t)
}

// TestServeStoreTuning: serve takes the commit tuning flags and refuses
// values it does not know, naming the flag.
func TestServeStoreTuning(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []struct{ args []string }{
		{[]string{"--sync", "sometimes"}},
		{[]string{"--group-commit", "-2"}},
	} {
		cmd := exec.Command(veenaBinary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "x.db")}, bad.args...)...)
		cmd.Dir = dir
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), bad.args[0]) {
			t.Fatalf("veena serve %v: %v\n%s", bad.args, err, out)
		}
	}
	srv := serve(t, dir, cleanEnv(), "--db", filepath.Join(dir, "tuned.db"), "--sync", "normal", "--group-commit", "16")
	c := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL=" + srv.url)}
	write(t, filepath.Join(dir, "split.wf.xml"), testutil.DefSplit)
	c.ok("definitions", "load", filepath.Join(dir, "split.wf.xml"))
	c.ok("processes", "start", "split")
	srv.stop(t)
}

// TestOffline checks `veena check` and `veena run`, which need no server.
func TestOffline(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "split.wf.xml"), testutil.DefSplit)
	write(t, filepath.Join(dir, "bad.wf.xml"), defBad)
	c := &cli{t: t, dir: dir, env: cleanEnv()}
	if out := c.ok("check", "split.wf.xml"); !strings.Contains(out, "split.wf.xml: ok") {
		t.Fatalf("check: %s", out)
	}
	errOut := c.fails("check", "split.wf.xml", "bad.wf.xml")
	if !strings.Contains(errOut, "bad.wf.xml:3:") {
		t.Fatalf("check of a bad file:\n%s", errOut)
	}
	out := c.ok("run", "split.wf.xml")
	if !strings.Contains(out, "[1 A I F]") || !strings.Contains(out, "PROCESS_STARTED") {
		t.Fatalf("run:\n%s", out)
	}
}

// TestMigrateStep: veena migrate brings a database's schema up to date as a
// step of its own, --check reports without changing anything, and serve
// --no-migrate refuses a schema that is behind and starts on a current one,
// on an SQLite file and on PostgreSQL.
func TestMigrateStep(t *testing.T) {
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, env: cleanEnv()}
	if e := c.fails("migrate", "--check"); !strings.Contains(e, "there is no database at "+filepath.Join(dir, "veena.db")) {
		t.Fatalf("check of a missing file: %s", e)
	}
	if _, err := os.Stat(filepath.Join(dir, "veena.db")); !os.IsNotExist(err) {
		t.Fatalf("migrate --check created the file: %v", err)
	}
	if e := c.fails("migrate", "--db", "memory"); !strings.Contains(e, "no schema to migrate") {
		t.Fatalf("migrate memory: %s", e)
	}

	for _, tc := range []struct{ name, db string }{
		{"sqlite", filepath.Join(dir, "step.db")},
		{"postgres", postgresURL(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cli{t: t, dir: dir, env: cleanEnv("VEENA_DB=" + tc.db)}
			out := refused(t, dir, c.env, "--addr", "127.0.0.1:0", "--no-migrate")
			if !strings.Contains(out, "is behind this Veena") || !strings.Contains(out, "Run veena migrate with the same --db first") {
				t.Fatalf("serve --no-migrate on a new database:\n%s", out)
			}
			out2, errOut, code := c.run("migrate", "--check")
			if code != 3 || !strings.Contains(errOut, "has schema version 0 and this Veena needs") {
				t.Fatalf("migrate --check on a new database: exit %d\n%s%s", code, out2, errOut)
			}
			if _, _, code := c.run("migrate", "--check"); code != 3 {
				t.Fatalf("a second check found the schema changed: exit %d", code)
			}
			if out := c.ok("migrate"); !strings.Contains(out, "migrated from schema version 0 to ") {
				t.Fatalf("migrate: %s", out)
			}
			if out := c.ok("migrate", "--check"); !strings.Contains(out, "is up to date (schema version ") {
				t.Fatalf("migrate --check after migrating: %s", out)
			}
			if out := c.ok("migrate"); !strings.Contains(out, "is up to date") {
				t.Fatalf("migrate twice: %s", out)
			}
			srv := serve(t, dir, cleanEnv("VEENA_DB="+tc.db, "VEENA_NO_MIGRATE=true"), "--addr", "127.0.0.1:0")
			c.env = append(c.env, "VEENA_URL="+srv.url)
			write(t, filepath.Join(dir, "split.wf.xml"), testutil.DefSplit)
			c.ok("definitions", "load", filepath.Join(dir, "split.wf.xml"))
			c.ok("processes", "start", "split")
			srv.stop(t)
		})
	}
}

// refused runs `veena serve args…`, which must refuse to start, and
// returns what it printed. A server that starts anyway is stopped after 20
// seconds and fails the test.
func refused(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, veenaBinary(t), append([]string{"serve"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("veena serve %s started (%v):\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// postgresURL is the test server with a schema of this test's own as its
// search path.
func postgresURL(t *testing.T) string {
	u := pgtest.URL()
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + pgtest.Schema(t)
}

// TestServeUniqueContext: serve --unique-context lets one executing process
// at a time hold a value of that key; the value is free again once its
// process ends.
func TestServeUniqueContext(t *testing.T) {
	dir := t.TempDir()
	if out := refused(t, dir, cleanEnv(), "--addr", "127.0.0.1:0", "--db", "memory", "--unique-context", " "); !strings.Contains(out, "--unique-context: want a context key") {
		t.Fatalf("empty key: %s", out)
	}
	srv := serve(t, dir, cleanEnv("VEENA_UNIQUE_CONTEXT=tenant"), "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "u.db"), "--unique-context", "order")
	if !strings.Contains(srv.out(), "unique context keys: order\n") {
		t.Fatalf("start-up message:\n%s", srv.out())
	}
	c := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL=" + srv.url)}
	write(t, filepath.Join(dir, "ab.wf.xml"), testutil.DefAB)
	c.ok("definitions", "load", filepath.Join(dir, "ab.wf.xml"))
	var first process
	c.json(&first, "processes", "start", "ab", "--context", "order=o-1", "-o", "json")
	if e := c.fails("processes", "start", "ab", "--context", "order=o-1"); !strings.Contains(e, "conflict") {
		t.Fatalf("a second process holding order o-1: %s", e)
	}
	c.ok("processes", "start", "ab", "--context", "order=o-2")
	// The flag, not the environment, chose the keys: tenant is not unique.
	c.ok("processes", "start", "ab", "--context", "tenant=t")
	c.ok("processes", "start", "ab", "--context", "tenant=t")
	c.ok("processes", "cancel", first.ID)
	c.ok("processes", "start", "ab", "--context", "order=o-1")
	srv.stop(t)
}

// TestBackup: veena backup copies the SQLite database while veena serve
// uses it, and a server on the copy shows the same processes.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "live.db")
	srv := serve(t, dir, cleanEnv(), "--addr", "127.0.0.1:0", "--db", db)
	c := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL=" + srv.url)}
	write(t, filepath.Join(dir, "ab.wf.xml"), testutil.DefAB)
	c.ok("definitions", "load", filepath.Join(dir, "ab.wf.xml"))
	var started []process
	for range 5 {
		var p process
		c.json(&p, "processes", "start", "ab", "-o", "json")
		started = append(started, p)
	}
	c.drive(started[0].ID)
	if out := c.ok("backup", "--db", db, "copy.db"); !strings.Contains(out, "backed up "+db+" to "+filepath.Join(dir, "copy.db")) {
		t.Fatalf("backup: %s", out)
	}
	if e := c.fails("backup", "--db", db, "copy.db"); !strings.Contains(e, "exists already") {
		t.Fatalf("backup onto the copy: %s", e)
	}
	// A command after the backup is not in it.
	c.ok("processes", "start", "ab")
	srv.stop(t)

	if e := c.fails("backup", "--db", "postgres://x@127.0.0.1/y", "pg.db"); !strings.Contains(e, "pg_dump") {
		t.Fatalf("backup of PostgreSQL: %s", e)
	}
	restored := serve(t, dir, cleanEnv(), "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "copy.db"), "--no-migrate")
	rc := &cli{t: t, dir: dir, env: cleanEnv("VEENA_URL=" + restored.url)}
	var listed processPage
	rc.json(&listed, "processes", "list", "-o", "json")
	if len(listed.Items) != len(started) {
		t.Fatalf("the copy holds %d processes, want %d", len(listed.Items), len(started))
	}
	var first process
	rc.json(&first, "processes", "show", started[0].ID, "-o", "json")
	if first.State != "completed" {
		t.Fatalf("process %s in the copy is %s", first.ID, first.State)
	}
	rc.drive(started[1].ID)
	restored.stop(t)
}
