package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/veena-wf/veena/store"
)

// testClosed: once closed, a store refuses every call with ErrUnavailable
// at once (it neither answers from what it held, nor waits, nor panics),
// and closing it again does no harm.
func testClosed(t *testing.T, s store.Store) {
	c := ctx(t)
	put(t, s, proc("p", "p", "", 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Ready", func() error { return s.Ready(c) }},
		{"Migrate", func() error { return s.Migrate(c, true) }},
		{"Update", func() error {
			return s.Update(c, func(c context.Context, tx store.Tx) error { return tx.PutProcess(c, proc("q", "q", "", 0)) })
		}},
		{"AddDefinition", func() error {
			return s.AddDefinition(c, &store.Definition{Name: "d", Version: 9, Format: "f", Hash: "h", File: "f", Source: []byte("x"), CreatedAt: t0})
		}},
		{"Definitions", func() error { _, err := s.Definitions(c, 0); return err }},
		{"Process", func() error { _, err := s.Process(c, "p"); return err }},
		{"Tree", func() error { _, err := s.Tree(c, "p"); return err }},
		{"Processes", func() error { _, err := s.Processes(c, store.Filter{}); return err }},
		{"Events", func() error { _, err := s.Events(c, "p", 0, 0); return err }},
		{"FindByContext", func() error { _, err := s.FindByContext(c, map[string]string{"k": "v"}, 10); return err }},
		{"ClaimTimers", func() error { _, err := s.ClaimTimers(c, t0, time.Minute, 10); return err }},
		{"NextTimer", func() error { _, err := s.NextTimer(c); return err }},
		{"Enqueue", func() error { return s.Enqueue(c, &store.Command{Root: "p", Payload: []byte("x"), EnqueuedAt: t0}) }},
		{"Command", func() error { _, err := s.Command(c, 1); return err }},
		{"InboxRoots", func() error { _, err := s.InboxRoots(c, t0, 10); return err }},
		{"WaitingCommands", func() error { _, err := s.WaitingCommands(c); return err }},
		{"PurgeCommands", func() error { _, err := s.PurgeCommands(c, t0); return err }},
		{"PurgeKeys", func() error { _, err := s.PurgeKeys(c, t0); return err }},
	}
	for _, x := range calls {
		answer := make(chan error, 1)
		go func() { answer <- x.call() }()
		select {
		case err := <-answer:
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s after Close: want ErrUnavailable, have %v", x.name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s after Close: no answer", x.name)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
