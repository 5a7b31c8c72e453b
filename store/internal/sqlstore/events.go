package sqlstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/veena-wf/veena/store"
)

// The compact event record: the events one command fired in one process,
// as one binary record a fraction of the size of store.EncodeEvents's JSON
// (an event takes a few bytes instead of some fifty), so that a command
// writes fewer database pages. It starts with compactTag, which no JSON
// record starts with; DecodeEventsAny reads both.
//
// After the tag, a uvarint count, then per event: the sequence number and
// the time (Unix nanoseconds) as signed varints, each the difference from
// the previous event's (from 0 for the first); the type as a uvarint, the
// 1-based index of a name in eventTypes, or 0 followed by the name (uvarint
// length and bytes); the node and the arc token as signed varints; the arc
// names as a uvarint, 0 for none (nil) or 1 plus their number, followed by
// each name (uvarint length and bytes).
const compactTag = 0x01

// eventTypes are the event type names the compact record writes as
// numbers. The list is part of the stored format: only append to it.
var eventTypes = []string{
	"PROCESS_CREATED", "PROCESS_STARTED", "PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED",
	"PROCESS_PENDING_CANCEL", "PROCESS_CANCELED", "NODE_TOKEN_CREATED", "NODE_TOKEN_ACCEPTED",
	"NODE_TOKEN_EXECUTED", "NODE_TOKEN_DISCARDED", "NODE_TOKEN_SKIPPED", "NODE_TOKEN_COMPLETED",
	"NODE_TOKEN_BACKTRACKED", "ARC_TOKEN_CREATED", "ARC_TOKEN_PROCESSED", "ARC_TOKEN_COMPLETED",
	"ARC_TOKEN_BACKTRACKED", "ARC_TOKEN_MERGED", "NODE_TOKEN_DELAYED", "ARC_TOKEN_INCOMPLETE_JOIN",
}

var eventTypeCodes = func() map[string]uint64 {
	m := make(map[string]uint64, len(eventTypes))
	for i, n := range eventTypes {
		m[n] = uint64(i + 1)
	}
	return m
}()

// AppendCompactEvents appends the compact record of evs (events of one
// process) to b.
func AppendCompactEvents(b []byte, evs []store.Event) []byte {
	b = append(b, compactTag)
	b = binary.AppendUvarint(b, uint64(len(evs)))
	var seq, at int64
	for i := range evs {
		ev := &evs[i]
		n := ev.At.UnixNano()
		b = binary.AppendVarint(b, ev.Seq-seq)
		b = binary.AppendVarint(b, n-at)
		seq, at = ev.Seq, n
		if code, ok := eventTypeCodes[ev.Type]; ok {
			b = binary.AppendUvarint(b, code)
		} else {
			b = append(b, 0)
			b = appendString(b, ev.Type)
		}
		b = binary.AppendVarint(b, int64(ev.NodeToken))
		b = binary.AppendVarint(b, int64(ev.ArcToken))
		if ev.ArcNames == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(ev.ArcNames))+1)
			for _, name := range ev.ArcNames {
				b = appendString(b, name)
			}
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errCompact = errors.New("malformed compact event record")

// compactReader reads a compact record.
type compactReader struct {
	b   []byte
	err error
}

func (r *compactReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCompact
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *compactReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCompact
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *compactReader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errCompact
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// AppendEventsAfter decodes an event record, compact or JSON, and appends
// to out its events with Seq > after, until out holds limit events (no
// bound if limit <= 0), as store.AppendEventsAfter.
func AppendEventsAfter(out []store.Event, process string, record []byte, after int64, limit int) ([]store.Event, error) {
	if len(record) == 0 || record[0] != compactTag {
		return store.AppendEventsAfter(out, process, record, after, limit)
	}
	r := compactReader{b: record[1:]}
	count := r.uvarint()
	if r.err == nil && count > uint64(len(r.b)) { // an event takes several bytes
		r.err = errCompact
	}
	var seq, at int64
	for i := uint64(0); i < count && r.err == nil; i++ {
		if limit > 0 && len(out) >= limit {
			break
		}
		seq += r.varint()
		at += r.varint()
		ev := store.Event{Process: process, Seq: seq}
		switch code := r.uvarint(); {
		case code == 0:
			ev.Type = r.string()
		case code <= uint64(len(eventTypes)):
			ev.Type = eventTypes[code-1]
		default:
			r.err = errCompact
		}
		ev.NodeToken = int(r.varint())
		ev.ArcToken = int(r.varint())
		if names := r.uvarint(); names > 0 {
			if names-1 > uint64(len(r.b)) {
				r.err = errCompact
				break
			}
			ev.ArcNames = make([]string, names-1)
			for j := range ev.ArcNames {
				ev.ArcNames[j] = r.string()
			}
		}
		ev.At = time.Unix(0, at).UTC()
		if r.err == nil && seq > after {
			out = append(out, ev)
		}
	}
	if r.err != nil {
		return out, fmt.Errorf("events of %s: %w", process, r.err)
	}
	return out, nil
}

// ScanEvents reads rows of event records (one data column, in seq order)
// into the events of process with Seq > after, at most limit (no bound if
// limit <= 0). Errors of the driver go through wrap, which classifies them
// for the backend; a record that does not decode is returned as it is.
func ScanEvents(rows Rows, process string, after int64, limit int, wrap func(error) error) ([]store.Event, error) {
	var out []store.Event
	for rows.Next() && (limit <= 0 || len(out) < limit) {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, wrap(err)
		}
		var err error
		if out, err = AppendEventsAfter(out, process, data, after, limit); err != nil {
			return nil, err
		}
	}
	return out, wrap(rows.Err())
}
