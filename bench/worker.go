package bench

// Multi-process PostgreSQL runs. With Config.Worker set, a PostgreSQL run
// has one worker OS process per engine. Each worker opens its own pgstore
// and engine on the run's schema and runs its share of the clients.
//
// The protocol, over each worker's standard input and output:
//
//	parent → worker (stdin)   one JSON line: the workerSpec
//	worker → parent (stdout)  {"ready":true} once its engine is open, the
//	                          definition loaded and the warm-up done
//	parent → worker           "go" once every worker is ready
//	worker → parent           {"progress":{…}} lines while it measures (4/s),
//	                          then {"result":{…}}, or {"error":"…"} at any time
//	parent closes stdin       the worker stops and exits
//
// A worker also stops as soon as its standard input closes (EOF), so that
// workers do not outlive a parent that dies.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/store/pgstore"
)

// workerSpec is what one worker runs.
type workerSpec struct {
	PostgresURL string        `json:"postgresURL"`
	Schema      string        `json:"schema"`
	Workload    string        `json:"workload"`
	Clients     int           `json:"clients"`
	MaxConns    int32         `json:"maxConns"`
	GroupCommit bool          `json:"groupCommit"`
	Duration    time.Duration `json:"duration"`
	Warmup      time.Duration `json:"warmup"`
	// Procs, if above 0, is the worker's GOMAXPROCS: its share of the
	// machine's cores (see workerProcs).
	Procs int `json:"procs,omitempty"`
}

// workerProcs is the GOMAXPROCS of each of engines worker processes on
// this machine: its share of the cores, at least one, as if each engine
// ran on a machine of its own that size. Each Go runtime otherwise
// schedules on every core, and several of them, wanting the same cores,
// wake and switch threads far more than the work needs. An explicit
// GOMAXPROCS in the environment is left to apply.
func workerProcs(engines int) int {
	if os.Getenv("GOMAXPROCS") != "" || engines <= 1 {
		return 0
	}
	return max(1, runtime.GOMAXPROCS(0)/engines)
}

// workerMsg is one line a worker writes on its standard output.
type workerMsg struct {
	Ready    bool            `json:"ready,omitempty"`
	Progress *workerProgress `json:"progress,omitempty"`
	Result   *workerReport   `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
}

type workerProgress struct {
	Processes int64 `json:"processes"`
	Commands  int64 `json:"commands"`
}

// workerReport is a worker's measured run.
type workerReport struct {
	Processes int64 `json:"processes"`
	Commands  int64 `json:"commands"`
	Errors    int64 `json:"errors"`
	// FirstError is the first failed process's error, if any.
	FirstError string `json:"firstError,omitempty"`
	// Elapsed is the time from "go" until its clients stopped.
	Elapsed time.Duration `json:"elapsed"`
	// Commits is the number of transactions the store committed while
	// measuring (pgstore's Stats).
	Commits int64 `json:"commits"`
	// CPU is the CPU time the worker used while measuring, DBCPU that of
	// the backends serving its connections.
	CPU   time.Duration `json:"cpu"`
	DBCPU time.Duration `json:"dbCpu"`
	// Latencies are every command's latency, in microseconds (rounded).
	Latencies []int64 `json:"latenciesMicros"`
}

// orphanExit is how long a worker whose standard input closed may take to
// stop cleanly before it exits anyway.
const orphanExit = 10 * time.Second

// Worker is the body of a worker process (`veena bench worker`): it reads
// its assignment from in, opens an engine on the PostgreSQL schema, warms
// up, says it is ready on out, waits for "go", runs its clients for the
// run's duration and writes its result on out as JSON. It stops when in
// closes, and if it has not returned orphanExit later it exits the process:
// call it only as the whole of a child process.
func Worker(ctx context.Context, in io.Reader, out, errOut io.Writer) error {
	var outMu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m workerMsg) error {
		outMu.Lock()
		defer outMu.Unlock()
		return enc.Encode(m)
	}
	err := worker(ctx, in, send, errOut)
	if err != nil {
		send(workerMsg{Error: err.Error()})
	}
	return err
}

func worker(ctx context.Context, in io.Reader, send func(workerMsg) error, errOut io.Writer) error {
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read the assignment: %w", err)
	}
	var spec workerSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("assignment: %w", err)
	}
	w, ok := workloads[spec.Workload]
	if !ok {
		return fmt.Errorf("unknown workload %q", spec.Workload)
	}
	if spec.Procs > 0 {
		runtime.GOMAXPROCS(spec.Procs)
	}

	// Watch standard input: "go" starts the measurement, EOF (the parent
	// closed it, or died) stops the worker.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := make(chan struct{})
	go func() {
		started := false
		for {
			line, err := br.ReadString('\n')
			if strings.TrimSpace(line) == "go" && !started {
				started = true
				close(start)
			}
			if err != nil {
				cancel()
				time.AfterFunc(orphanExit, func() {
					fmt.Fprintln(errOut, "bench worker: standard input closed; exiting")
					os.Exit(3)
				})
				return
			}
		}
	}()

	opts := pgstore.Options{Schema: spec.Schema, MaxConns: spec.MaxConns, ApplicationName: workerApp(spec.Schema)}
	if spec.GroupCommit {
		opts.GroupCommit = 64
	}
	st, err := pgstore.Open(ctx, spec.PostgresURL, opts)
	if err != nil {
		return err
	}
	e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16,
		Logger: slog.New(slog.NewTextHandler(errOut, nil))})
	if err != nil {
		st.Close()
		return err
	}
	defer e.Close()
	if err := w.load(ctx, e); err != nil {
		return err
	}
	engines := []*veena.Engine{e}
	runClients(ctx, engines, w, spec.Clients, spec.Warmup, nil)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := send(workerMsg{Ready: true}); err != nil {
		return err
	}
	select {
	case <-start:
	case <-ctx.Done():
		return ctx.Err()
	}

	_, commits0 := st.Stats()
	var live liveCounters
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				send(workerMsg{Progress: &workerProgress{Processes: live.processes.Load(), Commands: live.commands.Load()}})
			}
		}
	}()
	t, cpu0, db0 := time.Now(), cpustat.Self(), backendCPU(st.Pool(), workerApp(spec.Schema))
	lat, errs, firstErr := runClients(ctx, engines, w, spec.Clients, spec.Duration, &live)
	elapsed, cpu, dbCPU := time.Since(t), cpustat.Self()-cpu0, backendCPUSince(st.Pool(), workerApp(spec.Schema), db0)
	close(stop)
	pwg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	_, commits1 := st.Stats()
	rep := &workerReport{
		Processes: live.processes.Load(), Commands: live.commands.Load(), Errors: errs,
		Elapsed: elapsed, Commits: commits1 - commits0, CPU: cpu, DBCPU: dbCPU, Latencies: make([]int64, len(lat)),
	}
	if firstErr != nil {
		rep.FirstError = firstErr.Error()
	}
	for i, d := range lat {
		rep.Latencies[i] = int64((d + time.Microsecond/2) / time.Microsecond)
	}
	return send(workerMsg{Result: rep})
}

// workerApp is the application name of a worker's connections: its
// own, so that it counts the CPU of its own backends only.
func workerApp(schema string) string { return fmt.Sprintf("%s:%d", benchApp(schema), os.Getpid()) }

// workerProc is a running worker process, seen from the parent.
type workerProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tailBuffer
	clients int

	progress workerProgress // the latest
	result   *workerReport
	exited   bool
	exitErr  error
}

// event is something a worker process said, or its end.
type event struct {
	i    int
	msg  workerMsg
	exit bool
	err  error
}

// runWorkers measures a PostgreSQL setup with one worker process per engine.
func runWorkers(ctx context.Context, cfg Config, s setup, workload string, progress io.Writer) (res Result, err error) {
	w := workloads[workload]
	res = Result{Workload: workload, Target: s.target, Engines: s.engines, GroupCommit: s.group,
		Concurrency: cfg.Concurrency, Parked: cfg.Parked, EngineProcesses: s.engines}
	schema := cfg.newSchema()
	pcfg, err := pgxpool.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return res, err
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = schema
	pcfg.MaxConns = int32(cfg.Concurrency + 4)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, err
	}
	defer func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	}()

	// Create the schema, load the definition and park processes with an
	// engine of the bench's own, closed before the workers start.
	if err := prepareSchema(ctx, cfg, schema, w, pool, progress); err != nil {
		return res, err
	}

	// Start the workers and wait until they are all ready.
	t0 := time.Now()
	each := ""
	if n := workerProcs(s.engines); n > 0 {
		each = fmt.Sprintf(" (GOMAXPROCS %d each)", n)
	}
	fmt.Fprintf(progress, "   starting %s%s …\n", engineProcesses(s.engines), each)
	events := make(chan event, 64)
	quit := make(chan struct{})
	var procs []*workerProc
	defer func() {
		stopWorkers(procs, events)
		close(quit)
	}()
	for i := range s.engines {
		clients := cfg.Concurrency / s.engines
		if i < cfg.Concurrency%s.engines {
			clients++
		}
		spec := workerSpec{PostgresURL: cfg.PostgresURL, Schema: schema, Workload: workload, Clients: clients,
			MaxConns: int32(clients + 4), GroupCommit: s.group, Duration: cfg.Duration, Warmup: 300 * time.Millisecond,
			Procs: workerProcs(s.engines)}
		p, err := startWorker(cfg.Worker, i, spec, events, quit)
		if err != nil {
			return res, fmt.Errorf("start worker %d: %w", i+1, err)
		}
		procs = append(procs, p)
	}
	failure := func(i int, what string) error {
		p := procs[i]
		msg := fmt.Sprintf("worker %d: %s", i+1, what)
		if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
			msg += "\n" + tail
		}
		return errors.New(msg)
	}
	// handle records an event and returns an error if it is a failure.
	handle := func(ev event) error {
		p := procs[ev.i]
		switch {
		case ev.exit:
			p.exited, p.exitErr = true, ev.err
			if p.result == nil {
				if ev.err != nil {
					return failure(ev.i, fmt.Sprintf("exited without a result (%v)", ev.err))
				}
				return failure(ev.i, "exited without a result")
			}
		case ev.err != nil:
			return failure(ev.i, ev.err.Error())
		case ev.msg.Error != "":
			return failure(ev.i, ev.msg.Error)
		case ev.msg.Progress != nil:
			p.progress = *ev.msg.Progress
		case ev.msg.Result != nil:
			p.result = ev.msg.Result
		}
		return nil
	}
	startup := time.NewTimer(2 * time.Minute)
	defer startup.Stop()
	for ready := 0; ready < len(procs); {
		select {
		case ev := <-events:
			if err := handle(ev); err != nil {
				return res, err
			}
			if ev.msg.Ready {
				ready++
			}
		case <-startup.C:
			return res, fmt.Errorf("the workers were not ready after %v", 2*time.Minute)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	fmt.Fprintf(progress, "   %s ready in %v\n", engineProcesses(len(procs)), time.Since(t0).Round(time.Millisecond))

	// Measure.
	var mu sync.Mutex
	stop := printProgress(progress, func() (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		var n, c int64
		for _, p := range procs {
			n, c = n+p.progress.Processes, c+p.progress.Commands
		}
		return n, c
	})
	defer stop()
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return res, fmt.Errorf("start the workers: %w", err)
		}
	}
	deadline := time.NewTimer(cfg.Duration + 2*time.Minute)
	defer deadline.Stop()
	for results := 0; results < len(procs); {
		select {
		case ev := <-events:
			mu.Lock()
			err := handle(ev)
			mu.Unlock()
			if err != nil {
				return res, err
			}
			if ev.msg.Result != nil {
				results++
			}
		case <-deadline.C:
			return res, fmt.Errorf("no result from the workers %v after the start", cfg.Duration+2*time.Minute)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	stop()

	// Merge the workers' results.
	var lat []time.Duration
	var commits int64
	var cpu, dbCPU time.Duration
	for i, p := range procs {
		r := p.result
		cpu, dbCPU = cpu+r.CPU, dbCPU+r.DBCPU
		res.Processes += r.Processes
		res.Commands += r.Commands
		res.Errors += r.Errors
		res.Elapsed = max(res.Elapsed, r.Elapsed)
		commits += r.Commits
		for _, us := range r.Latencies {
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		res.Workers = append(res.Workers, WorkerResult{Clients: p.clients, Processes: r.Processes,
			Commands: r.Commands, Errors: r.Errors, Commits: r.Commits})
		if r.FirstError != "" {
			fmt.Fprintf(progress, "   worker %d: %d errors, the first: %s\n", i+1, r.Errors, r.FirstError)
		}
	}
	res.summarize(lat)
	if res.Processes > 0 {
		res.TxPerProcess = float64(commits) / float64(res.Processes)
		res.CPUPerProcess = cpu / time.Duration(res.Processes)
		res.DBCPUPerProcess = dbCPU / time.Duration(res.Processes)
	}
	// Let the workers go before measuring raw inserts on the same schema.
	stopWorkers(procs, events)
	procs = nil
	raw, err := rawPostgres(ctx, pool, cfg.Concurrency, min(cfg.Duration, 3*time.Second))
	if err != nil {
		return res, fmt.Errorf("raw inserts: %w", err)
	}
	res.RawCommitsPS = raw
	return res, res.finish(progress)
}

func engineProcesses(n int) string {
	if n == 1 {
		return "1 engine process"
	}
	return fmt.Sprintf("%d engine processes", n)
}

// prepareSchema migrates the schema, loads the workload's definition and
// parks cfg.Parked processes, with an engine that it then closes.
func prepareSchema(ctx context.Context, cfg Config, schema string, w workload, pool *pgxpool.Pool, progress io.Writer) error {
	st, err := pgstore.Open(ctx, cfg.PostgresURL, pgstore.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		return err
	}
	e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
	if err != nil {
		st.Close()
		return err
	}
	defer e.Close()
	if err := w.load(ctx, e); err != nil {
		return err
	}
	if cfg.Parked > 0 {
		fmt.Fprintf(progress, "   parking %d processes …\n", cfg.Parked)
		t := time.Now()
		if err := parkPostgres(ctx, e, pool, cfg.Parked); err != nil {
			return fmt.Errorf("park processes: %w", err)
		}
		fmt.Fprintf(progress, "   parked in %v\n", time.Since(t).Round(time.Millisecond))
	}
	return nil
}

// startWorker starts worker i and gives it its assignment. Its messages
// and its exit arrive on events (until quit closes).
func startWorker(argv []string, i int, spec workerSpec, events chan<- event, quit <-chan struct{}) (*workerProc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	p := &workerProc{cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, clients: spec.Clients}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.stdin = stdin
	emit := func(ev event) bool {
		select {
		case events <- ev:
			return true
		case <-quit:
			return false
		}
	}
	go func() {
		dec := json.NewDecoder(stdout)
		for {
			var m workerMsg
			err := dec.Decode(&m)
			if err == io.EOF {
				break
			}
			if err != nil {
				if !emit(event{i: i, err: fmt.Errorf("unreadable output: %w", err)}) {
					break
				}
				io.Copy(io.Discard, stdout)
				break
			}
			if !emit(event{i: i, msg: m}) {
				io.Copy(io.Discard, stdout)
				break
			}
		}
		emit(event{i: i, exit: true, err: cmd.Wait()})
	}()
	b, _ := json.Marshal(spec)
	// If this fails, the worker has failed already: its exit event says why.
	stdin.Write(append(b, '\n'))
	return p, nil
}

// stopWorkers closes the workers' standard input, which stops them, and
// waits for them to exit, killing those that take more than 15 s.
func stopWorkers(procs []*workerProc, events <-chan event) {
	running := 0
	for _, p := range procs {
		p.stdin.Close()
		if !p.exited {
			running++
		}
	}
	kill := time.NewTimer(orphanExit + 5*time.Second)
	defer kill.Stop()
	for running > 0 {
		select {
		case ev := <-events:
			if ev.exit && !procs[ev.i].exited {
				procs[ev.i].exited = true
				running--
			}
		case <-kill.C:
			for _, p := range procs {
				if !p.exited {
					p.cmd.Process.Kill()
				}
			}
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
