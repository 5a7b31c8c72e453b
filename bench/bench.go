// Package bench is Veena's load generator (veena bench): it runs client
// workloads against engines on SQLite and PostgreSQL and reports
// processes/s, commands/s, command latency, transactions per process and,
// for comparison, the raw rate of one-row committed inserts at the same
// concurrency on the same database. On PostgreSQL, given a worker command
// (Config.Worker), every engine is a separate OS process (see Worker).
package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// Config says what to measure. Zero values take the defaults given.
type Config struct {
	// Targets are the databases: "sqlite-full", "sqlite-normal" (SQLite with
	// synchronous FULL or NORMAL), "postgres", "memory". Default: the first three.
	Targets []string
	// Workloads: "wait" (a one-wait-node process started and completed by
	// the client), "auto10" (ten automatic nodes), "split10" (a split into
	// ten waiting branches, each completed by the client, and a join).
	// Default: all three.
	Workloads []string
	// Concurrency is the number of clients (default 16).
	Concurrency int
	// Clients, if set, are several numbers of clients to measure each
	// setup and workload at, one run each, in place of Concurrency: group
	// commit shares commits among the commands waiting at once, so its gain
	// depends on how many clients there are.
	Clients []int
	// Duration is how long each run measures (default 5 s).
	Duration time.Duration
	// Engines are the numbers of engines sharing the PostgreSQL database
	// (default 1 and 3). With Worker set, each engine is a separate OS
	// process (a worker) running its share of the clients; without it, the
	// engines all run in this OS process, each with its own connection pool
	// and cache, so that they still coordinate through the database only.
	Engines []int
	// Worker is the command (argv prefix) that starts one worker process of
	// a PostgreSQL run: a program that calls Worker with its standard input
	// and output, such as `veena bench worker`. Empty: the engines run in
	// this OS process.
	Worker []string
	// GroupCommit are the modes to measure: false commits every command on
	// its own, true lets concurrent commands share commits (SQLite's writer
	// batches; on PostgreSQL, pgstore.Options.GroupCommit). Default: both.
	GroupCommit []bool
	// Dir holds the SQLite files (default: a new temporary directory,
	// removed afterwards).
	Dir string
	// PostgresURL is the server (default: $VEENA_TEST_POSTGRES or the local
	// test database). Each run uses a new schema, dropped afterwards.
	PostgresURL string
	// SchemaPrefix begins the names of the PostgreSQL schemas a run
	// creates (default "veena_bench_"): a test gives its own, to find
	// its leftovers among those of other runs sharing the server.
	SchemaPrefix string
	// Parked is the number of processes waiting in the database before a
	// run starts (written in bulk; default 0).
	Parked int
}

// newSchema names a new PostgreSQL schema for one run.
func (cfg Config) newSchema() string {
	prefix := cfg.SchemaPrefix
	if prefix == "" {
		prefix = "veena_bench_"
	}
	return prefix + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// Result is one measured run.
type Result struct {
	Workload     string        `json:"workload"`
	Target       string        `json:"target"`
	Engines      int           `json:"engines"`
	GroupCommit  bool          `json:"groupCommit"`
	Concurrency  int           `json:"concurrency"`
	Parked       int           `json:"parked"`
	Processes    int64         `json:"processes"`
	Commands     int64         `json:"commands"`
	Errors       int64         `json:"errors"`
	Elapsed      time.Duration `json:"elapsed"`
	ProcessesPS  float64       `json:"processesPerSecond"`
	CommandsPS   float64       `json:"commandsPerSecond"`
	P50          time.Duration `json:"p50"`
	P99          time.Duration `json:"p99"`
	TxPerProcess float64       `json:"transactionsPerProcess"`
	RawCommitsPS float64       `json:"rawCommitsPerSecond"`
	// CPUPerProcess is the CPU time (user and system) the engines' OS
	// processes used per process run (with the engines in this OS
	// process, their clients too): on a loaded machine the rates move
	// with whatever else runs, the CPU a process costs much less. On
	// SQLite it includes the database, which runs in the engine's process.
	CPUPerProcess time.Duration `json:"cpuPerProcess"`
	// DBCPUPerProcess is, on PostgreSQL, the CPU time used per process run
	// by the server's backends serving the engines (found by their
	// application name; 0 when the server runs on another machine).
	DBCPUPerProcess time.Duration `json:"dbCpuPerProcess,omitempty"`
	// WriterBusy is the share of the run SQLite's single writer spent
	// running batches (0 on other targets): near 1, the writer is what
	// limits throughput.
	WriterBusy float64 `json:"writerBusy,omitempty"`
	// EngineProcesses is the number of worker OS processes that ran the
	// engines; 0 when they ran in the bench's own process.
	EngineProcesses int `json:"engineProcesses"`
	// Workers is what each worker process did (with EngineProcesses).
	Workers []WorkerResult `json:"workers,omitempty"`
}

// WorkerResult is one worker process's share of a run.
type WorkerResult struct {
	Clients   int   `json:"clients"`
	Processes int64 `json:"processes"`
	Commands  int64 `json:"commands"`
	Errors    int64 `json:"errors"`
	// Commits is the number of transactions its store committed.
	Commits int64 `json:"commits"`
}

// Report is every result of a Run.
type Report struct {
	Results []Result `json:"results"`
}

// WriteTable prints the report as a table.
func (r Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\ttarget\tengines\tgroup\tclients\tparked\tprocesses/s\tcommands/s\tp50\tp99\ttx/process\traw commits/s\tcmd/raw\tcpu/process\tdb cpu/process\t")
	for _, x := range r.Results {
		ratio := 0.0
		if x.RawCommitsPS > 0 {
			ratio = x.CommandsPS / x.RawCommitsPS
		}
		dbCPU := "-"
		if x.DBCPUPerProcess > 0 {
			dbCPU = round(x.DBCPUPerProcess)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%d\t%d\t%.0f\t%.0f\t%s\t%s\t%.2f\t%.0f\t%.2f\t%s\t%s\t\n",
			x.Workload, x.Target, x.Engines, x.GroupCommit, x.Concurrency, x.Parked, x.ProcessesPS, x.CommandsPS,
			round(x.P50), round(x.P99), x.TxPerProcess, x.RawCommitsPS, ratio, round(x.CPUPerProcess), dbCPU)
	}
	tw.Flush()
	r.writeCycles(w)
	for _, x := range r.Results {
		if x.Target == "postgres" && x.Engines > 1 && x.EngineProcesses == 0 {
			fmt.Fprintln(w, "note: the PostgreSQL engines ran in one OS process (no worker command)")
			break
		}
	}
}

func round(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

func (c *Config) defaults() {
	if len(c.Targets) == 0 {
		c.Targets = []string{"sqlite-full", "sqlite-normal", "postgres"}
	}
	if len(c.Workloads) == 0 {
		c.Workloads = []string{"wait", "auto10", "split10"}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if len(c.Clients) == 0 {
		c.Clients = []int{c.Concurrency}
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if len(c.Engines) == 0 {
		c.Engines = []int{1, 3}
	}
	if len(c.GroupCommit) == 0 {
		c.GroupCommit = []bool{false, true}
	}
	if c.PostgresURL == "" {
		c.PostgresURL = os.Getenv("VEENA_TEST_POSTGRES")
	}
	if c.PostgresURL == "" {
		c.PostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
}

// Run measures every combination of the configuration, printing progress
// to progress (which may be nil), and returns the results.
func Run(ctx context.Context, cfg Config, progress io.Writer) (Report, error) {
	cfg.defaults()
	if progress == nil {
		progress = io.Discard
	}
	for _, w := range cfg.Workloads {
		if _, ok := workloads[w]; !ok {
			return Report{}, fmt.Errorf("bench: unknown workload %q (want wait, wait2, auto10, split10, job, task, wait-task, split10-task, bpmn-wait, bpmn-auto10 or bpmn-split10)", w)
		}
	}
	for _, n := range cfg.Clients {
		if n <= 0 {
			return Report{}, fmt.Errorf("bench: %d clients (want at least one)", n)
		}
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "veena-bench-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	var rep Report
	for _, target := range cfg.Targets {
		var setups []setup
		switch target {
		case "sqlite-full", "sqlite-normal":
			for _, g := range cfg.GroupCommit {
				setups = append(setups, setup{target: target, engines: 1, group: g})
			}
		case "postgres":
			for _, g := range cfg.GroupCommit {
				for _, n := range cfg.Engines {
					setups = append(setups, setup{target: target, engines: n, group: g})
				}
			}
		case "memory":
			setups = append(setups, setup{target: target, engines: 1})
		default:
			return rep, fmt.Errorf("bench: unknown target %q (want sqlite-full, sqlite-normal, postgres or memory)", target)
		}
		for _, s := range setups {
			for _, w := range cfg.Workloads {
				for _, n := range cfg.Clients {
					c := cfg
					c.Concurrency = n
					res, err := runOne(ctx, c, s, w, progress)
					if err != nil {
						return rep, fmt.Errorf("bench %s on %s: %w", w, s.target, err)
					}
					rep.Results = append(rep.Results, res)
					if err := ctx.Err(); err != nil {
						return rep, err
					}
				}
			}
		}
	}
	return rep, nil
}

type setup struct {
	target  string
	engines int
	group   bool
}

// database is what a run opened: the engines, how to count commits, how
// to measure raw inserts, and how to clean up.
type database struct {
	engines []*veena.Engine
	commits func() int64
	busy    func() time.Duration // the SQLite writer's busy time so far
	raw     func(ctx context.Context, clients int, d time.Duration) (float64, error)
	park    func(ctx context.Context, e *veena.Engine, n int) error
	close   func()
	// server says the database server's CPU time so far (nil: the
	// database runs in this OS process).
	server func() time.Duration
}

func (db *database) serverCPU() time.Duration {
	if db.server == nil {
		return 0
	}
	return db.server()
}

func openDatabase(ctx context.Context, cfg Config, s setup, name string) (*database, error) {
	db := &database{}
	switch s.target {
	case "memory":
		e, err := veena.Open(ctx, veena.Options{})
		if err != nil {
			return nil, err
		}
		db.engines = []*veena.Engine{e}
		db.close = func() { e.Close() }
	case "sqlite-full", "sqlite-normal":
		sync := "FULL"
		if s.target == "sqlite-normal" {
			sync = "NORMAL"
		}
		path := filepath.Join(cfg.Dir, name+".db")
		batch := 1
		if s.group {
			batch = 256
		}
		st, err := sqlitestore.Open(path, sqlitestore.Options{Synchronous: sync, MaxBatch: batch})
		if err != nil {
			return nil, err
		}
		e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
		if err != nil {
			st.Close()
			return nil, err
		}
		db.engines = []*veena.Engine{e}
		db.commits = func() int64 { _, c := st.Stats(); return c }
		db.busy = st.WriterBusy
		db.raw = func(ctx context.Context, clients int, d time.Duration) (float64, error) {
			return rawSQLite(ctx, path, sync, clients, d)
		}
		db.park = func(ctx context.Context, e *veena.Engine, n int) error { return parkSQLite(ctx, e, path, n) }
		db.close = func() {
			e.Close()
			for _, f := range []string{".db", ".db-wal", ".db-shm", "-raw.db", "-raw.db-wal", "-raw.db-shm"} {
				os.Remove(filepath.Join(cfg.Dir, name+f))
			}
		}
	case "postgres":
		schema := cfg.newSchema()
		var stores []*pgstore.Store
		var closers []func()
		db.close = func() {
			for _, c := range closers {
				c()
			}
			if pool, err := pgxpool.New(context.Background(), cfg.PostgresURL); err == nil {
				pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
				pool.Close()
			}
		}
		conns := int32(cfg.Concurrency/s.engines + 4)
		for range s.engines {
			opts := pgstore.Options{Schema: schema, MaxConns: conns, ApplicationName: benchApp(schema)}
			if s.group {
				opts.GroupCommit = 64
			}
			st, err := pgstore.Open(ctx, cfg.PostgresURL, opts)
			if err != nil {
				db.close()
				return nil, err
			}
			e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
			if err != nil {
				st.Close()
				db.close()
				return nil, err
			}
			stores = append(stores, st)
			closers = append(closers, func() { e.Close() })
			db.engines = append(db.engines, e)
			if len(stores) == 1 {
				pool := st.Pool()
				db.server = func() time.Duration { return backendsCPU(pool, benchApp(schema)) }
				db.raw = func(ctx context.Context, clients int, d time.Duration) (float64, error) {
					return rawPostgres(ctx, pool, clients, d)
				}
				db.park = func(ctx context.Context, e *veena.Engine, n int) error { return parkPostgres(ctx, e, pool, n) }
			}
		}
		db.commits = func() int64 {
			var n int64
			for _, st := range stores {
				_, c := st.Stats()
				n += c
			}
			return n
		}
	}
	return db, nil
}

func runOne(ctx context.Context, cfg Config, s setup, workload string, progress io.Writer) (Result, error) {
	name := fmt.Sprintf("%s-%s-e%d-g%v", workload, s.target, s.engines, s.group)
	where := ""
	if s.target == "postgres" {
		if len(cfg.Worker) > 0 {
			where = fmt.Sprintf(" in %d OS processes", s.engines)
			if s.engines == 1 {
				where = " in a worker OS process"
			}
		} else {
			where = " in one OS process"
		}
	}
	label := fmt.Sprintf("%s on %s (engines %d%s, group commit %v, %d clients)", workload, s.target, s.engines, where, s.group, cfg.Concurrency)
	fmt.Fprintf(progress, "== %s\n", label)
	if s.target == "postgres" && len(cfg.Worker) > 0 {
		return runWorkers(ctx, cfg, s, workload, progress)
	}
	db, err := openDatabase(ctx, cfg, s, name)
	if err != nil {
		return Result{}, err
	}
	defer db.close()
	w := workloads[workload]
	for _, e := range db.engines {
		if err := w.load(ctx, e); err != nil {
			return Result{}, err
		}
	}
	res := Result{Workload: workload, Target: s.target, Engines: s.engines, GroupCommit: s.group, Concurrency: cfg.Concurrency, Parked: cfg.Parked}
	if cfg.Parked > 0 {
		if db.park == nil {
			return Result{}, fmt.Errorf("parking processes is not supported on %s", s.target)
		}
		fmt.Fprintf(progress, "   parking %d processes …\n", cfg.Parked)
		t := time.Now()
		if err := db.park(ctx, db.engines[0], cfg.Parked); err != nil {
			return Result{}, fmt.Errorf("park processes: %w", err)
		}
		fmt.Fprintf(progress, "   parked in %v\n", time.Since(t).Round(time.Millisecond))
	}

	// Warm up briefly, then measure.
	runClients(ctx, db.engines, w, cfg.Concurrency, 300*time.Millisecond, nil)
	commits0 := int64(0)
	if db.commits != nil {
		commits0 = db.commits()
	}
	var busy0 time.Duration
	if db.busy != nil {
		busy0 = db.busy()
	}
	var live liveCounters
	stop := printProgress(progress, func() (int64, int64) { return live.processes.Load(), live.commands.Load() })
	cpu0, dbCPU0 := cpustat.Self(), db.serverCPU()
	t := time.Now()
	lat, errs, _ := runClients(ctx, db.engines, w, cfg.Concurrency, cfg.Duration, &live)
	res.Elapsed = time.Since(t)
	cpu, dbCPU := cpustat.Self()-cpu0, db.serverCPU()-dbCPU0
	stop()
	if db.busy != nil && res.Elapsed > 0 {
		res.WriterBusy = float64(db.busy()-busy0) / float64(res.Elapsed)
	}
	res.Processes, res.Commands, res.Errors = live.processes.Load(), live.commands.Load(), errs
	res.summarize(lat)
	if res.Processes > 0 {
		res.CPUPerProcess = cpu / time.Duration(res.Processes)
		res.DBCPUPerProcess = dbCPU / time.Duration(res.Processes)
	}
	if db.commits != nil && res.Processes > 0 {
		res.TxPerProcess = float64(db.commits()-commits0) / float64(res.Processes)
	}
	if db.raw != nil {
		raw, err := db.raw(ctx, cfg.Concurrency, min(cfg.Duration, 3*time.Second))
		if err != nil {
			return res, fmt.Errorf("raw inserts: %w", err)
		}
		res.RawCommitsPS = raw
	}
	return res, res.finish(progress)
}

// benchApp is the application name of the engines' connections in a run
// on a schema.
func benchApp(schema string) string { return "veena-bench:" + schema }

// backendCPU is the CPU time used so far by the PostgreSQL backends
// serving the engines of a run (by their application name), by process
// id; empty if the server runs on another machine.
func backendCPU(pool *pgxpool.Pool, app string) map[int]time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return nil
	}
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	return cpustat.Of(pids)
}

// backendsCPU is backendCPU summed.
func backendsCPU(pool *pgxpool.Pool, app string) time.Duration {
	var total time.Duration
	for _, d := range backendCPU(pool, app) {
		total += d
	}
	return total
}

// backendCPUSince is the CPU time the backends serving the engines of a
// run (application name app) used since start (backendCPU earlier); a
// backend that ended meanwhile is not counted.
func backendCPUSince(pool *pgxpool.Pool, app string, start map[int]time.Duration) time.Duration {
	var total time.Duration
	for pid, d := range backendCPU(pool, app) {
		total += d - start[pid]
	}
	return total
}

// writeCycles compares, for each measured job and task run, its cycle
// (activate + complete, claim + complete) with two plain completions: the
// wait2 run of the same target, setup and clients in the same report.
// Each process of the three workloads is one start and two commands, so
// the ratio of their costs per process compares the cycles (start
// included: a job's start also writes its job row).
func (r Report) writeCycles(w io.Writer) {
	type key struct {
		target        string
		engines, conc int
		group         bool
	}
	wait2 := map[key]Result{}
	for _, x := range r.Results {
		if x.Workload == "wait2" {
			wait2[key{x.Target, x.Engines, x.Concurrency, x.GroupCommit}] = x
		}
	}
	for _, x := range r.Results {
		b, ok := wait2[key{x.Target, x.Engines, x.Concurrency, x.GroupCommit}]
		if (x.Workload != "job" && x.Workload != "task") || !ok || x.ProcessesPS == 0 {
			continue
		}
		line := fmt.Sprintf("%s on %s (engines %d, group %v, %d clients): %.2f× the processes/s of wait2", x.Workload, x.Target,
			x.Engines, x.GroupCommit, x.Concurrency, x.ProcessesPS/b.ProcessesPS)
		if b.CPUPerProcess > 0 {
			line += fmt.Sprintf(", %.2f× its engine CPU per process", float64(x.CPUPerProcess)/float64(b.CPUPerProcess))
		}
		if b.DBCPUPerProcess > 0 {
			line += fmt.Sprintf(", %.2f× its server CPU per process", float64(x.DBCPUPerProcess)/float64(b.DBCPUPerProcess))
		}
		fmt.Fprintln(w, line)
	}
}

// printProgress prints the counts that counts returns once a second, until
// the function it returns is called (once or more).
func printProgress(progress io.Writer, counts func() (processes, commands int64)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				el := time.Since(start).Seconds()
				p, c := counts()
				fmt.Fprintf(progress, "   %4.0fs  %8d processes  %9d commands  %8.0f commands/s\n", el, p, c, float64(c)/el)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// summarize computes the rates and the latency percentiles (sorting lat).
func (res *Result) summarize(lat []time.Duration) {
	if secs := res.Elapsed.Seconds(); secs > 0 {
		res.ProcessesPS, res.CommandsPS = float64(res.Processes)/secs, float64(res.Commands)/secs
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
}

// finish prints the result's summary and fails the run if every command failed.
func (res *Result) finish(progress io.Writer) error {
	busy := ""
	if res.WriterBusy > 0 {
		busy = fmt.Sprintf(", writer busy %.0f%%", 100*res.WriterBusy)
	}
	if res.CPUPerProcess > 0 {
		busy += fmt.Sprintf(", CPU %s/process", round(res.CPUPerProcess))
	}
	if res.DBCPUPerProcess > 0 {
		busy += fmt.Sprintf(" (+ server %s)", round(res.DBCPUPerProcess))
	}
	fmt.Fprintf(progress, "   %.0f processes/s, %.0f commands/s, p50 %s, p99 %s, %.2f tx/process, raw %.0f commits/s%s, %d errors\n",
		res.ProcessesPS, res.CommandsPS, round(res.P50), round(res.P99), res.TxPerProcess, res.RawCommitsPS, busy, res.Errors)
	if res.Errors > 0 && res.Commands == 0 {
		return errors.New("every command failed")
	}
	return nil
}

type liveCounters struct {
	processes, commands atomic.Int64
}

// runClients runs clients until d has passed and returns every command's
// latency, the number of failed processes and the first failure.
func runClients(ctx context.Context, engines []*veena.Engine, w workload, clients int, d time.Duration, live *liveCounters) ([]time.Duration, int64, error) {
	if live == nil {
		live = &liveCounters{}
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []time.Duration
	var errs atomic.Int64
	var firstErr error
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := engines[c%len(engines)]
			lat := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n, err := w.run(ctx, e, &lat)
				live.commands.Add(int64(n))
				if err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					continue
				}
				live.processes.Add(1)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, errs.Load(), firstErr
}

type workload struct {
	name string
	xml  string
	// waits is the number of waiting tokens the client completes, in
	// token order, after the start (with drive: the commands drive sends).
	waits int
	// format is the definition's format ("sarasvati" when empty).
	format string
	// tasks is the number of human tasks the client completes after the
	// start (a BPMN workload's user tasks), found by listing the
	// process's open tasks.
	tasks int
	// drive, if set, does the rest of the process's work after the start
	// instead (the work workloads, see work.go); it returns the commands it
	// sent.
	drive func(ctx context.Context, e *veena.Engine, p *veena.Process, lat *[]time.Duration) (int, error)
}

// Workload returns a workload's definition (its name and XML source) and
// how many waiting tokens a client completes after the start, for
// benchmarks elsewhere that run the same processes; ok is false for an
// unknown workload.
func Workload(name string) (definition, xml string, waits int, ok bool) {
	w, ok := workloads[name]
	return w.name, w.xml, w.waits, ok
}

var workloads = map[string]workload{
	"wait":    {name: "bench-wait", xml: waitXML, waits: 1},
	"wait2":   {name: "bench-wait2", xml: wait2XML, waits: 2},
	"auto10":  {name: "bench-auto10", xml: auto10XML, waits: 0},
	"split10": {name: "bench-split10", xml: split10XML, waits: 10},
	"job":     {name: "bench-job", xml: jobXML, waits: 2, drive: driveJob},    // activate, complete
	"task":    {name: "bench-task", xml: taskXML, waits: 2, drive: driveTask}, // claim, complete
	// wait and split10 with a person's task on each waiting node, completed
	// by the client as the BPMN workloads complete their user tasks (list
	// the process's tasks, complete each): the Sarasvati side of
	// bpmn-wait and bpmn-split10.
	"wait-task":    {name: "bench-wait-task", xml: waitTaskXML, tasks: 1},
	"split10-task": {name: "bench-split10-task", xml: split10TaskXML, tasks: 10},
	// The same shapes in BPMN: a user task completed by the client, a chain
	// of ten elements, a parallel split into ten user tasks and its join.
	"bpmn-wait":    {name: "bench-bpmn-wait", xml: bpmnWaitXML, format: "bpmn", tasks: 1},
	"bpmn-auto10":  {name: "bench-bpmn-auto10", xml: bpmnAuto10XML, format: "bpmn"},
	"bpmn-split10": {name: "bench-bpmn-split10", xml: bpmnSplit10XML, format: "bpmn", tasks: 10},
}

// LoadWorkload loads a workload's definition into e.
func LoadWorkload(ctx context.Context, e *veena.Engine, workload string) error {
	w, ok := workloads[workload]
	if !ok {
		return fmt.Errorf("bench: unknown workload %q", workload)
	}
	return w.load(ctx, e)
}

// OpenEngine opens an engine on st as the bench does (with a cache that
// holds every tree a run keeps busy) and loads a workload's definition,
// for benchmarks elsewhere. On failure it closes what it opened, st too.
func OpenEngine(ctx context.Context, st store.Store, workload string) (*veena.Engine, error) {
	e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := LoadWorkload(ctx, e, workload); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// load loads the workload's definition into e.
func (w workload) load(ctx context.Context, e *veena.Engine) error {
	if w.format == "bpmn" {
		_, _, err := e.LoadDefinition(ctx, w.name+".bpmn", []byte(w.xml), "bpmn")
		return err
	}
	_, _, err := e.LoadDefinition(ctx, w.name+".wf.xml", []byte(w.xml), "sarasvati")
	return err
}

// RunProcess drives one process of a workload on e, as the bench's
// clients do, for benchmarks elsewhere: it starts the process and
// completes its waiting tokens, and returns how many commands it sent. The
// workload's definition must be loaded.
func RunProcess(ctx context.Context, e *veena.Engine, workload string) (int, error) {
	w, ok := workloads[workload]
	if !ok {
		return 0, fmt.Errorf("bench: unknown workload %q", workload)
	}
	var lat []time.Duration
	return w.run(ctx, e, &lat)
}

// run drives one process: start, then complete its waiting tokens (node
// tokens 2..waits+1 in the API's numbering, which the start leaves waiting).
func (w workload) run(ctx context.Context, e *veena.Engine, lat *[]time.Duration) (int, error) {
	t := time.Now()
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: w.name, Env: map[string]any{"client": "bench"}})
	*lat = append(*lat, time.Since(t))
	if err != nil {
		return 1, err
	}
	n := 1
	if w.drive != nil {
		k, err := w.drive(ctx, e, p, lat)
		return n + k, err
	}
	if w.tasks > 0 {
		t := time.Now()
		page, err := e.Tasks(ctx, veena.TaskFilter{Process: p.ID, Limit: w.tasks})
		*lat = append(*lat, time.Since(t))
		n++
		if err != nil {
			return n, err
		}
		if len(page.Items) != w.tasks {
			return n, fmt.Errorf("process %s has %d open tasks, want %d", p.ID, len(page.Items), w.tasks)
		}
		for _, task := range page.Items {
			t := time.Now()
			p, err = e.CompleteTask(ctx, task.ID, veena.CompleteTaskRequest{Actor: veena.Actor{User: "bench"}})
			*lat = append(*lat, time.Since(t))
			n++
			if err != nil {
				return n, err
			}
		}
	}
	for i := 1; i <= w.waits; i++ {
		t := time.Now()
		p, err = e.CompleteToken(ctx, p.ID+".n"+strconv.Itoa(i+1), veena.CompleteRequest{})
		*lat = append(*lat, time.Since(t))
		n++
		if err != nil {
			return n, err
		}
	}
	if p.State != "completed" {
		return n, fmt.Errorf("process %s is %s after the workload", p.ID, p.State)
	}
	return n, nil
}

const waitXML = `<?xml version="1.0"?>
<process-definition name="bench-wait" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="task"/></node>
  <node name="task" type="wait"><arc to="end"/></node>
  <node name="end"/>
</process-definition>
`

const waitTaskXML = `<?xml version="1.0"?>
<process-definition name="bench-wait-task" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="task"/></node>
  <node name="task" type="wait"><arc to="end"/><custom><task/></custom></node>
  <node name="end"/>
</process-definition>
`

var split10TaskXML = strings.NewReplacer("bench-split10", "bench-split10-task",
	`<arc to="join"/></node>`, `<arc to="join"/><custom><task/></custom></node>`).Replace(split10XML)

var auto10XML = func() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<process-definition name="bench-auto10" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
`)
	for i := 1; i <= 10; i++ {
		start := ""
		if i == 1 {
			start = ` isStart="true"`
		}
		arc := ""
		if i < 10 {
			arc = fmt.Sprintf(`<arc to="n%d"/>`, i+1)
		}
		fmt.Fprintf(&b, "  <node name=\"n%d\"%s>%s</node>\n", i, start, arc)
	}
	b.WriteString("</process-definition>\n")
	return b.String()
}()

var split10XML = func() string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<process-definition name="bench-split10" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true">`)
	for i := range 10 {
		fmt.Fprintf(&b, `<arc to="b%d"/>`, i)
	}
	b.WriteString("</node>\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  <node name=\"b%d\" type=\"wait\"><arc to=\"join\"/></node>\n", i)
	}
	b.WriteString(`  <node name="join" joinType="and"><arc to="end"/></node>
  <node name="end"/>
</process-definition>
`)
	return b.String()
}()

const bpmnHead = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="http://veena.example/bench">
`

const bpmnWaitXML = bpmnHead + `  <process id="bench-bpmn-wait" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="task"/>
    <userTask id="task"/>
    <sequenceFlow id="f2" sourceRef="task" targetRef="end"/>
    <endEvent id="end"/>
  </process>
</definitions>
`

var bpmnAuto10XML = func() string {
	var b strings.Builder
	b.WriteString(bpmnHead + `  <process id="bench-bpmn-auto10" isExecutable="true">
    <startEvent id="n1"/>
`)
	for i := 2; i <= 9; i++ {
		fmt.Fprintf(&b, "    <task id=\"n%d\"/>\n", i)
	}
	b.WriteString("    <endEvent id=\"n10\"/>\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "    <sequenceFlow id=\"f%d\" sourceRef=\"n%d\" targetRef=\"n%d\"/>\n", i, i, i+1)
	}
	b.WriteString("  </process>\n</definitions>\n")
	return b.String()
}()

var bpmnSplit10XML = func() string {
	var b strings.Builder
	b.WriteString(bpmnHead + `  <process id="bench-bpmn-split10" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f0" sourceRef="start" targetRef="fork"/>
    <parallelGateway id="fork"/>
    <parallelGateway id="join"/>
    <sequenceFlow id="fj" sourceRef="join" targetRef="end"/>
    <endEvent id="end"/>
`)
	for i := range 10 {
		fmt.Fprintf(&b, "    <sequenceFlow id=\"a%d\" sourceRef=\"fork\" targetRef=\"b%d\"/>\n    <userTask id=\"b%d\"/>\n    <sequenceFlow id=\"c%d\" sourceRef=\"b%d\" targetRef=\"join\"/>\n", i, i, i, i, i)
	}
	b.WriteString("  </process>\n</definitions>\n")
	return b.String()
}()

// rawSQLite measures one-row committed inserts from clients goroutines
// into the same SQLite file, with the same settings. SQLite has one writer,
// so the clients share one connection (queueing for it in database/sql):
// that is the fastest way to commit rows one at a time.
func rawSQLite(ctx context.Context, path, sync string, clients int, d time.Duration) (float64, error) {
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, client INTEGER, payload TEXT)`); err != nil {
		return 0, err
	}
	return rawLoop(ctx, clients, d, func(ctx context.Context, c int) error {
		_, err := db.ExecContext(ctx, `INSERT INTO raw (client, payload) VALUES (?, ?)`, c, "x")
		return err
	})
}

// rawPostgres measures one-row committed inserts on the same server.
func rawPostgres(ctx context.Context, pool *pgxpool.Pool, clients int, d time.Duration) (float64, error) {
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, client INTEGER, payload TEXT)`); err != nil {
		return 0, err
	}
	return rawLoop(ctx, clients, d, func(ctx context.Context, c int) error {
		_, err := pool.Exec(ctx, `INSERT INTO bench_raw (client, payload) VALUES ($1, $2)`, c, "x")
		return err
	})
}

// rawLoop runs insert from clients goroutines (c numbers them) until d has
// passed and returns the rate of successful inserts, with the first error.
func rawLoop(ctx context.Context, clients int, d time.Duration, insert func(ctx context.Context, c int) error) (float64, error) {
	deadline := time.Now().Add(d)
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := insert(ctx, c); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(t).Seconds(), firstErr
}

// startParkedProcess starts the process of bench-wait that parking copies
// (loading bench-wait, which the run's workload may not be).
func startParkedProcess(ctx context.Context, e *veena.Engine) (*veena.Process, error) {
	w := workloads["wait"]
	if err := w.load(ctx, e); err != nil {
		return nil, err
	}
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: w.name})
	if err != nil {
		return nil, fmt.Errorf("start the process to copy: %w", err)
	}
	return p, nil
}

// parkPostgres fills the database with n waiting processes: it starts one
// process of bench-wait and copies its rows (process, with the events it
// may hold, and events) n times in bulk.
func parkPostgres(ctx context.Context, e *veena.Engine, pool *pgxpool.Pool, n int) error {
	p, err := startParkedProcess(ctx, e)
	if err != nil {
		return err
	}
	const chunk = 100000
	for from := 1; from <= n; from += chunk {
		to := min(n, from+chunk-1)
		_, err := pool.Exec(ctx, `INSERT INTO processes (id, root_id, parent_id, parent_token, position, definition, version, state, context, env, snapshot, event_seq, created_at, updated_at, tree_version, first_events)
			SELECT 'parked-' || g, 'parked-' || g, '', -1, 0, definition, version, state, context, env, snapshot, event_seq, created_at, updated_at, tree_version, first_events
			FROM processes, generate_series($2::int, $3::int) AS g WHERE id = $1`, p.ID, from, to)
		if err != nil {
			return fmt.Errorf("copy the parked process rows: %w", err)
		}
		_, err = pool.Exec(ctx, `INSERT INTO events (process_id, seq, last_seq, data)
			SELECT 'parked-' || g, seq, last_seq, data
			FROM events, generate_series($2::int, $3::int) AS g WHERE process_id = $1`, p.ID, from, to)
		if err != nil {
			return fmt.Errorf("copy the parked process events: %w", err)
		}
	}
	_, err = pool.Exec(ctx, `ANALYZE processes; ANALYZE events`)
	return err
}

// parkSQLite does the same on SQLite, through a second connection.
func parkSQLite(ctx context.Context, e *veena.Engine, path string, n int) error {
	p, err := startParkedProcess(ctx, e)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=60000")
	if err != nil {
		return err
	}
	defer db.Close()
	const chunk = 100000
	for from := 1; from <= n; from += chunk {
		to := min(n, from+chunk-1)
		series := `WITH RECURSIVE g(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM g WHERE x < ?)`
		if _, err := db.ExecContext(ctx, series+` INSERT INTO processes (id, root_id, parent_id, parent_token, position, definition, version, state, context, env, snapshot, event_seq, created_at, updated_at, tree_version, first_events)
			SELECT 'parked-' || x, 'parked-' || x, '', -1, 0, definition, version, state, context, env, snapshot, event_seq, created_at, updated_at, tree_version, first_events
			FROM processes, g WHERE id = ?`, from, to, p.ID); err != nil {
			return fmt.Errorf("copy the parked process rows: %w", err)
		}
		if _, err := db.ExecContext(ctx, series+` INSERT INTO events (process_id, seq, last_seq, data)
			SELECT 'parked-' || x, seq, last_seq, data FROM events, g WHERE process_id = ?`, from, to, p.ID); err != nil {
			return fmt.Errorf("copy the parked process events: %w", err)
		}
	}
	return nil
}
