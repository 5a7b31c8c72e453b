package store

import (
	"context"
	"time"
)

// StartTimer is a timer start event of a definition version: each time it
// is due a process of that version starts at its node. Loading a new
// version replaces the timers of the earlier ones; a timer fires once
// across engines (FireStartTimer, in the transaction that starts the
// process).
type StartTimer struct {
	Definition string
	Version    int
	Node       string
	// DueAt is when it fires next; zero once it fired its last time.
	DueAt time.Time
	// Fired counts its firings.
	Fired int
}

// StartTimerStore reads and leases start timers.
type StartTimerStore interface {
	// StartTimers lists the start timers of a definition ("": of every
	// definition), by definition and node.
	StartTimers(ctx context.Context, definition string) ([]StartTimer, error)
	// ClaimStartTimers leases up to limit start timers due at now that no
	// other claim holds, for lease, earliest first; a claimed timer is
	// offered again once its lease ends.
	ClaimStartTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]StartTimer, error)
	// NextStartTimer returns the earliest due time of any start timer
	// (zero if none).
	NextStartTimer(ctx context.Context) (time.Time, error)
}

// StartTimerTx arms and fires start timers.
type StartTimerTx interface {
	// ArmStartTimers makes timers the start timers of a definition at
	// version, removing those of its earlier versions. If that version, or
	// a later one, is armed already it changes nothing and returns false:
	// arming is idempotent, and an engine that has not seen a newer
	// version cannot undo it.
	ArmStartTimers(ctx context.Context, definition string, version int, timers []StartTimer) (bool, error)
	// FireStartTimer counts a firing of the start timer t.Definition,
	// t.Node and moves it from t.DueAt to next (zero: it is done), if it
	// is still at t.Version and due at t.DueAt; else ErrStale (another
	// engine fired it, or a new version replaced it).
	FireStartTimer(ctx context.Context, t StartTimer, next time.Time) error
}
