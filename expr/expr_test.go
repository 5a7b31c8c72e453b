package expr

import (
	"errors"
	"testing"
	"time"
)

// TestBudget spends a budget: steps run out at its cost, and its time
// limit, counted from the clock's first reading, ends an evaluation that
// goes on long enough to read it twice.
func TestBudget(t *testing.T) {
	b := NewBudget(Env{Cost: 1000})
	for i := range 1000 {
		if err := b.Step(1); err != nil {
			t.Fatalf("step %d of 1000: %v", i+1, err)
		}
	}
	if err := b.Step(1); !errors.Is(err, ErrCost) {
		t.Fatalf("step 1001 of a budget of 1000: %v", err)
	}

	b = NewBudget(Env{Cost: 1 << 30, Timeout: time.Nanosecond})
	var err error
	n := 0
	for ; err == nil && n < 100*clockSteps; n++ {
		err = b.Step(1)
	}
	if !errors.Is(err, ErrTimeout) || n < 2*clockSteps {
		t.Fatalf("a budget of a nanosecond: %v after %d steps", err, n)
	}

	// An evaluation of fewer steps than a reading's worth never times out.
	b = NewBudget(Env{Timeout: time.Nanosecond})
	for range clockSteps - 1 {
		if err := b.Step(1); err != nil {
			t.Fatalf("a short evaluation: %v", err)
		}
	}
}
