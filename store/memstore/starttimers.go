package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/veena-wf/veena/store"
)

// startTimerRows are the start timers of definitions.
type startTimerRows struct {
	timers   map[string][]store.StartTimer // by definition, by node
	versions map[string]int                // the version armed, by definition
	leases   map[string]time.Time          // definition\x00node -> lease end
}

func (s *Store) StartTimers(_ context.Context, definition string) ([]store.StartTimer, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.StartTimer
	for d, ts := range s.starts.timers {
		if definition == "" || d == definition {
			out = append(out, ts...)
		}
	}
	slices.SortFunc(out, func(a, b store.StartTimer) int {
		return cmp.Or(strings.Compare(a.Definition, b.Definition), strings.Compare(a.Node, b.Node))
	})
	return out, nil
}

func (s *Store) ClaimStartTimers(_ context.Context, now time.Time, lease time.Duration, limit int) ([]store.StartTimer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	var due []store.StartTimer
	for _, ts := range s.starts.timers {
		for _, t := range ts {
			if t.DueAt.IsZero() || t.DueAt.After(now) {
				continue
			}
			if until, ok := s.starts.leases[t.Definition+"\x00"+t.Node]; ok && until.After(now) {
				continue
			}
			due = append(due, t)
		}
	}
	slices.SortFunc(due, func(a, b store.StartTimer) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), strings.Compare(a.Definition, b.Definition), strings.Compare(a.Node, b.Node))
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	if s.starts.leases == nil {
		s.starts.leases = map[string]time.Time{}
	}
	for _, t := range due {
		s.starts.leases[t.Definition+"\x00"+t.Node] = now.Add(lease)
	}
	return due, nil
}

func (s *Store) NextStartTimer(_ context.Context) (time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return time.Time{}, errClosed
	}
	var next time.Time
	for _, ts := range s.starts.timers {
		for _, t := range ts {
			if !t.DueAt.IsZero() && (next.IsZero() || t.DueAt.Before(next)) {
				next = t.DueAt
			}
		}
	}
	return next, nil
}

func (t *tx) ArmStartTimers(_ context.Context, definition string, version int, timers []store.StartTimer) (bool, error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.starts.versions[definition]; ok && v >= version {
		return false, nil
	}
	if s.starts.timers == nil {
		s.starts.timers = map[string][]store.StartTimer{}
		s.starts.versions = map[string]int{}
	}
	oldTimers, hadTimers := s.starts.timers[definition]
	oldVersion, hadVersion := s.starts.versions[definition]
	s.starts.versions[definition] = version
	rows := make([]store.StartTimer, len(timers))
	for i, x := range timers {
		x.Definition, x.Version = definition, version
		rows[i] = x
	}
	slices.SortFunc(rows, func(a, b store.StartTimer) int { return strings.Compare(a.Node, b.Node) })
	if len(rows) == 0 {
		delete(s.starts.timers, definition)
	} else {
		s.starts.timers[definition] = rows
	}
	t.undo = append(t.undo, func() {
		if hadTimers {
			s.starts.timers[definition] = oldTimers
		} else {
			delete(s.starts.timers, definition)
		}
		if hadVersion {
			s.starts.versions[definition] = oldVersion
		} else {
			delete(s.starts.versions, definition)
		}
	})
	return true, nil
}

func (t *tx) FireStartTimer(_ context.Context, x store.StartTimer, next time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.starts.timers[x.Definition]
	for i, r := range ts {
		if r.Node != x.Node {
			continue
		}
		if r.Version != x.Version || r.DueAt.IsZero() || !r.DueAt.Equal(x.DueAt) {
			break
		}
		old := ts
		ts = slices.Clone(ts)
		ts[i].DueAt, ts[i].Fired = next, r.Fired+1
		s.starts.timers[x.Definition] = ts
		key := x.Definition + "\x00" + x.Node
		lease, leased := s.starts.leases[key]
		delete(s.starts.leases, key)
		t.undo = append(t.undo, func() {
			s.starts.timers[x.Definition] = old
			if leased {
				s.starts.leases[key] = lease
			}
		})
		return nil
	}
	return store.ErrStale
}
