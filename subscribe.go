package veena

import "github.com/veena-wf/veena/store"

// subscriber is one live event stream.
type subscriber struct {
	ch chan Event
}

// subscriberBuffer is how many events a subscriber may fall behind before
// it is dropped.
const subscriberBuffer = 256

// Subscribe streams the events of a process as their commands commit. The
// channel is buffered; a subscriber that falls too far behind is dropped
// (its channel closed) rather than slowing commands down. cancel ends the
// subscription and closes the channel.
func (e *Engine) Subscribe(processID string) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, subscriberBuffer)}
	e.subMu.Lock()
	m := e.subs[processID]
	if m == nil {
		m = map[*subscriber]struct{}{}
		e.subs[processID] = m
	}
	m[s] = struct{}{}
	e.subMu.Unlock()
	cancel := func() {
		e.subMu.Lock()
		defer e.subMu.Unlock()
		e.removeSub(processID, s)
	}
	return s.ch, cancel
}

// removeSub closes s if it is still subscribed; the caller holds subMu.
func (e *Engine) removeSub(processID string, s *subscriber) {
	m := e.subs[processID]
	if _, ok := m[s]; !ok {
		return
	}
	delete(m, s)
	if len(m) == 0 {
		delete(e.subs, processID)
	}
	close(s.ch)
}

// publish hands committed events to their subscribers without blocking.
func (e *Engine) publish(recs []store.EventRecord) {
	if len(recs) == 0 {
		return
	}
	e.subMu.Lock()
	defer e.subMu.Unlock()
	if len(e.subs) == 0 {
		return
	}
	for _, r := range recs {
		if len(e.subs[r.Process]) == 0 {
			continue
		}
		evs, err := store.AppendEventsAfter(nil, r.Process, r.Data, r.First-1, 0)
		if err != nil {
			// The engine encoded the record itself: this is a bug.
			e.log.Error("events not published", "process", r.Process, "error", err)
		}
		for _, sev := range evs {
			ev := apiEvent(sev)
			for s := range e.subs[r.Process] {
				select {
				case s.ch <- ev:
				default:
					e.removeSub(ev.Process, s)
				}
			}
		}
	}
}
