package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// withKeys is a store with n idempotency records, created a second apart
// from at on.
func withKeys(tb testing.TB, n int, at time.Time) *memstore.Store {
	s := memstore.New()
	update(tb, s, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			if err := tx.PutKey(ctx, fmt.Sprintf("k%06d", i), []byte("r"), at.Add(time.Duration(i)*time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// TestPurgeKeysInAnyOrder purges records written out of time order, one
// written again later and one whose update was undone: each goes once it
// is older than the time given, and no sooner.
func TestPurgeKeysInAnyOrder(t *testing.T) {
	ctx := context.Background()
	s := withKeys(t, 10, t0) // k000000 at t0 .. k000009 at t0+9s
	update(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutKey(ctx, "early", []byte("e"), t0.Add(-time.Hour)); err != nil {
			return err
		}
		return tx.PutKey(ctx, "k000001", []byte("again"), t0.Add(time.Hour)) // written again: kept an hour more
	})
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutKey(ctx, "undone", []byte("u"), t0.Add(-2*time.Hour)); err != nil {
			return err
		}
		return fmt.Errorf("undone")
	})
	if err == nil {
		t.Fatal("the failing update succeeded")
	}
	has := func(key string) bool {
		var ok bool
		update(t, s, func(ctx context.Context, tx store.Tx) (err error) { _, ok, err = tx.Key(ctx, key); return })
		return ok
	}
	if n, _ := s.PurgeKeys(ctx, t0); n != 1 || has("early") || !has("k000000") {
		t.Fatalf("purge before t0: %d purged", n)
	}
	if n, _ := s.PurgeKeys(ctx, t0.Add(5*time.Second)); n != 4 || has("k000004") || !has("k000001") || !has("k000005") {
		t.Fatalf("purge before t0+5s: %d purged (k000000, k000002..k000004)", n)
	}
	if n, _ := s.PurgeKeys(ctx, t0.Add(time.Minute)); n != 5 || !has("k000001") {
		t.Fatalf("purge before t0+1m: %d purged (k000005..k000009)", n)
	}
	if n, _ := s.PurgeKeys(ctx, t0.Add(2*time.Hour)); n != 1 || has("k000001") {
		t.Fatalf("purge before t0+2h: %d purged (k000001)", n)
	}
}

// BenchmarkPurgeKeys is the engine's periodic purge of idempotency
// records while many are kept and none is old enough: it should not cost
// more with more of them (the store's lock is held throughout).
func BenchmarkPurgeKeys(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := withKeys(b, n, t0)
			for b.Loop() {
				if got, err := s.PurgeKeys(ctx, t0); err != nil || got != 0 {
					b.Fatal(got, err)
				}
			}
		})
	}
}
