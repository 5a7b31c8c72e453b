package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store/pgstore"
)

// The benchmarks here run veena bench's workloads from 16 goroutines on an
// engine over PostgreSQL, and report, beside the rate, the CPU time a
// command costs in this process and in the server's processes (when the
// server runs on this machine: read from /proc), which vary much less
// from run to run than the rate on a machine shared with the server.
//
//	go test ./store/pgstore -run '^$' -bench . -benchtime 20000x

func BenchmarkEngineWait(b *testing.B)         { benchEngine(b, "wait", 0) }
func BenchmarkEngineWaitGroup(b *testing.B)    { benchEngine(b, "wait", 64) }
func BenchmarkEngineSplit10(b *testing.B)      { benchEngine(b, "split10", 0) }
func BenchmarkEngineSplit10Group(b *testing.B) { benchEngine(b, "split10", 64) }
func BenchmarkEngineAuto10(b *testing.B)       { benchEngine(b, "auto10", 0) }
func BenchmarkEngineAuto10Group(b *testing.B)  { benchEngine(b, "auto10", 64) }

// The work layer's cycles beside two plain completions (three commands a
// process each: start, then activate and complete a job, claim and
// complete a task, or complete two waiting tokens).
func BenchmarkEngineWait2(b *testing.B)      { benchEngine(b, "wait2", 0) }
func BenchmarkEngineJob(b *testing.B)        { benchEngine(b, "job", 0) }
func BenchmarkEngineTask(b *testing.B)       { benchEngine(b, "task", 0) }
func BenchmarkEngineWait2Group(b *testing.B) { benchEngine(b, "wait2", 64) }
func BenchmarkEngineJobGroup(b *testing.B)   { benchEngine(b, "job", 64) }
func BenchmarkEngineTaskGroup(b *testing.B)  { benchEngine(b, "task", 64) }

const benchClients = 16

// benchEngine runs a workload (start, then complete its waiting tokens);
// b.N counts commands.
func benchEngine(b *testing.B, workload string, group int) {
	ctx := context.Background()
	_, _, waits, _ := bench.Workload(workload)
	st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgtest.Schema(b), MaxConns: benchClients + 4, GroupCommit: group})
	if err != nil {
		b.Fatal(err)
	}
	e, err := bench.OpenEngine(ctx, st, workload)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var commits0 int64
	measure(b, 1+waits, func() { _, commits0 = st.Stats() }, func() error {
		_, err := bench.RunProcess(ctx, e, workload)
		return err
	})
	_, commits := st.Stats()
	b.ReportMetric(float64(b.N)/float64(commits-commits0), "commands/commit")
}

// BenchmarkRawInsert is the bench's raw rate: one-row committed inserts
// from 16 goroutines, each on a connection of its own.
func BenchmarkRawInsert(b *testing.B) {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgtest.Schema(b), MaxConns: benchClients + 4})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pool := st.Pool()
	if _, err := pool.Exec(ctx, `CREATE TABLE raw (id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	measure(b, 1, nil, func() error {
		_, err := pool.Exec(ctx, `INSERT INTO raw (at) VALUES ($1)`, int64(1))
		return err
	})
}

// measure runs op from benchClients goroutines until it has done b.N
// commands, each op doing per of them, and reports the rate and the CPU
// time of a command. Every goroutine runs op once first, unmeasured, so
// that the pool has its connections when the count starts; start, if
// set, is called when it starts.
func measure(b *testing.B, per int, start func(), op func() error) {
	var left atomic.Int64
	run := func() {
		var wg sync.WaitGroup
		for range benchClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-int64(per)) >= -int64(per-1) {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	left.Store(int64(benchClients * per))
	run()
	left.Store(int64(b.N))
	if start != nil {
		start()
	}
	b.ResetTimer()
	cpu0, server0 := cpustat.Self(), cpustat.Named("postgres")
	run()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
	b.ReportMetric(float64(cpustat.Self()-cpu0)/1e3/float64(b.N), "cpu-µs/command")
	if server0 > 0 {
		b.ReportMetric(float64(cpustat.Named("postgres")-server0)/1e3/float64(b.N), "server-cpu-µs/command")
	}
}
