package store

import (
	"context"
	"time"
)

// Correlation is a node token waiting for a message (by name and
// correlation key) or a signal (by name): a catch event, a receive task, a
// boundary event, an event sub-process's start. The engine writes a
// process's correlations in the transaction of each command that changes
// them, as it writes timers.
type Correlation struct {
	Process string
	Root    string
	Token   int
	Kind    string // "message" or "signal"
	Name    string
	Key     string // a message's correlation key ("" for signals)
}

// Message is a published message that no token was waiting for, kept for
// its time to live: the first correlation to open with its name and key
// takes it, in the transaction of the command that delivers it.
type Message struct {
	Seq       int64 // set by BufferMessage: the oldest is taken first
	Name      string
	Key       string
	ID        string // the publisher's message id, if any
	Env       []byte // its variables, a JSON object
	CreatedAt time.Time
	ExpiresAt time.Time
}

// MessageStore reads correlations and buffered messages.
type MessageStore interface {
	// Correlations lists up to limit tokens waiting for a message of that
	// name and key (kind "message"), or for a signal of that name (kind
	// "signal"; key is ignored), ordered by process and token.
	Correlations(ctx context.Context, kind, name, key string, limit int) ([]Correlation, error)
	// OldestMessage returns the oldest buffered message of that name and
	// key unexpired at now with Seq > after; nil if there is none.
	OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*Message, error)
	// BufferedMessages lists up to limit buffered messages of a name
	// unexpired at now, oldest first, whatever their key.
	BufferedMessages(ctx context.Context, name string, now time.Time, limit int) ([]Message, error)
	// PurgeMessages deletes the buffered messages and the message ids
	// expired at now and returns how many messages it deleted.
	PurgeMessages(ctx context.Context, now time.Time) (int, error)
}

// MessageTx writes correlations, buffers messages and hands them out in a
// command.
//
// A message is published and a token comes to wait for it concurrently:
// so that one of the two sees the other, the transaction that buffers a
// message first asks Waiting, and the one that opens a correlation asks
// OldestMessage; a backend serialises the transactions that call Waiting,
// BufferMessage, OldestMessage or DeleteMessage for one name and key
// (PostgreSQL: an advisory lock held until the transaction ends), so that
// the second finds what the first wrote.
type MessageTx interface {
	// ReplaceCorrelations sets the correlations of a process.
	ReplaceCorrelations(ctx context.Context, process string, cs []Correlation) error
	// Waiting reports whether a token waits for a message of that name and
	// key.
	Waiting(ctx context.Context, name, key string) (bool, error)
	// BufferMessage keeps a message until it expires and sets m.Seq.
	BufferMessage(ctx context.Context, m *Message) error
	// OldestMessage is MessageStore.OldestMessage inside the transaction.
	OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*Message, error)
	// DeleteMessage removes the buffered message seq of that name and key
	// that is being delivered; ErrStale if it is no longer buffered
	// (another command took it).
	DeleteMessage(ctx context.Context, name, key string, seq int64) error
	// RememberMessageID records that a message with that name, key and id
	// was published at now, until until; ErrConflict if one was, and its
	// record has not expired at now.
	RememberMessageID(ctx context.Context, name, key, id string, now, until time.Time) error
}
