package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/loadgen"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// The load test: a few hundred concurrent clients start a process of "one",
// read its tokens and complete its single wait node, for a bounded time,
// over HTTP on loopback; then the same workload through the Go API. Both
// run on SQLite, the default store, unless VEENA_LOAD_STORE says otherwise.
// Set VEENA_LOAD_CLIENTS and VEENA_LOAD_DURATION to change the load.

func loadSettings() (clients int, d time.Duration) {
	clients, d = 200, 4*time.Second
	if v, err := strconv.Atoi(os.Getenv("VEENA_LOAD_CLIENTS")); err == nil && v > 0 {
		clients = v
	}
	if v, err := time.ParseDuration(os.Getenv("VEENA_LOAD_DURATION")); err == nil && v > 0 {
		d = v
	}
	return clients, d
}

// workload is what one client does in one cycle (a loadgen.Cycle); it
// returns the process id and the latencies of its calls.
type workload interface {
	cycle(ctx context.Context, client, n int) (id string, lat []time.Duration, err error)
}

// httpWorkload drives the server over HTTP. Every command carries an
// Idempotency-Key, and a request that fails in transport is retried with
// the same key, so that no command is lost or applied twice.
type httpWorkload struct {
	base   string
	client *http.Client
	run    string
}

func (w *httpWorkload) call(ctx context.Context, method, path, body, key string, out any) (time.Duration, error) {
	var last error
	var total time.Duration
	for attempt := 0; attempt < 5; attempt++ {
		var rd io.Reader
		if body != "" {
			rd = bytes.NewReader([]byte(body))
		}
		req, _ := http.NewRequestWithContext(ctx, method, w.base+path, rd)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		start := time.Now()
		resp, err := w.client.Do(req)
		if err != nil {
			total += time.Since(start)
			last = err
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		total += time.Since(start)
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode/100 != 2 {
			return total, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return total, json.Unmarshal(b, out)
	}
	return total, fmt.Errorf("%s %s: %w", method, path, last)
}

func (w *httpWorkload) cycle(ctx context.Context, client, n int) (string, []time.Duration, error) {
	key := fmt.Sprintf("%s-%d-%d", w.run, client, n)
	var lat []time.Duration
	var p veena.Process
	d, err := w.call(ctx, "POST", "/api/v1/processes", `{"definition":"one","env":{"client":`+strconv.Itoa(client)+`}}`, key+"-start", &p)
	lat = append(lat, d)
	if err != nil {
		return "", lat, err
	}
	var h veena.TokenHistory
	d, err = w.call(ctx, "GET", "/api/v1/processes/"+p.ID+"/tokens", "", "", &h)
	lat = append(lat, d)
	if err != nil {
		return p.ID, lat, err
	}
	if len(h.NodeTokens) != 1 {
		return p.ID, lat, fmt.Errorf("process %s has %d node tokens after start", p.ID, len(h.NodeTokens))
	}
	var done veena.Process
	d, err = w.call(ctx, "POST", "/api/v1/node-tokens/"+h.NodeTokens[0].ID+"/complete", `{}`, key+"-complete", &done)
	lat = append(lat, d)
	if err != nil {
		return p.ID, lat, err
	}
	if done.State != "completed" {
		return p.ID, lat, fmt.Errorf("process %s is %s after completing", p.ID, done.State)
	}
	return p.ID, lat, nil
}

// goWorkload is the same cycle through the Go API.
type goWorkload struct {
	eng *veena.Engine
	run string
}

func (w *goWorkload) cycle(ctx context.Context, client, n int) (string, []time.Duration, error) {
	key := fmt.Sprintf("%s-%d-%d", w.run, client, n)
	var lat []time.Duration
	t0 := time.Now()
	p, err := w.eng.StartProcess(ctx, veena.StartRequest{Definition: "one", Env: map[string]any{"client": client}, IdempotencyKey: key + "-start"})
	lat = append(lat, time.Since(t0))
	if err != nil {
		return "", lat, err
	}
	t0 = time.Now()
	h, err := w.eng.Tokens(ctx, p.ID)
	lat = append(lat, time.Since(t0))
	if err != nil {
		return p.ID, lat, err
	}
	t0 = time.Now()
	done, err := w.eng.CompleteToken(ctx, h.NodeTokens[0].ID, veena.CompleteRequest{IdempotencyKey: key + "-complete"})
	lat = append(lat, time.Since(t0))
	if err != nil {
		return p.ID, lat, err
	}
	if done.State != "completed" {
		return p.ID, lat, fmt.Errorf("process %s is %s after completing", p.ID, done.State)
	}
	return p.ID, lat, nil
}

// loadStore names the store of the load test and benchmarks:
// VEENA_LOAD_STORE=sqlite (default), postgres or memory.
func loadStore() string {
	if s := os.Getenv("VEENA_LOAD_STORE"); s != "" {
		return s
	}
	return "sqlite"
}

// loadEngine opens an engine on a fresh store with "one" loaded.
func loadEngine(tb testing.TB) *veena.Engine {
	tb.Helper()
	ctx := context.Background()
	var st store.Store
	switch loadStore() {
	case "memory":
		st = memstore.New()
	case "postgres":
		st = postgresBackend(tb).open(tb)
	case "sqlite":
		s, err := sqlitestore.Open(filepath.Join(tb.TempDir(), "veena.db"), sqlitestore.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		st = s
	default:
		tb.Fatalf("VEENA_LOAD_STORE=%s: want sqlite, postgres or memory", loadStore())
	}
	eng, err := veena.Open(ctx, veena.Options{Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { eng.Stop(); _ = eng.Close() })
	if _, _, err := eng.LoadDefinition(ctx, "one.wf.xml", []byte(defOne), ""); err != nil {
		tb.Fatal(err)
	}
	return eng
}

// loadServer serves eng on a loopback port and returns a client for it.
func loadServer(tb testing.TB, eng *veena.Engine, clients int) (string, *http.Client) {
	srv := server.New(server.Config{Engine: eng, Loopback: true})
	hs := server.HTTPServer(srv, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go hs.Serve(ln)
	tb.Cleanup(func() { hs.Close() })
	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, IdleConnTimeout: time.Minute}
	tb.Cleanup(tr.CloseIdleConnections)
	return "http://" + ln.Addr().String(), &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// checkLoad verifies that every started process completed exactly once and
// that no process exists that no client started.
func checkLoad(t *testing.T, eng *veena.Engine, r loadgen.Report) {
	t.Helper()
	ctx := context.Background()
	if r.Errors > 0 {
		t.Errorf("%s: %d errors; the first: %v", r.Name, r.Errors, r.FirstErr)
	}
	if r.Cycles == 0 {
		t.Fatalf("%s: no process completed", r.Name)
	}
	count := func(state string) int {
		n, after := 0, ""
		for {
			page, err := eng.Processes(ctx, veena.ProcessFilter{Definition: "one", State: state, Limit: 1000, After: after})
			if err != nil {
				t.Fatal(err)
			}
			n += len(page.Items)
			if page.Next == "" {
				return n
			}
			after = page.Next
		}
	}
	total, completed := count(""), count("completed")
	if total != int(r.Cycles)+int(r.Errors) && total != int(r.Cycles) {
		t.Errorf("%s: %d processes exist; clients started %d (lost or doubled starts)", r.Name, total, r.Cycles)
	}
	if completed != int(r.Cycles) {
		t.Errorf("%s: %d processes completed; clients completed %d", r.Name, completed, r.Cycles)
	}
	seen := map[string]bool{}
	for _, id := range r.IDs {
		if seen[id] {
			t.Fatalf("%s: two starts returned process %s", r.Name, id)
		}
		seen[id] = true
	}
	// Each completion ran once: one NODE_TOKEN_COMPLETED per process.
	step := len(r.IDs)/200 + 1
	for i := 0; i < len(r.IDs); i += step {
		evs, err := eng.Events(ctx, r.IDs[i], 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Type == "NODE_TOKEN_COMPLETED" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: process %s completed its token %d times", r.Name, r.IDs[i], n)
		}
	}
}

// TestLoad runs a few hundred concurrent clients over HTTP, then the same
// workload through the Go API, and prints the figures side by side.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	clients, d := loadSettings()

	eng := loadEngine(t)
	base, hc := loadServer(t, eng, clients)
	httpReport := loadgen.Run(context.Background(), "HTTP", clients, d, (&httpWorkload{base: base, client: hc, run: "http"}).cycle)
	checkLoad(t, eng, httpReport)

	eng2 := loadEngine(t)
	goReport := loadgen.Run(context.Background(), "Go API", clients, d, (&goWorkload{eng: eng2, run: "go"}).cycle)
	checkLoad(t, eng2, goReport)

	t.Logf("load on %s, loopback, GOMAXPROCS %d; each process: start, read tokens, complete (3 calls)\n  %s\n  %s",
		loadStore(), runtimeProcs(), httpReport, goReport)
}

// BenchmarkHTTPStartComplete measures a start-and-complete cycle over HTTP
// on loopback (SQLite store), with many concurrent clients.
func BenchmarkHTTPStartComplete(b *testing.B) {
	eng := loadEngine(b)
	base, hc := loadServer(b, eng, 256)
	benchCycles(b, &httpWorkload{base: base, client: hc, run: fmt.Sprintf("bench-%d", time.Now().UnixNano())})
}

// BenchmarkGoAPIStartComplete is the same cycle through the Go API.
func BenchmarkGoAPIStartComplete(b *testing.B) {
	eng := loadEngine(b)
	benchCycles(b, &goWorkload{eng: eng, run: fmt.Sprintf("bench-%d", time.Now().UnixNano())})
}

func benchCycles(b *testing.B, w workload) {
	b.SetParallelism(64)
	var client atomic.Int64
	var failures atomic.Int64
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := int(client.Add(1))
		for n := 0; pb.Next(); n++ {
			if _, _, err := w.cycle(context.Background(), c, n); err != nil {
				failures.Add(1)
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d cycles failed", f)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "processes/s")
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs/process")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
