package memstore

import (
	"cmp"
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
	waiters processIndex
	// msgs are the buffered messages by name and key, each list in Seq
	// order; msgAt finds a message's name and key by its Seq.
	msgs  map[string]map[string][]store.Message
	msgAt map[int64][2]string
	seq   int64
	ids   map[string]time.Time // name\x00key\x00id -> until
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
	ms := s.msg.msgs[name][key]
	i, _ := slices.BinarySearchFunc(ms, after+1, bySeq)
	for _, m := range ms[i:] {
		if m.ExpiresAt.After(now) {
			m.Env = slices.Clone(m.Env)
			return &m
		}
	}
	return nil
}

// bySeq orders a list of messages by Seq, for a binary search.
func bySeq(m store.Message, seq int64) int { return cmp.Compare(m.Seq, seq) }

func (s *Store) BufferedMessages(_ context.Context, name string, now time.Time, limit int) ([]store.Message, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.Message
	for _, ms := range s.msg.msgs[name] {
		for _, m := range ms {
			if m.ExpiresAt.After(now) {
				m.Env = slices.Clone(m.Env)
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Message) int { return cmp.Compare(a.Seq, b.Seq) })
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
	n := 0
	for name, byKey := range s.msg.msgs {
		for key, ms := range byKey {
			kept := slices.DeleteFunc(ms, func(m store.Message) bool {
				if m.ExpiresAt.After(now) {
					return false
				}
				delete(s.msg.msgAt, m.Seq)
				n++
				return true
			})
			s.msg.setList(name, key, kept)
		}
	}
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
		m.corr, m.waiters = map[string][]store.Correlation{}, processIndex{}
	}
	for _, c := range m.corr[process] {
		m.waiters.remove(corrKey(c.Kind, c.Name, c.Key), process)
	}
	if len(cs) == 0 {
		delete(m.corr, process)
		return
	}
	m.corr[process] = cs
	for _, c := range cs {
		m.waiters.add(corrKey(c.Kind, c.Name, c.Key), process)
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
	oldSeq := s.msg.seq
	s.msg.seq++
	m.Seq = s.msg.seq
	c := *m
	c.Env = slices.Clone(m.Env)
	s.msg.insert(c)
	t.undo = append(t.undo, func() {
		s.msg.remove(c.Seq)
		s.msg.seq = oldSeq
	})
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
	m, ok := s.msg.remove(seq)
	if !ok {
		return store.ErrStale
	}
	t.undo = append(t.undo, func() { s.msg.insert(m) })
	return nil
}

// insert buffers a message in its place; the caller holds mu.
func (r *messageRows) insert(m store.Message) {
	if r.msgs == nil {
		r.msgs, r.msgAt = map[string]map[string][]store.Message{}, map[int64][2]string{}
	}
	ms := r.msgs[m.Name][m.Key]
	i, _ := slices.BinarySearchFunc(ms, m.Seq, bySeq)
	r.setList(m.Name, m.Key, slices.Insert(ms, i, m))
	r.msgAt[m.Seq] = [2]string{m.Name, m.Key}
}

// remove takes a buffered message out by its Seq and returns it; the
// caller holds mu.
func (r *messageRows) remove(seq int64) (store.Message, bool) {
	at, ok := r.msgAt[seq]
	if !ok {
		return store.Message{}, false
	}
	ms := r.msgs[at[0]][at[1]]
	i, found := slices.BinarySearchFunc(ms, seq, bySeq)
	if !found {
		return store.Message{}, false
	}
	m := ms[i]
	delete(r.msgAt, seq)
	r.setList(at[0], at[1], slices.Delete(ms, i, i+1))
	return m, true
}

// setList makes ms the messages of a name and key, dropping empty lists.
func (r *messageRows) setList(name, key string, ms []store.Message) {
	if len(ms) > 0 {
		if r.msgs[name] == nil {
			r.msgs[name] = map[string][]store.Message{}
		}
		r.msgs[name][key] = ms
		return
	}
	if byKey := r.msgs[name]; byKey != nil {
		if delete(byKey, key); len(byKey) == 0 {
			delete(r.msgs, name)
		}
	}
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
