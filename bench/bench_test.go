package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/internal/testutil"
)

// TestRun runs every workload briefly on memory, SQLite and PostgreSQL
// and checks that the report says what happened.
func TestRun(t *testing.T) {
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Config{
		Targets:     []string{"memory", "sqlite-full", "postgres"},
		Concurrency: 4,
		Duration:    300 * time.Millisecond,
		Engines:     []int{2},
		GroupCommit: []bool{true},
	}, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rep.Results) != 9 {
		t.Fatalf("%d results, want 9", len(rep.Results))
	}
	want := map[string]float64{"wait": 2, "auto10": 1, "split10": 11}
	for _, r := range rep.Results {
		if r.Processes == 0 || r.Errors != 0 {
			t.Errorf("%s on %s: %d processes, %d errors", r.Workload, r.Target, r.Processes, r.Errors)
			continue
		}
		perProcess := float64(r.Commands) / float64(r.Processes)
		if perProcess < want[r.Workload] || perProcess > want[r.Workload]+1 {
			t.Errorf("%s on %s: %.2f commands per process", r.Workload, r.Target, perProcess)
		}
		if r.Target != "memory" && (r.RawCommitsPS <= 0 || r.TxPerProcess <= 0) {
			t.Errorf("%s on %s: raw rate %.0f, %.2f tx/process", r.Workload, r.Target, r.RawCommitsPS, r.TxPerProcess)
		}
		if r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("%s on %s: p50 %v, p99 %v", r.Workload, r.Target, r.P50, r.P99)
		}
		// The writer runs every commit, and a run's time bounds its work.
		if sqlite := strings.HasPrefix(r.Target, "sqlite"); sqlite != (r.WriterBusy > 0) || r.WriterBusy > 1.05 {
			t.Errorf("%s on %s: writer busy %.2f of the run", r.Workload, r.Target, r.WriterBusy)
		}
	}
	var table strings.Builder
	rep.WriteTable(&table)
	if !strings.Contains(table.String(), "commands/s") || !strings.Contains(progress.String(), "== wait on sqlite-full") {
		t.Errorf("report:\n%s\nprogress:\n%s", table.String(), progress.String())
	}
	// Without a worker command the PostgreSQL engines share this process,
	// and the report says so.
	if !strings.Contains(progress.String(), "engines 2 in one OS process") ||
		!strings.Contains(table.String(), "ran in one OS process") {
		t.Errorf("the in-process engines are not reported:\n%s\nprogress:\n%s", table.String(), progress.String())
	}
}

// TestBPMNWorkloads runs the BPMN workloads (the shapes of wait, auto10
// and split10 in BPMN, their user tasks completed through the task API)
// and their Sarasvati counterparts with tasks: a list of the open tasks
// and one command per task after the start; the CPU per process is given.
func TestBPMNWorkloads(t *testing.T) {
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Config{
		Targets:     []string{"memory", "sqlite-normal"},
		Workloads:   []string{"bpmn-wait", "bpmn-auto10", "bpmn-split10", "wait-task", "split10-task"},
		Concurrency: 4,
		Duration:    300 * time.Millisecond,
		GroupCommit: []bool{true},
	}, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rep.Results) != 10 {
		t.Fatalf("%d results, want 10", len(rep.Results))
	}
	want := map[string]float64{"bpmn-wait": 3, "bpmn-auto10": 1, "bpmn-split10": 12, "wait-task": 3, "split10-task": 12}
	for _, r := range rep.Results {
		if r.Processes == 0 || r.Errors != 0 {
			t.Errorf("%s on %s: %d processes, %d errors", r.Workload, r.Target, r.Processes, r.Errors)
			continue
		}
		if r.CPUPerProcess <= 0 {
			t.Errorf("%s on %s: no CPU time per process", r.Workload, r.Target)
		}
		if perProcess := float64(r.Commands) / float64(r.Processes); perProcess < want[r.Workload] || perProcess > want[r.Workload]+1 {
			t.Errorf("%s on %s: %.2f commands per process", r.Workload, r.Target, perProcess)
		}
	}
}

// TestClientSweep measures each setup at each number of clients asked for,
// the raw rate at the same number.
func TestClientSweep(t *testing.T) {
	rep, err := bench.Run(context.Background(), bench.Config{
		Targets:     []string{"memory", "sqlite-normal"},
		Workloads:   []string{"wait"},
		Clients:     []int{1, 3},
		Duration:    200 * time.Millisecond,
		GroupCommit: []bool{true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, fmt.Sprintf("%s/%d", r.Target, r.Concurrency))
		if r.Processes == 0 || r.Errors != 0 || (r.Target != "memory" && r.RawCommitsPS <= 0) {
			t.Errorf("%s with %d clients: %d processes, %d errors, raw %.0f/s", r.Target, r.Concurrency, r.Processes, r.Errors, r.RawCommitsPS)
		}
	}
	if want := "memory/1 memory/3 sqlite-normal/1 sqlite-normal/3"; strings.Join(got, " ") != want {
		t.Errorf("runs %v, want %s", got, want)
	}
	if _, err := bench.Run(context.Background(), bench.Config{Targets: []string{"memory"}, Clients: []int{4, 0}}, nil); err == nil ||
		!strings.Contains(err.Error(), "0 clients") {
		t.Errorf("a sweep with 0 clients: %v", err)
	}
}

// veenaBinary is the veena command, built once per test run.
func veenaBinary(t *testing.T) string { return testutil.Veena(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveVeena()
	os.Exit(code)
}

// benchSchemas lists the schemas whose names begin with prefix on the server.
func benchSchemas(t *testing.T, prefix string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v (set VEENA_TEST_POSTGRES)", pgtest.URL(), err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// TestRunProcesses runs PostgreSQL with two engines in two worker OS
// processes of the veena command and checks that both worked and that the
// results were merged.
func TestRunProcesses(t *testing.T) {
	bin := veenaBinary(t)
	// Other runs may share the server: look only at this test's schemas.
	prefix := fmt.Sprintf("veena_bench_t%d_", time.Now().UnixNano())
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Config{
		Targets:      []string{"postgres"},
		Workloads:    []string{"wait", "split10"},
		Concurrency:  4,
		Duration:     1500 * time.Millisecond,
		Engines:      []int{2},
		GroupCommit:  []bool{false},
		Parked:       100,
		Worker:       []string{bin, "bench", "worker"},
		PostgresURL:  pgtest.URL(),
		SchemaPrefix: prefix,
	}, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2\n%s", len(rep.Results), progress.String())
	}
	want := map[string]float64{"wait": 2, "split10": 11}
	for _, r := range rep.Results {
		if r.Commands == 0 || r.Processes == 0 || r.Errors != 0 {
			t.Errorf("%s: %d processes, %d commands, %d errors", r.Workload, r.Processes, r.Commands, r.Errors)
		}
		if perProcess := float64(r.Commands) / float64(max(r.Processes, 1)); perProcess < want[r.Workload] || perProcess > want[r.Workload]+1 {
			t.Errorf("%s: %.2f commands per process", r.Workload, perProcess)
		}
		if r.EngineProcesses != 2 || len(r.Workers) != 2 {
			t.Fatalf("%s: %d engine processes, %d worker results", r.Workload, r.EngineProcesses, len(r.Workers))
		}
		var processes, commands, commits int64
		for i, w := range r.Workers {
			if w.Clients != 2 || w.Processes == 0 || w.Commands == 0 || w.Commits == 0 || w.Errors != 0 {
				t.Errorf("%s: worker %d: %+v", r.Workload, i+1, w)
			}
			processes, commands, commits = processes+w.Processes, commands+w.Commands, commits+w.Commits
		}
		if processes != r.Processes || commands != r.Commands {
			t.Errorf("%s: workers did %d processes and %d commands, the result says %d and %d",
				r.Workload, processes, commands, r.Processes, r.Commands)
		}
		if tx := float64(commits) / float64(max(processes, 1)); r.TxPerProcess != tx || tx <= 0 {
			t.Errorf("%s: %.2f tx/process, the workers' commits say %.2f", r.Workload, r.TxPerProcess, tx)
		}
		if r.P50 <= 0 || r.P99 < r.P50 || r.RawCommitsPS <= 0 || r.Elapsed < 1500*time.Millisecond {
			t.Errorf("%s: p50 %v, p99 %v, raw rate %.0f, elapsed %v", r.Workload, r.P50, r.P99, r.RawCommitsPS, r.Elapsed)
		}
	}
	p := progress.String()
	for _, s := range []string{"== wait on postgres (engines 2 in 2 OS processes", "parking 100 processes", "2 engine processes ready", "commands/s"} {
		if !strings.Contains(p, s) {
			t.Errorf("progress lacks %q:\n%s", s, p)
		}
	}
	var table strings.Builder
	rep.WriteTable(&table)
	if strings.Contains(table.String(), "one OS process") {
		t.Errorf("table:\n%s", table.String())
	}
	for name := range benchSchemas(t, prefix) {
		t.Errorf("schema %s was not dropped", name)
	}
}

// TestWorkerStopsWithoutParent checks that a worker process exits when its
// standard input closes in the middle of a run, as when its parent dies.
func TestWorkerStopsWithoutParent(t *testing.T) {
	bin := veenaBinary(t)
	schema := pgtest.Schema(t)
	cmd := exec.Command(bin, "bench", "worker")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
		}
	}()
	spec, _ := json.Marshal(map[string]any{"postgresURL": pgtest.URL(), "schema": schema, "workload": "wait",
		"clients": 2, "maxConns": 4, "duration": time.Hour, "warmup": 100 * time.Millisecond})
	stdin.Write(append(spec, '\n'))
	lines := bufio.NewScanner(stdout)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("the worker said nothing more: %v\n%s", lines.Err(), stderr.String())
		}
		return lines.Text()
	}
	if l := next(); !strings.Contains(l, `"ready":true`) {
		t.Fatalf("first line %s, want ready\n%s", l, stderr.String())
	}
	stdin.Write([]byte("go\n"))
	if l := next(); !strings.Contains(l, `"progress"`) {
		t.Fatalf("line %s, want progress", l)
	}
	t0 := time.Now()
	stdin.Close()
	go func() {
		for lines.Scan() {
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err == nil {
			t.Errorf("the orphaned worker exited with status 0")
		}
		t.Logf("the worker exited %v after its standard input closed: %v", time.Since(t0).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker still runs 20 s after its standard input closed\n%s", stderr.String())
	}
}
