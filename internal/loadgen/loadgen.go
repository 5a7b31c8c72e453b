// Package loadgen owns Veena's load runner: it runs one workload from many
// concurrent clients for a set time and sums up what happened (rounds done,
// requests made, errors, request latencies). `veena bench http` and the
// server's load test drive their workloads with it.
package loadgen

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Cycle is one round of a client's workload; n counts the client's rounds
// from 0. It returns the id of the process it worked on and the latency of
// each request it made, also when it failed part way.
type Cycle func(ctx context.Context, client, n int) (id string, lat []time.Duration, err error)

// Report is what a run did.
type Report struct {
	Name    string
	Clients int
	// Cycles counts the rounds that succeeded, Errors those that failed.
	Cycles, Errors int64
	// Requests counts the requests of every round, failed ones included.
	Requests int64
	Elapsed  time.Duration
	// P50 and P99 are request latencies.
	P50, P99 time.Duration
	// IDs are the process ids of the rounds that succeeded.
	IDs []string
	// FirstErr is the error of the first round that failed.
	FirstErr error
}

// String gives the figures on one line: processes and requests per second
// and the latency percentiles.
func (r Report) String() string {
	secs := r.Elapsed.Seconds()
	return fmt.Sprintf("%-7s %5d clients %5.1fs %8d processes %9.0f requests/s %8.0f processes/s   p50 %-9v p99 %-9v errors %d",
		r.Name, r.Clients, secs, r.Cycles, float64(r.Requests)/secs,
		float64(r.Cycles)/secs, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Errors)
}

// Run lets clients run cycle, each round after round, until d has passed or
// ctx ends, and reports what they did.
func Run(ctx context.Context, name string, clients int, d time.Duration, cycle Cycle) Report {
	var (
		mu       sync.Mutex
		lats     []time.Duration
		ids      []string
		cycles   atomic.Int64
		requests atomic.Int64
		errs     atomic.Int64
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var myLats []time.Duration
			var myIDs []string
			for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				id, lat, err := cycle(ctx, c, n)
				myLats = append(myLats, lat...)
				requests.Add(int64(len(lat)))
				if err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					continue
				}
				cycles.Add(1)
				myIDs = append(myIDs, id)
			}
			mu.Lock()
			lats = append(lats, myLats...)
			ids = append(ids, myIDs...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) time.Duration {
		if len(lats) == 0 {
			return 0
		}
		return lats[int(p*float64(len(lats)-1))]
	}
	return Report{Name: name, Clients: clients, Cycles: cycles.Load(), Requests: requests.Load(), Errors: errs.Load(),
		Elapsed: elapsed, P50: pct(0.50), P99: pct(0.99), IDs: ids, FirstErr: firstErr}
}
