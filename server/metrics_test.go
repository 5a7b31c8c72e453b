package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/internal/testutil"
	"github.com/veena-wf/veena/store"
)

// inboxGauge returns the value line of veena_inbox_waiting_commands on
// /metrics, "" if the gauge is not there.
func inboxGauge(e *env) string {
	e.t.Helper()
	r := e.get("/metrics")
	e.want(r, http.StatusOK, "")
	for line := range strings.Lines(string(r.body)) {
		if v, ok := strings.CutPrefix(line, "veena_inbox_waiting_commands "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// testInboxGauge: /metrics counts the commands waiting in the durable
// inbox at each scrape, and leaves the gauge out (but answers) when the
// store cannot count them.
func testInboxGauge(t *testing.T, e *env) {
	if v := inboxGauge(e); v != "0" {
		t.Fatalf("veena_inbox_waiting_commands with an empty inbox: %q, want 0", v)
	}
	e.load(testutil.DefAB)
	p := e.start("ab", "")
	ctx := context.Background()
	// Queued as if for later, so that the engine's background loop leaves
	// them waiting rather than taking them as abandoned.
	later := time.Now().Add(time.Hour)
	var cmds []*store.Command
	for range 2 {
		c := &store.Command{Root: p.ID, Payload: []byte(`{}`), EnqueuedAt: later}
		if err := e.st.Enqueue(ctx, c); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	if v := inboxGauge(e); v != "2" {
		t.Fatalf("veena_inbox_waiting_commands with two commands queued: %q, want 2", v)
	}
	err := e.st.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.LockTree(ctx, p.ID); err != nil {
			return err
		}
		return tx.FinishCommand(ctx, cmds[0].Seq, []byte(`{}`), time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := inboxGauge(e); v != "1" {
		t.Fatalf("veena_inbox_waiting_commands after one was applied: %q, want 1", v)
	}

	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	if v := inboxGauge(e); v != "" {
		t.Fatalf("veena_inbox_waiting_commands with the store closed: %q, want no gauge", v)
	}
}
