package veena_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// The crash test runs engines in child processes (this test binary, in
// TestCrashChild) under load, kills them with SIGKILL at random moments and
// starts them again on the same database, many times. Each child drives
// processes of the split definition through idempotent commands and logs
// every acknowledged command. At the end every acknowledged command must be
// in the store exactly once, every process must hold exactly its tokens and
// have run to completion, and no process may exist twice.
//
// VEENA_CRASH_KILLS sets how many times the children are killed (default 4;
// -short: 2); VEENA_CRASH_PROCESSES the number of processes (default 1500).

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestCrash(t *testing.T) {
	kills := envInt("VEENA_CRASH_KILLS", 4)
	if testing.Short() {
		kills = min(kills, 2)
	}
	total := envInt("VEENA_CRASH_PROCESSES", 1500)
	// The runs share nothing (their own files, schema and children). With
	// synchronous NORMAL a SQLite commit is acknowledged once it is in the
	// WAL file, not yet on the disk, which a killed process loses nothing
	// of either.
	for _, backend := range []string{"sqlite", "sqlite-normal"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			crashRun(t, backend, filepath.Join(dir, "veena.db"), dir, 1, kills, total)
		})
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		crashRun(t, "postgres", pgtest.Schema(t), t.TempDir(), 2, kills, total)
	})
}

// crashStore opens the store of a run; on PostgreSQL the engine in slot 1
// commits in groups, the one in slot 0 one command at a time.
func crashStore(t testing.TB, backend, where string, slot int) store.Store {
	switch backend {
	case "sqlite", "sqlite-normal":
		opts := sqlitestore.Options{}
		if backend == "sqlite-normal" {
			opts.Synchronous = "NORMAL"
		}
		s, err := sqlitestore.Open(where, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	default:
		opts := pgstore.Options{Schema: where, MaxConns: 12}
		if slot == 1 {
			opts.GroupCommit = 32
		}
		s, err := pgstore.Open(context.Background(), pgtest.URL(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func crashRun(t *testing.T, backend, where, dir string, engines, kills, total int) {
	crashChildren(t, "TestCrashChild", backend, where, dir, engines, kills, 300*time.Millisecond, 700*time.Millisecond,
		"VEENA_CRASH_CHILD=1", "VEENA_CRASH_PROCESSES="+strconv.Itoa(total))
	verifyCrashRun(t, crashStore(t, backend, where, 0), readAcks(t, dir), total)
}

// crashChildren runs a crash test's engines: child (a test of this binary,
// told by env that it is the child) once per engine, kills times killed
// all together with SIGKILL after a random pause of pause to pause+spread
// (mid-work), then once more to the end, which must succeed. Each child's
// output goes to child-N.out in dir, across its runs.
func crashChildren(t *testing.T, child, backend, where, dir string, engines, kills int, pause, spread time.Duration, env ...string) {
	t.Helper()
	start := func() []*exec.Cmd {
		var cmds []*exec.Cmd
		for i := range engines {
			cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v=false")
			cmd.Env = append(append(os.Environ(), env...),
				"VEENA_CRASH_BACKEND="+backend,
				"VEENA_CRASH_WHERE="+where,
				"VEENA_CRASH_DIR="+dir,
				"VEENA_CRASH_SLOT="+strconv.Itoa(i),
			)
			out, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("child-%d.out", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		return cmds
	}
	for k := range kills {
		cmds := start()
		// Let them get going, then kill them mid-work.
		wait := pause + time.Duration(rand.Int64N(int64(spread)))
		time.Sleep(wait)
		acked := len(readAcks(t, dir))
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGKILL)
			c.Wait()
		}
		t.Logf("kill %d after %v: %d commands acknowledged so far", k+1, wait, acked)
	}
	// The last run finishes the work.
	for i, c := range start() {
		if err := c.Wait(); err != nil {
			out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("child-%d.out", i)))
			t.Fatalf("last run of child %d: %v\n%s", i, err, out)
		}
	}
}

type ack struct {
	kind, a, b string
}

func readAcks(t *testing.T, dir string) []ack {
	files, _ := filepath.Glob(filepath.Join(dir, "acks-*.log"))
	var out []ack
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 3 {
				continue // a line cut short by the kill
			}
			out = append(out, ack{fields[0], fields[1], fields[2]})
		}
		fh.Close()
	}
	return out
}

func verifyCrashRun(t *testing.T, st store.Store, acks []ack, total int) {
	ctx := context.Background()
	e := open(t, st, veena.Options{})
	defer e.Close()
	// Commands queued for a busy tree were all applied: by their callers,
	// or after a kill by the next engine's background work.
	if roots, err := st.InboxRoots(ctx, time.Now().Add(time.Hour), 10); err != nil || len(roots) != 0 {
		t.Fatalf("trees with commands still queued after the run: %v, %v", roots, err)
	}
	var all []veena.Process
	after := ""
	for {
		page, err := e.Processes(ctx, veena.ProcessFilter{Limit: 1000, After: after})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if len(all) != total {
		t.Fatalf("%d processes in the store, want exactly %d", len(all), total)
	}
	byJob := map[string]string{}
	for _, p := range all {
		job := p.Context["job"]
		if other, dup := byJob[job]; dup {
			t.Fatalf("job %s started twice: %s and %s", job, other, p.ID)
		}
		byJob[job] = p.ID
		if p.State != "completed" {
			t.Errorf("process %s (job %s) is %s, not completed", p.ID, job, p.State)
		}
	}
	taskBy, jobBy := map[string]string{}, map[string]string{}
	for _, a := range acks {
		switch a.kind {
		case "task":
			if prev, ok := taskBy[a.a]; ok && prev != a.b {
				t.Errorf("task %s: completions acknowledged to %s and %s", a.a, prev, a.b)
			}
			taskBy[a.a] = a.b
		case "job":
			if prev, ok := jobBy[a.a]; ok && prev != a.b {
				t.Errorf("job %s: completions acknowledged to %s and %s", a.a, prev, a.b)
			}
			jobBy[a.a] = a.b
		case "start":
			if byJob[a.a] != a.b {
				t.Errorf("acknowledged start of job %s made %s, but the store has %s", a.a, a.b, byJob[a.a])
			}
		case "complete":
			tok, err := e.NodeToken(ctx, a.a)
			if err != nil || !tok.Complete {
				t.Errorf("acknowledged completion of %s is not in the store: %+v %v", a.a, tok, err)
			}
		}
	}
	// Tokens are conserved: each process holds exactly the tokens of its
	// definition, all complete, and one event log without gaps; each timer
	// let its delayed token pass exactly once.
	work := 0
	for _, p := range all {
		wantNodes, wantArcs := "a,b,join,last,start", 5
		switch p.Definition {
		case "tick":
			wantNodes, wantArcs = "end,hold,start", 2
		case "crashwork":
			wantNodes, wantArcs = "charge,end,review,start", 3
			verifyCrashWork(t, e, p, taskBy, jobBy)
			work++
		}
		h, err := e.Tokens(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, nt := range h.NodeTokens {
			if !nt.Complete {
				t.Errorf("process %s: token %s on %s incomplete", p.ID, nt.ID, nt.Node)
			}
			nodes = append(nodes, nt.Node)
		}
		sort.Strings(nodes)
		if strings.Join(nodes, ",") != wantNodes || len(h.ArcTokens) != wantArcs {
			t.Errorf("process %s: node tokens %v, %d arc tokens", p.ID, nodes, len(h.ArcTokens))
		}
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		completed, accepted := 0, 0
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("process %s: event %d has seq %d", p.ID, i, ev.Seq)
			}
			switch ev.Type {
			case "PROCESS_COMPLETED":
				completed++
			case "NODE_TOKEN_ACCEPTED":
				accepted++
			}
		}
		if completed != 1 || accepted != len(h.NodeTokens) {
			t.Errorf("process %s: %d PROCESS_COMPLETED events, %d of %d node tokens accepted", p.ID, completed, accepted, len(h.NodeTokens))
		}
	}
	t.Logf("%d processes (%d with a task and a job), %d acknowledged commands verified (%d task and %d job completions)",
		len(all), work, len(acks), len(taskBy), len(jobBy))
}

// jobDefinition: every eighth job waits for a delayed token (a durable
// timer), every eighth is work for people and programs (a task claimed and
// completed by a user, then a job done by the children's workers), the
// others split and join.
func jobDefinition(job string) string {
	switch n, _ := strconv.Atoi(job); n % 8 {
	case 0:
		return "tick"
	case 3:
		return "crashwork"
	}
	return "split"
}

// TestCrashChild is the engine under load; only TestCrash runs it.
func TestCrashChild(t *testing.T) {
	if os.Getenv("VEENA_CRASH_CHILD") != "1" {
		t.Skip("run by TestCrash")
	}
	ctx := context.Background()
	backend, where, dir := os.Getenv("VEENA_CRASH_BACKEND"), os.Getenv("VEENA_CRASH_WHERE"), os.Getenv("VEENA_CRASH_DIR")
	slot := envInt("VEENA_CRASH_SLOT", 0)
	total := envInt("VEENA_CRASH_PROCESSES", 1500)
	e, err := veena.Open(ctx, veena.Options{Store: crashStore(t, backend, where, slot),
		TimerInterval: 50 * time.Millisecond, TimerLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"split", "tick", "crashwork"} {
		src, _ := os.ReadFile("testdata/" + name + ".wf.xml")
		for {
			// Two engines may load it at once: one stores it, the other finds it.
			if _, _, err = e.LoadDefinition(ctx, name+".wf.xml", src, ""); err == nil {
				break
			}
			t.Logf("load: %v", err)
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("acks-%d.log", slot)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logAck := func(kind, a, b string) {
		logMu.Lock()
		fmt.Fprintf(logf, "%s %s %s\n", kind, a, b)
		logMu.Unlock()
	}
	done := map[string]bool{}
	for _, a := range readAcks(t, dir) {
		if a.kind == "done" {
			done[a.a] = true
		}
	}
	jobs := make(chan int)
	go func() {
		for i := range total {
			n := i
			if slot%2 == 1 {
				n = total - 1 - i
			}
			if !done[strconv.Itoa(n)] {
				jobs <- n
			}
		}
		close(jobs)
	}()
	wctx, stopWorkers := context.WithCancel(ctx)
	workers := runCrashWorkers(wctx, e, slot, logAck)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				job := strconv.Itoa(n)
				if err := runJob(ctx, e, job, slot, logAck); err != nil {
					fmt.Fprintf(os.Stderr, "job %s: %v\n", job, err)
					os.Exit(3)
				}
			}
		}()
	}
	wg.Wait()
	stopWorkers()
	workers.Wait()
	logf.Close()
	e.Close()
}

// runJob starts (or finds again, by idempotency key) the process of a job
// and completes its tokens until it is done. Every command carries a key
// derived from what it does, so a retry after a crash changes nothing twice.
func runJob(ctx context.Context, e *veena.Engine, job string, slot int, logAck func(kind, a, b string)) error {
	def, env := jobDefinition(job), map[string]any{}
	if def == "tick" {
		env["ready"] = false
	}
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: def, Env: env, Context: map[string]string{"job": job}, IdempotencyKey: "start-" + job})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	logAck("start", job, p.ID)
	if def == "tick" && p.State == "executing" {
		// The delayed token passes its guard at the next timer after this.
		if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"ready": true}, ""); err != nil {
			return fmt.Errorf("patch: %w", err)
		}
	}
	if def == "crashwork" {
		var err error
		if p, err = runWork(ctx, e, p, slot, logAck); err != nil {
			return err
		}
	}
	for p.State == "executing" {
		h, err := e.Tokens(ctx, p.ID)
		if err != nil {
			return err
		}
		progressed := false
		for _, tok := range h.NodeTokens {
			if tok.Complete || tok.GuardAction == nil || *tok.GuardAction == "delay" {
				continue // delayed tokens are the timers' business
			}
			q, err := e.CompleteToken(ctx, tok.ID, veena.CompleteRequest{IdempotencyKey: "complete-" + tok.ID})
			if err != nil {
				return fmt.Errorf("complete %s: %w", tok.ID, err)
			}
			logAck("complete", tok.ID, "-")
			p, progressed = q, true
		}
		if !progressed {
			if p, err = e.Process(ctx, p.ID); err != nil {
				return err
			}
			if p.State == "executing" {
				time.Sleep(5 * time.Millisecond) // a timer or the other engine has the next move
			}
		}
	}
	logAck("done", job, p.ID)
	return nil
}
