package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/bench"
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
	}
	var table strings.Builder
	rep.WriteTable(&table)
	if !strings.Contains(table.String(), "commands/s") || !strings.Contains(progress.String(), "== wait on sqlite-full") {
		t.Errorf("report:\n%s\nprogress:\n%s", table.String(), progress.String())
	}
}
