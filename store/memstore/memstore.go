// Package memstore is Veena's in-memory store: for tests and embedding,
// gone when the program ends. Updates run one at a time; a failed Update is
// undone.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/veena-wf/veena/store"
)

// Store keeps everything in maps.
type Store struct {
	write sync.Mutex   // one Update at a time
	mu    sync.RWMutex // guards the maps

	defs     []*store.Definition
	procs    map[string]*store.Process
	trees    map[string][]string // root -> member ids in insertion order
	events   map[string][]store.EventRecord
	timers   timerQueue                            // by process and token, in the order claims take them
	leases   map[string]map[int]time.Time          // process -> token -> end of lease
	failures map[string]map[int]store.TimerFailure // process -> token -> last failure
	contexts map[string]map[string]string          // process -> executing context
	byPair   processIndex                          // key\x00value -> executing processes with it
	kept     map[string]map[string]string          // process -> context, executing or not (for listings)
	uniques  map[string]string                     // key\x00value -> process
	uniqueOf map[string][]string                   // process -> unique entries
	keys     map[string]keyRecord
	keyAges  idQueue // the records' keys by creation time, for purging
	inbox    inbox
	work     workRows
	msg      messageRows
	starts   startTimerRows
	closed   bool
	seq      int64
}

// keyRecord is the result of the command that used an idempotency key.
type keyRecord struct {
	result    []byte
	createdAt time.Time
}

// New returns an empty store.
func New() *Store {
	return &Store{
		procs:    map[string]*store.Process{},
		trees:    map[string][]string{},
		events:   map[string][]store.EventRecord{},
		timers:   newTimerQueue(),
		leases:   map[string]map[int]time.Time{},
		failures: map[string]map[int]store.TimerFailure{},
		contexts: map[string]map[string]string{},
		byPair:   processIndex{},
		kept:     map[string]map[string]string{},
		uniques:  map[string]string{},
		uniqueOf: map[string][]string{},
		keys:     map[string]keyRecord{},
	}
}

var _ store.Store = (*Store)(nil)

// errClosed is what a closed store answers.
var errClosed = store.Unavailable("memstore", errors.New("store closed"))

// Migrate does nothing (memory has no schema), and fails after Close.
func (s *Store) Migrate(context.Context, bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Ready fails only after Close.
func (s *Store) Ready(context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Close makes the store refuse every further call.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// AddDefinition stores a definition version.
func (s *Store) AddDefinition(_ context.Context, d *store.Definition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	for _, x := range s.defs {
		if x.Name == d.Name && x.Version == d.Version {
			return fmt.Errorf("definition %s version %d: %w", d.Name, d.Version, store.ErrConflict)
		}
	}
	s.seq++
	d.Seq = s.seq
	c := *d
	s.defs = append(s.defs, &c)
	return nil
}

// Definitions returns the definitions loaded after Seq after.
func (s *Store) Definitions(_ context.Context, after int64) ([]*store.Definition, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []*store.Definition
	for _, d := range s.defs {
		if d.Seq > after {
			c := *d
			out = append(out, &c)
		}
	}
	return out, nil
}

// Update runs fn with the write lock held, undoing its writes if it fails.
func (s *Store) Update(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.write.Lock()
	defer s.write.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return errClosed
	}
	tx := &tx{s: s}
	tx.undo = tx.first[:0]
	if err := fn(ctx, tx); err != nil {
		s.mu.Lock()
		for i := len(tx.undo) - 1; i >= 0; i-- {
			tx.undo[i]()
		}
		s.mu.Unlock()
		return err
	}
	return nil
}

type tx struct {
	s     *Store
	undo  []func()
	first [8]func() // the undo of a command's first writes, without growing undo
}

func (t *tx) Key(_ context.Context, key string) ([]byte, bool, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	r, ok := t.s.keys[key]
	return r.result, ok, nil
}

func (t *tx) PutKey(_ context.Context, key string, result []byte, at time.Time) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.keys[key]
	s.keys[key] = keyRecord{result: slices.Clone(result), createdAt: at}
	s.keyAges.add(idAt{at.UnixNano(), key}, s.keyTrue)
	t.undo = append(t.undo, func() {
		if had {
			s.keys[key] = old
		} else {
			delete(s.keys, key)
		}
	})
	return nil
}

func (t *tx) LockTree(_ context.Context, root string) (int64, error) {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	p, ok := t.s.procs[root]
	if !ok || p.Root != root {
		return 0, fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	}
	return p.TreeVersion, nil
}

func (t *tx) Tree(ctx context.Context, root string) ([]*store.Process, error) {
	return t.s.Tree(ctx, root)
}

func (t *tx) PutProcess(ctx context.Context, p *store.Process) error {
	if p.FirstEvents != nil {
		if err := t.AppendEvents(ctx, []store.EventRecord{*p.FirstEvents}); err != nil {
			return err
		}
	}
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *p
	c.Context = maps.Clone(p.Context)
	c.FirstEvents = nil
	c.Waits = slices.Clone(p.Waits)
	c.WaitNodes = slices.Clone(p.WaitNodes)
	c.StoredWaitNodes = nil
	old, had := s.procs[p.ID]
	s.procs[p.ID] = &c
	if !had {
		s.trees[p.Root] = append(s.trees[p.Root], p.ID)
	}
	t.undo = append(t.undo, func() {
		if had {
			s.procs[p.ID] = old
		} else {
			delete(s.procs, p.ID)
			ids := s.trees[p.Root]
			s.trees[p.Root] = ids[:len(ids)-1]
			if len(s.trees[p.Root]) == 0 {
				delete(s.trees, p.Root)
			}
		}
	})
	return nil
}

func (t *tx) SetTreeVersion(_ context.Context, root string, v int64) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[root]
	if !ok {
		return fmt.Errorf("process %s: %w", root, store.ErrNotFound)
	}
	c := *p
	c.TreeVersion = v
	s.procs[root] = &c
	t.undo = append(t.undo, func() { s.procs[root] = p })
	return nil
}

func (t *tx) AppendEvents(_ context.Context, recs []store.EventRecord) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		l := s.events[r.Process]
		if n := len(l); (n > 0 && l[n-1].Last >= r.First) || r.Last < r.First {
			return fmt.Errorf("events %d..%d of process %s: %w", r.First, r.Last, r.Process, store.ErrConflict)
		}
		r.Data = slices.Clone(r.Data)
		s.events[r.Process] = append(l, r)
		t.undo = append(t.undo, func() {
			l := s.events[r.Process]
			s.events[r.Process] = l[:len(l)-1]
		})
	}
	return nil
}

func (t *tx) ReplaceTimers(_ context.Context, process string, timers []store.Timer) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.timers.timers(process)
	s.timers.set(process, timers)
	// The process's timers are new: their leases and failures go with the
	// old ones (and come back with them if the transaction is undone).
	leased, failed := s.leases[process], s.failures[process]
	delete(s.leases, process)
	delete(s.failures, process)
	t.undo = append(t.undo, func() {
		// The old timers come back with the leases taken since (by a claim
		// made in between) and their own, where those end later.
		s.timers.set(process, old)
		for token, until := range s.leases[process] {
			s.timers.lease(process, token, until)
		}
		for token, until := range leased {
			if cur, ok := s.leases[process][token]; !ok || until.After(cur) {
				s.leaseTimer(process, token, until)
			}
		}
		for token, f := range failed {
			if _, ok := s.failures[process][token]; !ok {
				s.setFailure(f)
			}
		}
	})
	return nil
}

func (t *tx) PutContext(_ context.Context, process string, c map[string]string, unique []string) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var taken []string
	for _, k := range unique {
		v, ok := c[k]
		if !ok {
			continue
		}
		u := k + "\x00" + v
		if other, ok := s.uniques[u]; ok && other != process {
			return fmt.Errorf("context %s=%q is already used by executing process %s: %w", k, v, other, store.ErrConflict)
		}
		taken = append(taken, u)
	}
	oldCtx, hadCtx := s.contexts[process]
	oldKept, hadKept := s.kept[process]
	oldU := s.uniqueOf[process]
	s.setContext(process, maps.Clone(c), true)
	s.kept[process] = maps.Clone(c)
	for _, u := range taken {
		s.uniques[u] = process
	}
	s.uniqueOf[process] = taken
	t.undo = append(t.undo, func() {
		if hadKept {
			s.kept[process] = oldKept
		} else {
			delete(s.kept, process)
		}
		for _, u := range taken {
			delete(s.uniques, u)
		}
		for _, u := range oldU {
			s.uniques[u] = process
		}
		s.uniqueOf[process] = oldU
		s.setContext(process, oldCtx, hadCtx)
	})
	return nil
}

func (t *tx) DropContext(_ context.Context, process string) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	oldCtx, hadCtx := s.contexts[process]
	oldU := s.uniqueOf[process]
	if !hadCtx && len(oldU) == 0 {
		return nil
	}
	s.setContext(process, nil, false)
	delete(s.uniqueOf, process)
	for _, u := range oldU {
		delete(s.uniques, u)
	}
	t.undo = append(t.undo, func() {
		s.setContext(process, oldCtx, hadCtx)
		s.uniqueOf[process] = oldU
		for _, u := range oldU {
			s.uniques[u] = process
		}
	})
	return nil
}

// setContext makes c the executing context of a process (none if !has),
// in the index by pair too; the caller holds mu.
func (s *Store) setContext(process string, c map[string]string, has bool) {
	for k, v := range s.contexts[process] {
		s.byPair.remove(k+"\x00"+v, process)
	}
	if !has {
		delete(s.contexts, process)
		return
	}
	s.contexts[process] = c
	for k, v := range c {
		s.byPair.add(k+"\x00"+v, process)
	}
}

func copyProc(p *store.Process, withSnapshot bool) *store.Process {
	c := *p
	c.Context = maps.Clone(p.Context)
	c.Waits = slices.Clone(p.Waits)
	c.WaitNodes = nil
	if !withSnapshot {
		c.Snapshot = nil
	}
	return &c
}

// Process reads a process row.
func (s *Store) Process(_ context.Context, id string) (*store.Process, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	p, ok := s.procs[id]
	if !ok {
		return nil, fmt.Errorf("process %s: %w", id, store.ErrNotFound)
	}
	return copyProc(p, true), nil
}

// Tree reads the rows of a tree.
func (s *Store) Tree(_ context.Context, root string) ([]*store.Process, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	ids := s.trees[root]
	if len(ids) == 0 {
		return nil, fmt.Errorf("process tree %s: %w", root, store.ErrNotFound)
	}
	out := make([]*store.Process, 0, len(ids))
	for _, id := range ids {
		out = append(out, copyProc(s.procs[id], true))
	}
	return store.OrderTree(out), nil
}

// Processes lists process rows, newest first (or oldest first).
func (s *Store) Processes(_ context.Context, f store.Filter) ([]*store.Process, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []*store.Process
	for _, p := range s.procs {
		if !matches(p, s.kept[p.ID], f) {
			continue
		}
		if f.After != "" && (!f.Oldest && p.ID >= f.After || f.Oldest && p.ID <= f.After) {
			continue
		}
		out = append(out, copyProc(p, false))
	}
	sort.Slice(out, func(i, j int) bool {
		if f.Oldest {
			return out[i].ID < out[j].ID
		}
		return out[i].ID > out[j].ID
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// CountProcesses counts the processes f selects, up to limit.
func (s *Store) CountProcesses(_ context.Context, f store.Filter, limit int) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errClosed
	}
	n := 0
	for _, p := range s.procs {
		if matches(p, s.kept[p.ID], f) {
			n++
			if n == limit {
				break
			}
		}
	}
	return n, nil
}

// matches reports whether a row with its context pairs meets the
// conditions of f (its cursor aside).
func matches(p *store.Process, pairs map[string]string, f store.Filter) bool {
	switch {
	case f.Definition != "" && p.Definition != f.Definition,
		f.Definition != "" && f.Version > 0 && p.Version != f.Version,
		len(f.States) > 0 && !slices.Contains(f.States, p.State),
		f.Parent != "" && (p.Parent != f.Parent || p.ParentToken != f.ParentToken),
		f.IDPrefix != "" && !strings.HasPrefix(p.ID, f.IDPrefix),
		f.Node != "" && !slices.Contains(p.WaitNodes, f.Node),
		f.Stalled && !p.Stalled,
		!f.CreatedFrom.IsZero() && p.CreatedAt.Before(f.CreatedFrom),
		!f.CreatedTo.IsZero() && !p.CreatedAt.Before(f.CreatedTo),
		f.MinID != "" && p.ID < f.MinID,
		f.MaxID != "" && p.ID > f.MaxID,
		f.Unindexed && p.Waits != nil:
		return false
	}
	for k, v := range f.Context {
		if cv, ok := pairs[k]; !ok || cv != v {
			return false
		}
	}
	if f.Search != "" && !strings.HasPrefix(p.ID, f.Search) {
		found := false
		for _, v := range pairs {
			if v == f.Search {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Events returns events of a process after a sequence number.
func (s *Store) Events(_ context.Context, process string, after int64, limit int) ([]store.Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.Event
	for _, r := range s.events[process] {
		if limit > 0 && len(out) >= limit {
			break
		}
		if r.Last <= after {
			continue
		}
		var err error
		if out, err = store.AppendEventsAfter(out, process, r.Data, after, limit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FindByContext finds executing processes by context.
func (s *Store) FindByContext(_ context.Context, match map[string]string, limit int) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	// The processes with the rarest pair asked for are the candidates
	// (every executing process when no pair is asked for).
	var candidates map[string]struct{}
	for k, v := range match {
		ps := s.byPair[k+"\x00"+v]
		if candidates == nil || len(ps) < len(candidates) {
			candidates = ps
		}
		if len(ps) == 0 {
			return nil, nil
		}
	}
	var out []string
	check := func(id string, c map[string]string) {
		for k, v := range match {
			if cv, has := c[k]; !has || cv != v {
				return
			}
		}
		out = append(out, id)
	}
	if len(match) == 0 {
		for id, c := range s.contexts {
			check(id, c)
		}
	} else {
		for id := range candidates {
			check(id, s.contexts[id])
		}
	}
	sort.Strings(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ClaimTimers leases due timers.
func (s *Store) ClaimTimers(_ context.Context, now time.Time, lease time.Duration, limit int) ([]store.Timer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	due := s.timers.take(now, limit)
	for _, t := range due {
		s.leaseTimer(t.Process, t.Token, now.Add(lease))
	}
	return due, nil
}

// FailTimer records a failed firing on a timer still due at f.DueAt.
func (s *Store) FailTimer(_ context.Context, f store.TimerFailure, retryAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if t, ok := s.timers.timer(f.Process, f.Token); ok && t.DueAt.Equal(f.DueAt) {
		f.Attempts = s.failures[f.Process][f.Token].Attempts + 1
		s.setFailure(f)
		s.leaseTimer(f.Process, f.Token, retryAt)
	}
	return nil
}

// leaseTimer leases a process's timer until the given time; the caller
// holds mu.
func (s *Store) leaseTimer(process string, token int, until time.Time) {
	l := s.leases[process]
	if l == nil {
		l = map[int]time.Time{}
		s.leases[process] = l
	}
	l[token] = until
	s.timers.lease(process, token, until)
}

// setFailure records f as its timer's last failure; the caller holds mu.
func (s *Store) setFailure(f store.TimerFailure) {
	fs := s.failures[f.Process]
	if fs == nil {
		fs = map[int]store.TimerFailure{}
		s.failures[f.Process] = fs
	}
	fs[f.Token] = f
}

// TimerFailures returns the failures recorded on timers.
func (s *Store) TimerFailures(_ context.Context, process string, limit int) ([]store.TimerFailure, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	var out []store.TimerFailure
	if process != "" {
		out = slices.Collect(maps.Values(s.failures[process]))
	} else {
		for _, fs := range s.failures {
			for _, f := range fs {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.TimerFailure) int {
		if process != "" {
			return cmp.Compare(a.Token, b.Token)
		}
		return cmp.Or(a.At.Compare(b.At), strings.Compare(a.Process, b.Process), cmp.Compare(a.Token, b.Token))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// NextTimer returns the earliest due time.
func (s *Store) NextTimer(context.Context) (time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return time.Time{}, errClosed
	}
	next := s.timers.next()
	return next, nil
}
