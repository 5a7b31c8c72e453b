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
// takes it.
type Message struct {
	Seq       int64 // set by BufferMessage: the oldest is taken first
	Name      string
	Key       string
	ID        string // the publisher's message id: one such message buffered at a time
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
	// PurgeMessages deletes the buffered messages expired at now and
	// returns how many it deleted.
	PurgeMessages(ctx context.Context, now time.Time) (int, error)
}

// MessageTx writes correlations and buffers messages in a command.
type MessageTx interface {
	// ReplaceCorrelations sets the correlations of a process.
	ReplaceCorrelations(ctx context.Context, process string, cs []Correlation) error
	// BufferMessage keeps a message until it expires and sets m.Seq. A
	// message with an ID is refused (ErrConflict) while another with the
	// same name, key and ID is buffered and unexpired at m.CreatedAt.
	BufferMessage(ctx context.Context, m *Message) error
	// TakeMessage removes and returns the oldest message of that name and
	// key unexpired at now; nil if there is none.
	TakeMessage(ctx context.Context, name, key string, now time.Time) (*Message, error)
}
