package store

import (
	"encoding/binary"
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
		// Records of the first compact form and JSON records still read.
		// The second form is no longer, but for the byte of each type
		// whose number does not fit in the head.
		extended := 0
		for _, ev := range evs {
			if TypeCode(ev.Type) >= headType {
				extended++
			}
		}
		if v1 := encodeCompactV1(evs); len(compact) > len(v1)+extended {
			t.Fatalf("compact record of %d bytes, its first form of %d", len(compact), len(v1))
		}
		for form, rec := range map[string][]byte{"first compact form": encodeCompactV1(evs), "JSON": js} {
			got, err = AppendEventsAfter(append([]Event{}, prefix...), "p", rec, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s events (-want +got):\n%s", form, diff)
			}
		}
	}
}

// A command's events, numbered one after the other and all at one time,
// take about three bytes each.
func TestCompactEventsSize(t *testing.T) {
	at := time.Unix(1700000000, 0)
	var evs []Event
	for i := range 70 {
		evs = append(evs, Event{Process: "p", Seq: int64(i + 1), Type: eventTypes[i%(headType-1)], NodeToken: i / 7, ArcToken: -1, At: at})
	}
	evs[3].ArcNames = []string{}
	b := encodeCompact(evs)
	// The tag and count (2), the first time (9), three bytes per event and
	// one for the empty arc names.
	if want := 2 + 9 + 3*len(evs) + 1; len(b) != want {
		t.Errorf("%d events in %d bytes, want %d", len(evs), len(b), want)
	}
	if v1 := encodeCompactV1(evs); len(b) > len(v1)*2/3 {
		t.Errorf("%d bytes, against %d in the first compact form", len(b), len(v1))
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
	v1 := encodeCompactV1(evs)
	for n := 1; n < len(v1); n++ {
		if _, err := AppendEventsAfter(nil, "p", v1[:n], 0, 0); err == nil {
			t.Fatalf("a record of the first form cut to %d of %d bytes decoded", n, len(v1))
		}
	}
	for _, bad := range [][]byte{
		{compactTag, 0xff}, {compactTag, 200, 1}, {compactTag, 1, 0, 0, 99, 0, 0, 0}, {compactTag, 1, 0, 0, 1, 0, 0, 9},
		{compactTag2, 0xff}, {compactTag2, 2, 0x61, 0, 0},
		{compactTag2, 1, 0x60 | headType, 99, 0, 0}, // no type 99
		{compactTag2, 1, 0xe1, 0, 0, 5},             // five arc names in no bytes
	} {
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
		f.Add(encodeCompactV1(evs))
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

// encodeCompactV1 is the record of evs in the first compact form, which
// Veena no longer writes but still reads.
func encodeCompactV1(evs []Event) []byte {
	b := append([]byte{compactTag}, binary.AppendUvarint(nil, uint64(len(evs)))...)
	var seq, at int64
	for _, ev := range evs {
		b = binary.AppendVarint(b, ev.Seq-seq)
		b = binary.AppendVarint(b, ev.At.UnixNano()-at)
		seq, at = ev.Seq, ev.At.UnixNano()
		if code, ok := eventTypeCodes[ev.Type]; ok {
			b = binary.AppendUvarint(b, code)
		} else {
			b = append(b, 0)
			b = appendString(b, ev.Type)
		}
		b = binary.AppendVarint(b, int64(ev.NodeToken))
		b = binary.AppendVarint(b, int64(ev.ArcToken))
		if ev.ArcNames == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(ev.ArcNames))+1)
		for _, name := range ev.ArcNames {
			b = appendString(b, name)
		}
	}
	return b
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

// AddCoded with a type's TypeCode writes what Add writes; with code 0 it
// writes the name, which decodes to the same events.
func TestEventEncoderAddCoded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		evs := randomEvents(r, "p")
		var byCode, byName EventEncoder
		byCode.Begin(nil, "p", len(evs))
		byName.Begin(nil, "p", len(evs))
		for _, ev := range evs {
			byCode.AddCoded(ev.Seq, ev.Type, TypeCode(ev.Type), ev.NodeToken, ev.ArcToken, ev.ArcNames, ev.At.UnixNano())
			byName.AddCoded(ev.Seq, ev.Type, 0, ev.NodeToken, ev.ArcToken, ev.ArcNames, ev.At.UnixNano())
		}
		coded, named := byCode.Record().Data, byName.Record().Data
		if want := encodeCompact(evs); string(coded) != string(want) {
			t.Fatalf("AddCoded with TypeCode wrote %x, Add wrote %x", coded, want)
		}
		a, errA := AppendEventsAfter(nil, "p", coded, 0, 0)
		b, errB := AppendEventsAfter(nil, "p", named, 0, 0)
		if errA != nil || errB != nil {
			t.Fatalf("decode: %v, %v", errA, errB)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("named types decode otherwise (-coded +named):\n%s", diff)
		}
	}
	for i, name := range eventTypes {
		if got := TypeCode(name); int(got) != i+1 {
			t.Errorf("TypeCode(%s) = %d, want %d", name, got, i+1)
		}
	}
	if TypeCode("CUSTOM") != 0 {
		t.Error("an unknown type has a code")
	}
}
