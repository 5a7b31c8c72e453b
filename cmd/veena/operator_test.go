package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/memstore"
)

// A definition with a wait node whose arcs are all named, a split into an
// and-join (which a dead end stalls) and a plain end.
const defReview = `<?xml version="1.0"?>
<process-definition name="review" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="submit" type="wait" isStart="true"><arc name="approve" to="split"/><arc name="reject" to="done"/></node>
  <node name="split"><arc to="legal"/><arc to="finance"/></node>
  <node name="legal" type="wait"><arc to="file"/></node>
  <node name="finance" type="wait"><arc to="file"/></node>
  <node name="file" type="wait" joinType="and"><arc to="done"/></node>
  <node name="done"/>
</process-definition>
`

// cliEnv is a server in this process and a way to run commands against it.
type cliEnv struct {
	t   *testing.T
	eng *veena.Engine
	url string
	dir string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	eng, err := veena.Open(context.Background(), veena.Options{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.New(server.Config{Engine: eng, Loopback: true}))
	t.Cleanup(func() { ts.Close(); eng.Close() })
	return &cliEnv{t: t, eng: eng, url: ts.URL, dir: t.TempDir()}
}

// veena runs a command line against the server (commands that need none
// get no --url).
func (c *cliEnv) veena(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	switch args[0] {
	case "check", "run", "access-token", "token", "--help":
	default:
		args = append(args, "--url", c.url)
	}
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// ok runs a command that must succeed and returns its output.
func (c *cliEnv) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.veena(args...)
	if code != 0 {
		c.t.Fatalf("veena %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// fails runs a command that must fail and returns its error output.
func (c *cliEnv) fails(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.veena(args...)
	if code == 0 {
		c.t.Fatalf("veena %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	return errOut
}

func (c *cliEnv) file(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	writeFile(c.t, p, content)
	return p
}

func (c *cliEnv) start(def string, args ...string) veena.Process {
	c.t.Helper()
	var p veena.Process
	if err := json.Unmarshal([]byte(c.ok(append([]string{"processes", "start", def, "-o", "json"}, args...)...)), &p); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// token is the id of the active token of a process on a node.
func (c *cliEnv) token(process, node string) string {
	c.t.Helper()
	h, err := c.eng.Tokens(context.Background(), process)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, t := range h.NodeTokens {
		if t.Node == node && !t.Complete {
			return t.ID
		}
	}
	c.t.Fatalf("no active token on %s", node)
	return ""
}

// TestShortIDs: any start of an id that only one process has stands for
// it, in every command that takes a process or node token id.
func TestShortIDs(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("review.wf.xml", defReview))
	p := c.start("review")
	time.Sleep(2 * time.Millisecond)
	q := c.start("review")
	// The shortest start of p's id that q's does not share, and more.
	n := 0
	for n < len(p.ID) && p.ID[n] == q.ID[n] {
		n++
	}
	short := p.ID[:n+1]
	if out := c.ok("processes", "show", short); !strings.Contains(out, "Process "+p.ID) {
		t.Fatalf("show %s:\n%s", short, out)
	}
	if out := c.ok("processes", "tokens", short, "-o", "tree"); !strings.Contains(out, "[1 submit I F]") {
		t.Fatalf("tokens %s:\n%s", short, out)
	}
	if out := c.ok("processes", "env", short, "who=ann"); !strings.Contains(out, `"ann"`) {
		t.Fatalf("env %s:\n%s", short, out)
	}
	// A node token by its process's short id.
	if out := c.ok("node-tokens", "show", short+".n1"); !strings.Contains(out, "Node token "+p.ID+".n1") {
		t.Fatalf("node-tokens show %s.n1:\n%s", short, out)
	}
	c.ok("node-tokens", "complete", short+".n1", "--arc", "reject")
	if got, _ := c.eng.Process(context.Background(), p.ID); got.State != "completed" {
		t.Fatalf("completing %s.n1 left the process %s", short, got.State)
	}
	// A start that two processes share names them; one that none has says so.
	if e := c.fails("processes", "show", p.ID[:n]); !strings.Contains(e, "more than one process") || !strings.Contains(e, p.ID) || !strings.Contains(e, q.ID) {
		t.Errorf("ambiguous start:\n%s", e)
	}
	if e := c.fails("processes", "cancel", "ffffffff"); !strings.Contains(e, `no process id starts with "ffffffff"`) {
		t.Errorf("unknown start:\n%s", e)
	}
	if e := c.fails("node-tokens", "complete", short); !strings.Contains(e, "not a node token id") {
		t.Errorf("a process id given as a token:\n%s", e)
	}
	c.ok("processes", "cancel", q.ID[:n+1])
	if got, _ := c.eng.Process(context.Background(), q.ID); got.State != "canceled" {
		t.Errorf("cancel by a short id left the process %s", got.State)
	}
}

// TestArcNamesChecked: the command line refuses arc names the node does not
// have, and completing on the default arcs of a node that has none, naming
// the valid choices; --no-arc still ends a branch.
func TestArcNamesChecked(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("review.wf.xml", defReview))
	p := c.start("review")
	tok := c.token(p.ID, "submit")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arc", "aprove"}, `node submit has no arc named "aprove"; choose --arc approve, --arc reject, --no-arc (the branch ends)`},
		{nil, "node submit has no default arc, so completing it without --arc would end its branch"},
		{[]string{"--arc", ""}, "node submit has no default arc; choose"},
		{[]string{"--arc", "approve", "--arc", "nope"}, `no arc named "nope"`},
	} {
		if e := c.fails(append([]string{"node-tokens", "complete", tok}, tc.args...)...); !strings.Contains(e, tc.want) {
			t.Errorf("complete %v:\n%s\nwant %q", tc.args, e, tc.want)
		}
	}
	h, _ := c.eng.Tokens(context.Background(), p.ID)
	if len(h.NodeTokens) != 1 || h.NodeTokens[0].Complete {
		t.Fatalf("a refused completion changed the process: %+v", h.NodeTokens)
	}
	c.ok("node-tokens", "complete", tok, "--arc", "approve")
	// legal has a default arc: completing it plainly is fine.
	c.ok("node-tokens", "complete", c.token(p.ID, "legal"))
	// --no-arc ends finance's branch: the join can never fire.
	out := c.ok("node-tokens", "complete", c.token(p.ID, "finance"), "--no-arc")
	if !strings.Contains(out, "STALLED") || !strings.Contains(out, "join file (and): arrived from legal->file; missing from finance->file") {
		t.Fatalf("after --no-arc:\n%s", out)
	}
}

// TestListsAndTrouble: lists newest first with where each process waits,
// its context, a total and the stalled ones marked; the waiting work; a
// stalled process says why.
func TestListsAndTrouble(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("review.wf.xml", defReview))
	a := c.start("review", "--context", "case=c-1")
	time.Sleep(2 * time.Millisecond)
	b := c.start("review", "--context", "case=c-2")
	c.ok("node-tokens", "complete", c.token(b.ID, "submit"), "--arc", "approve")
	c.ok("node-tokens", "complete", c.token(b.ID, "legal"))
	c.ok("node-tokens", "complete", c.token(b.ID, "finance"), "--no-arc")

	out := c.ok("processes", "list")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "WAITING AT") || !strings.Contains(lines[0], "CONTEXT") {
		t.Fatalf("list header: %s", lines[0])
	}
	if !strings.HasPrefix(lines[1], b.ID) || !strings.Contains(lines[1], "executing (STALLED)") || !strings.Contains(lines[1], "file (join)") || !strings.Contains(lines[1], "case=c-2") {
		t.Errorf("first line (newest, stalled): %s", lines[1])
	}
	if !strings.HasPrefix(lines[2], a.ID) || !strings.Contains(lines[2], "submit") || !strings.Contains(lines[2], "case=c-1") {
		t.Errorf("second line: %s", lines[2])
	}
	if !strings.Contains(out, "\n2 processes\n") {
		t.Errorf("the list does not count its processes:\n%s", out)
	}
	// Timestamps carry the date and the zone.
	if !regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)`).MatchString(lines[1]) {
		t.Errorf("no date and zone in %s", lines[1])
	}
	if out := c.ok("processes", "list", "--stalled"); !strings.Contains(out, b.ID) || strings.Contains(out, a.ID) {
		t.Errorf("--stalled:\n%s", out)
	}
	if out := c.ok("processes", "list", "--node", "submit"); !strings.Contains(out, a.ID) || strings.Contains(out, b.ID) {
		t.Errorf("--node submit:\n%s", out)
	}
	if out := c.ok("processes", "list", "--context", "case=c-1", "--since", "1h"); !strings.Contains(out, a.ID) || strings.Contains(out, b.ID) {
		t.Errorf("--context case=c-1 --since 1h:\n%s", out)
	}
	if out := c.ok("processes", "list", "-q", "c-2"); !strings.Contains(out, b.ID) || strings.Contains(out, a.ID) {
		t.Errorf("-q c-2:\n%s", out)
	}
	if e := c.fails("processes", "list", "--since", "last week"); !strings.Contains(e, "--since") {
		t.Errorf("a bad --since:\n%s", e)
	}
	// JSON carries what the table shows: items with where they wait, the
	// cursor and the total.
	var page veena.ProcessPage
	if err := json.Unmarshal([]byte(c.ok("processes", "list", "--limit", "1", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Next == "" || page.Total != 2 || len(page.Items[0].WaitingAt) != 1 || !page.Items[0].Stalled {
		t.Errorf("list -o json: %+v", page)
	}
	out = c.ok("processes", "list", "--limit", "1")
	if !strings.Contains(out, "1 shown of 2 processes") || !strings.Contains(out, "More: add --after "+page.Next) {
		t.Errorf("a first page of one:\n%s", out)
	}
	// show says why it is stalled, in text and in JSON.
	if out := c.ok("processes", "show", b.ID); !strings.Contains(out, "state:      executing (STALLED)") ||
		!strings.Contains(out, "join file (and): arrived from legal->file; missing from finance->file") {
		t.Errorf("show of the stalled process:\n%s", out)
	}
	var p veena.Process
	if err := json.Unmarshal([]byte(c.ok("processes", "show", b.ID, "-o", "json")), &p); err != nil || len(p.Stall) != 1 || len(p.WaitingAt) != 1 {
		t.Errorf("show -o json: %+v %v", p, err)
	}
	// It names the token to backtrack to, and offers no token to complete.
	finance := ""
	if h, err := c.eng.Tokens(context.Background(), b.ID); err == nil {
		for _, tk := range h.NodeTokens {
			if tk.Node == "finance" {
				finance = tk.ID
			}
		}
	}
	out = c.ok("processes", "show", b.ID)
	if !strings.Contains(out, "veena node-tokens backtrack "+finance+"   # for finance->file: finance ended the branch") ||
		!strings.Contains(out, "  waiting at:\n") || strings.Contains(out, "complete a token with") {
		t.Errorf("show of the stalled process, the rescue:\n%s", out)
	}
	// The waiting work: every active token and waiting join, with since when.
	out = c.ok("processes", "waiting")
	if !strings.Contains(out, "TOKEN OR PROCESS") || !strings.Contains(out, "SINCE") ||
		!regexp.MustCompile(a.ID+`\.n1 +review v1 +submit +active token`).MatchString(out) ||
		!regexp.MustCompile(b.ID+` +review v1 +file +join, 1 arc arrived \(STALLED\)`).MatchString(out) {
		t.Errorf("waiting:\n%s", out)
	}
	var w veena.WaitingPage
	if err := json.Unmarshal([]byte(c.ok("processes", "waiting", "--node", "submit", "-o", "json")), &w); err != nil || len(w.Items) != 1 || w.Items[0].Process != a.ID || w.Items[0].Context["case"] != "c-1" {
		t.Errorf("waiting --node submit -o json: %+v %v", w, err)
	}
}

// TestOutputAndHelp: -o everywhere, the old --format still works, usage
// on missing arguments, access tokens named apart from node tokens, --env
// explained in help.
func TestOutputAndHelp(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("review.wf.xml", defReview))
	p := c.start("review")
	if a, b := c.ok("processes", "tokens", p.ID, "-o", "tree"), c.ok("processes", "tokens", p.ID, "--format", "tree"); a != b || !strings.Contains(a, "[1 submit I F]") {
		t.Errorf("-o tree and --format tree differ:\n%s\n%s", a, b)
	}
	for _, args := range [][]string{
		{"definitions", "list"}, {"definitions", "show", "review"}, {"definitions", "versions", "review"},
		{"processes", "list"}, {"processes", "waiting"}, {"processes", "show", p.ID}, {"processes", "tokens", p.ID},
		{"processes", "events", p.ID}, {"processes", "env", p.ID}, {"node-tokens", "show", p.ID + ".n1"},
		{"node-tokens", "env", p.ID + ".n1"}, {"whoami"},
	} {
		out := c.ok(append(args, "-o", "json")...)
		if !json.Valid([]byte(out)) && !allLinesJSON(out) {
			t.Errorf("veena %s -o json is not JSON:\n%s", strings.Join(args, " "), out)
		}
	}
	if e := c.fails("processes", "list", "-o", "yaml"); !strings.Contains(e, `output format "yaml"`) {
		t.Errorf("-o yaml: %s", e)
	}
	// Usage on missing arguments.
	for _, args := range [][]string{{"processes", "show"}, {"node-tokens", "complete"}, {"definitions", "load"}} {
		e := c.fails(args...)
		if !strings.Contains(e, "Usage: veena "+strings.Join(args, " ")) {
			t.Errorf("veena %s without arguments:\n%s", strings.Join(args, " "), e)
		}
	}
	// Access tokens and node tokens.
	help := c.ok("--help")
	if !strings.Contains(help, "access-token") || !strings.Contains(help, "node-tokens") || regexp.MustCompile(`\n  token `).MatchString(help) {
		t.Errorf("the command list:\n%s", help)
	}
	file := filepath.Join(c.dir, "tokens.json")
	if out := c.ok("access-token", "list", "--tokens-file", file); !strings.Contains(out, "No access tokens") {
		t.Errorf("access-token list: %s", out)
	}
	if o, e, code := c.veena("token", "list", "--tokens-file", file); code != 0 || !strings.Contains(e, "is now 'veena access-token'") || strings.Contains(o, "access-token") {
		t.Errorf("the old name: %d %s", code, e)
	}
	// --env is explained where it is taken.
	for _, args := range [][]string{{"processes", "start"}, {"node-tokens", "complete"}, {"run"}} {
		if out := c.ok(append(args, "--help")...); !strings.Contains(out, `{"date": "2026-05-01T08:00:00Z"}`) || !strings.Contains(out, "42 and 1.5 are numbers") {
			t.Errorf("veena %s --help does not explain --env:\n%s", strings.Join(args, " "), out)
		}
	}
}

func allLinesJSON(s string) bool {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !json.Valid([]byte(l)) {
			return false
		}
	}
	return true
}

// TestLoadDirectory: definitions load DIR loads every definition file in
// it, externals first, naming each file.
func TestLoadDirectory(t *testing.T) {
	c := newCLIEnv(t)
	// "uses" imports "base" and sorts before it, so it loads second.
	c.file("defs/a-uses.wf.xml", `<?xml version="1.0"?>
<process-definition name="uses" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="s" isStart="true"><arc external="b" to="x"/></node>
  <external name="b" processDefinition="base"/>
</process-definition>
`)
	c.file("defs/sub/base.wf.xml", `<?xml version="1.0"?>
<process-definition name="base" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="x" type="wait" isStart="true"/>
</process-definition>
`)
	c.file("defs/notes.txt", "not a definition")
	out := c.ok("definitions", "load", filepath.Join(c.dir, "defs"))
	for _, want := range []string{"a-uses.wf.xml: loaded uses version 1", "base.wf.xml: loaded base version 1", "2 files: 2 loaded, 0 unchanged, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("load DIR lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "notes.txt") {
		t.Errorf("load DIR took a file that is no definition:\n%s", out)
	}
	out = c.ok("definitions", "load", filepath.Join(c.dir, "defs"))
	if !strings.Contains(out, "2 files: 0 loaded, 2 unchanged, 0 failed") {
		t.Errorf("loading again:\n%s", out)
	}
	c.file("bad/x.wf.xml", `<process-definition name="x"><node name="a"><arc to="nowhere"/></node></process-definition>`)
	e := c.fails("definitions", "load", filepath.Join(c.dir, "bad"), filepath.Join(c.dir, "missing"))
	if !strings.Contains(e, "x.wf.xml:1:") || !strings.Contains(e, "missing: no such file or directory") || !strings.Contains(e, "2 of 2 files not loaded") {
		t.Errorf("load of a bad directory and a missing one:\n%s", e)
	}
}

// TestCheckValidatesAsLoading: check refuses what the server refuses
// (unknown node types, guards that do not compile), names each file of a
// directory, counts them, and warns of definitions with no start node.
func TestCheckValidatesAsLoading(t *testing.T) {
	c := newCLIEnv(t)
	good := c.file("dir/good.wf.xml", defReview)
	c.file("dir/unknown-type.wf.xml", `<?xml version="1.0"?>
<process-definition name="u" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="a" type="teleport" isStart="true"/>
</process-definition>
`)
	c.file("dir/bad-guard.wf.xml", `<?xml version="1.0"?>
<process-definition name="g" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="a" isStart="true"><guard>if then Accept</guard></node>
</process-definition>
`)
	c.file("dir/no-start.wf.xml", `<?xml version="1.0"?>
<process-definition name="lib" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="a" type="wait"/>
</process-definition>
`)
	dir := filepath.Join(c.dir, "dir")
	out, errOut, code := c.veena("check", dir)
	if code != 1 {
		t.Fatalf("check of a directory with two bad files: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{filepath.Join(dir, "good.wf.xml") + ": ok (review: 6 nodes, 7 arcs)", filepath.Join(dir, "no-start.wf.xml") + ": ok (lib"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		filepath.Join(dir, "unknown-type.wf.xml") + ":3:",
		"teleport",
		filepath.Join(dir, "bad-guard.wf.xml") + ":3:",
		filepath.Join(dir, "no-start.wf.xml") + ": warning: definition lib has no start node",
		"veena check: 2 of 4 files have problems, 1 with warnings",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check errors lack %q:\n%s", want, errOut)
		}
	}
	// The same files are refused by the server, as check said.
	for _, f := range []string{"unknown-type.wf.xml", "bad-guard.wf.xml"} {
		c.fails("definitions", "load", filepath.Join(dir, f))
	}
	if out := c.ok("check", good); !strings.Contains(out, "veena check: 1 file ok") {
		t.Errorf("check of a good file:\n%s", out)
	}
	if e := c.fails("check", "--strict", filepath.Join(dir, "no-start.wf.xml")); !strings.Contains(e, "0 of 1 file have problems, 1 with warnings") {
		t.Errorf("--strict with a warning:\n%s", e)
	}
	var results []checkResult
	if err := json.Unmarshal([]byte(c.ok("check", good, "-o", "json")), &results); err != nil || len(results) != 1 || results[0].Definition != "review" {
		t.Errorf("check -o json: %+v %v", results, err)
	}
}

// TestShortWorkIDs: the ids of tasks, jobs and incidents (PROCESS.tN, .jN,
// .iN) and the process ids of the record, schema and net commands may be
// shortened like any process id.
func TestShortWorkIDs(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("approval.wf.xml", approvalDef))
	p := c.start("approval")
	time.Sleep(2 * time.Millisecond)
	q := c.start("approval")
	n := 0
	for n < len(p.ID) && p.ID[n] == q.ID[n] {
		n++
	}
	short := p.ID[:n+1]
	// shorten turns a full work id of p into one with the short process id.
	shorten := func(id string) string {
		if !strings.HasPrefix(id, p.ID+".") {
			t.Fatalf("%s is not an id of process %s", id, p.ID)
		}
		return short + strings.TrimPrefix(id, p.ID)
	}

	var tasks veena.TaskPage
	if err := json.Unmarshal([]byte(c.ok("tasks", "list", "--process", short, "-o", "json")), &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks.Items) != 1 || tasks.Items[0].Process != p.ID {
		t.Fatalf("tasks of %s: %+v", short, tasks.Items)
	}
	task := shorten(tasks.Items[0].ID)
	if out := c.ok("tasks", "claim", task, "--user", "alice"); !strings.Contains(out, "Task "+tasks.Items[0].ID+" is claimed, held by alice") {
		t.Fatalf("claim %s:\n%s", task, out)
	}
	if out := c.ok("tasks", "show", task); !strings.Contains(out, tasks.Items[0].ID) {
		t.Fatalf("show %s:\n%s", task, out)
	}
	c.ok("tasks", "save", task, "note=later", "--user", "alice")
	c.ok("tasks", "complete", task, "approved=true", "--outcome", "approve", "--user", "alice")

	var jobs veena.JobPage
	if err := json.Unmarshal([]byte(c.ok("jobs", "list", "--process", short, "-o", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Process != p.ID {
		t.Fatalf("jobs of %s: %+v", short, jobs.Items)
	}
	job := shorten(jobs.Items[0].ID)
	c.ok("jobs", "activate", "--type", "charge-card", "--worker", "w1")
	if out := c.ok("jobs", "show", job); !strings.Contains(out, jobs.Items[0].ID) {
		t.Fatalf("jobs show %s:\n%s", job, out)
	}
	c.ok("jobs", "fail", job, "--worker", "w1", "--retries", "0", "--message", "card declined")

	var incidents veena.IncidentPage
	if err := json.Unmarshal([]byte(c.ok("incidents", "list", "--process", short, "-o", "json")), &incidents); err != nil {
		t.Fatal(err)
	}
	if len(incidents.Items) != 1 || incidents.Items[0].Process != p.ID {
		t.Fatalf("incidents of %s: %+v", short, incidents.Items)
	}
	if out := c.ok("incidents", "resolve", shorten(incidents.Items[0].ID), "--retries", "1"); !strings.Contains(out, "Incident "+incidents.Items[0].ID+" is resolved") {
		t.Fatalf("resolve:\n%s", out)
	}
	c.ok("jobs", "activate", "--type", "charge-card", "--worker", "w2")
	c.ok("jobs", "complete", job, "--worker", "w2", "receipt=R-1")
	if got, _ := c.eng.Process(context.Background(), p.ID); got.State != "completed" || got.Env["receipt"].Str() != "R-1" {
		t.Fatalf("after the job: %s %v", got.State, got.Env)
	}

	// The record of the process, by its short id.
	if out := c.ok("processes", "audit", short); !strings.Contains(out, "task_claimed") || !strings.Contains(out, "job_failed") {
		t.Fatalf("audit %s:\n%s", short, out)
	}
	if out := c.ok("processes", "metrics", short); !strings.Contains(out, "review") {
		t.Fatalf("metrics %s:\n%s", short, out)
	}
	c.ok("processes", "attach", short, "Receipt", "/receipts/1.pdf")
	if out := c.ok("processes", "document", short); !strings.Contains(out, p.ID) || !strings.Contains(out, "/receipts/1.pdf") {
		t.Fatalf("document %s:\n%s", short, out)
	}

	// Ambiguous, unknown and malformed work ids say so.
	if e := c.fails("incidents", "resolve", p.ID[:n]+".i3"); !strings.Contains(e, "more than one process") {
		t.Errorf("ambiguous incident id:\n%s", e)
	}
	if e := c.fails("tasks", "claim", "ffffffff.t2", "--user", "alice"); !strings.Contains(e, `no process id starts with "ffffffff"`) {
		t.Errorf("unknown task id:\n%s", e)
	}
	if e := c.fails("jobs", "show", short); !strings.Contains(e, "not a job id") {
		t.Errorf("a process id given as a job:\n%s", e)
	}
	if e := c.fails("processes", "audit", "ffffffff"); !strings.Contains(e, `no process id starts with "ffffffff"`) {
		t.Errorf("unknown process for audit:\n%s", e)
	}
}

// TestCompleteDelayedAsksForNow: completing a token its guard delays is
// refused, saying until when and what completing it would skip, unless
// --now; the token then completes without its guard.
func TestCompleteDelayedAsksForNow(t *testing.T) {
	c := newCLIEnv(t)
	c.ok("definitions", "load", c.file("remind.wf.xml", `<?xml version="1.0"?>
<process-definition name="remind" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="invoice" isStart="true"><arc to="remind"/></node>
  <node name="remind" type="wait"><guard>if paid then Discard else delay until 1 second after sent</guard><arc to="done"/></node>
  <node name="done"/>
</process-definition>
`))
	sent := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p := c.start("remind", "--env", "paid=false", "--env", "sent="+sent.Format(time.RFC3339))
	tok := c.token(p.ID, "remind")
	e := c.fails("node-tokens", "complete", tok)
	until := sent.Add(time.Second).Format("2006-01-02 15:04:05Z")
	if !strings.Contains(e, "delayed by its guard until "+until) || !strings.Contains(e, "--now") {
		t.Fatalf("completing a delayed token:\n%s", e)
	}
	if got, _ := c.eng.Process(context.Background(), p.ID); got.State != "executing" {
		t.Fatalf("the refused completion left the process %s", got.State)
	}
	c.ok("node-tokens", "complete", tok, "--now")
	if got, _ := c.eng.Process(context.Background(), p.ID); got.State != "completed" {
		t.Fatalf("after --now the process is %s", got.State)
	}
}

// TestTimerFailureSaysWhatToDo: a delayed token whose guard fails when its
// time comes shows on the process with its incident and the commands that
// fix it; they work.
func TestTimerFailureSaysWhatToDo(t *testing.T) {
	c := newCLIEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.ok("definitions", "load", c.file("remind.wf.xml", `<?xml version="1.0"?>
<process-definition name="remind" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="invoice" isStart="true"><arc to="remind"/></node>
  <node name="remind" type="wait"><guard>if paid then Discard else delay until 1 second after sent</guard></node>
</process-definition>
`))
	p := c.start("remind", "--env", "paid=false", "--env", "sent="+time.Now().UTC().Format(time.RFC3339))
	c.ok("processes", "env", p.ID, "paid=")
	var out string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if out = c.ok("processes", "show", p.ID); strings.Contains(out, "TIMER FAILED") || time.Now().After(deadline) {
			break
		}
	}
	m := regexp.MustCompile(`veena incidents resolve (\S+\.i\d+)\n`).FindStringSubmatch(out)
	if !strings.Contains(out, `predicate "paid"`) || !strings.Contains(out, "veena processes env "+p.ID+" NAME=VALUE") || m == nil {
		t.Fatalf("show of a process whose timer failed:\n%s", out)
	}
	c.ok("processes", "env", p.ID, "paid=true")
	c.ok("incidents", "resolve", m[1])
	if got, _ := c.eng.Process(context.Background(), p.ID); got.State != "completed" {
		t.Fatalf("after the fix and the resolve the process is %s:\n%s", got.State, c.ok("processes", "show", p.ID))
	}
}
