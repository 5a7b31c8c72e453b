package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/veena-wf/veena/store"
)

// inbox holds the commands queued for process trees, in Seq order, kept
// after they are done until purged; bySeq and waiting find one without
// going through them all.
type inbox struct {
	seq      int64
	commands []*store.Command
	bySeq    map[int64]*store.Command
	waiting  map[string][]*store.Command // by root: those not done, in Seq order
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
	if s.inbox.bySeq == nil {
		s.inbox.bySeq, s.inbox.waiting = map[int64]*store.Command{}, map[string][]*store.Command{}
	}
	s.inbox.bySeq[cp.Seq] = &cp
	s.inbox.waiting[cp.Root] = append(s.inbox.waiting[cp.Root], &cp)
	return nil
}

// Command reads an inbox command.
func (s *Store) Command(_ context.Context, seq int64) (*store.Command, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	if c := s.inbox.bySeq[seq]; c != nil {
		cp := *c
		return &cp, nil
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
	// The trees in the order of their oldest such command.
	var first []*store.Command
	for _, cs := range s.inbox.waiting {
		for _, c := range cs {
			if !c.EnqueuedAt.After(before) {
				first = append(first, c)
				break
			}
		}
	}
	slices.SortFunc(first, func(a, b *store.Command) int { return cmp.Compare(a.Seq, b.Seq) })
	if limit > 0 && len(first) > limit {
		first = first[:limit]
	}
	var out []string
	for _, c := range first {
		out = append(out, c.Root)
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
		if c.Done && c.DoneAt.Before(before) {
			delete(s.inbox.bySeq, c.Seq)
			return true
		}
		return false
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
	for _, cs := range s.inbox.waiting {
		n += len(cs)
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
	n := 0
	for s.keyAges.due(before.UnixNano() - 1) {
		k := s.keyAges.pop()
		if s.keyTrue(k) {
			delete(s.keys, k.id)
			n++
		}
	}
	return n, nil
}

// keyTrue reports whether an entry of keyAges is still true: its record is
// there, written at the entry's time (not written again since, or undone).
func (s *Store) keyTrue(k idAt) bool {
	r, ok := s.keys[k.id]
	return ok && r.createdAt.UnixNano() == k.at
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
	if cs := t.s.inbox.waiting[root]; len(cs) > 0 {
		cp := *cs[0]
		return &cp, nil
	}
	return nil, nil
}

func (t *tx) FinishCommand(_ context.Context, seq int64, outcome []byte, at time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.inbox.bySeq[seq]
	if c == nil {
		return fmt.Errorf("command %d: %w", seq, store.ErrNotFound)
	}
	if c.Done {
		return fmt.Errorf("command %d is already done: %w", seq, store.ErrConflict)
	}
	c.Done, c.Outcome, c.DoneAt = true, slices.Clone(outcome), at
	s.inbox.setWaiting(c, false)
	t.undo = append(t.undo, func() {
		c.Done, c.Outcome, c.DoneAt = false, nil, time.Time{}
		s.inbox.setWaiting(c, true)
	})
	return nil
}

// setWaiting puts c among its tree's waiting commands, in Seq order, or
// takes it out.
func (b *inbox) setWaiting(c *store.Command, waiting bool) {
	cs := b.waiting[c.Root]
	i, found := slices.BinarySearchFunc(cs, c.Seq, func(x *store.Command, seq int64) int { return cmp.Compare(x.Seq, seq) })
	switch {
	case waiting && !found:
		b.waiting[c.Root] = slices.Insert(cs, i, c)
	case !waiting && found:
		if cs = slices.Delete(cs, i, i+1); len(cs) == 0 {
			delete(b.waiting, c.Root)
		} else {
			b.waiting[c.Root] = cs
		}
	}
}
