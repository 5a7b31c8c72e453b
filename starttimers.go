package veena

import (
	"context"
	"errors"
	"fmt"
	"time"

	bpmnrun "github.com/veena-wf/veena/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/store"
)

// Timer start events (BPMN): timers of a definition, not of a process.
//
// Loading a version arms its timer start events in the store (one row per
// event, due at its first time), replacing those of the definition's
// earlier versions, as Camunda does. The background loop of any engine
// leases due rows; firing one starts a process of that version at the
// event and moves the row to its next due time (a cycle) or marks it done,
// both in the transaction that starts the process: a due time starts
// exactly one process, across engines and crashes. Arming is idempotent
// and every engine arms the latest versions it knows when it opens and
// when it sees new ones, so that a version stored by an engine that died
// before arming it is armed all the same.

// StartTimer is a timer start event of a definition as the API shows it.
type StartTimer struct {
	Definition string `json:"definition"`
	Version    int    `json:"version"`
	Node       string `json:"node"`
	// DueAt is when it starts a process next; nil once it is done.
	DueAt *time.Time `json:"dueAt"`
	// Fired counts the processes it started.
	Fired int `json:"fired"`
}

// StartTimers lists the timer start events of a definition's armed
// version ("": of every definition).
func (e *Engine) StartTimers(ctx context.Context, definition string) ([]StartTimer, error) {
	rows, err := e.store.StartTimers(ctx, definition)
	if err != nil {
		return nil, storeError("read start timers", err)
	}
	out := make([]StartTimer, 0, len(rows))
	for _, r := range rows {
		t := StartTimer{Definition: r.Definition, Version: r.Version, Node: r.Node, Fired: r.Fired}
		if !r.DueAt.IsZero() {
			d := r.DueAt
			t.DueAt = &d
		}
		out = append(out, t)
	}
	return out, nil
}

// armStartTimers arms the timer start events of a definition version,
// replacing those of its earlier versions; a version armed already (or
// older than the armed one) is left as it is.
func (e *Engine) armStartTimers(ctx context.Context, g *graph.Graph) error {
	now := e.clock().UTC()
	var timers []store.StartTimer
	for _, s := range bpmnrun.StartEvents(g) {
		if s.Kind != "timer" {
			continue
		}
		tm, err := bpmnrun.StartTimer(g, s.Node, now)
		if err != nil {
			// Checked at load; a timer that reads differently now (an
			// expression of the time) is left unarmed, and said so.
			e.log.Warn("veena: a timer start event cannot be armed", "definition", g.Name, "version", g.Version, "event", s.Node, "err", err)
			continue
		}
		timers = append(timers, store.StartTimer{Node: s.Node, DueAt: bpmnrun.FirstStart(tm, now)})
	}
	err := e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ArmStartTimers(ctx, g.Name, g.Version, timers)
		return err
	})
	if err != nil {
		return storeError(fmt.Sprintf("arm the timer start events of %s version %d", g.Name, g.Version), err)
	}
	e.armed.Store(g.Name, g.Version)
	e.wakeUp()
	return nil
}

// armLatest arms the latest version of every definition this engine has
// not armed yet (a no-op in the store where another engine did).
func (e *Engine) armLatest(ctx context.Context) error {
	for _, g := range e.repo.Latests() {
		if v, ok := e.armed.Load(g.Name); ok && v.(int) >= g.Version {
			continue
		}
		if !hasTimerStart(g) {
			// Nothing to arm; an earlier version's timers, if any, are
			// replaced all the same (by a version without them).
			if _, ok := e.armed.Load(g.Name); !ok && g.Version == 1 {
				e.armed.Store(g.Name, g.Version)
				continue
			}
		}
		if err := e.armStartTimers(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// hasTimerStart reports whether a definition has a timer start event.
func hasTimerStart(g *graph.Graph) bool {
	for _, s := range bpmnrun.StartEvents(g) {
		if s.Kind == "timer" {
			return true
		}
	}
	return false
}

// fireStartTimers starts a process for each due start timer it can lease,
// at most limit; it reports whether it found limit of them.
func (e *Engine) fireStartTimers(ctx context.Context, lease time.Duration, limit int) bool {
	due, err := e.store.ClaimStartTimers(ctx, e.clock(), lease, limit)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("veena: claim due start timers", "err", err)
		}
		return false
	}
	for _, st := range due {
		if ctx.Err() != nil {
			return false
		}
		if err := e.fireStartTimer(ctx, st); err != nil && ctx.Err() == nil {
			e.log.Warn("veena: start a process at a timer start event (tried again once the lease ends)",
				"definition", st.Definition, "version", st.Version, "event", st.Node, "due", st.DueAt, "err", err)
		}
	}
	return len(due) == limit
}

// fireStartTimer starts the process of one firing of a start timer, and
// moves the timer on in the same transaction. A firing another engine
// made first changes nothing.
func (e *Engine) fireStartTimer(ctx context.Context, st store.StartTimer) error {
	g, err := e.graphOf(ctx, st.Definition, st.Version)
	if err != nil {
		return err
	}
	now := e.clock().UTC()
	tm, err := bpmnrun.StartTimer(g, st.Node, now)
	if err != nil {
		return err
	}
	next := bpmnrun.NextStart(tm, st.DueAt, st.Fired+1, now)
	_, err = e.startAt(ctx, startSpec{g: g, node: st.Node, writes: func(c *cmd) {
		c.write(func(ctx context.Context, tx store.Tx) error { return tx.FireStartTimer(ctx, st, next) })
	}})
	if errors.Is(err, store.ErrStale) {
		return nil // fired by another engine, or replaced by a new version
	}
	return err
}
