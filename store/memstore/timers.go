package memstore

import (
	"cmp"
	"strings"
	"time"

	"github.com/veena-wf/veena/store"
)

// timerQueue orders the store's timers so that a poll of the engine's
// timer loop (a claim, then the next due time) costs the timers it hands
// out, not the timers that wait. Every timer has one entry, found by its
// process and token, in two heaps: byDue, every timer by due time (the
// next due time is its top), and either waiting, the timers that cannot
// be claimed yet by when they can (their due time, or their lease's end
// if later), or ready, the claimable ones in the order claims take them.
// The store's mutex guards it.
type timerQueue struct {
	entries map[string]map[int]*timerEntry // process -> token
	byDue   entryHeap
	waiting entryHeap
	ready   entryHeap
}

type timerEntry struct {
	t   store.Timer
	at  time.Time // when it can next be claimed: its due time, or its lease's end
	pos [3]int    // its index in byDue, waiting, ready; -1 where it is not
}

// The heaps an entry can be in, as indexes of timerEntry.pos.
const (
	inByDue = iota
	inWaiting
	inReady
)

func newTimerQueue() timerQueue {
	return timerQueue{
		entries: map[string]map[int]*timerEntry{},
		byDue: entryHeap{slot: inByDue, less: func(a, b *timerEntry) bool {
			return a.t.DueAt.Before(b.t.DueAt)
		}},
		waiting: entryHeap{slot: inWaiting, less: func(a, b *timerEntry) bool {
			return a.at.Before(b.at)
		}},
		ready: entryHeap{slot: inReady, less: func(a, b *timerEntry) bool {
			return cmp.Or(a.t.DueAt.Compare(b.t.DueAt), strings.Compare(a.t.Process, b.t.Process), cmp.Compare(a.t.Token, b.t.Token)) < 0
		}},
	}
}

// set makes timers the process's timers, none leased.
func (q *timerQueue) set(process string, timers []store.Timer) {
	for _, x := range q.entries[process] {
		q.byDue.remove(x)
		q.waiting.remove(x)
		q.ready.remove(x)
	}
	if len(timers) == 0 {
		delete(q.entries, process)
		return
	}
	m := make(map[int]*timerEntry, len(timers))
	for _, t := range timers {
		if old := m[t.Token]; old != nil { // a token's last timer counts, as a row keyed by token would
			q.byDue.remove(old)
			q.waiting.remove(old)
		}
		x := &timerEntry{t: t, at: t.DueAt, pos: [3]int{-1, -1, -1}}
		m[t.Token] = x
		q.byDue.push(x)
		q.waiting.push(x)
	}
	q.entries[process] = m
}

// lease keeps a process's timer from claims until the given time.
func (q *timerQueue) lease(process string, token int, until time.Time) {
	x := q.entries[process][token]
	if x == nil {
		return
	}
	x.at = x.t.DueAt
	if until.After(x.at) {
		x.at = until
	}
	q.ready.remove(x)
	if x.pos[inWaiting] >= 0 {
		q.waiting.fix(x)
	} else {
		q.waiting.push(x)
	}
}

// take moves the timers claimable at now to ready and takes up to limit
// of them (all if limit <= 0) out of it, earliest due first, for the
// caller to lease.
func (q *timerQueue) take(now time.Time, limit int) []store.Timer {
	for len(q.waiting.xs) > 0 && !q.waiting.xs[0].at.After(now) {
		x := q.waiting.xs[0]
		q.waiting.remove(x)
		q.ready.push(x)
	}
	n := len(q.ready.xs)
	if limit > 0 && limit < n {
		n = limit
	}
	var out []store.Timer
	for range n {
		x := q.ready.xs[0]
		q.ready.remove(x)
		out = append(out, x.t)
	}
	return out
}

// timers lists a process's timers.
func (q *timerQueue) timers(process string) []store.Timer {
	var out []store.Timer
	for _, x := range q.entries[process] {
		out = append(out, x.t)
	}
	return out
}

// timer is a process's timer for a token, if it has one.
func (q *timerQueue) timer(process string, token int) (store.Timer, bool) {
	if x := q.entries[process][token]; x != nil {
		return x.t, true
	}
	return store.Timer{}, false
}

// next is the earliest due time of any timer, zero if there is none.
func (q *timerQueue) next() time.Time {
	if len(q.byDue.xs) == 0 {
		return time.Time{}
	}
	return q.byDue.xs[0].t.DueAt
}

// entryHeap is a binary heap of timer entries that keeps each entry's
// index in it, so that an entry can be removed or moved from anywhere.
type entryHeap struct {
	xs   []*timerEntry
	slot int // which of an entry's positions is this heap's
	less func(a, b *timerEntry) bool
}

func (h *entryHeap) push(x *timerEntry) {
	x.pos[h.slot] = len(h.xs)
	h.xs = append(h.xs, x)
	h.up(len(h.xs) - 1)
}

// remove takes x out of the heap if it is in it.
func (h *entryHeap) remove(x *timerEntry) {
	i := x.pos[h.slot]
	if i < 0 {
		return
	}
	last := len(h.xs) - 1
	if i != last {
		h.swap(i, last)
	}
	h.xs[last] = nil
	h.xs = h.xs[:last]
	x.pos[h.slot] = -1
	if i != last {
		h.fixAt(i)
	}
}

// fix restores the order after x's key changed.
func (h *entryHeap) fix(x *timerEntry) { h.fixAt(x.pos[h.slot]) }

func (h *entryHeap) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *entryHeap) swap(i, j int) {
	h.xs[i], h.xs[j] = h.xs[j], h.xs[i]
	h.xs[i].pos[h.slot], h.xs[j].pos[h.slot] = i, j
}

func (h *entryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.xs[i], h.xs[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves the entry at i down to its place and reports whether it moved.
func (h *entryHeap) down(i int) bool {
	start, n := i, len(h.xs)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(h.xs[r], h.xs[c]) {
			c = r
		}
		if !h.less(h.xs[c], h.xs[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
