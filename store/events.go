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
	b := append(buf, compactTag2)
	e.rec.Data = binary.AppendUvarint(b, uint64(count))
}

// Add appends an event: its sequence number, type, node and arc token (-1
// for none), arc names (nil for none) and time in Unix nanoseconds. It
// panics if Begin announced fewer events.
func (e *EventEncoder) Add(seq int64, typ string, nodeToken, arcToken int, arcNames []string, at int64) {
	e.AddCoded(seq, typ, TypeCode(typ), nodeToken, arcToken, arcNames, at)
}

// TypeCode is the number the compact record writes for the event type
// named typ, 0 if it writes the name. Callers that add many events of a few
// types look it up once per type and call AddCoded.
func TypeCode(typ string) uint64 {
	return eventTypeCodes[typ]
}

// AddCoded is Add for an event whose type's TypeCode the caller has: code
// must be TypeCode(typ).
func (e *EventEncoder) AddCoded(seq int64, typ string, code uint64, nodeToken, arcToken int, arcNames []string, at int64) {
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
	headAt := len(b)
	b = append(b, 0) // the head, set below
	var head byte
	if d := seq - e.seq; d == 1 {
		head |= headNextSeq
	} else {
		b = binary.AppendVarint(b, d)
	}
	if d := at - e.at; d == 0 {
		head |= headSameTime
	} else {
		b = binary.AppendVarint(b, d)
	}
	e.seq, e.at = seq, at
	switch {
	case code == 0:
		b = appendString(b, typ)
	case code < headType:
		head |= byte(code)
	default:
		head |= headType
		b = binary.AppendUvarint(b, code)
	}
	b = binary.AppendVarint(b, int64(nodeToken))
	b = binary.AppendVarint(b, int64(arcToken))
	if arcNames != nil {
		head |= headArcNames
		b = binary.AppendUvarint(b, uint64(len(arcNames)))
		for _, name := range arcNames {
			b = appendString(b, name)
		}
	}
	b[headAt] = head
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
// (an event takes three bytes or so instead of some fifty), so that a
// command writes fewer database pages. It starts with a tag, which no JSON
// record starts with; AppendEventsAfter reads every form.
//
// EventEncoder writes the second form, compactTag2. After the tag comes a
// uvarint count, then per event a head byte and what the head does not
// say:
//
//   - the sequence number, as a signed varint difference from the previous
//     event's (from 0 for the first), unless the head has headNextSeq;
//   - the time (Unix nanoseconds), likewise a difference, unless the head
//     has headSameTime;
//   - the type's name (uvarint length and bytes) if the head's type bits
//     are 0; the type's 1-based index in eventTypes as a uvarint if they
//     are all set (headType); otherwise they are that index;
//   - the node and the arc token, as signed varints (-1 for none);
//   - if the head has headArcNames, the number of arc names (uvarint) and
//     each name (uvarint length and bytes); without it the names are nil.
//
// The first form, compactTag, which Veena wrote until schema version 5
// (SQLite; 6 on PostgreSQL), has no head: per event it has the sequence and
// time differences; the type as a uvarint index, or 0 and the name; the two
// tokens; and the arc names as a uvarint, 0 for nil or 1 plus their number,
// followed by the names.
const (
	compactTag  = 0x01
	compactTag2 = 0x02
)

// The bits of an event's head byte in a compactTag2 record.
const (
	headType     = 0x1f // the type's index in eventTypes; 0: its name follows; 0x1f: the index follows
	headNextSeq  = 0x20 // the sequence number is the previous one's plus one
	headSameTime = 0x40 // the time is the previous event's
	headArcNames = 0x80 // arc names follow
)

// eventTypes are the event type names the compact record writes as
// numbers. The list is part of the stored format: only append to it.
var eventTypes = []string{
	"PROCESS_CREATED", "PROCESS_STARTED", "PROCESS_PENDING_COMPLETE", "PROCESS_COMPLETED",
	"PROCESS_PENDING_CANCEL", "PROCESS_CANCELED", "NODE_TOKEN_CREATED", "NODE_TOKEN_ACCEPTED",
	"NODE_TOKEN_EXECUTED", "NODE_TOKEN_DISCARDED", "NODE_TOKEN_SKIPPED", "NODE_TOKEN_COMPLETED",
	"NODE_TOKEN_BACKTRACKED", "ARC_TOKEN_CREATED", "ARC_TOKEN_PROCESSED", "ARC_TOKEN_COMPLETED",
	"ARC_TOKEN_BACKTRACKED", "ARC_TOKEN_MERGED", "NODE_TOKEN_DELAYED", "ARC_TOKEN_INCOMPLETE_JOIN",
	// The work layer's (from schema 8 on SQLite, 9 on PostgreSQL).
	"TASK_CREATED", "TASK_CLAIMED", "TASK_RELEASED", "TASK_SAVED", "TASK_COMPLETED", "JOB_CREATED",
	"JOB_COMPLETED", "JOB_FAILED", "JOB_ERROR_THROWN", "INCIDENT_OPENED", "INCIDENT_RESOLVED", "ENV_CHANGED",
	"ATTACHMENT_SET",
	// Schemas' (append only: a type's code is its position).
	"ACTION_COMPLETED",
	// Petri nets'.
	"TRANSITION_FIRED", "EVENT_IGNORED",
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

// AppendEventsAfter decodes the Data of an event record, compact (either
// form) or in the JSON form of EncodeEvents (which stores older than the
// compact form wrote), and appends to out its events with Seq > after,
// until out holds limit events (no bound if limit <= 0).
func AppendEventsAfter(out []Event, process string, record []byte, after int64, limit int) ([]Event, error) {
	if len(record) == 0 || (record[0] != compactTag && record[0] != compactTag2) {
		return appendJSONEventsAfter(out, process, record, after, limit)
	}
	r := varint.Reader{B: record[1:], Malformed: errCompact}
	count := r.Count() // an event takes at least one byte
	read := readEventV2
	if record[0] == compactTag {
		read = readEventV1
	}
	var prev cursor
	for i := 0; i < count && r.Err == nil; i++ {
		if limit > 0 && len(out) >= limit {
			break
		}
		ev := read(&r, &prev)
		if r.Err == nil && ev.Seq > after {
			ev.Process = process
			out = append(out, ev)
		}
	}
	if r.Err != nil {
		return out, fmt.Errorf("events of %s: %w", process, r.Err)
	}
	return out, nil
}

// cursor is where decoding a compact record stands: the sequence number
// and time (Unix nanoseconds) of the event read last, 0 before the first.
type cursor struct{ seq, at int64 }

// readEventV2 reads an event of a compactTag2 record, all but its process,
// and moves c on to it.
func readEventV2(r *varint.Reader, c *cursor) Event {
	head := r.Byte()
	if head&headNextSeq != 0 {
		c.seq++
	} else {
		c.seq += r.Varint()
	}
	if head&headSameTime == 0 {
		c.at += r.Varint()
	}
	ev := Event{Seq: c.seq, At: time.Unix(0, c.at).UTC()}
	code := uint64(head & headType)
	if code == headType {
		code = r.Uvarint()
	}
	if code == 0 {
		ev.Type = r.String()
	} else if code <= uint64(len(eventTypes)) {
		ev.Type = eventTypes[code-1]
	} else {
		r.Fail()
	}
	ev.NodeToken = int(r.Varint())
	ev.ArcToken = int(r.Varint())
	if head&headArcNames != 0 {
		ev.ArcNames = readNames(r, r.Count())
	}
	return ev
}

// readEventV1 reads an event of a compactTag record, as readEventV2 does.
func readEventV1(r *varint.Reader, c *cursor) Event {
	c.seq += r.Varint()
	c.at += r.Varint()
	ev := Event{Seq: c.seq, At: time.Unix(0, c.at).UTC()}
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
			return ev
		}
		ev.ArcNames = readNames(r, int(names-1))
	}
	return ev
}

// readNames reads n names (n no more than the bytes left: each takes one
// at least); it returns an empty, not nil, slice for none.
func readNames(r *varint.Reader, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = r.String()
	}
	return names
}
