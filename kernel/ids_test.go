package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Process ids are UUIDv7s stamped with the time they were made, unique,
// and in the order made even within one millisecond.
func TestUUIDv7(t *testing.T) {
	before := time.Now()
	ids := make([]string, 20000)
	for i := range ids {
		ids[i] = NewUUIDv7()
	}
	after := time.Now()
	seen := map[string]bool{}
	for i, s := range ids {
		u, err := uuid.Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Fatalf("%s: version %d, variant %s, text %s", s, u.Version(), u.Variant(), u)
		}
		sec, nsec := u.Time().UnixTime()
		at := time.Unix(sec, nsec)
		if at.Before(before.Truncate(time.Millisecond)) || at.After(after.Add(time.Second)) {
			t.Fatalf("%s is stamped %s, made between %s and %s", s, at, before, after)
		}
		if seen[s] {
			t.Fatalf("%s made twice", s)
		}
		seen[s] = true
		if i > 0 && s <= ids[i-1] {
			t.Fatalf("%s made after %s sorts before it", s, ids[i-1])
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatal("ids not in the order made")
	}
	// The random bits differ: no two ids share their last 14 hex digits (56 of the 62 random bits).
	tails := map[string]bool{}
	for _, s := range ids {
		tails[s[21:]] = true
	}
	if len(tails) != len(ids) {
		t.Fatalf("%d distinct random parts in %d ids", len(tails), len(ids))
	}
}

func BenchmarkNewUUIDv7(b *testing.B) {
	for b.Loop() {
		_ = NewUUIDv7()
	}
}

func BenchmarkUUIDPackageV7(b *testing.B) {
	for b.Loop() {
		_ = uuid.Must(uuid.NewV7()).String()
	}
}

// A kernel with no NewID names a process with a UUIDv7 stamped with the
// time of the command that starts it.
func TestProcessIDsAreStampedWithTheCommandsTime(t *testing.T) {
	k := New()
	g := mkGraph(t, "g", N{Name: "A", Start: true})
	// A time before ids made by other kernels: each kernel keeps its own
	// order.
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	p, err := k.Engine(at).Start(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := uuid.Parse(p.ID)
	if err != nil || u.Version() != 7 {
		t.Fatalf("process id %q: %v, version %d", p.ID, err, u.Version())
	}
	if sec, nsec := u.Time().UnixTime(); !time.Unix(sec, nsec).Equal(at) {
		t.Fatalf("process id %s is stamped %s, started at %s", p.ID, time.Unix(sec, nsec).UTC(), at.UTC())
	}
}

// A kernel whose clock runs ahead (a simulation, a test's fake clock) keeps
// the ids of its processes in order without stamping its future on the ids
// of another kernel, or on those NewUUIDv7 makes.
func TestUUIDv7ClocksApart(t *testing.T) {
	g := mkGraph(t, "one", N{Name: "A", Start: true})
	stamp := func(id string) time.Time {
		sec, nsec := uuid.MustParse(id).Time().UnixTime()
		return time.Unix(sec, nsec)
	}
	start := func(k *Kernel, at time.Time) string {
		p, err := k.Engine(at).Start(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	ahead, future := New(), time.Now().Add(time.Hour)
	var last string
	for i := range 3 {
		// The clock steps back a minute after the first start.
		id := start(ahead, future.Add(-time.Duration(min(i, 1))*time.Minute))
		if id <= last {
			t.Fatalf("%s started after %s sorts before it", id, last)
		}
		last = id
	}
	if got := stamp(last); got.Before(future.Truncate(time.Millisecond)) {
		t.Fatalf("the process started after the clock stepped back is stamped %s, before the first (%s)", got, future)
	}
	for name, id := range map[string]string{"NewUUIDv7": NewUUIDv7(), "another kernel": start(New(), time.Now())} {
		if d := time.Since(stamp(id)); d < -time.Second || d > time.Second {
			t.Fatalf("%s: id %s is stamped %s, not now (%s)", name, id, stamp(id), time.Now())
		}
	}
}
