package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// withContexts is a store with n executing processes, each with the
// context customer=c<i mod 10>, order=o<i>.
func withContexts(tb testing.TB, n int) *memstore.Store {
	s := memstore.New()
	update(tb, s, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			id := fmt.Sprintf("p%06d", i)
			if err := tx.PutProcess(ctx, &store.Process{ID: id, Root: id, Definition: "d", Version: 1, State: "executing", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				return err
			}
			c := map[string]string{"customer": fmt.Sprintf("c%d", i%10), "order": fmt.Sprintf("o%d", i)}
			if err := tx.PutContext(ctx, id, c, []string{"order"}); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// TestFindByContextFollowsChanges finds processes by one or two pairs of
// their context, after contexts change, end, and after undone updates.
func TestFindByContextFollowsChanges(t *testing.T) {
	ctx := context.Background()
	s := withContexts(t, 30)
	find := func(match map[string]string) string {
		t.Helper()
		ids, err := s.FindByContext(ctx, match, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(ids)
	}
	if got := find(map[string]string{"customer": "c3"}); got != "[p000003 p000013 p000023]" {
		t.Errorf("customer c3: %s", got)
	}
	if got := find(map[string]string{"customer": "c3", "order": "o13"}); got != "[p000013]" {
		t.Errorf("customer c3, order o13: %s", got)
	}
	if got := find(map[string]string{"customer": "c4", "order": "o13"}) + find(map[string]string{"region": "north"}); got != "[][]" {
		t.Errorf("pairs no process has: %s", got)
	}
	if ids, _ := s.FindByContext(ctx, nil, 0); len(ids) != 30 {
		t.Errorf("no pair asked for: %d processes", len(ids))
	}
	undone := errors.New("undone")
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutContext(ctx, "p000003", map[string]string{"customer": "c9", "order": "o3"}, nil); err != nil {
			return err
		}
		if err := tx.DropContext(ctx, "p000013"); err != nil {
			return err
		}
		return undone
	})
	if !errors.Is(err, undone) {
		t.Fatal(err)
	}
	if got := find(map[string]string{"customer": "c3"}); got != "[p000003 p000013 p000023]" {
		t.Errorf("customer c3 after an undone update: %s", got)
	}
	err = s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutContext(ctx, "p000003", map[string]string{"customer": "c9", "order": "o3"}, nil); err != nil {
			return err
		}
		return tx.DropContext(ctx, "p000013")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(map[string]string{"customer": "c3"}) + find(map[string]string{"customer": "c9"}); got != "[p000023][p000003 p000009 p000019 p000029]" {
		t.Errorf("after a change and an end: %s", got)
	}
}

// BenchmarkFindByContext routes an event to the one process whose context
// names its order, among many executing processes: it should not cost
// more with more of them.
func BenchmarkFindByContext(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := withContexts(b, n)
			match := map[string]string{"customer": "c7", "order": "o777"}
			for b.Loop() {
				if ids, err := s.FindByContext(ctx, match, 2); err != nil || len(ids) != 1 {
					b.Fatal(ids, err)
				}
			}
		})
	}
}
