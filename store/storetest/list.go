package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/veena-wf/veena/store"
)

// ids lists the IDs of the rows f selects, and checks the count agrees.
func ids(t *testing.T, s store.Store, f store.Filter) []string {
	t.Helper()
	rows, err := s.Processes(ctx(t), f)
	if err != nil {
		t.Fatalf("Processes(%+v): %v", f, err)
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	if f.Limit == 0 && f.After == "" {
		n, err := s.CountProcesses(ctx(t), f, 0)
		if err != nil {
			t.Fatalf("CountProcesses(%+v): %v", f, err)
		}
		if n != len(out) {
			t.Errorf("CountProcesses(%+v) = %d, but Processes lists %d", f, n, len(out))
		}
	}
	return out
}

// testProcessFilters checks every condition of a listing, alone and
// together, and the capped count.
func testProcessFilters(t *testing.T, s store.Store) {
	c := ctx(t)
	type row struct {
		id, def, state string
		version        int
		created        time.Duration
	}
	rows := []row{
		{"0191aa00-0000-7000-8000-000000000001", "order", "executing", 1, 0},
		{"0191aa00-0000-7000-8000-000000000002", "order", "completed", 1, time.Minute},
		{"0191ab00-0000-7000-8000-000000000003", "order", "executing", 2, 2 * time.Minute},
		{"0191ab0f-0000-7000-8000-000000000004", "refund", "canceled", 1, 3 * time.Minute},
		{"0191af00-0000-7000-8000-000000000005", "refund", "executing", 1, 4 * time.Minute},
		{"0191b000-0000-7000-8000-000000000006", "order", "executing", 2, 5 * time.Minute},
	}
	var ps []*store.Process
	for _, r := range rows {
		p := proc(r.id, r.id, "", 0)
		p.Definition, p.State, p.Version = r.def, r.state, r.version
		p.CreatedAt = t0.Add(r.created)
		ps = append(ps, p)
	}
	put(t, s, ps...)
	id := func(i int) string { return rows[i-1].id }
	err := s.Update(c, func(c context.Context, tx store.Tx) error {
		if err := tx.PutContext(c, id(1), map[string]string{"order": "o-1", "customer": "c-9"}, nil); err != nil {
			return err
		}
		if err := tx.PutContext(c, id(3), map[string]string{"order": "o-3", "customer": "c-9"}, nil); err != nil {
			return err
		}
		if err := tx.PutContext(c, id(4), map[string]string{"refund": "0191ab"}, nil); err != nil {
			return err
		}
		return tx.DropContext(c, id(4))
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    store.Filter
		want []string
	}{
		{"all, newest first", store.Filter{}, []string{id(6), id(5), id(4), id(3), id(2), id(1)}},
		{"oldest first", store.Filter{Oldest: true}, []string{id(1), id(2), id(3), id(4), id(5), id(6)}},
		{"definition", store.Filter{Definition: "refund"}, []string{id(5), id(4)}},
		{"definition and version", store.Filter{Definition: "order", Version: 2}, []string{id(6), id(3)}},
		{"two states", store.Filter{States: []string{"completed", "canceled"}}, []string{id(4), id(2)}},
		{"id prefix", store.Filter{IDPrefix: "0191ab"}, []string{id(4), id(3)}},
		{"id prefix ending in f", store.Filter{IDPrefix: "0191af"}, []string{id(5)}},
		{"id prefix ending in 9", store.Filter{IDPrefix: "0191aa00-0000-7000-8000-00000000000"}, []string{id(2), id(1)}},
		{"id prefix with a dash", store.Filter{IDPrefix: "0191ab00-"}, []string{id(3)}},
		{"whole id", store.Filter{IDPrefix: id(2)}, []string{id(2)}},
		{"id prefix of no id", store.Filter{IDPrefix: "0191c"}, []string{}},
		{"id prefix outside the id alphabet", store.Filter{IDPrefix: "x%"}, []string{}},
		{"context pair", store.Filter{Context: map[string]string{"customer": "c-9"}}, []string{id(3), id(1)}},
		{"two context pairs", store.Filter{Context: map[string]string{"customer": "c-9", "order": "o-3"}}, []string{id(3)}},
		{"context of a process no longer executing", store.Filter{Context: map[string]string{"refund": "0191ab"}}, []string{id(4)}},
		{"search by context value", store.Filter{Search: "o-1"}, []string{id(1)}},
		{"search by id prefix or context value", store.Filter{Search: "0191ab"}, []string{id(4), id(3)}},
		{"search that finds nothing", store.Filter{Search: "nothing"}, []string{}},
		{"created from", store.Filter{CreatedFrom: t0.Add(4 * time.Minute)}, []string{id(6), id(5)}},
		{"created before", store.Filter{CreatedTo: t0.Add(time.Minute)}, []string{id(1)}},
		{"created between", store.Filter{CreatedFrom: t0.Add(time.Minute), CreatedTo: t0.Add(3 * time.Minute)}, []string{id(3), id(2)}},
		{"id bounds", store.Filter{MinID: id(2), MaxID: id(4)}, []string{id(4), id(3), id(2)}},
		{"rows with no waits", store.Filter{Unindexed: true, States: []string{"executing"}}, []string{id(6), id(5), id(3), id(1)}},
		{"all conditions", store.Filter{Definition: "order", States: []string{"executing"}, IDPrefix: "0191a",
			Context: map[string]string{"customer": "c-9"}, CreatedFrom: t0.Add(time.Minute)}, []string{id(3)}},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, ids(t, s, tc.f)); diff != "" {
			t.Errorf("%s (-want +have):\n%s", tc.name, diff)
		}
	}
	// Pages follow the order.
	if diff := cmp.Diff([]string{id(4), id(3)}, ids(t, s, store.Filter{After: id(5), Limit: 2})); diff != "" {
		t.Errorf("page after %s (-want +have):\n%s", id(5), diff)
	}
	if diff := cmp.Diff([]string{id(5), id(6)}, ids(t, s, store.Filter{Oldest: true, After: id(4), Limit: 2})); diff != "" {
		t.Errorf("oldest first after %s (-want +have):\n%s", id(4), diff)
	}
	// A capped count stops at the cap.
	for _, tc := range []struct{ limit, want int }{{0, 6}, {4, 4}, {6, 6}, {10, 6}} {
		n, err := s.CountProcesses(c, store.Filter{}, tc.limit)
		if err != nil || n != tc.want {
			t.Errorf("CountProcesses up to %d = %d, %v; want %d", tc.limit, n, err, tc.want)
		}
	}
}

// testWaits checks that processes are found by the nodes they wait at and
// by being stalled, as their rows change.
func testWaits(t *testing.T, s store.Store) {
	c := ctx(t)
	p1, p2, p3 := proc("p1", "p1", "", 0), proc("p2", "p2", "", 0), proc("p3", "p3", "", 0)
	p1.Waits, p1.WaitNodes = []byte(`[1]`), []string{"approve", "ship"}
	p2.Waits, p2.WaitNodes = []byte(`[2]`), []string{"approve"}
	p3.Waits, p3.WaitNodes, p3.Stalled = []byte(`[3]`), []string{"join"}, true
	put(t, s, p1, p2, p3)
	check := func(when string, f store.Filter, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if diff := cmp.Diff(want, ids(t, s, f)); diff != "" {
			t.Errorf("%s, %+v (-want +have):\n%s", when, f, diff)
		}
	}
	check("new rows", store.Filter{Node: "approve"}, "p2", "p1")
	check("new rows", store.Filter{Node: "ship"}, "p1")
	check("new rows", store.Filter{Node: "nowhere"})
	check("new rows", store.Filter{Stalled: true}, "p3")
	check("new rows", store.Filter{Node: "join", Stalled: true}, "p3")
	got, err := s.Process(c, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Waits) != `[1]` || got.Stalled {
		t.Errorf("p1 read back with waits %q, stalled %v", got.Waits, got.Stalled)
	}
	got, err = s.Process(c, "p3")
	if err != nil || !got.Stalled {
		t.Errorf("p3 read back: stalled %v, %v", got != nil && got.Stalled, err)
	}

	// p1 moves on from approve to pack; p3 is no longer stalled; p2 ends.
	p1.StoredState, p1.StoredWaitNodes, p1.WaitNodes, p1.Waits = "executing", p1.WaitNodes, []string{"pack", "ship"}, []byte(`[4]`)
	p3.StoredState, p3.StoredWaitNodes, p3.WaitNodes, p3.Stalled = "executing", p3.WaitNodes, []string{"fix", "join"}, false
	p2.StoredState, p2.StoredWaitNodes, p2.WaitNodes, p2.Waits, p2.State = "executing", p2.WaitNodes, nil, []byte(`[]`), "completed"
	put(t, s, p1, p2, p3)
	check("after the change", store.Filter{Node: "approve"})
	check("after the change", store.Filter{Node: "pack"}, "p1")
	check("after the change", store.Filter{Node: "ship"}, "p1")
	check("after the change", store.Filter{Node: "join"}, "p3")
	check("after the change", store.Filter{Stalled: true})
	got, err = s.Process(c, "p1")
	if err != nil || string(got.Waits) != `[4]` {
		t.Errorf("p1 waits after the change: %q, %v", got.Waits, err)
	}

	// A change in a failed Update leaves the index as it was.
	p1.StoredWaitNodes, p1.WaitNodes = p1.WaitNodes, []string{"done"}
	boom := errors.New("boom")
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if err := tx.PutProcess(c, p1); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing update: %v", err)
	}
	check("after a failed update", store.Filter{Node: "done"})
	check("after a failed update", store.Filter{Node: "pack"}, "p1")

	// A row whose stored waits the engine does not know gets its nodes
	// written whole.
	p4 := proc("p4", "p4", "", 0)
	put(t, s, p4)
	check("an old row", store.Filter{Unindexed: true}, "p4")
	p4.StoredState, p4.Waits, p4.WaitNodes = "executing", []byte(`[5]`), []string{"approve"}
	put(t, s, p4)
	check("an old row rewritten", store.Filter{Node: "approve"}, "p4")
	check("an old row rewritten", store.Filter{Unindexed: true})
}

// testTimerFailures records failures on timers and checks that they last
// as long as their timer, and hold the timer back until the retry time.
func testTimerFailures(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p1", "p1", "", 0), proc("p2", "p2", "", 0))
	set := func(id string, ts ...store.Timer) {
		t.Helper()
		if err := s.Update(c, func(c context.Context, tx store.Tx) error { return tx.ReplaceTimers(c, id, ts) }); err != nil {
			t.Fatal(err)
		}
	}
	due := t0.Add(time.Minute)
	set("p1", store.Timer{Process: "p1", Root: "p1", Token: 2, DueAt: due}, store.Timer{Process: "p1", Root: "p1", Token: 5, DueAt: due})
	set("p2", store.Timer{Process: "p2", Root: "p2", Token: 0, DueAt: due})
	if _, err := s.ClaimTimers(c, due, time.Second, 10); err != nil {
		t.Fatal(err)
	}
	fail := func(p string, token int, dueAt time.Time, msg string, at, retry time.Time) {
		t.Helper()
		if err := s.FailTimer(c, store.TimerFailure{Process: p, Token: token, DueAt: dueAt, Message: msg, At: at}, retry); err != nil {
			t.Fatal(err)
		}
	}
	fail("p1", 2, due, "guard failed", due, due.Add(time.Hour))
	fail("p1", 2, due, "guard failed again", due.Add(time.Second), due.Add(time.Hour))
	fail("p2", 0, due, "p2 failed", due.Add(2*time.Second), due.Add(time.Hour))
	// A failure of a timer that has moved on (another due time) is not kept.
	fail("p1", 5, due.Add(time.Hour), "stale", due, due.Add(time.Hour))

	failures := func(p string, limit int) []store.TimerFailure {
		t.Helper()
		fs, err := s.TimerFailures(c, p, limit)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	want1 := store.TimerFailure{Process: "p1", Token: 2, DueAt: due, Message: "guard failed again", At: due.Add(time.Second), Attempts: 2}
	want2 := store.TimerFailure{Process: "p2", Token: 0, DueAt: due, Message: "p2 failed", At: due.Add(2 * time.Second), Attempts: 1}
	if diff := cmp.Diff([]store.TimerFailure{want1}, failures("p1", 0)); diff != "" {
		t.Errorf("failures of p1 (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]store.TimerFailure{want1, want2}, failures("", 0)); diff != "" {
		t.Errorf("every failure, oldest first (-want +have):\n%s", diff)
	}
	if diff := cmp.Diff([]store.TimerFailure{want1}, failures("", 1)); diff != "" {
		t.Errorf("first failure (-want +have):\n%s", diff)
	}
	// The failed timers wait for their retry time; the other is offered
	// once its lease ends.
	ts, err := s.ClaimTimers(c, due.Add(time.Minute), time.Second, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Process != "p1" || ts[0].Token != 5 {
		t.Errorf("claimed before the retry time: %+v, want only p1's token 5", ts)
	}
	ts, err = s.ClaimTimers(c, due.Add(2*time.Hour), time.Second, 10)
	if err != nil || len(ts) != 3 {
		t.Errorf("claimed after the retry time: %+v, %v; want all three", ts, err)
	}
	// Replacing a process's timers ends their failures.
	set("p1", store.Timer{Process: "p1", Root: "p1", Token: 2, DueAt: due.Add(time.Hour)})
	if fs := failures("p1", 0); len(fs) != 0 {
		t.Errorf("failures after the timers were replaced: %+v", fs)
	}
	if diff := cmp.Diff([]store.TimerFailure{want2}, failures("", 0)); diff != "" {
		t.Errorf("failures left (-want +have):\n%s", diff)
	}
	// An update that replaces a process's timers and then fails changes
	// nothing: the timer keeps its lease and its failure.
	late := due.Add(3 * time.Hour)
	if ts, err := s.ClaimTimers(c, late, time.Minute, 10); err != nil || len(ts) != 2 {
		t.Fatalf("claimed at the end: %+v, %v; want p1's and p2's", ts, err)
	}
	undone := errors.New("undone")
	err = s.Update(c, func(c context.Context, tx store.Tx) error {
		if err := tx.ReplaceTimers(c, "p2", nil); err != nil {
			return err
		}
		return undone
	})
	if !errors.Is(err, undone) {
		t.Fatalf("the failing update returned %v", err)
	}
	if ts, err := s.ClaimTimers(c, late.Add(time.Second), time.Minute, 10); err != nil || len(ts) != 0 {
		t.Errorf("claimed within the leases, after an undone replacement: %+v, %v; want none", ts, err)
	}
	if diff := cmp.Diff([]store.TimerFailure{want2}, failures("", 0)); diff != "" {
		t.Errorf("failures after an undone replacement (-want +have):\n%s", diff)
	}
}
