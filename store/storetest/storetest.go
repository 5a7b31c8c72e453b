// Package storetest is the conformance suite every Veena store must pass.
// A backend's test calls Run with a function that opens a new, empty,
// migrated store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/veena-wf/veena/store"
)

// Open returns a new, empty, migrated store; the suite closes it.
type Open func(t *testing.T) store.Store

// Run runs the whole suite, its tests in parallel (each on a store of its
// own).
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Migrate", testMigrate},
		{"Definitions", testDefinitions},
		{"ProcessRoundTrip", testProcessRoundTrip},
		{"FailedUpdateKeepsNothing", testFailedUpdate},
		{"TreeOrder", testTreeOrder},
		{"Processes", testProcesses},
		{"ProcessFilters", testProcessFilters},
		{"Waits", testWaits},
		{"TimerFailures", testTimerFailures},
		{"Events", testEvents},
		{"FirstEvents", testFirstEvents},
		{"IdempotencyKeys", testKeys},
		{"PurgeKeys", testPurgeKeys},
		{"Contexts", testContexts},
		{"Timers", testTimers},
		{"OneWriterPerTree", testOneWriter},
		{"ConcurrentFailuresAreIsolated", testIsolatedFailures},
		{"ConcurrentKeys", testConcurrentKeys},
		{"Inbox", testInbox},
		{"WaitingCommands", testWaitingCommands},
		{"StoredRewrite", testStoredRewrite},
		{"ExpectTree", testExpectTree},
		{"Closed", testClosed},
	}
	tests = append(tests, workTests...)
	tests = append(tests, messageTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func proc(id, root, parent string, pos int) *store.Process {
	p := &store.Process{
		ID: id, Root: root, Parent: parent, ParentToken: -1, Position: pos,
		Definition: "d", Version: 1, State: "executing",
		Env: []byte(`{"a":1}`), Snapshot: []byte(`{"q":1}`), EventSeq: 0,
		CreatedAt: t0, UpdatedAt: t0,
	}
	if parent != "" {
		p.ParentToken = 0
	}
	return p
}

func put(t *testing.T, s store.Store, ps ...*store.Process) {
	t.Helper()
	err := s.Update(ctx(t), func(c context.Context, tx store.Tx) error {
		for _, p := range ps {
			if err := tx.PutProcess(c, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("put processes: %v", err)
	}
}

func testMigrate(t *testing.T, s store.Store) {
	c := ctx(t)
	if err := s.Migrate(c, true); err != nil {
		t.Fatalf("migrating twice: %v", err)
	}
	if err := s.Migrate(c, false); err != nil {
		t.Fatalf("checking a current schema: %v", err)
	}
	if err := s.Ready(c); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if sv, ok := s.(store.SchemaVersioner); ok {
		cur, latest, err := sv.SchemaVersion(c)
		if err != nil || cur != latest || latest < 1 {
			t.Fatalf("SchemaVersion of a migrated database = %d, %d, %v; want the latest version twice", cur, latest, err)
		}
	}
}

func testDefinitions(t *testing.T, s store.Store) {
	c := ctx(t)
	d1 := &store.Definition{Name: "a", Version: 1, Format: "sarasvati", Hash: "h1", File: "a.wf.xml", Source: []byte("<x/>"), CreatedAt: t0}
	d2 := &store.Definition{Name: "b", Version: 1, Format: "sarasvati", Hash: "h2", File: "b.wf.xml", Source: []byte("<y/>"), CreatedAt: t0}
	d3 := &store.Definition{Name: "a", Version: 2, Format: "sarasvati", Hash: "h3", File: "a.wf.xml", Source: []byte("<z/>"), CreatedAt: t0.Add(time.Second)}
	for _, d := range []*store.Definition{d1, d2, d3} {
		if err := s.AddDefinition(c, d); err != nil {
			t.Fatalf("add %s v%d: %v", d.Name, d.Version, err)
		}
	}
	if !(d1.Seq < d2.Seq && d2.Seq < d3.Seq) {
		t.Fatalf("Seq not increasing: %d %d %d", d1.Seq, d2.Seq, d3.Seq)
	}
	dup := &store.Definition{Name: "a", Version: 2, Format: "sarasvati", Hash: "h4", Source: []byte("<w/>"), CreatedAt: t0}
	if err := s.AddDefinition(c, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("adding a version twice: want ErrConflict, have %v", err)
	}
	all, err := s.Definitions(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*store.Definition{d1, d2, d3}, all); diff != "" {
		t.Fatalf("definitions (-want +have):\n%s", diff)
	}
	later, err := s.Definitions(c, d2.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0].Hash != "h3" {
		t.Fatalf("definitions after %d: %+v", d2.Seq, later)
	}
}

func testProcessRoundTrip(t *testing.T, s store.Store) {
	c := ctx(t)
	p := proc("p1", "p1", "", 0)
	p.Context = map[string]string{"user": "u1"}
	p.TreeVersion = 3
	p.EventSeq = 7
	put(t, s, p)
	got, err := s.Process(c, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Fatalf("process (-want +have):\n%s", diff)
	}
	if _, err := s.Process(c, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing process: want ErrNotFound, have %v", err)
	}
	// Replace and bump the version.
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		v, err := tx.LockTree(c, "p1")
		if err != nil {
			return err
		}
		if v != 3 {
			return fmt.Errorf("LockTree: version %d, want 3", v)
		}
		q := *p
		q.State, q.Snapshot, q.UpdatedAt = "completed", []byte(`{"q":2}`), t0.Add(time.Minute)
		if err := tx.PutProcess(c, &q); err != nil {
			return err
		}
		return tx.SetTreeVersion(c, "p1", 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Process(c, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "completed" || string(got.Snapshot) != `{"q":2}` || got.TreeVersion != 4 || !got.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after update: %+v", got)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		_, err := tx.LockTree(c, "nope")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("locking a missing tree: want ErrNotFound, have %v", err)
	}
}

func testFailedUpdate(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	boom := errors.New("boom")
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		q := proc("p1", "p1", "", 0)
		q.State = "completed"
		if err := tx.PutProcess(c, q); err != nil {
			return err
		}
		if err := tx.PutProcess(c, proc("p2", "p2", "", 0)); err != nil {
			return err
		}
		if err := tx.AppendEvents(c, store.EncodeEventRecords([]store.Event{{Process: "p1", Seq: 1, Type: "X", NodeToken: -1, ArcToken: -1, At: t0}})); err != nil {
			return err
		}
		if err := tx.ReplaceTimers(c, "p1", []store.Timer{{Process: "p1", Root: "p1", Token: 0, DueAt: t0}}); err != nil {
			return err
		}
		if err := tx.PutContext(c, "p1", map[string]string{"k": "v"}, []string{"k"}); err != nil {
			return err
		}
		if err := tx.PutKey(c, "key", []byte("r"), t0); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want the fn's error, have %v", err)
	}
	p, err := s.Process(c, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if p.State != "executing" {
		t.Errorf("process changed by a failed update: %s", p.State)
	}
	if _, err := s.Process(c, "p2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("process inserted by a failed update: %v", err)
	}
	if evs, err := s.Events(c, "p1", 0, 0); err != nil {
		t.Fatal(err)
	} else if len(evs) != 0 {
		t.Errorf("events kept: %v", evs)
	}
	if ts, err := s.ClaimTimers(c, t0.Add(time.Hour), time.Minute, 10); err != nil {
		t.Fatal(err)
	} else if len(ts) != 0 {
		t.Errorf("timers kept: %v", ts)
	}
	if ids, err := s.FindByContext(c, map[string]string{"k": "v"}, 10); err != nil {
		t.Fatal(err)
	} else if len(ids) != 0 {
		t.Errorf("context kept: %v", ids)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		_, found, err := tx.Key(c, "key")
		if found {
			return errors.New("idempotency key kept")
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

func testTreeOrder(t *testing.T, s store.Store) {
	c := ctx(t)
	// Written children first, out of order.
	b := proc("b", "r", "r", 1)
	a := proc("a", "r", "r", 0)
	aa := proc("aa", "r", "a", 0)
	put(t, s, aa, b, a, proc("r", "r", "", 0), proc("other", "other", "", 0))
	rows, err := s.Tree(c, "r")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"r", "a", "aa", "b"}, ids); diff != "" {
		t.Fatalf("tree order (-want +have):\n%s", diff)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		rows, err := tx.Tree(c, "r")
		if err != nil {
			return err
		}
		if len(rows) != 4 || rows[0].ID != "r" {
			return fmt.Errorf("tx tree: %d rows", len(rows))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tree(c, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing tree: want ErrNotFound, have %v", err)
	}
}

func testProcesses(t *testing.T, s store.Store) {
	c := ctx(t)
	var ps []*store.Process
	for i := range 10 {
		p := proc(fmt.Sprintf("p%02d", i), fmt.Sprintf("p%02d", i), "", 0)
		if i%2 == 1 {
			p.State = "completed"
		}
		if i >= 8 {
			p.Definition = "other"
		}
		ps = append(ps, p)
	}
	nested := proc("p00-n", "p00", "p00", 0)
	nested.ParentToken = 3
	ps = append(ps, nested)
	put(t, s, ps...)
	ids := func(f store.Filter) []string {
		rows, err := s.Processes(c, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			if r.Snapshot != nil {
				t.Errorf("listing returned a snapshot")
			}
			out = append(out, r.ID)
		}
		return out
	}
	// Newest (greatest ID) first.
	if diff := cmp.Diff([]string{"p09", "p08", "p07"}, ids(store.Filter{Limit: 3})); diff != "" {
		t.Errorf("first page (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p06", "p05"}, ids(store.Filter{After: "p07", Limit: 2})); diff != "" {
		t.Errorf("page after p07 (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p00", "p00-n", "p01"}, ids(store.Filter{Oldest: true, Limit: 3})); diff != "" {
		t.Errorf("oldest first (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p02", "p03"}, ids(store.Filter{Oldest: true, After: "p01", Limit: 2})); diff != "" {
		t.Errorf("oldest first after p01 (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p09", "p07", "p05", "p03", "p01"}, ids(store.Filter{States: []string{"completed"}})); diff != "" {
		t.Errorf("completed (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p09", "p08"}, ids(store.Filter{Definition: "other"})); diff != "" {
		t.Errorf("definition (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p00-n"}, ids(store.Filter{Parent: "p00", ParentToken: 3})); diff != "" {
		t.Errorf("by parent token (-want +have):\n%s", diff)
	}
	if got := ids(store.Filter{Parent: "p00", ParentToken: 4}); len(got) != 0 {
		t.Errorf("by another parent token: %v", got)
	}
}

func testEvents(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0))
	var evs []store.Event
	for i := 1; i <= 40; i++ {
		ev := store.Event{Process: "p1", Seq: int64(i), Type: "T" + strconv.Itoa(i), NodeToken: i % 3, ArcToken: -1, At: t0.Add(time.Duration(i) * time.Millisecond)}
		switch i % 4 {
		case 1:
			ev.ArcNames = []string{""}
		case 2:
			ev.ArcNames = []string{"a", ""}
		case 3:
			ev.ArcNames = []string{}
		}
		evs = append(evs, ev)
	}
	err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.AppendEvents(c, store.EncodeEventRecords(evs)) })
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Events(c, "p1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(evs, all); diff != "" {
		t.Fatalf("events (-want +have):\n%s", diff)
	}
	page, err := s.Events(c, "p1", 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 5 || page[0].Seq != 11 || page[4].Seq != 15 {
		t.Fatalf("events after 10, limit 5: %v", page)
	}
	// A sequence number is stored once.
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		return tx.AppendEvents(c, store.EncodeEventRecords(evs[:1]))
	})
	if err == nil {
		t.Fatal("storing an event twice succeeded")
	}
}

// testFirstEvents: the event record a new row carries is stored once, and
// reads with the records appended after it, in order, whatever after and
// limit; a row put again does not lose them.
func testFirstEvents(t *testing.T, s store.Store) {
	c := ctx(t)
	var evs []store.Event
	for i := 1; i <= 30; i++ {
		evs = append(evs, store.Event{Process: "p1", Seq: int64(i), Type: "T" + strconv.Itoa(i), NodeToken: i % 4, ArcToken: i%3 - 1, At: t0.Add(time.Duration(i/10) * time.Second)})
	}
	first := store.EncodeEventRecords(evs[:12])[0]
	p := proc("p1", "p1", "", 0)
	p.EventSeq, p.FirstEvents = 12, &first
	put(t, s, p)
	// The stored row does not carry them; rewriting it keeps them.
	q := proc("p1", "p1", "", 0)
	q.StoredState, q.State, q.EventSeq = "executing", "completed", 20
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		if err := tx.PutProcess(c, q); err != nil {
			return err
		}
		return tx.AppendEvents(c, store.EncodeEventRecords(evs[12:20]))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(c, func(c context.Context, tx store.Tx) error {
		return tx.AppendEvents(c, store.EncodeEventRecords(evs[20:]))
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Process(c, "p1"); err != nil || got.FirstEvents != nil || got.State != "completed" {
		t.Fatalf("process read back: %+v, %v", got, err)
	}
	for _, tc := range []struct{ after, limit, from, to int }{
		{0, 0, 0, 30}, {5, 4, 5, 9}, {10, 5, 10, 15}, {12, 0, 12, 30}, {19, 3, 19, 22}, {29, 0, 29, 30}, {30, 0, 30, 30},
	} {
		got, err := s.Events(c, "p1", int64(tc.after), tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(evs[tc.from:tc.to], got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("events after %d, limit %d (-want +have):\n%s", tc.after, tc.limit, diff)
		}
	}
	// The first events are stored once, in the row or not.
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		return tx.AppendEvents(c, store.EncodeEventRecords(evs[:1]))
	})
	if err == nil {
		t.Fatal("storing the first events again succeeded")
	}
	if got, err := s.Events(c, "p1", 0, 0); err != nil || len(got) != len(evs) {
		t.Fatalf("after a refused append: %d events, %v", len(got), err)
	}
	// A new row with first events that exists already is refused, or put
	// with its events still stored once.
	again := proc("p1", "p1", "", 0)
	again.EventSeq, again.FirstEvents = 12, &first
	err = s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutProcess(c, again) })
	if err != nil && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("putting an existing row with first events: %v, want nil or ErrConflict", err)
	}
	if got, err := s.Events(c, "p1", 0, 0); err != nil || len(got) != len(evs) {
		t.Fatalf("after putting the row again: %d events, %v", len(got), err)
	}
}

func testKeys(t *testing.T, s store.Store) {
	c := ctx(t)
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		_, found, err := tx.Key(c, "k1")
		if err != nil || found {
			return fmt.Errorf("new key: found %v, err %v", found, err)
		}
		return tx.PutKey(c, "k1", []byte(`{"id":"p1"}`), t0)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		res, found, err := tx.Key(c, "k1")
		if err != nil || !found || string(res) != `{"id":"p1"}` {
			return fmt.Errorf("used key: %q, found %v, err %v", res, found, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// errLookup ends the Update of a key look-up, so that it keeps no
// reservation of the key.
var errLookup = errors.New("looked up")

// lookupKey returns the result recorded under key, and whether there is one.
func lookupKey(t *testing.T, s store.Store, key string) (string, bool) {
	t.Helper()
	var res []byte
	var found bool
	err := s.Update(ctx(t), func(c context.Context, tx store.Tx) (err error) {
		if res, found, err = tx.Key(c, key); err != nil {
			return err
		}
		return errLookup
	})
	if !errors.Is(err, errLookup) {
		t.Fatalf("look up key %s: %v", key, err)
	}
	return string(res), found
}

// putKeys records the result of each key, created at at.
func putKeys(t *testing.T, s store.Store, at time.Time, keys ...string) {
	t.Helper()
	err := s.Update(ctx(t), func(c context.Context, tx store.Tx) error {
		for _, k := range keys {
			if _, found, err := tx.Key(c, k); err != nil || found {
				return fmt.Errorf("key %s: found %v, err %v", k, found, err)
			}
			if err := tx.PutKey(c, k, []byte("result of "+k), at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("put keys: %v", err)
	}
}

// testPurgeKeys: PurgeKeys deletes the idempotency records created before
// the cut, only; a purged key is free for a new command.
func testPurgeKeys(t *testing.T, s store.Store) {
	c := ctx(t)
	putKeys(t, s, t0, "old")
	putKeys(t, s, t0.Add(time.Hour), "cut")
	putKeys(t, s, t0.Add(2*time.Hour), "new")

	n, err := s.PurgeKeys(c, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("purge before the second record: %d, %v; want 1", n, err)
	}
	if res, found := lookupKey(t, s, "old"); found {
		t.Fatalf("purged key still answers %q", res)
	}
	for _, k := range []string{"cut", "new"} {
		if res, found := lookupKey(t, s, k); !found || res != "result of "+k {
			t.Fatalf("key %s created at or after the cut: %q, found %v", k, res, found)
		}
	}
	if n, err := s.PurgeKeys(c, t0.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("purging again: %d, %v; want 0", n, err)
	}

	// The purged key records the next command that uses it.
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if _, found, err := tx.Key(c, "old"); err != nil || found {
			return fmt.Errorf("purged key: found %v, err %v", found, err)
		}
		return tx.PutKey(c, "old", []byte("again"), t0.Add(3*time.Hour))
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, found := lookupKey(t, s, "old"); !found || res != "again" {
		t.Fatalf("key used again after its purge: %q, found %v", res, found)
	}

	// Many records at one time (as after an upgrade) go in one call.
	many := make([]string, 1500)
	for i := range many {
		many[i] = "many-" + strconv.Itoa(i)
	}
	putKeys(t, s, t0, many...)
	if n, err := s.PurgeKeys(c, t0.Add(time.Minute)); err != nil || n != len(many) {
		t.Fatalf("purging %d records at once: %d, %v", len(many), n, err)
	}
	if n, err := s.PurgeKeys(c, t0.Add(24*time.Hour)); err != nil || n != 3 {
		t.Fatalf("purging the rest: %d, %v; want 3", n, err)
	}
}

func testContexts(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0), proc("p2", "p2", "", 0), proc("p3", "p3", "", 0))
	putCtx := func(id string, m map[string]string) error {
		return s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutContext(c, id, m, []string{"session"}) })
	}
	if err := putCtx("p1", map[string]string{"session": "s1", "user": "u1", "bot": "b"}); err != nil {
		t.Fatal(err)
	}
	if err := putCtx("p2", map[string]string{"session": "s2", "user": "u2", "bot": "b"}); err != nil {
		t.Fatal(err)
	}
	find := func(m map[string]string) []string {
		ids, err := s.FindByContext(c, m, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if diff := cmp.Diff([]string{"p1"}, find(map[string]string{"user": "u1"})); diff != "" {
		t.Errorf("by user (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p1", "p2"}, find(map[string]string{"bot": "b"})); diff != "" {
		t.Errorf("by bot (-want +have):\n%s", diff)
	}
	if got := find(map[string]string{"bot": "b", "user": "u3"}); len(got) != 0 {
		t.Errorf("no match: %v", got)
	}
	if diff := cmp.Diff([]string{"p2"}, find(map[string]string{"bot": "b", "user": "u2"})); diff != "" {
		t.Errorf("two pairs (-want +have):\n%s", diff)
	}
	err := putCtx("p3", map[string]string{"session": "s1"})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unique key taken: want ErrConflict, have %v", err)
	}
	// Non-unique keys may repeat.
	if err := putCtx("p3", map[string]string{"user": "u1"}); err != nil {
		t.Fatal(err)
	}
	// Dropping frees the unique value.
	if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.DropContext(c, "p1") }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p3"}, find(map[string]string{"user": "u1"})); diff != "" {
		t.Errorf("after drop (-want +have):\n%s", diff)
	}
	if err := putCtx("p3", map[string]string{"session": "s1"}); err != nil {
		t.Fatalf("unique value after drop: %v", err)
	}
	// A process that stopped executing is still listed by its context.
	rows, err := s.Processes(c, store.Filter{Context: map[string]string{"user": "u1"}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range rows {
		listed = append(listed, r.ID)
	}
	if diff := cmp.Diff([]string{"p1"}, listed); diff != "" {
		t.Errorf("listed by context after drop (-want +have):\n%s", diff)
	}
}

func testTimers(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0), proc("p2", "p2", "", 0))
	set := func(id string, ts ...store.Timer) {
		t.Helper()
		if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.ReplaceTimers(c, id, ts) }); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing keeps no timer of before, also where a token keeps its
	// timer with another due time, and also twice in one Update.
	set("p1", store.Timer{Process: "p1", Root: "p1", Token: 1, DueAt: t0.Add(time.Hour)},
		store.Timer{Process: "p1", Root: "p1", Token: 7, DueAt: t0.Add(time.Hour)})
	set("p1", store.Timer{Process: "p1", Root: "p1", Token: 1, DueAt: t0.Add(time.Minute)},
		store.Timer{Process: "p1", Root: "p1", Token: 2, DueAt: t0.Add(3 * time.Minute)})
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		if err := tx.ReplaceTimers(c, "p2", []store.Timer{{Process: "p2", Root: "p2", Token: 0, DueAt: t0.Add(time.Hour)}}); err != nil {
			return err
		}
		return tx.ReplaceTimers(c, "p2", []store.Timer{{Process: "p2", Root: "p2", Token: 0, DueAt: t0.Add(2 * time.Minute)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.NextTimer(c)
	if err != nil || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextTimer: %v %v", next, err)
	}
	if ts, err := s.ClaimTimers(c, t0, time.Minute, 10); err != nil {
		t.Fatal(err)
	} else if len(ts) != 0 {
		t.Fatalf("nothing due yet, claimed %v", ts)
	}
	at := t0.Add(150 * time.Second)
	ts, err := s.ClaimTimers(c, at, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Timer{
		{Process: "p1", Root: "p1", Token: 1, DueAt: t0.Add(time.Minute)},
		{Process: "p2", Root: "p2", Token: 0, DueAt: t0.Add(2 * time.Minute)},
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Fatalf("claimed (-want +have):\n%s", diff)
	}
	if ts, err := s.ClaimTimers(c, at.Add(time.Second), time.Minute, 10); err != nil {
		t.Fatal(err)
	} else if len(ts) != 0 {
		t.Fatalf("leased timers claimed again: %v", ts)
	}
	// After the lease, an unfired timer is offered again.
	ts, err = s.ClaimTimers(c, at.Add(2*time.Minute), time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Process != "p1" || ts[0].Token != 1 {
		t.Fatalf("after the lease, limit 1: %v", ts)
	}
	set("p1")
	set("p2")
	if ts, err := s.ClaimTimers(c, t0.Add(time.Hour), time.Minute, 10); err != nil {
		t.Fatal(err)
	} else if len(ts) != 0 {
		t.Fatalf("replaced timers still claimed: %v", ts)
	}
	if next, err := s.NextTimer(c); err != nil {
		t.Fatal(err)
	} else if !next.IsZero() {
		t.Fatalf("NextTimer with no timers: %v", next)
	}
}

// testOneWriter runs read-modify-write commands on one tree from many
// goroutines: with the tree locked, none is lost.
func testOneWriter(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("r", "r", "", 0))
	const n, workers = 60, 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / workers {
				err := s.Update(c, func(c context.Context, tx store.Tx) error {
					v, err := tx.LockTree(c, "r")
					if err != nil {
						return err
					}
					rows, err := tx.Tree(c, "r")
					if err != nil {
						return err
					}
					count, _ := strconv.Atoi(string(rows[0].Snapshot))
					p := *rows[0]
					p.Snapshot = []byte(strconv.Itoa(count + 1))
					p.TreeVersion = v + 1
					p.EventSeq++
					if err := tx.PutProcess(c, &p); err != nil {
						return err
					}
					return tx.AppendEvents(c, store.EncodeEventRecords([]store.Event{{Process: "r", Seq: p.EventSeq, Type: fmt.Sprintf("w%d-%d", w, i), NodeToken: -1, ArcToken: -1, At: t0}}))
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent update: %v", err)
	}
	p, err := s.Process(c, "r")
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Snapshot) != strconv.Itoa(n) || p.TreeVersion != n {
		t.Fatalf("after %d updates: count %s, version %d", n, p.Snapshot, p.TreeVersion)
	}
	evs, err := s.Events(c, "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
}

// testIsolatedFailures runs concurrent Updates of which some fail: the
// others commit (even when a backend commits them together).
func testIsolatedFailures(t *testing.T, s store.Store) {
	c := ctx(t)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("p%02d", i)
			s.Update(c, func(c context.Context, tx store.Tx) error {
				if err := tx.PutProcess(c, proc(id, id, "", 0)); err != nil {
					return err
				}
				if i%3 == 0 {
					return errors.New("refused")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i := range n {
		_, err := s.Process(c, fmt.Sprintf("p%02d", i))
		if i%3 == 0 && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("p%02d: failed update kept (%v)", i, err)
		}
		if i%3 != 0 && err != nil {
			t.Errorf("p%02d: %v", i, err)
		}
	}
}

// testConcurrentKeys retries one idempotent command from many goroutines:
// exactly one runs, the others see its result.
func testConcurrentKeys(t *testing.T, s store.Store) {
	c := ctx(t)
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	results := map[string]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res string
			err := s.Update(c, func(c context.Context, tx store.Tx) error {
				prev, found, err := tx.Key(c, "start-1")
				if err != nil {
					return err
				}
				if found {
					res = string(prev)
					return nil
				}
				id := fmt.Sprintf("p%d", i)
				if err := tx.PutProcess(c, proc(id, id, "", 0)); err != nil {
					return err
				}
				res = id
				return tx.PutKey(c, "start-1", []byte(id), t0)
			})
			if err != nil {
				t.Errorf("update: %v", err)
				return
			}
			mu.Lock()
			results[res]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	rows, err := s.Processes(c, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	ran = len(rows)
	if ran != 1 || len(results) != 1 {
		t.Fatalf("%d processes created, results %v; want exactly one", ran, results)
	}
}
