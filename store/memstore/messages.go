package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/veena-wf/veena/store"
)

// messageRows are the correlations, buffered messages and message ids.
type messageRows struct {
	corr map[string][]store.Correlation // by process
	// waiters are the processes with a correlation, by what finds it
	// (corrKey): a message's name and key, a signal's name.
	waiters map[string]map[string]struct{}
	msgs    []store.Message // in Seq order
	seq     int64
	ids     map[string]time.Time // name\x00key\x00id -> until
}

func (s *Store) Correlations(_ context.Context, kind, name, key string, limit int) ([]store.Correlation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.Correlation
	for process := range s.msg.waiters[corrKey(kind, name, key)] {
		for _, c := range s.msg.corr[process] {
			if c.Kind == kind && c.Name == name && (kind == "signal" || c.Key == key) {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Process != out[j].Process {
			return out[i].Process < out[j].Process
		}
		return out[i].Token < out[j].Token
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *Store) OldestMessage(_ context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	return s.oldestMessage(name, key, now, after), nil
}

// oldestMessage finds a message; the caller holds mu.
func (s *Store) oldestMessage(name, key string, now time.Time, after int64) *store.Message {
	for _, m := range s.msg.msgs {
		if m.Seq > after && m.Name == name && m.Key == key && m.ExpiresAt.After(now) {
			c := m
			c.Env = slices.Clone(m.Env)
			return &c
		}
	}
	return nil
}

func (s *Store) BufferedMessages(_ context.Context, name string, now time.Time, limit int) ([]store.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.Message
	for _, m := range s.msg.msgs {
		if limit > 0 && len(out) >= limit {
			break
		}
		if m.Name == name && m.ExpiresAt.After(now) {
			c := m
			c.Env = slices.Clone(m.Env)
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *Store) PurgeMessages(_ context.Context, now time.Time) (int, error) {
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	kept := s.msg.msgs[:0]
	n := 0
	for _, m := range s.msg.msgs {
		if m.ExpiresAt.After(now) {
			kept = append(kept, m)
		} else {
			n++
		}
	}
	s.msg.msgs = kept
	for k, until := range s.msg.ids {
		if !until.After(now) {
			delete(s.msg.ids, k)
		}
	}
	return n, nil
}

func (t *tx) ReplaceCorrelations(_ context.Context, process string, cs []store.Correlation) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.msg.corr[process]
	s.msg.setCorrelations(process, slices.Clone(cs))
	t.undo = append(t.undo, func() { s.msg.setCorrelations(process, old) })
	return nil
}

// setCorrelations makes cs the correlations of a process, in the index
// too; the caller holds mu.
func (m *messageRows) setCorrelations(process string, cs []store.Correlation) {
	if m.corr == nil {
		m.corr, m.waiters = map[string][]store.Correlation{}, map[string]map[string]struct{}{}
	}
	for _, c := range m.corr[process] {
		k := corrKey(c.Kind, c.Name, c.Key)
		if ps := m.waiters[k]; ps != nil {
			if delete(ps, process); len(ps) == 0 {
				delete(m.waiters, k)
			}
		}
	}
	if len(cs) == 0 {
		delete(m.corr, process)
		return
	}
	m.corr[process] = cs
	for _, c := range cs {
		k := corrKey(c.Kind, c.Name, c.Key)
		ps := m.waiters[k]
		if ps == nil {
			ps = map[string]struct{}{}
			m.waiters[k] = ps
		}
		ps[process] = struct{}{}
	}
}

// corrKey is what finds a correlation: a signal by its name, anything
// else by its name and key.
func corrKey(kind, name, key string) string {
	if kind == "signal" {
		key = ""
	}
	return kind + "\x00" + name + "\x00" + key
}

// Waiting needs no lock of its own: Updates run one at a time.
func (t *tx) Waiting(_ context.Context, name, key string) (bool, error) {
	s := t.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.msg.waiters[corrKey("message", name, key)]) > 0, nil
}

func (t *tx) BufferMessage(_ context.Context, m *store.Message) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	old, oldSeq := s.msg.msgs, s.msg.seq
	s.msg.seq++
	m.Seq = s.msg.seq
	c := *m
	c.Env = slices.Clone(m.Env)
	s.msg.msgs = append(slices.Clone(s.msg.msgs), c)
	t.undo = append(t.undo, func() { s.msg.msgs, s.msg.seq = old, oldSeq })
	return nil
}

func (t *tx) OldestMessage(_ context.Context, name, key string, now time.Time, after int64) (*store.Message, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return t.s.oldestMessage(name, key, now, after), nil
}

func (t *tx) DeleteMessage(_ context.Context, name, key string, seq int64) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.msg.msgs {
		if m.Seq == seq {
			old := s.msg.msgs
			s.msg.msgs = append(slices.Clone(old[:i]), old[i+1:]...)
			t.undo = append(t.undo, func() { s.msg.msgs = old })
			return nil
		}
	}
	return store.ErrStale
}

func (t *tx) RememberMessageID(_ context.Context, name, key, id string, now, until time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	k := name + "\x00" + key + "\x00" + id
	old, had := s.msg.ids[k]
	if had && old.After(now) {
		return store.ErrConflict
	}
	if s.msg.ids == nil {
		s.msg.ids = map[string]time.Time{}
	}
	s.msg.ids[k] = until
	t.undo = append(t.undo, func() {
		if had {
			s.msg.ids[k] = old
		} else {
			delete(s.msg.ids, k)
		}
	})
	return nil
}
