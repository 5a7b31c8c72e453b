package schema_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// Benchmarks of the schema runtime on an SQLite file (synchronous FULL,
// group commit as veena serve has it), or on PostgreSQL with
// VEENA_SCHEMA_BENCH_DB=postgres:
//
//	go test ./schema -run '^$' -bench . -benchtime 20000x
//
// BenchmarkRouteEvent routes chat events by context to instances parked
// at an event node: conversations among 1,000 users with 1,000 parked, and
// with VEENA_SCHEMA_PARKED (e.g. 1000000) parked when it is set; then, with
// that many, events spread over all of them. Each event is one routed,
// committed step (a built-in action and back to the event node). It
// reports events/s and the p50 and p99 of one event's latency.
//
// BenchmarkActions runs instances whose node has ten registered actions,
// each completion a step of its own, and reports actions/s beside the raw
// commit rate (one-row committed inserts from as many clients on the same
// file, one commit each), with commits of their own (group=1) and shared
// by concurrent steps (group=64, as veena serve runs).

const benchChat = `
schema: bench-chat
context: {keys: [userId]}
almanac: {count: 0}
nodes:
  - id: start
    type: root
    next: [{to: listen}]
  - id: listen
    type: event
    event: {name: msg}
    actions:
      - {id: count, do: almanac.set, with: {count: "= almanac.count + 1", last: "= event.payload.text"}}
    next:
      - {to: end, when: "event.payload.text == 'bye'"}
      - {to: listen}
  - id: end
    type: terminator
`

const benchActions = `
schema: bench-actions
context: {keys: [n]}
nodes:
  - id: start
    type: root
    next: [{to: work}]
  - id: work
    type: execution
    actions:
      - {id: a1, do: noop}
      - {id: a2, do: noop}
      - {id: a3, do: noop}
      - {id: a4, do: noop}
      - {id: a5, do: noop}
      - {id: a6, do: noop}
      - {id: a7, do: noop}
      - {id: a8, do: noop}
      - {id: a9, do: noop}
      - {id: a10, do: noop}
    next: [{to: end}]
  - id: end
    type: terminator
`

type benchEngine struct {
	e      *veena.Engine
	rt     *schema.Runtime
	path   string        // the SQLite file
	schema string        // the PostgreSQL schema, with VEENA_SCHEMA_BENCH_DB=postgres
	done   *atomic.Int64 // actions completed
}

// benchOnPostgres: VEENA_SCHEMA_BENCH_DB=postgres runs the benchmarks on
// PostgreSQL (VEENA_TEST_POSTGRES) instead of SQLite.
func benchOnPostgres() bool { return os.Getenv("VEENA_SCHEMA_BENCH_DB") == "postgres" }

func openBenchGroup(b *testing.B, group int, defs ...string) *benchEngine {
	be := openBenchIn(b, b.TempDir(), group, false, defs...)
	b.Cleanup(func() { be.e.Close() })
	return be
}

// openBenchKept opens an engine that outlives the benchmark function
// (parked instances are set up once for all its runs).
func openBenchKept(b *testing.B, defs ...string) *benchEngine {
	dir, err := os.MkdirTemp("", "veena-schema-bench")
	if err != nil {
		b.Fatal(err)
	}
	return openBenchIn(b, dir, 64, true, defs...)
}

func openBenchIn(b *testing.B, dir string, group int, keep bool, defs ...string) *benchEngine {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "bench.db")
	var st store.Store
	var pgSchema string
	if benchOnPostgres() {
		pgSchema = "veena_schemabench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		pool, err := pgxpool.New(ctx, pgtest.URL())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgSchema); err != nil {
			b.Fatal(err)
		}
		pool.Close()
		if !keep {
			b.Cleanup(func() { pgtest.Drop(pgSchema) })
		}
		grp := 0
		if group > 1 {
			grp = group
		}
		if st, err = pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgSchema, GroupCommit: grp, MaxConns: 24}); err != nil {
			b.Fatal(err)
		}
	} else {
		var err error
		if st, err = sqlitestore.Open(path, sqlitestore.Options{MaxBatch: group}); err != nil {
			b.Fatal(err)
		}
	}
	rt := schema.New()
	done := &atomic.Int64{}
	rt.Action("noop", func(ctx context.Context, c *schema.Call) (any, error) {
		done.Add(1)
		return nil, nil
	})
	k := kernel.New()
	rt.Register(k)
	e, err := veena.Open(ctx, veena.Options{Store: st, Kernel: k})
	if err != nil {
		b.Fatal(err)
	}
	rt.Attach(e)
	for i, d := range defs {
		if _, _, err := e.LoadDefinition(ctx, fmt.Sprintf("bench-%d.yaml", i), []byte(d), ""); err != nil {
			b.Fatal(err)
		}
	}
	return &benchEngine{e: e, rt: rt, path: path, schema: pgSchema, done: done}
}

// park puts n instances of bench-chat at their event node: one started by
// the engine, copied n-1 times in bulk with their own user ids.
func (be *benchEngine) park(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	res, err := be.rt.Send(ctx, schema.Event{Name: "msg", Context: map[string]string{"userId": "u0"}, Payload: map[string]any{"text": "hi"}})
	if err == nil || veena.Code(err) != veena.ErrNotFound.Code {
		b.Fatalf("bench-chat has no trigger, so an event for nobody is not_found: %v %v", res, err)
	}
	p, err := be.e.StartProcess(ctx, veena.StartRequest{Definition: "bench-chat", Context: map[string]string{"userId": "u0"}})
	if err != nil {
		b.Fatal(err)
	}
	if be.schema != "" {
		be.parkPostgres(b, p.ID, n)
		return
	}
	db, err := sql.Open("sqlite", "file:"+be.path+"?_busy_timeout=60000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cols := func(table string) []string {
		rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			out = append(out, c)
		}
		return out
	}
	subst := func(table string, repl map[string]string) (string, string) {
		var names, exprs []string
		for _, c := range cols(table) {
			names = append(names, c)
			if r, ok := repl[c]; ok {
				exprs = append(exprs, r)
			} else {
				exprs = append(exprs, c)
			}
		}
		return strings.Join(names, ", "), strings.Join(exprs, ", ")
	}
	const chunk = 100000
	series := `WITH RECURSIVE g(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM g WHERE x < ?) `
	id := `'parked-' || x`
	routing := `'[["userId","u' || x || '"]]'`
	for from := 1; from < n; from += chunk {
		to := min(n-1, from+chunk-1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		n1, e1 := subst("processes", map[string]string{"id": id, "root_id": id,
			"context": `json_object('@schema:bench-chat', ` + routing + `, 'userId', 'u' || x)`})
		stmts := []string{
			series + `INSERT INTO processes (` + n1 + `) SELECT ` + e1 + ` FROM processes, g WHERE id = ?`,
		}
		n2, e2 := subst("events", map[string]string{"process_id": id})
		stmts = append(stmts, series+`INSERT INTO events (`+n2+`) SELECT `+e2+` FROM events, g WHERE process_id = ?`)
		n3, e3 := subst("waits", map[string]string{"process_id": id})
		stmts = append(stmts, series+`INSERT INTO waits (`+n3+`) SELECT `+e3+` FROM waits, g WHERE process_id = ?`)
		n4, e4 := subst("contexts", map[string]string{"process_id": id,
			"value": `CASE key WHEN 'userId' THEN 'u' || x ELSE ` + routing + ` END`})
		stmts = append(stmts, series+`INSERT INTO contexts (`+n4+`) SELECT `+e4+` FROM contexts, g WHERE process_id = ?`)
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q, from, to, p.ID); err != nil {
				b.Fatalf("park: %v\n%s", err, q)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
}

// route sends b.N events from 16 clients to users picked at random among
// the first `among` parked ones, and reports events/s and latency
// percentiles.
func (be *benchEngine) route(b *testing.B, among int) {
	parked := among
	ctx := context.Background()
	const clients = 16
	lat := make([][]time.Duration, clients)
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(parked)))
			for left.Add(-1) >= 0 {
				user := "u" + strconv.Itoa(r.IntN(parked))
				t0 := time.Now()
				_, err := be.rt.Send(ctx, schema.Event{Name: "msg", Context: map[string]string{"userId": user}, Payload: map[string]any{"text": "x"}})
				if err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/el.Seconds(), "events/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkRouteEvent(b *testing.B) {
	counts := []int{1000}
	if v, err := strconv.Atoi(os.Getenv("VEENA_SCHEMA_PARKED")); err == nil && v > 1000 {
		counts = append(counts, v)
	}
	defer func() {
		parkedMu.Lock()
		defer parkedMu.Unlock()
		for n, be := range parkedEngines {
			be.e.Close()
			if be.schema != "" {
				pgtest.Drop(be.schema)
			}
			if be.path != "" {
				os.RemoveAll(filepath.Dir(be.path))
			}
			delete(parkedEngines, n)
		}
	}()
	for _, n := range counts {
		// Conversations going on among 1,000 users while n instances are
		// parked: what routing by context costs at that scale.
		b.Run(fmt.Sprintf("parked=%d", n), func(b *testing.B) {
			be := benchParked(b, n)
			be.route(b, 1000)
		})
		if n > 1000 {
			// Every event for another of the n users: each touches an
			// instance no recent command did (its rows are cold).
			b.Run(fmt.Sprintf("parked=%d/spread", n), func(b *testing.B) {
				be := benchParked(b, n)
				be.route(b, n)
			})
		}
	}
}

var parkedMu sync.Mutex
var parkedEngines = map[int]*benchEngine{}

// benchParked opens an engine with n parked instances once per count (a
// benchmark function runs several times while b.N grows).
func benchParked(b *testing.B, n int) *benchEngine {
	parkedMu.Lock()
	defer parkedMu.Unlock()
	if be := parkedEngines[n]; be != nil {
		return be
	}
	b.StopTimer()
	t0 := time.Now()
	be := openBenchKept(b, benchChat)
	be.park(b, n)
	b.Logf("parked %d instances in %v", n, time.Since(t0).Round(time.Millisecond))
	parkedEngines[n] = be
	b.StartTimer()
	return be
}

func BenchmarkActions(b *testing.B) {
	for _, group := range []int{1, 64} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) { benchActionsRun(b, group) })
	}
}

func benchActionsRun(b *testing.B, group int) {
	be := openBenchGroup(b, group, benchActions)
	ctx := context.Background()
	const clients = 16
	b.ResetTimer()
	start := time.Now()
	instances := b.N/10 + 1
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > instances {
					return
				}
				if _, err := be.e.StartProcess(ctx, veena.StartRequest{Definition: "bench-actions", Context: map[string]string{"n": strconv.Itoa(i)}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for be.done.Load() < int64(instances*10) {
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(instances*10)/el.Seconds(), "actions/s")
	rawFn := func() (float64, error) { return rawCommits(be.path, clients, 2*time.Second) }
	if be.schema != "" {
		rawFn = func() (float64, error) { return rawCommitsPostgres(be.schema, clients, 2*time.Second) }
	}
	raw, err := rawFn()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(raw, "raw-commits/s")
}

// rawCommits measures one-row committed inserts from clients goroutines
// on the same SQLite file (one writer connection, synchronous FULL).
func rawCommits(path string, clients int, d time.Duration) (float64, error) {
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, client INTEGER, payload TEXT)`); err != nil {
		return 0, err
	}
	var n atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	t := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := db.ExecContext(ctx, `INSERT INTO raw (client, payload) VALUES (?, ?)`, c, "x"); err != nil {
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(t).Seconds(), nil
}

// parkPostgres copies the started instance n-1 times with SQL, as park
// does on SQLite.
func (be *benchEngine) parkPostgres(b *testing.B, from string, n int) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = be.schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	cols := func(table string) []string {
		rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, be.schema, table)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			out = append(out, c)
		}
		return out
	}
	subst := func(table string, repl map[string]string) (string, string) {
		var names, exprs []string
		for _, c := range cols(table) {
			names = append(names, c)
			if r, ok := repl[c]; ok {
				exprs = append(exprs, r)
			} else {
				exprs = append(exprs, c)
			}
		}
		return strings.Join(names, ", "), strings.Join(exprs, ", ")
	}
	id := `'parked-' || g`
	routing := `'[["userId","u' || g || '"]]'`
	const chunk = 100000
	for lo := 1; lo < n; lo += chunk {
		hi := min(n-1, lo+chunk-1)
		n1, e1 := subst("processes", map[string]string{"id": id, "root_id": id,
			"context": `json_build_object('@schema:bench-chat', ` + routing + `, 'userId', 'u' || g)::text`})
		n2, e2 := subst("events", map[string]string{"process_id": id})
		n3, e3 := subst("waits", map[string]string{"process_id": id})
		n4, e4 := subst("contexts", map[string]string{"process_id": id,
			"value": `CASE key WHEN 'userId' THEN 'u' || g ELSE ` + routing + ` END`})
		for _, q := range []string{
			`INSERT INTO processes (` + n1 + `) SELECT ` + e1 + ` FROM processes, generate_series($2::int, $3::int) AS g WHERE id = $1`,
			`INSERT INTO events (` + n2 + `) SELECT ` + e2 + ` FROM events, generate_series($2::int, $3::int) AS g WHERE process_id = $1`,
			`INSERT INTO waits (` + n3 + `) SELECT ` + e3 + ` FROM waits, generate_series($2::int, $3::int) AS g WHERE process_id = $1`,
			`INSERT INTO contexts (` + n4 + `) SELECT ` + e4 + ` FROM contexts, generate_series($2::int, $3::int) AS g WHERE process_id = $1`,
		} {
			if _, err := pool.Exec(ctx, q, from, lo, hi); err != nil {
				b.Fatalf("park: %v\n%s", err, q)
			}
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// rawCommitsPostgres measures one-row committed inserts on the server.
func rawCommitsPostgres(schema string, clients int, d time.Duration) (float64, error) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		return 0, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, client INTEGER, payload TEXT)`); err != nil {
		return 0, err
	}
	var n atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	t := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := pool.Exec(ctx, `INSERT INTO bench_raw (client, payload) VALUES ($1, $2)`, c, "x"); err != nil {
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(t).Seconds(), nil
}
