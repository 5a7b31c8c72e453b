package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func randomEvents(r *rand.Rand, process string) []Event {
	names := []string{"", "a", "yes", "ünïcode \"quoted\"\n", "PROCESS_CREATED"}
	types := append([]string{"CUSTOM", "", "NODE_TOKEN_\u00e9"}, eventTypes...)
	n := 1 + r.IntN(15)
	seq := r.Int64N(1 << 40)
	at := time.Unix(0, r.Int64N(1<<62)-(1<<61))
	if r.IntN(5) == 0 {
		at = time.Time{}
	}
	evs := make([]Event, n)
	for i := range evs {
		seq += 1 + int64(r.IntN(3))
		if r.IntN(3) == 0 {
			at = at.Add(time.Duration(r.Int64N(1<<40) - (1 << 39)))
		}
		ev := Event{Process: process, Seq: seq, Type: types[r.IntN(len(types))],
			NodeToken: r.IntN(1<<20) - 1, ArcToken: r.IntN(3) - 1, At: at}
		switch r.IntN(3) {
		case 1:
			ev.ArcNames = []string{}
		case 2:
			for range 1 + r.IntN(3) {
				ev.ArcNames = append(ev.ArcNames, names[r.IntN(len(names))])
			}
		}
		evs[i] = ev
	}
	return evs
}

// The compact record decodes to exactly what the JSON record decodes to,
// whatever after and limit.
func TestCompactEventsMatchJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		evs := randomEvents(r, "p")
		compact := encodeCompact(evs)
		js := EncodeEvents(evs)
		if len(compact) >= len(js) {
			t.Fatalf("compact record of %d bytes, JSON of %d", len(compact), len(js))
		}
		after := evs[0].Seq - 1
		limit := 0
		if i%2 == 1 {
			after = evs[r.IntN(len(evs))].Seq - 1
			limit = r.IntN(len(evs) + 1)
		}
		prefix := []Event{{Process: "p", Seq: -5, Type: "X"}}
		want, err := appendJSONEventsAfter(append([]Event{}, prefix...), "p", js, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendEventsAfter(append([]Event{}, prefix...), "p", compact, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("events (-json +compact):\n%s", diff)
		}
		// JSON records still read.
		got, err = AppendEventsAfter(append([]Event{}, prefix...), "p", js, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("JSON events (-want +got):\n%s", diff)
		}
	}
}

func TestCompactEventsMalformed(t *testing.T) {
	evs := randomEvents(rand.New(rand.NewPCG(3, 4)), "p")
	b := encodeCompact(evs)
	for n := 1; n < len(b); n++ {
		if _, err := AppendEventsAfter(nil, "p", b[:n], 0, 0); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", n, len(b))
		}
	}
	for _, bad := range [][]byte{{compactTag, 0xff}, {compactTag, 200, 1}, {compactTag, 1, 0, 0, 99, 0, 0, 0}} {
		if _, err := AppendEventsAfter(nil, "p", bad, 0, 0); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}

func BenchmarkCompactEvents(b *testing.B) {
	evs := randomEvents(rand.New(rand.NewPCG(5, 6)), "p")
	var buf []byte
	for b.Loop() {
		buf = encodeCompactTo(buf[:0], evs)
	}
}

func BenchmarkJSONEvents(b *testing.B) {
	evs := randomEvents(rand.New(rand.NewPCG(5, 6)), "p")
	for b.Loop() {
		EncodeEvents(evs)
	}
}

// FuzzDecodeEvents: no stored event record, compact or JSON, makes the
// reader panic.
func FuzzDecodeEvents(f *testing.F) {
	r := rand.New(rand.NewPCG(21, 22))
	for range 8 {
		evs := randomEvents(r, "p")
		f.Add(encodeCompact(evs))
		f.Add(EncodeEvents(evs))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		AppendEventsAfter(nil, "p", b, 0, 0)
		AppendEventsAfter(nil, "p", b, 3, 2)
	})
}

// encodeCompact is the compact record of evs, all of one process.
func encodeCompact(evs []Event) []byte { return encodeCompactTo(nil, evs) }

func encodeCompactTo(buf []byte, evs []Event) []byte {
	var enc EventEncoder
	enc.Begin(buf, evs[0].Process, len(evs))
	for _, ev := range evs {
		enc.Add(ev.Seq, ev.Type, ev.NodeToken, ev.ArcToken, ev.ArcNames, ev.At.UnixNano())
	}
	return enc.Record().Data
}

// EncodeEventRecords makes one record per run of one process's events,
// with the first and last sequence numbers, decoding to the same events.
func TestEncodeEventRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var evs []Event
	var runs [][]Event
	for _, p := range []string{"a", "b", "a", "c"} {
		run := randomEvents(r, p)
		runs = append(runs, run)
		evs = append(evs, run...)
	}
	recs := EncodeEventRecords(evs)
	if len(recs) != len(runs) {
		t.Fatalf("%d records for %d runs", len(recs), len(runs))
	}
	for i, rec := range recs {
		run := runs[i]
		if rec.Process != run[0].Process || rec.First != run[0].Seq || rec.Last != run[len(run)-1].Seq {
			t.Fatalf("record %d is %s %d..%d, want %s %d..%d", i, rec.Process, rec.First, rec.Last,
				run[0].Process, run[0].Seq, run[len(run)-1].Seq)
		}
		got, err := AppendEventsAfter(nil, rec.Process, rec.Data, run[0].Seq-1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(run, got); diff != "" {
			t.Fatalf("record %d (-want +got):\n%s", i, diff)
		}
	}
	if recs := EncodeEventRecords(nil); len(recs) != 0 {
		t.Fatalf("%d records of no events", len(recs))
	}
}

// An encoder refuses more or fewer events than it was told.
func TestEventEncoderCount(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	var enc EventEncoder
	enc.Begin(nil, "p", 1)
	mustPanic("Record before the events", func() { enc.Record() })
	enc.Add(1, "X", -1, -1, nil, 0)
	mustPanic("Add beyond the count", func() { enc.Add(2, "X", -1, -1, nil, 0) })
	if rec := enc.Record(); rec.First != 1 || rec.Last != 1 {
		t.Errorf("record %d..%d, want 1..1", rec.First, rec.Last)
	}
}
