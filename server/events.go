package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	veena "github.com/veena-wf/veena"
)

// Event listing limits: without ?limit= every event after ?after= is
// returned (read from the engine in batches).
const (
	eventBatch    = 1000
	MaxEventLimit = 10000
)

// streamWriteTimeout bounds each write to an event stream; a client that
// does not read for this long is dropped.
const streamWriteTimeout = 30 * time.Second

// wantsStream reports whether the request accepts text/event-stream.
func wantsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mediaType(part) == "text/event-stream" {
			return true
		}
	}
	return false
}

// getEvents answers the events of a process after ?after=, as a JSON list
// or, when the client accepts text/event-stream, as a live stream.
func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after int64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			badRequest(w, "after %q: want the sequence number of the last event seen", a)
			return
		}
		after = n
	}
	if wantsStream(r) {
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil || n < 0 {
				badRequest(w, "Last-Event-ID %q: want an event sequence number", id)
				return
			}
			if n > after {
				after = n
			}
		}
		s.streamEvents(w, r, after)
		return
	}
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxEventLimit {
			badRequest(w, "limit %q: want a whole number from 1 to %d", l, MaxEventLimit)
			return
		}
		limit = n
	}
	// The process must exist even when it has no events after ?after=.
	if _, err := s.cfg.Engine.Process(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	if limit > 0 {
		// A page: one event more than asked tells whether another follows;
		// its cursor goes in a Link header (the answer stays the list of
		// events the API has always given).
		evs, err := s.cfg.Engine.Events(r.Context(), id, after, limit+1)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(evs) > limit {
			evs = evs[:limit]
			next := evs[len(evs)-1].Seq
			w.Header().Set("Link", fmt.Sprintf(`<%s?after=%d&limit=%d>; rel="next"`, r.URL.Path, next, limit))
			w.Header().Set("Veena-Next", strconv.FormatInt(next, 10))
		}
		if evs == nil {
			evs = []veena.Event{}
		}
		writeJSON(w, http.StatusOK, evs)
		return
	}
	// Every event: read and written in batches, so that a process with a
	// long history is never held whole in memory.
	evs, err := s.cfg.Engine.Events(r.Context(), id, after, eventBatch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteByte('[')
	n := 0
	for {
		for _, ev := range evs {
			if n > 0 {
				bw.WriteByte(',')
			}
			b, err := json.Marshal(ev)
			if err != nil {
				s.log.Error("writing events failed", "path", r.URL.Path, "err", err)
				panic(http.ErrAbortHandler)
			}
			bw.Write(b)
			n++
		}
		if len(evs) < eventBatch {
			break
		}
		after = evs[len(evs)-1].Seq
		if evs, err = s.cfg.Engine.Events(r.Context(), id, after, eventBatch); err != nil {
			// The answer is under way: break it off rather than end it as
			// if whole.
			s.log.Error("reading events failed", "path", r.URL.Path, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	bw.WriteString("]\n")
	_ = bw.Flush()
}

// streamEvents answers a server-sent event stream: the events after `after`
// first, then live ones as they fire, each as "id: <seq>" and "data: <Event
// JSON>"; a comment line keeps idle connections open.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, after int64) {
	id := r.PathValue("id")
	if _, err := s.cfg.Engine.Process(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	// Subscribe before reading the past, so nothing falls between the two.
	live, unsubscribe := s.cfg.Engine.Subscribe(id)
	defer unsubscribe()

	if sw, ok := w.(*statusWriter); ok {
		sw.stream = true
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	rc := http.NewResponseController(w)
	extend := func() error { return rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) }
	_ = extend()
	// The server's read timeout would end the stream; the request has no
	// body to read.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: 2000\n: veena events of process %s\n\n", id); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}

	last := after
	send := func(ev veena.Event) error {
		if ev.Seq <= last {
			return nil
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := extend(); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, b); err != nil {
			return err
		}
		last = ev.Seq
		return nil
	}
	// deliver sends a live event, first reading from the store any events
	// missed between the past and the live ones.
	deliver := func(ev veena.Event) error {
		if ev.Seq > last+1 {
			missed, err := s.cfg.Engine.Events(r.Context(), id, last, int(ev.Seq-last-1))
			if err != nil {
				return err
			}
			for _, m := range missed {
				if err := send(m); err != nil {
					return err
				}
			}
		}
		return send(ev)
	}
	for {
		evs, err := s.cfg.Engine.Events(r.Context(), id, last, eventBatch)
		if err != nil {
			// As for every other answer, internal details go to the log
			// only.
			p := problemFor(err)
			if p.Status >= 500 {
				s.log.Error("event stream failed", "process", id, "code", p.Code, "err", err)
			}
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(p.Detail))
			_ = rc.Flush()
			return
		}
		for _, ev := range evs {
			if send(ev) != nil {
				return
			}
		}
		if rc.Flush() != nil || len(evs) < eventBatch {
			break
		}
	}

	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case ev, ok := <-live:
			if !ok {
				// The engine dropped the subscription (the client fell
				// behind); the client reconnects with Last-Event-ID.
				return
			}
			if deliver(ev) != nil {
				return
			}
			// Write everything already waiting before flushing.
			for drained := false; !drained; {
				select {
				case ev, ok := <-live:
					if !ok {
						_ = rc.Flush()
						return
					}
					if deliver(ev) != nil {
						return
					}
				default:
					drained = true
				}
			}
			if rc.Flush() != nil {
				return
			}
		case <-tick.C:
			if extend() != nil {
				return
			}
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
