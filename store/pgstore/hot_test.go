package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/internal/pgtest"
)

// TestStepsUpdateRowsInPlace: a step that changes where a process waits
// but not its state rewrites the process row in place (a heap-only tuple,
// which writes no index entry), as the fillfactor of migration 3 intends.
// A column that changes at nearly every step (waits, say) named by an index
// of processes, in its key or its predicate, would prevent it.
func TestStepsUpdateRowsInPlace(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	e, err := bench.OpenEngine(ctx, open(t, schema), "split10")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := bench.RunProcess(ctx, e, "split10"); err != nil {
			t.Fatal(err)
		}
	}
	e.Close() // the store's connections end, and with them their statistics are flushed

	conn, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = ($1 || '.processes')::regclass`, schema)
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for rows.Next() {
		var d string
		rows.Scan(&d)
		defs = append(defs, d)
	}
	rows.Close()
	for _, d := range defs {
		for _, col := range []string{"waits", "snapshot", "env", "event_seq", "updated_at"} {
			if strings.Contains(d, col) {
				t.Errorf("an index of processes names %s, which changes at every step: %s", col, d)
			}
		}
	}

	// 5 processes of 10 branches: 45 completions leave the process
	// executing (the last of each ends it).
	var upd, hot int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
		if err := conn.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'processes'`, schema).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		if upd >= 50 {
			break
		}
	}
	if upd < 50 {
		t.Fatalf("PostgreSQL counted %d updates of processes rows, want at least 50 (its statistics did not arrive)", upd)
	}
	if hot < 40 {
		t.Errorf("%d of %d updates of processes rows were heap-only, want at least 40 (the 45 that keep the process executing, less a few a full page refuses)", hot, upd)
	}
}
