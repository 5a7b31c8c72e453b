package memstore_test

import (
	"context"
	"testing"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// update runs fn as an update of s and fails the test if it fails.
func update(tb testing.TB, s *memstore.Store, fn func(context.Context, store.Tx) error) {
	tb.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		tb.Fatal(err)
	}
}
