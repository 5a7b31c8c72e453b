// Package store defines how Veena persists its state: the Store interface
// every backend implements (store/memstore, store/sqlitestore,
// store/pgstore), the records it keeps, and the errors callers act on. The
// conformance suite in store/storetest checks every backend the same way.
//
// The engine runs each command (start, complete, backtrack, cancel, a due
// timer, an incoming event, an attribute change) as one Update: it locks the
// process tree, reads it, runs the kernel and writes back what changed —
// process rows, events, timers, context entries, the idempotency record —
// all in one transaction. A store only stores: it knows nothing of tokens
// beyond the encoded snapshot of each process.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Errors callers act on; backends wrap them.
var (
	// ErrNotFound: no such process or record.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint refused the write (a definition
	// version added concurrently, a unique context value already taken).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the database cannot be reached, or refused the write
	// for lack of space. Nothing was changed.
	ErrUnavailable = errors.New("store unavailable")
	// ErrSchema: the database schema is newer than this Veena, or behind it
	// while migrations are refused.
	ErrSchema = errors.New("schema mismatch")
	// ErrBusy: TryLockTree found the tree locked by another transaction, or
	// commands waiting in its inbox; the command has to queue.
	ErrBusy = errors.New("process tree busy")
	// ErrStale: ExpectTree found the tree changed since the version the
	// command ran on (or busy, or gone); the command has to run again on
	// what is stored.
	ErrStale = errors.New("process tree changed")
)

// Unavailable wraps a driver error as ErrUnavailable, keeping its message.
func Unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// Definition is one stored version of a process definition, with its
// original source. Seq orders definitions by when they were loaded, so
// that replaying them in Seq order resolves externals as they were.
type Definition struct {
	Seq       int64
	Name      string
	Version   int
	Format    string
	Hash      string
	File      string
	Source    []byte
	CreatedAt time.Time
}

// Process is one stored process: the columns queries need plus the
// encoded snapshot of its tokens, token sets, environments and listeners.
type Process struct {
	ID          string
	Root        string // the top of its nesting tree (its own ID if not nested)
	Parent      string // "" unless nested
	ParentToken int    // index of the parent's node token; -1 unless nested
	Position    int    // index among the parent's nested processes
	Definition  string
	Version     int
	State       string
	Context     map[string]string
	Env         []byte // JSON object of the persistent process attributes
	Snapshot    []byte
	EventSeq    int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// TreeVersion counts the commits to the tree; kept on the root only.
	TreeVersion int64
	// StoredState, when the engine knows the row exists, is the state it
	// has in the store ("" for a new row): PutProcess may then update the
	// changing columns in place, leaving the state index alone when the
	// state stays.
	StoredState string
	// FirstEvents, on a new row (StoredState ""), is the event record of
	// the command that creates the process, its events from sequence
	// number 1. PutProcess stores it as AppendEvents would, or with the
	// row: a store may keep it there and save a write. Rows read back do
	// not carry it; Events returns its events. The engine sets it only on
	// a row it creates: a store may refuse the row if it exists already
	// (ErrConflict).
	FirstEvents *EventRecord
	// Waits says where the process waits, in the engine's encoding; the
	// store keeps it as it is and returns it with the row (nil for a row
	// written before stores kept it).
	Waits []byte
	// WaitNodes are the nodes the process waits at (sorted, distinct),
	// which listings filter by (Filter.Node). StoredWaitNodes is what the
	// store holds for the row, as the engine knows it (nil for a new row,
	// or one whose Waits were nil): a store may write only the difference.
	// Rows read back do not carry either.
	WaitNodes       []string
	StoredWaitNodes []string
	// Stalled marks an executing process that cannot move on by itself:
	// no active node token, only arc tokens waiting at joins.
	Stalled bool
}

// Event is one stored execution event. NodeToken and ArcToken are token
// indexes in the process, -1 when they do not apply.
type Event struct {
	Process   string
	Seq       int64
	Type      string
	NodeToken int
	ArcToken  int
	ArcNames  []string // nil when the event has none; "" is the default arc
	At        time.Time
}

// Timer is a delayed node token waiting for its time.
type Timer struct {
	Process string
	Root    string
	Token   int
	DueAt   time.Time
}

// Command is a command in the durable inbox of a process tree. Commands
// that find their tree busy are enqueued, and applied one at a time in Seq
// order by whichever engine holds the tree, each in the transaction that
// marks it done. A command in the inbox survives the engine that enqueued
// it: another engine, or the same one restarted, applies it.
type Command struct {
	Seq        int64  // arrival order, set by Enqueue
	Root       string // the tree it is for
	Key        string // the caller's idempotency key, if any
	Payload    []byte // the command, as the engine encoded it
	EnqueuedAt time.Time
	Done       bool
	Outcome    []byte // once Done: its result or error, as the engine encoded it
	DoneAt     time.Time
}

// Filter selects processes for listing, ordered by ID: newest first (IDs
// are time-ordered), or oldest first with Oldest. Every condition set must
// hold.
type Filter struct {
	Definition  string
	Version     int      // with Definition: that version only
	States      []string // any of these states
	Parent      string   // with ParentToken: nested processes started by that token
	ParentToken int
	IDPrefix    string            // IDs that start with this
	Node        string            // waiting at this node (a WaitNodes entry)
	Stalled     bool              // stalled processes only
	Context     map[string]string // context pairs the process holds (executing or not)
	// Search matches an ID prefix or any context value.
	Search string
	// CreatedFrom and CreatedTo bound the creation time: From <= t < To
	// (a zero time does not bound).
	CreatedFrom, CreatedTo time.Time
	// MinID and MaxID bound IDs (MinID <= id <= MaxID, "" does not bound):
	// where IDs are time-ordered, the engine turns a time range into IDs
	// that the primary key finds.
	MinID, MaxID string
	// Unindexed selects rows whose Waits are nil (written before stores
	// kept them).
	Unindexed bool
	Oldest    bool   // oldest first
	After     string // only IDs after this one in the order (the page cursor)
	Limit     int
}

// TimerFailure is a failed attempt to fire a timer (its node token's guard
// could not be evaluated, say): kept on the timer until the timer is
// replaced, fires or is removed.
type TimerFailure struct {
	Process  string
	Token    int
	DueAt    time.Time
	Message  string
	At       time.Time // of the last failure
	Attempts int
}

// Store is a Veena database.
type Store interface {
	// Migrate brings the schema up to date. With apply false it only checks
	// and fails (ErrSchema) if the schema is behind. A schema newer than the
	// backend knows always fails with ErrSchema.
	Migrate(ctx context.Context, apply bool) error
	// Ready reports whether the database answers and the schema is current.
	Ready(ctx context.Context) error
	Close() error

	// AddDefinition stores a definition version; ErrConflict if that name
	// and version exist. It sets d.Seq.
	AddDefinition(ctx context.Context, d *Definition) error
	// Definitions returns the definitions with Seq > after, in Seq order.
	Definitions(ctx context.Context, after int64) ([]*Definition, error)

	// Update runs fn as one transaction: everything fn writes commits
	// together, or nothing does if fn or the commit fails. Backends may
	// commit several concurrent Updates together (group commit); each still
	// succeeds or fails on its own.
	Update(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Process reads a committed process row; ErrNotFound if absent.
	Process(ctx context.Context, id string) (*Process, error)
	// Tree reads the committed rows of a tree, root first, parents before
	// their nested processes.
	Tree(ctx context.Context, root string) ([]*Process, error)
	// Processes lists process rows (snapshots left out) by ID.
	Processes(ctx context.Context, f Filter) ([]*Process, error)
	// Events returns up to limit events of a process with Seq > after.
	Events(ctx context.Context, process string, after int64, limit int) ([]Event, error)
	// FindByContext returns up to limit executing processes whose context
	// holds every pair of match.
	FindByContext(ctx context.Context, match map[string]string, limit int) ([]string, error)
	// ClaimTimers leases up to limit timers due at now that no other claim
	// holds, for lease; a claimed timer is offered again once the lease ends.
	ClaimTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Timer, error)
	// NextTimer returns the earliest due time of any timer (zero if none).
	NextTimer(ctx context.Context) (time.Time, error)
	// FailTimer records a failed firing on the timer of f.Process and
	// f.Token if it is still due at f.DueAt (else it does nothing): the
	// message and time, one more attempt, and no new claim before retryAt.
	// It runs in a transaction of its own.
	FailTimer(ctx context.Context, f TimerFailure, retryAt time.Time) error
	// TimerFailures returns the failures recorded on the timers of a
	// process ("": of every process, up to limit, oldest failure first).
	TimerFailures(ctx context.Context, process string, limit int) ([]TimerFailure, error)
	// CountProcesses counts the processes f selects (its After, Oldest
	// and Limit ignored), stopping at limit (0: no limit): a count equal
	// to limit means "at least".
	CountProcesses(ctx context.Context, f Filter, limit int) (int, error)

	// Enqueue appends c to the inbox of tree c.Root, in a transaction of its
	// own, and sets c.Seq; ErrNotFound if there is no such tree.
	Enqueue(ctx context.Context, c *Command) error
	// Command reads an inbox command by Seq; ErrNotFound once purged.
	Command(ctx context.Context, seq int64) (*Command, error)
	// InboxRoots returns up to limit trees holding commands that are not
	// done and were enqueued at or before before.
	InboxRoots(ctx context.Context, before time.Time, limit int) ([]string, error)
	// PurgeCommands deletes the done commands finished before before and
	// returns how many it deleted.
	PurgeCommands(ctx context.Context, before time.Time) (int, error)
	// WaitingCommands counts the commands of every inbox that are not done.
	WaitingCommands(ctx context.Context) (int, error)

	// PurgeKeys deletes the idempotency records created (PutKey's at)
	// before before and returns how many it deleted: a command retried
	// with a purged key runs again.
	PurgeKeys(ctx context.Context, before time.Time) (int, error)

	// WorkStore reads tasks, jobs, incidents, the record of processes and
	// subscriptions, and leases jobs (work.go).
	WorkStore
	// MessageStore reads correlations and buffered messages (messages.go).
	MessageStore
	// StartTimerStore reads and leases start timers (starttimers.go).
	StartTimerStore
}

// Tx is the inside of an Update.
type Tx interface {
	// Key looks up an idempotency key. If a committed command used it, it
	// returns that command's result and true. Otherwise it reserves the key
	// for this transaction (a concurrent Update with the same key waits for
	// this one) and returns false.
	Key(ctx context.Context, key string) (result []byte, found bool, err error)
	// PutKey records the result of the command that reserved key, created
	// at at (the time PurgeKeys compares).
	PutKey(ctx context.Context, key string, result []byte, at time.Time) error

	// LockTree locks a process tree for the rest of the transaction,
	// queueing behind other holders, and returns its TreeVersion.
	LockTree(ctx context.Context, root string) (int64, error)
	// TryLockTree locks a process tree and returns its TreeVersion if no
	// other transaction holds it and its inbox is empty; else ErrBusy.
	TryLockTree(ctx context.Context, root string) (int64, error)
	// ExpectTree is TryLockTree for a command that already ran on the tree
	// at version: it locks the tree if it is free and still at version.
	// Otherwise the Update fails with ErrBusy, or ErrStale if the tree
	// changed; a backend may find out only when the Update commits, so
	// that the check costs no round trip of its own.
	ExpectTree(ctx context.Context, root string, version int64) error
	// NextCommand returns the oldest command of the locked tree's inbox
	// that is not done, nil if there is none.
	NextCommand(ctx context.Context, root string) (*Command, error)
	// FinishCommand marks an inbox command done with its outcome.
	FinishCommand(ctx context.Context, seq int64, outcome []byte, at time.Time) error
	// Tree reads the rows of a tree, as Store.Tree.
	Tree(ctx context.Context, root string) ([]*Process, error)
	// PutProcess inserts or replaces a process row.
	PutProcess(ctx context.Context, p *Process) error
	// SetTreeVersion sets the TreeVersion of a root.
	SetTreeVersion(ctx context.Context, root string, v int64) error
	// AppendEvents stores event records (EncodeEventRecords makes them
	// from Events). A record whose First is not above the Last of the
	// process's stored records is refused: ErrConflict.
	AppendEvents(ctx context.Context, recs []EventRecord) error
	// ReplaceTimers sets the timers of a process to timers.
	ReplaceTimers(ctx context.Context, process string, timers []Timer) error
	// PutContext records the context of an executing process. Keys listed
	// in unique may hold a value for one executing process only: ErrConflict.
	PutContext(ctx context.Context, process string, c map[string]string, unique []string) error
	// DropContext forgets the context entries of a process (it stopped executing).
	DropContext(ctx context.Context, process string) error

	// WorkTx reads and writes work rows in the command (work.go).
	WorkTx
	// MessageTx writes correlations and buffers messages (messages.go).
	MessageTx
	// StartTimerTx arms and fires start timers (starttimers.go).
	StartTimerTx
}

// CheckVersion is ExpectTree's test for backends that check at once: the
// tree root is at version have, the command ran on want.
func CheckVersion(root string, have, want int64) error {
	if have != want {
		return fmt.Errorf("process %s is at version %d, not %d: %w", root, have, want, ErrStale)
	}
	return nil
}

// OrderTree sorts the rows of one tree root first, parents before their
// nested processes, nested processes by Position.
func OrderTree(rows []*Process) []*Process {
	children := map[string][]*Process{}
	var root *Process
	for _, r := range rows {
		if r.Parent == "" {
			root = r
		} else {
			children[r.Parent] = append(children[r.Parent], r)
		}
	}
	if root == nil {
		return rows
	}
	out := make([]*Process, 0, len(rows))
	var walk func(p *Process)
	walk = func(p *Process) {
		out = append(out, p)
		cs := children[p.ID]
		sort.Slice(cs, func(i, j int) bool { return cs[i].Position < cs[j].Position })
		for _, c := range cs {
			walk(c)
		}
	}
	walk(root)
	return out
}

// EncodeEvents packs events of one process into one record for backends
// that store a command's events as one row: a JSON array of
// [seq, type, node token, arc token, arc names or null, unix nanoseconds].
func EncodeEvents(evs []Event) []byte {
	b := make([]byte, 0, 48*len(evs)+2)
	b = append(b, '[')
	for i, ev := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, ev.Seq, 10)
		b = append(b, ',')
		b = appendJSONString(b, ev.Type)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(ev.NodeToken), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(ev.ArcToken), 10)
		b = append(b, ',')
		if ev.ArcNames == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j, n := range ev.ArcNames {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, n)
			}
			b = append(b, ']')
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, ev.At.UnixNano(), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// DecodeEvents unpacks what EncodeEvents packed.
func DecodeEvents(process string, b []byte) ([]Event, error) {
	var raw [][]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("events of %s: %w", process, err)
	}
	out := make([]Event, len(raw))
	for i, r := range raw {
		if len(r) != 6 {
			return nil, fmt.Errorf("events of %s: record of %d fields", process, len(r))
		}
		ev := Event{Process: process}
		var at int64
		for j, dst := range []any{&ev.Seq, &ev.Type, &ev.NodeToken, &ev.ArcToken, &ev.ArcNames, &at} {
			if err := json.Unmarshal(r[j], dst); err != nil {
				return nil, fmt.Errorf("events of %s: %w", process, err)
			}
		}
		ev.At = time.Unix(0, at).UTC()
		out[i] = ev
	}
	return out, nil
}

// appendJSONEventsAfter decodes a record EncodeEvents packed and appends to
// out its events with Seq > after, until out holds limit events (no bound
// if limit <= 0).
func appendJSONEventsAfter(out []Event, process string, record []byte, after int64, limit int) ([]Event, error) {
	evs, err := DecodeEvents(process, record)
	if err != nil {
		return out, err
	}
	for _, ev := range evs {
		if limit > 0 && len(out) >= limit {
			break
		}
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}
