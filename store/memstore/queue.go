package memstore

// idAt is an entry of an idQueue: something named id is due at at (a job
// may be leased, a job's lease runs out, an idempotency record expires).
type idAt struct {
	at int64 // Unix nanoseconds
	id string
}

// idQueue is a min-heap of entries, soonest first, then by id. An entry
// is a hint, not the truth: it is checked against what it names when it
// comes up, and dropped if that has changed since (a job's entries are not
// removed when it changes; it gets new ones). So that the entries of
// things that changed long before their entry's time (a job completed in
// its first second of an hour's lease) do not pile up, add sweeps a queue
// grown to twice its length after its last sweep: the entries still
// true stay, and the queue holds at most about twice as many.
type idQueue struct {
	h     []idAt
	swept int // the entries left by the last sweep
}

// sweepSlack is how many entries a queue takes beyond twice its swept
// length before the next sweep.
const sweepSlack = 64

func (q *idQueue) less(i, j int) bool {
	if q.h[i].at != q.h[j].at {
		return q.h[i].at < q.h[j].at
	}
	return q.h[i].id < q.h[j].id
}

// due reports whether the queue's first entry is at or before at.
func (q *idQueue) due(at int64) bool { return len(q.h) > 0 && q.h[0].at <= at }

// add adds e, first sweeping the queue (isTrue tells the entries still
// true) if it has doubled since its last sweep.
func (q *idQueue) add(e idAt, isTrue func(idAt) bool) {
	if len(q.h) >= 2*q.swept+sweepSlack {
		q.sweep(isTrue)
	}
	q.h = append(q.h, e)
	for i := len(q.h) - 1; i > 0; {
		up := (i - 1) / 2
		if !q.less(i, up) {
			break
		}
		q.h[i], q.h[up] = q.h[up], q.h[i]
		i = up
	}
}

func (q *idQueue) pop() idAt {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = idAt{}
	q.h = q.h[:last]
	q.down(0)
	return top
}

// down moves entry i down to its place.
func (q *idQueue) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.less(l, m) {
			m = l
		}
		if r < len(q.h) && q.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}

// sweep drops the entries that are no longer true and heaps the rest.
func (q *idQueue) sweep(isTrue func(idAt) bool) {
	kept := q.h[:0]
	for _, e := range q.h {
		if isTrue(e) {
			kept = append(kept, e)
		}
	}
	clear(q.h[len(kept):])
	q.h = kept
	for i := len(q.h)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
	q.swept = len(q.h)
}
