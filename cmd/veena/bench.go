package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/internal/loadgen"
	"github.com/veena-wf/veena/server"
)

// benchDefinition is the workload's definition: one wait node, so that a
// process is a start and a completion.
const benchDefinition = `<?xml version="1.0"?>
<process-definition name="veena-bench" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="task" type="wait" isStart="true"/>
</process-definition>
`

type benchOptions struct {
	url      string
	token    string
	db       string
	clients  int
	duration time.Duration
	noGoAPI  bool
}

func newBenchCmd() *cobra.Command {
	var (
		cfg         bench.Config
		targets     []string
		workloads   []string
		engines     []int
		groupCommit []string
		asJSON      bool
		inProcess   bool
		cpuProfile  string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine under load (processes/s, commands/s, latency) on SQLite and PostgreSQL",
		Long: `Measure the engine through the Go API: concurrent clients run a workload for
--duration on each target database, and the report gives processes/s, commands/s,
p50/p99 command latency, transactions per process and, for comparison, the raw
rate of one-row committed inserts on the same database.

On PostgreSQL each of the --engines engines is a separate OS process (this
program, started again as a worker) sharing the database, with its share of
the clients; --in-process runs them all in this process instead.

'veena bench http' measures the HTTP API against the same workload through the Go API.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Targets, cfg.Workloads, cfg.Engines = targets, workloads, engines
			for _, g := range groupCommit {
				switch g {
				case "on", "true":
					cfg.GroupCommit = append(cfg.GroupCommit, true)
				case "off", "false":
					cfg.GroupCommit = append(cfg.GroupCommit, false)
				default:
					return fmt.Errorf("veena bench: --group-commit %q: want on or off", g)
				}
			}
			progress := cmd.ErrOrStderr()
			if !inProcess {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("veena bench: find this program to start the engine processes: %w (use --in-process)", err)
				}
				cfg.Worker = []string{exe, "bench", "worker"}
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return fmt.Errorf("veena bench: --cpuprofile: %w", err)
				}
				defer stop()
			}
			rep, err := bench.Run(cmd.Context(), cfg, progress)
			if asJSON {
				if jerr := printJSON(cmd.OutOrStdout(), rep); jerr != nil {
					return jerr
				}
			} else {
				rep.WriteTable(cmd.OutOrStdout())
			}
			if err != nil {
				return fmt.Errorf("veena bench: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&targets, "targets", nil, "databases: sqlite-full, sqlite-normal, postgres, memory (default: the first three)")
	f.StringSliceVar(&workloads, "workloads", nil, "wait, wait2, auto10, split10, job, task, wait-task, split10-task, bpmn-wait, bpmn-auto10, bpmn-split10 (default: wait, auto10, split10)")
	f.IntSliceVar(&cfg.Clients, "clients", []int{16}, "concurrent clients; several (16,32,64) measure each setup at each")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long each run measures")
	f.IntSliceVar(&engines, "engines", nil, "numbers of engines sharing PostgreSQL (default 1,3)")
	f.StringSliceVar(&groupCommit, "group-commit", nil, "SQLite commit modes to measure: on, off (default both)")
	f.IntVar(&cfg.Parked, "parked", 0, "processes waiting in the database before each run")
	f.StringVar(&cfg.PostgresURL, "postgres", "", "PostgreSQL server (default $VEENA_TEST_POSTGRES or the local test database)")
	f.StringVar(&cfg.Dir, "dir", "", "directory for the SQLite files (default: a temporary one)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&inProcess, "in-process", false, "run the PostgreSQL engines in this OS process instead of one process each")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this OS process to the file (with --in-process it covers the PostgreSQL engines too)")
	cmd.AddCommand(newBenchHTTPCmd(), newBenchWorkerCmd())
	return cmd
}

// newBenchWorkerCmd is one engine process of a PostgreSQL run of veena
// bench: it reads its assignment on standard input and reports on standard
// output (see bench.Worker). It stops when its standard input closes.
func newBenchWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "One engine process of veena bench (started by veena bench)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bench.Worker(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return fmt.Errorf("veena bench worker: %w", err)
			}
			return nil
		},
	}
}

func newBenchHTTPCmd() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Measure the HTTP API: many clients start and complete processes, beside the Go API",
		Long: `Measure Veena's HTTP API under load. Each client repeatedly starts a process of a
one-node definition, reads its tokens and completes its node (3 calls, each
command with an Idempotency-Key), for --duration. The report gives requests/s,
processes/s and p50/p99 latency per call.

Without --url, it runs its own server on a loopback port over a fresh store
(--db: a new SQLite file by default) and then runs the same workload through the
Go API, so the two can be compared. With --url it measures that server (the
token needs the admin role to load the benchmark definition).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "measure this server instead of one of its own")
	f.StringVar(&o.token, "token", "", "access token for --url (env VEENA_TOKEN)")
	f.StringVar(&o.db, "db", "", "store of the built-in server: SQLite path, PostgreSQL URL or \"memory\" (default: a new SQLite file)")
	f.IntVar(&o.clients, "clients", 200, "concurrent clients")
	f.DurationVar(&o.duration, "duration", 10*time.Second, "how long to run each workload")
	f.BoolVar(&o.noGoAPI, "no-go-api", false, "skip the Go API comparison")
	return cmd
}

func runBench(ctx context.Context, o *benchOptions, out io.Writer) error {
	if o.clients < 1 || o.duration <= 0 {
		return fmt.Errorf("veena bench: --clients and --duration must be positive")
	}
	runID := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	fmt.Fprintf(out, "veena bench: %d clients, %v per workload, GOMAXPROCS %d\n", o.clients, o.duration, runtime.GOMAXPROCS(0))
	if o.url != "" {
		c, err := (&clientFlags{url: o.url, token: o.token}).client()
		if err != nil {
			return err
		}
		c.http = benchHTTPClient(o.clients)
		if _, err := c.request(ctx, http.MethodPost, "/api/v1/definitions", nil, strings.NewReader(benchDefinition), "application/xml", nil, nil); err != nil {
			return err
		}
		r := loadgen.Run(ctx, "HTTP", o.clients, o.duration, httpCycle(c, runID+"-HTTP"))
		fmt.Fprintln(out, r)
		return benchErr(r)
	}

	openEngine := func() (*veena.Engine, func(), error) {
		db, cleanup := o.db, func() {}
		if db == "" {
			dir, err := os.MkdirTemp("", "veena-bench-")
			if err != nil {
				return nil, nil, err
			}
			db, cleanup = filepath.Join(dir, "veena.db"), func() { os.RemoveAll(dir) }
		}
		st, where, err := openStore(ctx, db, storeTuning{})
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("veena bench: open %s: %w", where, err)
		}
		eng, err := veena.Open(ctx, veena.Options{Store: st})
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("veena bench: %w", err)
		}
		if _, _, err := eng.LoadDefinition(ctx, "veena-bench.wf.xml", []byte(benchDefinition), ""); err != nil {
			eng.Close()
			cleanup()
			return nil, nil, fmt.Errorf("veena bench: %w", err)
		}
		fmt.Fprintf(out, "store: %s\n", where)
		return eng, func() { eng.Close(); cleanup() }, nil
	}

	eng, closeEng, err := openEngine()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		closeEng()
		return err
	}
	hs := server.HTTPServer(server.New(server.Config{Engine: eng, Loopback: true}), nil)
	go hs.Serve(ln)
	c, _ := (&clientFlags{url: "http://" + ln.Addr().String()}).client()
	c.http = benchHTTPClient(o.clients)
	httpReport := loadgen.Run(ctx, "HTTP", o.clients, o.duration, httpCycle(c, runID+"-HTTP"))
	hs.Close()
	closeEng()
	fmt.Fprintln(out, httpReport)
	if err := benchErr(httpReport); err != nil || o.noGoAPI {
		return err
	}

	eng, closeEng, err = openEngine()
	if err != nil {
		return err
	}
	defer closeEng()
	goReport := loadgen.Run(ctx, "Go API", o.clients, o.duration, goCycle(eng, runID+"-Go API"))
	fmt.Fprintln(out, goReport)
	return benchErr(goReport)
}

// benchErr says how many processes of a run failed, and the first reason.
func benchErr(r loadgen.Report) error {
	if r.Errors > 0 {
		return fmt.Errorf("veena bench: %s: %d processes failed; the first: %v", r.Name, r.Errors, r.FirstErr)
	}
	return nil
}

// benchHTTPClient is an HTTP client that keeps a connection per client.
func benchHTTPClient(clients int) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute,
	}}
}

// httpCycle is one process over HTTP: start, read tokens, complete. Its
// commands carry Idempotency-Keys made from keyPrefix, so that a request
// retried after a transport error is applied once.
func httpCycle(c *client, keyPrefix string) loadgen.Cycle {
	call := func(ctx context.Context, method, path, body, key string, out any) (time.Duration, error) {
		hdr := http.Header{}
		if key != "" {
			hdr.Set("Idempotency-Key", key)
		}
		var last error
		var total time.Duration
		for attempt := 0; attempt < 5; attempt++ {
			var rd io.Reader
			ctype := ""
			if body != "" {
				rd, ctype = bytes.NewReader([]byte(body)), "application/json"
			}
			start := time.Now()
			_, err := c.request(ctx, method, path, nil, rd, ctype, hdr, out)
			total += time.Since(start)
			if err == nil {
				return total, nil
			}
			if _, isAPI := err.(*apiError); isAPI || ctx.Err() != nil {
				return total, err
			}
			last = err // a transport error: retry with the same key
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
		}
		return total, last
	}
	return func(ctx context.Context, client, n int) (string, []time.Duration, error) {
		key := fmt.Sprintf("%s-%d-%d", keyPrefix, client, n)
		lat := make([]time.Duration, 0, 3)
		var p veena.Process
		d, err := call(ctx, "POST", "/api/v1/processes", `{"definition":"veena-bench"}`, key+"-start", &p)
		if lat = append(lat, d); err != nil {
			return "", lat, err
		}
		var h veena.TokenHistory
		d, err = call(ctx, "GET", "/api/v1/processes/"+p.ID+"/tokens", "", "", &h)
		if lat = append(lat, d); err != nil {
			return p.ID, lat, err
		}
		if len(h.NodeTokens) != 1 {
			return p.ID, lat, fmt.Errorf("process %s has %d node tokens", p.ID, len(h.NodeTokens))
		}
		var done veena.Process
		d, err = call(ctx, "POST", "/api/v1/node-tokens/"+h.NodeTokens[0].ID+"/complete", "{}", key+"-complete", &done)
		if lat = append(lat, d); err != nil {
			return p.ID, lat, err
		}
		if done.State != "completed" {
			return p.ID, lat, fmt.Errorf("process %s is %s after completing", p.ID, done.State)
		}
		return p.ID, lat, nil
	}
}

// goCycle is the same process as httpCycle through the Go API.
func goCycle(eng *veena.Engine, keyPrefix string) loadgen.Cycle {
	return func(ctx context.Context, client, n int) (string, []time.Duration, error) {
		key := fmt.Sprintf("%s-%d-%d", keyPrefix, client, n)
		lat := make([]time.Duration, 0, 3)
		t0 := time.Now()
		p, err := eng.StartProcess(ctx, veena.StartRequest{Definition: "veena-bench", IdempotencyKey: key + "-start"})
		if lat = append(lat, time.Since(t0)); err != nil {
			return "", lat, err
		}
		t0 = time.Now()
		h, err := eng.Tokens(ctx, p.ID)
		if lat = append(lat, time.Since(t0)); err != nil {
			return p.ID, lat, err
		}
		t0 = time.Now()
		done, err := eng.CompleteToken(ctx, h.NodeTokens[0].ID, veena.CompleteRequest{IdempotencyKey: key + "-complete"})
		if lat = append(lat, time.Since(t0)); err != nil {
			return p.ID, lat, err
		}
		if done.State != "completed" {
			return p.ID, lat, fmt.Errorf("process %s is %s after completing", p.ID, done.State)
		}
		return p.ID, lat, nil
	}
}

// startCPUProfile profiles this OS process into the file at path until the
// returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
