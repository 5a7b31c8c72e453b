package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/veena-wf/veena/store"
)

// messageRows are the correlations and buffered messages.
type messageRows struct {
	corr map[string][]store.Correlation // by process
	msgs []store.Message                // in Seq order
	seq  int64
}

func (s *Store) Correlations(_ context.Context, kind, name, key string, limit int) ([]store.Correlation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.Correlation
	for _, cs := range s.msg.corr {
		for _, c := range cs {
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
	return n, nil
}

func (t *tx) ReplaceCorrelations(_ context.Context, process string, cs []store.Correlation) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.msg.corr == nil {
		s.msg.corr = map[string][]store.Correlation{}
	}
	old, had := s.msg.corr[process]
	if len(cs) == 0 {
		delete(s.msg.corr, process)
	} else {
		s.msg.corr[process] = slices.Clone(cs)
	}
	t.undo = append(t.undo, func() {
		if had {
			s.msg.corr[process] = old
		} else {
			delete(s.msg.corr, process)
		}
	})
	return nil
}

func (t *tx) BufferMessage(_ context.Context, m *store.Message) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID != "" {
		for _, b := range s.msg.msgs {
			if b.ID == m.ID && b.Name == m.Name && b.Key == m.Key && b.ExpiresAt.After(m.CreatedAt) {
				return store.ErrConflict
			}
		}
	}
	old, oldSeq := s.msg.msgs, s.msg.seq
	s.msg.seq++
	m.Seq = s.msg.seq
	c := *m
	c.Env = slices.Clone(m.Env)
	s.msg.msgs = append(slices.Clone(s.msg.msgs), c)
	t.undo = append(t.undo, func() { s.msg.msgs, s.msg.seq = old, oldSeq })
	return nil
}

func (t *tx) TakeMessage(_ context.Context, name, key string, now time.Time) (*store.Message, error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.msg.msgs {
		if m.Name == name && m.Key == key && m.ExpiresAt.After(now) {
			old := s.msg.msgs
			s.msg.msgs = append(slices.Clone(old[:i]), old[i+1:]...)
			t.undo = append(t.undo, func() { s.msg.msgs = old })
			c := m
			return &c, nil
		}
	}
	return nil, nil
}
