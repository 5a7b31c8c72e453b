package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// t0 is the time the tests of timers, messages, contexts and the inbox
// run at.
var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

// update runs fn as an update of s and fails the test if it fails.
func update(tb testing.TB, s *memstore.Store, fn func(context.Context, store.Tx) error) {
	tb.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		tb.Fatal(err)
	}
}
