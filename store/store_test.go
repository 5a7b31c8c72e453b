package store_test

import (
	"testing"
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
	b, err := store.EncodeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.DecodeEvents("p", b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if diff := cmp.Diff(evs, got); diff != "" {
		t.Fatalf("(-want +have):\n%s", diff)
	}
}
