package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestRunCounts checks that a run counts rounds, requests and errors, keeps
// the first error and the ids of the rounds that succeeded, and stops at its
// deadline.
func TestRunCounts(t *testing.T) {
	var mu sync.Mutex
	rounds := map[int]int{}
	cycle := func(ctx context.Context, client, n int) (string, []time.Duration, error) {
		mu.Lock()
		rounds[client]++
		mu.Unlock()
		if n%2 == 1 {
			return "", []time.Duration{time.Millisecond}, errors.New("odd round")
		}
		time.Sleep(time.Millisecond)
		return fmt.Sprintf("p-%d-%d", client, n), []time.Duration{time.Millisecond, 2 * time.Millisecond}, nil
	}
	r := Run(context.Background(), "test", 3, 50*time.Millisecond, cycle)
	if r.Cycles == 0 || r.Errors == 0 {
		t.Fatalf("cycles %d, errors %d: want both", r.Cycles, r.Errors)
	}
	if r.Requests != 2*r.Cycles+r.Errors {
		t.Errorf("requests %d, want %d (2 per good round, 1 per failed one)", r.Requests, 2*r.Cycles+r.Errors)
	}
	total := 0
	for _, n := range rounds {
		total += n
	}
	if int64(total) != r.Cycles+r.Errors || len(rounds) != 3 {
		t.Errorf("%d rounds by %d clients; report says %d + %d", total, len(rounds), r.Cycles, r.Errors)
	}
	if int64(len(r.IDs)) != r.Cycles {
		t.Errorf("%d ids for %d rounds", len(r.IDs), r.Cycles)
	}
	if r.FirstErr == nil || r.FirstErr.Error() != "odd round" {
		t.Errorf("first error %v", r.FirstErr)
	}
	if r.P50 < time.Millisecond || r.P99 != 2*time.Millisecond {
		t.Errorf("p50 %v, p99 %v", r.P50, r.P99)
	}
	if r.Elapsed < 50*time.Millisecond || r.Elapsed > 5*time.Second {
		t.Errorf("elapsed %v for a 50 ms run", r.Elapsed)
	}
}

// TestRunStopsWithContext checks that a canceled context ends the run.
func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Run(ctx, "test", 2, time.Hour, func(context.Context, int, int) (string, []time.Duration, error) {
		return "p", nil, nil
	})
	if r.Cycles != 0 {
		t.Fatalf("%d rounds after the context ended", r.Cycles)
	}
}
