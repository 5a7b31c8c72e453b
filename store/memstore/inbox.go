package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/veena-wf/veena/store"
)

// inbox holds the commands queued for process trees, in Seq order.
type inbox struct {
	seq      int64
	commands []*store.Command
}

// Enqueue appends a command to its tree's inbox.
func (s *Store) Enqueue(_ context.Context, c *store.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if p, ok := s.procs[c.Root]; !ok || p.Root != c.Root {
		return fmt.Errorf("process %s: %w", c.Root, store.ErrNotFound)
	}
	s.inbox.seq++
	c.Seq = s.inbox.seq
	cp := *c
	cp.Payload = slices.Clone(c.Payload)
	s.inbox.commands = append(s.inbox.commands, &cp)
	return nil
}

// Command reads an inbox command.
func (s *Store) Command(_ context.Context, seq int64) (*store.Command, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	for _, c := range s.inbox.commands {
		if c.Seq == seq {
			cp := *c
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("command %d: %w", seq, store.ErrNotFound)
}

// InboxRoots returns trees with commands waiting since before.
func (s *Store) InboxRoots(_ context.Context, before time.Time, limit int) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []string
	for _, c := range s.inbox.commands {
		if !c.Done && !c.EnqueuedAt.After(before) && !slices.Contains(out, c.Root) {
			out = append(out, c.Root)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// PurgeCommands deletes done commands finished before before.
func (s *Store) PurgeCommands(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	n := len(s.inbox.commands)
	s.inbox.commands = slices.DeleteFunc(s.inbox.commands, func(c *store.Command) bool {
		return c.Done && c.DoneAt.Before(before)
	})
	return n - len(s.inbox.commands), nil
}

// WaitingCommands counts the commands not done.
func (s *Store) WaitingCommands(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errClosed
	}
	n := 0
	for _, c := range s.inbox.commands {
		if !c.Done {
			n++
		}
	}
	return n, nil
}

// PurgeKeys deletes the idempotency records created before before.
func (s *Store) PurgeKeys(_ context.Context, before time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	n := len(s.keys)
	maps.DeleteFunc(s.keys, func(_ string, r keyRecord) bool { return r.createdAt.Before(before) })
	return n - len(s.keys), nil
}

func (t *tx) TryLockTree(ctx context.Context, root string) (int64, error) {
	v, err := t.LockTree(ctx, root)
	if err != nil {
		return 0, err
	}
	if c, _ := t.NextCommand(ctx, root); c != nil {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrBusy)
	}
	return v, nil
}

func (t *tx) ExpectTree(ctx context.Context, root string, version int64) error {
	v, err := t.TryLockTree(ctx, root)
	if err != nil {
		return err
	}
	return store.CheckVersion(root, v, version)
}

func (t *tx) NextCommand(_ context.Context, root string) (*store.Command, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	for _, c := range t.s.inbox.commands {
		if c.Root == root && !c.Done {
			cp := *c
			return &cp, nil
		}
	}
	return nil, nil
}

func (t *tx) FinishCommand(_ context.Context, seq int64, outcome []byte, at time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.inbox.commands {
		if c.Seq == seq {
			if c.Done {
				return fmt.Errorf("command %d is already done: %w", seq, store.ErrConflict)
			}
			c.Done, c.Outcome, c.DoneAt = true, slices.Clone(outcome), at
			t.undo = append(t.undo, func() { c.Done, c.Outcome, c.DoneAt = false, nil, time.Time{} })
			return nil
		}
	}
	return fmt.Errorf("command %d: %w", seq, store.ErrNotFound)
}
