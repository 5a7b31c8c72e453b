package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	{"ConcurrentMessageIDs", testConcurrentMessageIDs},
	{"ConcurrentTakes", testConcurrentTakes},
	{"PublishMeetsWait", testPublishMeetsWait},
	{"FailedUpdateKeepsNoMessage", testFailedUpdateMessages},
	{"StartTimers", testStartTimers},
	{"StartTimersFireOnce", testStartTimersFireOnce},
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

// take takes the oldest message of a name and key as a command that
// delivers it does: it finds it, then deletes it.
func take(t *testing.T, s store.Store, name, key string, now time.Time) *store.Message {
	t.Helper()
	var m *store.Message
	update(t, s, func(c context.Context, tx store.Tx) error {
		var err error
		if m, err = tx.OldestMessage(c, name, key, now, 0); err != nil || m == nil {
			return err
		}
		return tx.DeleteMessage(c, m.Name, m.Key, m.Seq)
	})
	return m
}

func testBufferedMessages(t *testing.T, s store.Store) {
	for i, key := range []string{"k", "k", "other"} {
		m := &store.Message{Name: "paid", Key: key, ID: fmt.Sprint("id-", i), Env: []byte(`{"n":` + string(rune('0'+i)) + `}`), CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
		if err := buffer(t, s, m); err != nil {
			t.Fatal(err)
		}
		if m.Seq == 0 {
			t.Fatal("no sequence number")
		}
	}
	// Read outside a transaction: the oldest of its name and key.
	m, err := s.OldestMessage(ctx(t), "paid", "k", t0, 0)
	if err != nil || m == nil || string(m.Env) != `{"n":0}` || m.ID != "id-0" || m.Name != "paid" || m.Key != "k" {
		t.Fatalf("oldest %+v, %v", m, err)
	}
	if next, err := s.OldestMessage(ctx(t), "paid", "k", t0, m.Seq); err != nil || next == nil || next.ID != "id-1" {
		t.Fatalf("oldest after %d: %+v, %v", m.Seq, next, err)
	}
	all, err := s.BufferedMessages(ctx(t), "paid", t0, 0)
	if err != nil || len(all) != 3 || all[0].Key != "k" || all[2].Key != "other" || all[2].Seq <= all[1].Seq {
		t.Fatalf("buffered %+v, %v", all, err)
	}
	if two, _ := s.BufferedMessages(ctx(t), "paid", t0, 2); len(two) != 2 {
		t.Fatalf("limit 2 gave %d", len(two))
	}
	// The oldest of its name and key first; each taken once.
	m = take(t, s, "paid", "k", t0)
	if m == nil || string(m.Env) != `{"n":0}` || !m.CreatedAt.Equal(t0) || !m.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first take %+v", m)
	}
	if m = take(t, s, "paid", "k", t0); m == nil || string(m.Env) != `{"n":1}` {
		t.Fatalf("second take %+v", m)
	}
	if m = take(t, s, "paid", "k", t0); m != nil {
		t.Fatalf("third take %+v", m)
	}
	// A message deleted already: ErrStale.
	err = s.Update(ctx(t), func(c context.Context, tx store.Tx) error { return tx.DeleteMessage(c, "paid", "k", all[0].Seq) })
	if !errors.Is(err, store.ErrStale) {
		t.Fatalf("deleting a taken message: %v, want ErrStale", err)
	}
	// An expired message is not taken, and is purged.
	if m = take(t, s, "paid", "other", t0.Add(time.Minute)); m != nil {
		t.Fatalf("expired message taken: %+v", m)
	}
	if left, _ := s.BufferedMessages(ctx(t), "paid", t0.Add(time.Minute), 0); len(left) != 0 {
		t.Fatalf("expired messages listed: %+v", left)
	}
	n, err := s.PurgeMessages(ctx(t), t0.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if m = take(t, s, "paid", "other", t0); m != nil {
		t.Fatalf("purged message taken: %+v", m)
	}
}

func remember(t *testing.T, s store.Store, name, key, id string, now, until time.Time) error {
	t.Helper()
	return s.Update(ctx(t), func(c context.Context, tx store.Tx) error { return tx.RememberMessageID(c, name, key, id, now, until) })
}

// A message id is remembered until its record expires, whether or not
// the message is still buffered.
func testMessageIDs(t *testing.T, s store.Store) {
	if err := remember(t, s, "paid", "k", "m-1", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := remember(t, s, "paid", "k", "m-1", t0.Add(59*time.Second), t0.Add(time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the same id again: %v, want ErrConflict", err)
	}
	// Another key or name: accepted.
	for _, other := range [][2]string{{"paid", "k2"}, {"sent", "k"}} {
		if err := remember(t, s, other[0], other[1], "m-1", t0, t0.Add(time.Minute)); err != nil {
			t.Fatalf("%v: %v", other, err)
		}
	}
	// A refused id changes nothing: its record still ends at t0+1m.
	if err := remember(t, s, "paid", "k", "m-1", t0.Add(time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("the id after expiry: %v", err)
	}
	if err := remember(t, s, "paid", "k", "m-1", t0.Add(90*time.Second), t0.Add(time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the renewed id: %v, want ErrConflict", err)
	}
	// A failed update keeps no id.
	boom := errors.New("boom")
	err := s.Update(ctx(t), func(c context.Context, tx store.Tx) error {
		if err := tx.RememberMessageID(c, "paid", "k", "m-2", t0, t0.Add(time.Hour)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := remember(t, s, "paid", "k", "m-2", t0, t0.Add(time.Hour)); err != nil {
		t.Fatalf("an id a failed update remembered: %v", err)
	}
	// Purged once expired.
	if _, err := s.PurgeMessages(ctx(t), t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := remember(t, s, "paid", "k", "m-2", t0.Add(3*time.Hour), t0.Add(4*time.Hour)); err != nil {
		t.Fatalf("a purged id: %v", err)
	}
}

// Of publishers of one id at once, exactly one is accepted.
func testConcurrentMessageIDs(t *testing.T, s store.Store) {
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(c context.Context, tx store.Tx) error {
				if err := tx.RememberMessageID(c, "x", "k", "same", t0, t0.Add(time.Hour)); err != nil {
					return err
				}
				return tx.BufferMessage(c, &store.Message{Name: "x", Key: "k", ID: "same", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrConflict):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 11 {
		t.Fatalf("%d accepted, %d refused", ok.Load(), refused.Load())
	}
	if all, _ := s.BufferedMessages(ctx(t), "x", t0, 0); len(all) != 1 {
		t.Fatalf("%d messages buffered", len(all))
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
			for {
				var m *store.Message
				err := s.Update(context.Background(), func(c context.Context, tx store.Tx) error {
					var err error
					if m, err = tx.OldestMessage(c, "x", "k", t0, 0); err != nil || m == nil {
						return err
					}
					return tx.DeleteMessage(c, m.Name, m.Key, m.Seq)
				})
				if errors.Is(err, store.ErrStale) {
					continue // another taker had it: try the next
				}
				if err != nil {
					t.Error(err)
					return
				}
				if m != nil {
					mu.Lock()
					seen[m.Seq]++
					mu.Unlock()
				}
				return
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

// A message published while a token comes to wait for it: the publisher
// buffers it unless a token waits (Waiting), the waiter takes a buffered
// one or else opens its correlation (OldestMessage). Run at once, one of
// them must see the other: never a buffered message beside a token
// waiting for it.
func testPublishMeetsWait(t *testing.T, s store.Store) {
	const n = 40
	var wg sync.WaitGroup
	var taken, met atomic.Int32
	for i := range n {
		key := fmt.Sprint("k", i)
		proc := fmt.Sprint("p", i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(c context.Context, tx store.Tx) error {
				waiting, err := tx.Waiting(c, "m", key)
				if err != nil || waiting {
					if waiting {
						met.Add(1) // delivered to the waiting token
						return tx.ReplaceCorrelations(c, proc, nil)
					}
					return err
				}
				return tx.BufferMessage(c, &store.Message{Name: "m", Key: key, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
			})
			if err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(c context.Context, tx store.Tx) error {
				m, err := tx.OldestMessage(c, "m", key, t0, 0)
				if err != nil {
					return err
				}
				if m != nil {
					taken.Add(1)
					return tx.DeleteMessage(c, m.Name, m.Key, m.Seq)
				}
				return tx.ReplaceCorrelations(c, proc, []store.Correlation{{Process: proc, Root: proc, Token: 1, Kind: "message", Name: "m", Key: key}})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		key := fmt.Sprint("k", i)
		m, _ := s.OldestMessage(ctx(t), "m", key, t0, 0)
		cs, _ := s.Correlations(ctx(t), "message", "m", key, 0)
		if m != nil || len(cs) != 0 {
			t.Errorf("%s: buffered %v and %d tokens waiting: they missed each other", key, m != nil, len(cs))
		}
	}
	if taken.Load()+met.Load() != n {
		t.Fatalf("%d taken + %d met, want %d", taken.Load(), met.Load(), n)
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
		m, err := tx.OldestMessage(c, "x", "k", t0, 0)
		if err != nil {
			return err
		}
		if err := tx.DeleteMessage(c, m.Name, m.Key, m.Seq); err != nil {
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

func arm(t *testing.T, s store.Store, def string, version int, timers ...store.StartTimer) bool {
	t.Helper()
	var armed bool
	update(t, s, func(c context.Context, tx store.Tx) error {
		var err error
		armed, err = tx.ArmStartTimers(c, def, version, timers)
		return err
	})
	return armed
}

func fire(s store.Store, x store.StartTimer, next time.Time) error {
	return s.Update(context.Background(), func(c context.Context, tx store.Tx) error { return tx.FireStartTimer(c, x, next) })
}

func testStartTimers(t *testing.T, s store.Store) {
	c := ctx(t)
	if !arm(t, s, "nightly", 1, store.StartTimer{Node: "b", DueAt: t0.Add(time.Hour)}, store.StartTimer{Node: "a", DueAt: t0.Add(2 * time.Hour)}) {
		t.Fatal("version 1 not armed")
	}
	arm(t, s, "other", 3, store.StartTimer{Node: "x", DueAt: t0.Add(30 * time.Minute)})
	got, err := s.StartTimers(c, "nightly")
	want := []store.StartTimer{
		{Definition: "nightly", Version: 1, Node: "a", DueAt: t0.Add(2 * time.Hour)},
		{Definition: "nightly", Version: 1, Node: "b", DueAt: t0.Add(time.Hour)},
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("start timers (-want +got):\n%s", diff)
	}
	if all, _ := s.StartTimers(c, ""); len(all) != 3 || all[2].Definition != "other" {
		t.Fatalf("all start timers %+v", all)
	}
	// Arming that version again, or an older one, changes nothing.
	if arm(t, s, "nightly", 1) || arm(t, s, "other", 2) {
		t.Fatal("armed a version armed already, or an older one")
	}
	if next, err := s.NextStartTimer(c); err != nil || !next.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("next %v, %v", next, err)
	}
	// Claimed when due, earliest first, once per lease.
	claimed, err := s.ClaimStartTimers(c, t0.Add(90*time.Minute), time.Minute, 10)
	if err != nil || len(claimed) != 2 || claimed[0].Node != "x" || claimed[1].Node != "b" || claimed[1].Version != 1 {
		t.Fatalf("claimed %+v, %v", claimed, err)
	}
	if again, _ := s.ClaimStartTimers(c, t0.Add(90*time.Minute), time.Minute, 10); len(again) != 0 {
		t.Fatalf("claimed twice: %+v", again)
	}
	if again, _ := s.ClaimStartTimers(c, t0.Add(92*time.Minute), time.Minute, 1); len(again) != 1 || again[0].Node != "x" {
		t.Fatalf("after the lease: %+v", again)
	}
	// A firing moves it on and counts; a second firing of that due time
	// is stale; the last firing leaves it done.
	b := claimed[1]
	if err := fire(s, b, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := fire(s, b, t0.Add(3*time.Hour)); !errors.Is(err, store.ErrStale) {
		t.Fatalf("fired twice: %v", err)
	}
	b.DueAt = t0.Add(3 * time.Hour)
	if err := fire(s, b, time.Time{}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.StartTimers(c, "nightly")
	if got[1].Fired != 2 || !got[1].DueAt.IsZero() {
		t.Fatalf("after two firings: %+v", got[1])
	}
	if again, _ := s.ClaimStartTimers(c, t0.Add(100*time.Hour), time.Minute, 10); len(again) != 2 || again[0].Node != "x" || again[1].Node != "a" {
		t.Fatalf("a done timer was claimed, or a due one not: %+v", again)
	}
	// A new version replaces the old one's timers; firing an old one is stale.
	if !arm(t, s, "nightly", 2, store.StartTimer{Node: "c", DueAt: t0.Add(5 * time.Hour)}) {
		t.Fatal("version 2 not armed")
	}
	got, _ = s.StartTimers(c, "nightly")
	if len(got) != 1 || got[0].Node != "c" || got[0].Version != 2 || got[0].Fired != 0 {
		t.Fatalf("after version 2: %+v", got)
	}
	if err := fire(s, store.StartTimer{Definition: "nightly", Version: 1, Node: "a", DueAt: t0.Add(2 * time.Hour)}, time.Time{}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("fired a replaced timer: %v", err)
	}
	// A version without timer start events removes them all, and an
	// older version cannot come back.
	if !arm(t, s, "nightly", 3) || arm(t, s, "nightly", 2, store.StartTimer{Node: "c", DueAt: t0}) {
		t.Fatal("arming versions 3 and then 2")
	}
	if got, _ = s.StartTimers(c, "nightly"); len(got) != 0 {
		t.Fatalf("after version 3: %+v", got)
	}
	// A failed update arms nothing.
	boom := errors.New("boom")
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if _, err := tx.ArmStartTimers(c, "nightly", 4, []store.StartTimer{{Node: "d", DueAt: t0}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, _ = s.StartTimers(c, "nightly"); len(got) != 0 || !arm(t, s, "nightly", 4) {
		t.Fatalf("a failed update armed %+v", got)
	}
}

// Engines firing one start timer at once: each due time fires once.
func testStartTimersFireOnce(t *testing.T, s store.Store) {
	arm(t, s, "tick", 1, store.StartTimer{Node: "t", DueAt: t0})
	var fired, stale atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				ts, err := s.StartTimers(context.Background(), "tick")
				if err != nil || len(ts) != 1 {
					t.Error(ts, err)
					return
				}
				err = fire(s, ts[0], ts[0].DueAt.Add(time.Second))
				switch {
				case err == nil:
					fired.Add(1)
				case errors.Is(err, store.ErrStale):
					stale.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	ts, _ := s.StartTimers(ctx(t), "tick")
	if int(fired.Load()) != ts[0].Fired || !ts[0].DueAt.Equal(t0.Add(time.Duration(ts[0].Fired)*time.Second)) {
		t.Fatalf("%d firings succeeded (%d stale), the timer counts %d and is due at %v", fired.Load(), stale.Load(), ts[0].Fired, ts[0].DueAt)
	}
}
