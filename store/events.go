package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/veena-wf/veena/internal/varint"
)

// EventRecord is the events one command fired in one process, encoded as
// one record: the unit in which stores keep the event log (a row each in
// the SQL stores). Encoding happens where the events are made, outside the
// store's writer, and the record is a single byte slice instead of an
// Event per event.
type EventRecord struct {
	Process     string
	First, Last int64  // the sequence numbers of its first and last event
	Data        []byte // the compact encoding, see EventEncoder
}

// EncodeEventRecords encodes events into records, one for each run of
// events of one process (callers pass each process's events together, in
// sequence order).
func EncodeEventRecords(evs []Event) []EventRecord {
	var out []EventRecord
	for start := 0; start < len(evs); {
		end := start + 1
		for end < len(evs) && evs[end].Process == evs[start].Process {
			end++
		}
		var enc EventEncoder
		enc.Begin(nil, evs[start].Process, end-start)
		for _, ev := range evs[start:end] {
			enc.Add(ev.Seq, ev.Type, ev.NodeToken, ev.ArcToken, ev.ArcNames, ev.At.UnixNano())
		}
		out = append(out, enc.Record())
		start = end
	}
	return out
}

// EventEncoder builds the compact record of one process's events, event by
// event, for callers that hold their events in another form than Event.
// The zero value is ready for Begin.
type EventEncoder struct {
	rec         EventRecord
	seq, at     int64
	added, left int
}

// Begin starts a record of count events of process, appending its encoding
// to buf.
func (e *EventEncoder) Begin(buf []byte, process string, count int) {
	*e = EventEncoder{rec: EventRecord{Process: process}, left: count}
	b := append(buf, compactTag)
	e.rec.Data = binary.AppendUvarint(b, uint64(count))
}

// Add appends an event: its sequence number, type, node and arc token (-1
// for none), arc names (nil for none) and time in Unix nanoseconds. It
// panics if Begin announced fewer events.
func (e *EventEncoder) Add(seq int64, typ string, nodeToken, arcToken int, arcNames []string, at int64) {
	if e.left == 0 {
		panic("store: EventEncoder.Add beyond the announced count")
	}
	e.left--
	if e.added == 0 {
		e.rec.First = seq
	}
	e.added++
	e.rec.Last = seq
	b := e.rec.Data
	b = binary.AppendVarint(b, seq-e.seq)
	b = binary.AppendVarint(b, at-e.at)
	e.seq, e.at = seq, at
	if code, ok := eventTypeCodes[typ]; ok {
		b = binary.AppendUvarint(b, code)
	} else {
		b = append(b, 0)
		b = appendString(b, typ)
	}
	b = binary.AppendVarint(b, int64(nodeToken))
	b = binary.AppendVarint(b, int64(arcToken))
	if arcNames == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(arcNames))+1)
		for _, name := range arcNames {
			b = appendString(b, name)
		}
	}
	e.rec.Data = b
}

// Record returns the record; it panics if fewer events were added than
// Begin announced.
func (e *EventEncoder) Record() EventRecord {
	if e.left != 0 {
		panic("store: EventEncoder.Record before every announced event was added")
	}
	return e.rec
}

// The compact event record: the events one command fired in one process,
// as one binary record a fraction of the size of EncodeEvents's JSON
// (an event takes a few bytes instead of some fifty), so that a command
// writes fewer database pages. It starts with compactTag, which no JSON
// record starts with; AppendEventsAfter reads both.
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

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errCompact = errors.New("malformed compact event record")

// AppendEventsAfter decodes the Data of an event record, compact or in the
// JSON form of EncodeEvents (which stores older than the compact form
// wrote), and appends to out its events with Seq > after, until out holds
// limit events (no bound if limit <= 0).
func AppendEventsAfter(out []Event, process string, record []byte, after int64, limit int) ([]Event, error) {
	if len(record) == 0 || record[0] != compactTag {
		return appendJSONEventsAfter(out, process, record, after, limit)
	}
	r := varint.Reader{B: record[1:], Malformed: errCompact}
	count := r.Uvarint()
	if r.Err == nil && count > uint64(len(r.B)) { // an event takes several bytes
		r.Fail()
	}
	var seq, at int64
	for i := uint64(0); i < count && r.Err == nil; i++ {
		if limit > 0 && len(out) >= limit {
			break
		}
		seq += r.Varint()
		at += r.Varint()
		ev := Event{Process: process, Seq: seq}
		switch code := r.Uvarint(); {
		case code == 0:
			ev.Type = r.String()
		case code <= uint64(len(eventTypes)):
			ev.Type = eventTypes[code-1]
		default:
			r.Fail()
		}
		ev.NodeToken = int(r.Varint())
		ev.ArcToken = int(r.Varint())
		if names := r.Uvarint(); names > 0 {
			if names-1 > uint64(len(r.B)) {
				r.Fail()
				break
			}
			ev.ArcNames = make([]string, names-1)
			for j := range ev.ArcNames {
				ev.ArcNames[j] = r.String()
			}
		}
		ev.At = time.Unix(0, at).UTC()
		if r.Err == nil && seq > after {
			out = append(out, ev)
		}
	}
	if r.Err != nil {
		return out, fmt.Errorf("events of %s: %w", process, r.Err)
	}
	return out, nil
}
