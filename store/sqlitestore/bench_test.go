package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veena-wf/veena/bench"
	"github.com/veena-wf/veena/internal/cpustat"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/sqlitestore"
	"github.com/veena-wf/veena/store/sqlitestore/internal/walbuf"
)

// perfWaitXML is the definition of veena bench's wait workload.
var _, perfWaitXML, _, _ = bench.Workload("wait")

// benchEngineWait runs the bench-wait workload (start, then complete the
// waiting token) from 16 goroutines on an engine over a SQLite store; b.N
// counts commands. Profile with
//
//	go test ./store/sqlitestore -run '^$' -bench EngineWait -cpuprofile /tmp/cpu.out
func benchEngineWait(b *testing.B, syncMode string, maxBatch int) {
	benchEngine(b, syncMode, maxBatch, "wait")
}

// benchEngine runs one of veena bench's workloads (start, then complete
// the waiting tokens) from 16 goroutines; b.N counts commands.
func benchEngine(b *testing.B, syncMode string, maxBatch int, workload string) {
	ctx := context.Background()
	_, _, waits, _ := bench.Workload(workload)
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{Synchronous: syncMode, MaxBatch: maxBatch})
	if err != nil {
		b.Fatal(err)
	}
	e, err := bench.OpenEngine(ctx, st, workload)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	const clients = 16
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	cpu0, frames0 := cpustat.Self(), st.Frames()
	_, commits0 := st.Stats()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-int64(1+waits)) >= -int64(waits) {
				if _, err := bench.RunProcess(ctx, e, workload); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
	b.ReportMetric(float64(cpustat.Self()-cpu0)/1e3/float64(b.N), "cpu-µs/command")
	_, commits := st.Stats()
	b.ReportMetric(float64(st.Frames()-frames0)/float64(b.N), "frames/command")
	b.ReportMetric(float64(b.N)/float64(commits-commits0), "commands/commit")
}

// The work layer's cycles beside two plain completions, which they should
// cost no more than (each sends three commands a process: start, then
// activate and complete a job, claim and complete a task, or complete two
// waiting tokens). Compare cpu-µs/command and frames/command.
func BenchmarkEngineWait2NormalGroup(b *testing.B) { benchEngine(b, "NORMAL", 256, "wait2") }
func BenchmarkEngineJobNormalGroup(b *testing.B)   { benchEngine(b, "NORMAL", 256, "job") }
func BenchmarkEngineTaskNormalGroup(b *testing.B)  { benchEngine(b, "NORMAL", 256, "task") }
func BenchmarkEngineWait2Normal(b *testing.B)      { benchEngine(b, "NORMAL", 1, "wait2") }
func BenchmarkEngineJobNormal(b *testing.B)        { benchEngine(b, "NORMAL", 1, "job") }
func BenchmarkEngineTaskNormal(b *testing.B)       { benchEngine(b, "NORMAL", 1, "task") }

func BenchmarkEngineSplit10Normal(b *testing.B) {
	benchEngine(b, "NORMAL", 1, "split10")
}
func BenchmarkEngineSplit10NormalGroup(b *testing.B) {
	benchEngine(b, "NORMAL", 256, "split10")
}
func BenchmarkEngineAuto10Normal(b *testing.B) {
	benchEngine(b, "NORMAL", 1, "auto10")
}
func BenchmarkEngineAuto10NormalGroup(b *testing.B) {
	benchEngine(b, "NORMAL", 256, "auto10")
}
func BenchmarkEngineWaitNormal(b *testing.B)      { benchEngineWait(b, "NORMAL", 1) }
func BenchmarkEngineWaitNormalGroup(b *testing.B) { benchEngineWait(b, "NORMAL", 256) }
func BenchmarkEngineWaitFull(b *testing.B)        { benchEngineWait(b, "FULL", 1) }
func BenchmarkEngineWaitFullGroup(b *testing.B)   { benchEngineWait(b, "FULL", 256) }

// BenchmarkRawInsert is the bench's raw rate: one-row committed inserts
// from 16 goroutines sharing one connection, synchronous NORMAL, through
// SQLite's own VFS.
func BenchmarkRawInsert(b *testing.B) { benchRawInsert(b, false) }

// BenchmarkRawInsertWALBuffered is BenchmarkRawInsert through the VFS the
// store writes its WAL with (package walbuf).
func BenchmarkRawInsertWALBuffered(b *testing.B) { benchRawInsert(b, true) }

func benchRawInsert(b *testing.B, buffered bool) {
	q := url.Values{}
	if buffered {
		if err := walbuf.Register(); err != nil {
			b.Fatal(err)
		}
		q.Set("vfs", walbuf.Name)
	}
	q.Set("_busy_timeout", "30000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "raw.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE raw (id INTEGER PRIMARY KEY, client INTEGER, payload TEXT)`); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.ResetTimer()
	var c atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(c.Add(1), 10)
		for pb.Next() {
			if _, err := db.Exec(`INSERT INTO raw (client, payload) VALUES (?, ?)`, id, "x"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// perfEvents makes n events of process id from seq on, like a command's.
func perfEvents(id string, seq int64, types []string, at time.Time) []store.Event {
	out := make([]store.Event, len(types))
	for i, ty := range types {
		out[i] = store.Event{Process: id, Seq: seq + int64(i), Type: ty, NodeToken: i % 3, ArcToken: -1, At: at}
		if i%4 == 2 {
			out[i].ArcNames = []string{""}
		}
	}
	return out
}

var perfStartTypes = []string{"PROCESS_CREATED", "PROCESS_STARTED", "NODE_TOKEN_CREATED", "NODE_TOKEN_ACCEPTED",
	"NODE_TOKEN_COMPLETED", "ARC_TOKEN_CREATED", "NODE_TOKEN_EXECUTED", "ARC_TOKEN_PROCESSED", "NODE_TOKEN_CREATED",
	"ARC_TOKEN_COMPLETED", "NODE_TOKEN_ACCEPTED", "NODE_TOKEN_EXECUTED"}
var perfCompleteTypes = []string{"NODE_TOKEN_COMPLETED", "ARC_TOKEN_CREATED", "ARC_TOKEN_PROCESSED", "NODE_TOKEN_CREATED",
	"ARC_TOKEN_COMPLETED", "NODE_TOKEN_ACCEPTED", "NODE_TOKEN_COMPLETED", "NODE_TOKEN_EXECUTED", "PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED"}

const (
	perfSnapExecuting = `{"q":4,"n":[{"n":0,"q":1,"cq":2,"c":[0],"g":1,"d":true,"f":1},{"n":1,"q":4,"p":[0],"g":1}],"a":[{"a":0,"q":3,"p":0,"c":2,"d":true,"f":1}]}`
	perfSnapCompleted = `{"q":8,"n":[{"n":0,"q":1,"cq":2,"c":[0],"g":1,"d":true,"f":1},{"n":1,"q":4,"cq":5,"p":[0],"c":[1],"g":1,"d":true,"f":788290},{"n":2,"q":7,"cq":8,"p":[1],"g":1,"d":true,"t":788289,"f":788290}],"a":[{"a":0,"q":3,"p":0,"c":2,"d":true,"f":1},{"a":1,"q":6,"p":1,"c":3,"d":true,"t":788289,"f":788290}]}`
)

// benchStoreWait writes what the engine writes for the wait workload (a
// start: a new process row and its events; a complete: the tree locked, the
// row rewritten, more events) from 16 goroutines, without the engine; b.N
// counts commands. It measures the writer alone.
func benchStoreWait(b *testing.B, syncMode string, maxBatch int) {
	ctx := context.Background()
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "store.db"), sqlitestore.Options{Synchronous: syncMode, MaxBatch: maxBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx, true); err != nil {
		b.Fatal(err)
	}
	const clients = 16
	var left, ids atomic.Int64
	left.Store(int64(b.N))
	base := time.Now().UnixNano()
	b.ResetTimer()
	cpu0 := cpustat.Self()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-2) >= -1 {
				n := ids.Add(1)
				id := fmt.Sprintf("%016x-4bf3-75a6-ba1f-cfa0fd4c4891", base+n)
				now := time.Now()
				p := &store.Process{ID: id, Root: id, ParentToken: -1, Definition: "bench-wait", Version: 1, State: "executing",
					Env: []byte(`{"client":"bench"}`), Snapshot: []byte(perfSnapExecuting), EventSeq: 12, CreatedAt: now, UpdatedAt: now, TreeVersion: 1}
				recs := store.EncodeEventRecords(perfEvents(id, 1, perfStartTypes, now))
				if err := st.Update(ctx, func(ctx context.Context, tx store.Tx) error {
					if err := tx.PutProcess(ctx, p); err != nil {
						return err
					}
					return tx.AppendEvents(ctx, recs)
				}); err != nil {
					b.Error(err)
					return
				}
				now = time.Now()
				q := *p
				q.State, q.Snapshot, q.EventSeq, q.UpdatedAt, q.TreeVersion = "completed", []byte(perfSnapCompleted), 22, now, 2
				recs = store.EncodeEventRecords(perfEvents(id, 13, perfCompleteTypes, now))
				if err := st.Update(ctx, func(ctx context.Context, tx store.Tx) error {
					v, err := tx.LockTree(ctx, id)
					if err != nil {
						return err
					}
					if v != 1 {
						return fmt.Errorf("tree version %d", v)
					}
					if err := tx.PutProcess(ctx, &q); err != nil {
						return err
					}
					return tx.AppendEvents(ctx, recs)
				}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
	b.ReportMetric(float64(cpustat.Self()-cpu0)/1e3/float64(b.N), "cpu-µs/command")
}

func BenchmarkStoreWaitNormal(b *testing.B)      { benchStoreWait(b, "NORMAL", 1) }
func BenchmarkStoreWaitNormalGroup(b *testing.B) { benchStoreWait(b, "NORMAL", 256) }
func BenchmarkStoreWaitFull(b *testing.B)        { benchStoreWait(b, "FULL", 1) }
func BenchmarkStoreWaitFullGroup(b *testing.B)   { benchStoreWait(b, "FULL", 256) }
