package store_test

import (
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/veena-wf/veena/store"
)

func TestEventsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 123, time.UTC)
	evs := []store.Event{
		{Process: "p", Seq: 1, Type: "PROCESS_CREATED", NodeToken: -1, ArcToken: -1, At: at},
		{Process: "p", Seq: 2, Type: "NODE_TOKEN_COMPLETED", NodeToken: 3, ArcToken: -1, ArcNames: []string{"", `a "quoted" \ name`, "ünï\n"}, At: at},
		{Process: "p", Seq: 3, Type: "NODE_TOKEN_COMPLETED", NodeToken: 4, ArcToken: -1, ArcNames: []string{}, At: at},
	}
	b := store.EncodeEvents(evs)
	got, err := store.DecodeEvents("p", b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if diff := cmp.Diff(evs, got); diff != "" {
		t.Fatalf("(-want +have):\n%s", diff)
	}
}

func TestAppendEventsAfter(t *testing.T) {
	t.Parallel()
	var evs []store.Event
	for seq := int64(1); seq <= 5; seq++ {
		evs = append(evs, store.Event{Process: "p", Seq: seq, Type: "X", NodeToken: -1, ArcToken: -1, At: time.Unix(0, seq).UTC()})
	}
	record := store.EncodeEvents(evs)
	prior := []store.Event{{Process: "p", Seq: 0, NodeToken: -1, ArcToken: -1}}
	for _, c := range []struct {
		after    int64
		limit    int
		wantSeqs []int64
	}{
		{after: 0, limit: 0, wantSeqs: []int64{0, 1, 2, 3, 4, 5}},
		{after: 3, limit: 0, wantSeqs: []int64{0, 4, 5}},
		{after: 1, limit: 3, wantSeqs: []int64{0, 2, 3}},
		{after: 5, limit: 0, wantSeqs: []int64{0}},
		{after: 0, limit: 1, wantSeqs: []int64{0}},
	} {
		got, err := store.AppendEventsAfter(slices.Clone(prior), "p", record, c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range got {
			seqs = append(seqs, ev.Seq)
		}
		if !slices.Equal(seqs, c.wantSeqs) {
			t.Errorf("after %d, limit %d: got seqs %v, want %v", c.after, c.limit, seqs, c.wantSeqs)
		}
	}
	if _, err := store.AppendEventsAfter(nil, "p", []byte("[[1]]"), 0, 0); err == nil {
		t.Error("a malformed record decoded without error")
	}
}

func TestMigrationsNumbering(t *testing.T) {
	sql := &fstest.MapFile{Data: []byte("SELECT 1;")}
	for _, tc := range []struct {
		name  string
		files []string
		ok    bool
	}{
		{"in order", []string{"001_a.sql", "002_b.sql", "003_c.sql"}, true},
		{"a gap", []string{"001_a.sql", "002_b.sql", "004_d.sql"}, false},
		{"a repeat", []string{"001_a.sql", "002_b.sql", "002_c.sql"}, false},
		{"not numbered", []string{"001_a.sql", "b.sql"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["m/"+f] = sql
			}
			migs, err := store.Migrations(fsys, "m")
			if tc.ok && (err != nil || len(migs) != len(tc.files)) {
				t.Fatalf("%d migrations, %v", len(migs), err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("%v read without an error", tc.files)
			}
		})
	}
}
