package schema_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// The schema crash test runs engines in child processes (this test binary,
// in TestSchemaCrashChild) that start instances of a schema whose node
// runs five registered actions, each writing a line to a run log; the
// children are killed with SIGKILL at random moments and started again on
// the same database. At the end every instance has completed, every action
// instance completed exactly once, and the result each one keeps is the
// one of its last run in the log: an action that completed was never run
// again; one killed before its completion committed ran again.
//
// VEENA_SCHEMA_CRASH_KILLS sets the number of kills (default 4, -short 2),
// VEENA_SCHEMA_CRASH_INSTANCES the instances (default 300).

const crashSchema = `
schema: crash
context: {keys: [n]}
nodes:
  - id: start
    type: root
    next: [{to: work}]
  - id: work
    type: execution
    actions:
      - {id: a1, do: step.record, result: a1, timeout: 2s}
      - {id: a2, do: step.record, result: a2, timeout: 2s}
      - {id: set, do: almanac.set, with: {half: "= almanac.a2 != ''"}}
      - {id: a3, do: step.record, result: a3, timeout: 2s}
      - {id: a4, do: step.record, result: a4, timeout: 2s}
      - {id: a5, do: step.record, result: a5, timeout: 2s}
    next: [{to: end}]
  - id: end
    type: terminator
`

func TestSchemaCrash(t *testing.T) {
	if os.Getenv("VEENA_CRASH_CHILD") != "" {
		t.Skip("child")
	}
	kills := envInt("VEENA_SCHEMA_CRASH_KILLS", 4)
	if testing.Short() {
		kills = min(kills, 2)
	}
	total := envInt("VEENA_SCHEMA_CRASH_INSTANCES", 300)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		schemaCrashRun(t, "sqlite", filepath.Join(dir, "veena.db"), dir, kills, total)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		schemaCrashRun(t, "postgres", pgtest.Schema(t), t.TempDir(), kills, total)
	})
}

func schemaCrashStore(t testing.TB, backend, where string) store.Store {
	if backend == "sqlite" {
		s, err := sqlitestore.Open(where, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s, err := pgstore.Open(context.Background(), pgtest.URL(), pgstore.Options{Schema: where, MaxConns: 12})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func schemaCrashRun(t *testing.T, backend, where, dir string, kills, total int) {
	start := func(run int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSchemaCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "VEENA_CRASH_CHILD=1", "VEENA_CRASH_BACKEND="+backend, "VEENA_CRASH_WHERE="+where,
			"VEENA_CRASH_DIR="+dir, "VEENA_CRASH_RUN="+strconv.Itoa(run), "VEENA_SCHEMA_CRASH_INSTANCES="+strconv.Itoa(total))
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("child-%d.out", run)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for k := range kills {
		// Kill the engine once it has run some more actions (a random
		// number), or after a while.
		before := len(readRuns(t, dir))
		more := 20 + rand.IntN(total)
		cmd := start(k)
		began := time.Now()
		for time.Since(began) < 20*time.Second && len(readRuns(t, dir)) < before+more {
			time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t.Logf("kill %d after %v: %d runs logged", k+1, time.Since(began).Round(time.Millisecond), len(readRuns(t, dir)))
	}
	cmd := start(kills)
	if err := cmd.Wait(); err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("child-%d.out", kills)))
		t.Fatalf("last run: %v\n%s", err, out)
	}

	// Verify.
	runs := readRuns(t, dir)
	last := map[string]string{} // process/action -> run id of its last run in the log
	count := map[string]int{}
	for _, r := range runs {
		last[r[0]+"/"+r[1]] = r[2]
		count[r[0]+"/"+r[1]]++
	}
	h := open(t, schemaCrashStore(t, backend, where), newBot())
	ctx := context.Background()
	page, err := h.e.Processes(ctx, veena.ProcessFilter{Definition: "crash", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != total {
		t.Fatalf("%d instances, want %d", len(page.Items), total)
	}
	rerun := 0
	for _, p := range page.Items {
		if p.State != "completed" {
			t.Errorf("instance %s (n=%s) is %s", p.ID, p.Context["n"], p.State)
			continue
		}
		in, err := h.rt.Nodes(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var visits []string
		for _, n := range in.Nodes {
			visits = append(visits, n.Node)
		}
		if strings.Join(visits, ",") != "start,work,end" {
			t.Errorf("instance %s visited %v", p.ID, visits)
			continue
		}
		alm := h.almanac(p.ID)
		for _, a := range in.Nodes[1].Actions {
			if a.State != schema.ActionCompleted {
				t.Errorf("%s/%s is %s", p.ID, a.Name, a.State)
			}
			if a.Name == "set" {
				continue
			}
			key := p.ID + "/" + a.Name
			if count[key] == 0 {
				t.Errorf("%s completed without a run in the log", key)
			}
			if alm[a.Name] != last[key] {
				t.Errorf("%s keeps result %v, but its last run was %s: a completed action ran again", key, alm[a.Name], last[key])
			}
			if count[key] > 1 {
				rerun++
			}
		}
		if alm["half"] != true {
			t.Errorf("%s: the built-in between the actions did not run: %v", p.ID, alm)
		}
	}
	t.Logf("%d instances, %d action runs logged, %d action instances ran again after a kill before their completion committed", total, len(runs), rerun)
}

func readRuns(t *testing.T, dir string) [][3]string {
	fh, err := os.Open(filepath.Join(dir, "runs.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out [][3]string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[3] == "." { // a whole line
			out = append(out, [3]string{f[0], f[1], f[2]})
		}
	}
	return out
}

// TestSchemaCrashChild is one engine of the crash test: it starts the
// instances (idempotently) and runs until they have all completed.
func TestSchemaCrashChild(t *testing.T) {
	if os.Getenv("VEENA_CRASH_CHILD") == "" {
		t.Skip("run by TestSchemaCrash")
	}
	dir := os.Getenv("VEENA_CRASH_DIR")
	total := envInt("VEENA_SCHEMA_CRASH_INSTANCES", 300)
	run := os.Getenv("VEENA_CRASH_RUN")
	logf, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var mu sync.Mutex
	var seq atomic.Int64
	rt := schema.New()
	rt.Action("step.record", func(ctx context.Context, c *schema.Call) (any, error) {
		id := fmt.Sprintf("r%s-%d", run, seq.Add(1))
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(logf, "%s %s %s .\n", c.Process, c.Action, id); err != nil {
			return nil, err
		}
		return id, nil
	})
	k := kernel.New()
	rt.Register(k)
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{Store: schemaCrashStore(t, os.Getenv("VEENA_CRASH_BACKEND"), os.Getenv("VEENA_CRASH_WHERE")),
		Kernel: k, TimerInterval: 50 * time.Millisecond, TimerLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rt.Attach(e)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.LoadDefinition(ctx, "crash.yaml", []byte(crashSchema), ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := e.StartProcess(ctx, veena.StartRequest{Definition: "crash", Context: map[string]string{"n": strconv.Itoa(i)}, IdempotencyKey: "crash-start-" + strconv.Itoa(i)})
			if err != nil && veena.Code(err) != veena.ErrConflict.Code {
				t.Errorf("start %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		page, err := e.Processes(ctx, veena.ProcessFilter{Definition: "crash", State: "executing", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances still executing, e.g. %s", page.Items[0].ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
