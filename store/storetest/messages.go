package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/veena-wf/veena/store"
)

// messageTests are the conformance cases of correlations and buffered messages.
var messageTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"Correlations", testCorrelations},
	{"BufferedMessages", testBufferedMessages},
	{"MessageIDs", testMessageIDs},
	{"ConcurrentTakes", testConcurrentTakes},
	{"FailedUpdateKeepsNoMessage", testFailedUpdateMessages},
}

func testCorrelations(t *testing.T, s store.Store) {
	c := ctx(t)
	update(t, s, func(c context.Context, tx store.Tx) error {
		return tx.ReplaceCorrelations(c, "p1", []store.Correlation{
			{Process: "p1", Root: "p1", Token: 3, Kind: "message", Name: "paid", Key: "o-1"},
			{Process: "p1", Root: "p1", Token: 5, Kind: "signal", Name: "stop"},
		})
	})
	update(t, s, func(c context.Context, tx store.Tx) error {
		return tx.ReplaceCorrelations(c, "p2", []store.Correlation{
			{Process: "p2", Root: "r", Token: 1, Kind: "message", Name: "paid", Key: "o-2"},
			{Process: "p2", Root: "r", Token: 2, Kind: "signal", Name: "stop", Key: "ignored"},
		})
	})
	got, err := s.Correlations(c, "message", "paid", "o-1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.Correlation{{Process: "p1", Root: "p1", Token: 3, Kind: "message", Name: "paid", Key: "o-1"}}, got); diff != "" {
		t.Fatalf("message correlations (-want +got):\n%s", diff)
	}
	// Signals match by name whatever the key.
	got, _ = s.Correlations(c, "signal", "stop", "", 10)
	if len(got) != 2 || got[0].Process != "p1" || got[1].Process != "p2" || got[1].Token != 2 {
		t.Fatalf("signal correlations %+v", got)
	}
	if got, _ = s.Correlations(c, "signal", "stop", "", 1); len(got) != 1 {
		t.Fatalf("limit 1 gave %d", len(got))
	}
	if got, _ = s.Correlations(c, "message", "paid", "o-3", 10); len(got) != 0 {
		t.Fatalf("another key: %+v", got)
	}
	// Replacing drops what is not there any more.
	update(t, s, func(c context.Context, tx store.Tx) error { return tx.ReplaceCorrelations(c, "p1", nil) })
	if got, _ = s.Correlations(c, "signal", "stop", "", 10); len(got) != 1 || got[0].Process != "p2" {
		t.Fatalf("after replacing p1's: %+v", got)
	}
}

func buffer(t *testing.T, s store.Store, m *store.Message) error {
	t.Helper()
	return s.Update(ctx(t), func(c context.Context, tx store.Tx) error { return tx.BufferMessage(c, m) })
}

func take(t *testing.T, s store.Store, name, key string, now time.Time) *store.Message {
	t.Helper()
	var m *store.Message
	update(t, s, func(c context.Context, tx store.Tx) error {
		var err error
		m, err = tx.TakeMessage(c, name, key, now)
		return err
	})
	return m
}

func testBufferedMessages(t *testing.T, s store.Store) {
	for i, key := range []string{"k", "k", "other"} {
		m := &store.Message{Name: "paid", Key: key, Env: []byte(`{"n":` + string(rune('0'+i)) + `}`), CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
		if err := buffer(t, s, m); err != nil {
			t.Fatal(err)
		}
		if m.Seq == 0 {
			t.Fatal("no sequence number")
		}
	}
	// The oldest of its name and key first; each taken once.
	m := take(t, s, "paid", "k", t0)
	if m == nil || string(m.Env) != `{"n":0}` || !m.CreatedAt.Equal(t0) || !m.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first take %+v", m)
	}
	if m = take(t, s, "paid", "k", t0); m == nil || string(m.Env) != `{"n":1}` {
		t.Fatalf("second take %+v", m)
	}
	if m = take(t, s, "paid", "k", t0); m != nil {
		t.Fatalf("third take %+v", m)
	}
	// An expired message is not taken, and is purged.
	if m = take(t, s, "paid", "other", t0.Add(time.Minute)); m != nil {
		t.Fatalf("expired message taken: %+v", m)
	}
	n, err := s.PurgeMessages(ctx(t), t0.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if m = take(t, s, "paid", "other", t0); m != nil {
		t.Fatalf("purged message taken: %+v", m)
	}
}

func testMessageIDs(t *testing.T, s store.Store) {
	m := &store.Message{Name: "paid", Key: "k", ID: "m-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	if err := buffer(t, s, m); err != nil {
		t.Fatal(err)
	}
	again := &store.Message{Name: "paid", Key: "k", ID: "m-1", CreatedAt: t0.Add(time.Second), ExpiresAt: t0.Add(time.Hour)}
	if err := buffer(t, s, again); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the same id again: %v, want ErrConflict", err)
	}
	// Another key or name, or no id: accepted.
	for _, other := range []*store.Message{
		{Name: "paid", Key: "k2", ID: "m-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{Name: "sent", Key: "k", ID: "m-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{Name: "paid", Key: "k", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
	} {
		if err := buffer(t, s, other); err != nil {
			t.Fatalf("%+v: %v", other, err)
		}
	}
	// Once it expired (or was taken) the id is free again.
	late := &store.Message{Name: "paid", Key: "k", ID: "m-1", CreatedAt: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)}
	if err := buffer(t, s, late); err != nil {
		t.Fatalf("the id after expiry: %v", err)
	}
}

// Concurrent takes never hand one message to two takers.
func testConcurrentTakes(t *testing.T, s store.Store) {
	const n = 10
	for range n {
		if err := buffer(t, s, &store.Message{Name: "x", Key: "k", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m *store.Message
			err := s.Update(context.Background(), func(c context.Context, tx store.Tx) error {
				var err error
				m, err = tx.TakeMessage(c, "x", "k", t0)
				return err
			})
			if err != nil {
				t.Error(err)
				return
			}
			if m != nil {
				mu.Lock()
				seen[m.Seq]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct messages taken, want %d", len(seen), n)
	}
	for seq, k := range seen {
		if k != 1 {
			t.Fatalf("message %d taken %d times", seq, k)
		}
	}
}

func testFailedUpdateMessages(t *testing.T, s store.Store) {
	if err := buffer(t, s, &store.Message{Name: "x", Key: "k", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := s.Update(ctx(t), func(c context.Context, tx store.Tx) error {
		if err := tx.ReplaceCorrelations(c, "p", []store.Correlation{{Process: "p", Root: "p", Kind: "signal", Name: "s"}}); err != nil {
			return err
		}
		if _, err := tx.TakeMessage(c, "x", "k", t0); err != nil {
			return err
		}
		if err := tx.BufferMessage(c, &store.Message{Name: "y", Key: "k", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, _ := s.Correlations(ctx(t), "signal", "s", "", 10); len(got) != 0 {
		t.Fatalf("a failed update kept correlations %+v", got)
	}
	if m := take(t, s, "x", "k", t0); m == nil {
		t.Fatal("a failed update's take removed the message")
	}
	if m := take(t, s, "y", "k", t0); m != nil {
		t.Fatal("a failed update's message was kept")
	}
}
