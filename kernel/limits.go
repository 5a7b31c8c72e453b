package kernel

import (
	"sync"
	"time"
)

// Limits bound the work of one command and the size of a process, so that
// a definition that loops without waiting, or a request asking for a huge
// token set, fails cleanly instead of exhausting the machine. A command
// that goes beyond a limit fails and, like every failed command, changes
// nothing. A zero field takes its default (DefaultLimits); a negative one
// means no limit.
type Limits struct {
	// CommandTokens is how many node and arc tokens one command may create
	// (its nested processes included) before it fails with
	// ErrBudgetExceeded: a cycle of nodes that never wait would otherwise
	// create tokens until memory runs out.
	CommandTokens int
	// CommandTime is how long one command may run before it fails with
	// ErrBudgetExceeded. The kernel has no clock of its own: the caller
	// enforces it by calling Engine.Interrupt when the time is up (the
	// durable engine does); a running script is stopped at once.
	CommandTime time.Duration
	// ProcessTokens is how many node and arc tokens one process may hold
	// (ErrLimitExceeded): every later command reads and writes them all.
	ProcessTokens int
	// TokenSetMembers is the largest token set a completion may create
	// (ErrLimitExceeded, checked before anything changes).
	TokenSetMembers int
	// NestingDepth is how deep nested processes may nest (a definition
	// that nests itself would otherwise recurse without end).
	NestingDepth int
}

// DefaultLimits are the limits of a new kernel.
var DefaultLimits = Limits{
	CommandTokens:   100_000,
	CommandTime:     30 * time.Second,
	ProcessTokens:   1_000_000,
	TokenSetMembers: 10_000,
	NestingDepth:    32,
}

// Errors of the limits.
var (
	ErrBudgetExceeded = &Error{Code: "budget_exceeded", Msg: "the command exceeded its budget"}
	ErrLimitExceeded  = &Error{Code: "limit_exceeded", Msg: "a size limit was exceeded"}
)

// limit returns the effective value of a limit field: its default when
// zero, no limit (0) when negative.
func limit[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Effective returns the limits with defaults filled in; a field that is 0
// in the result means no limit.
func (l Limits) Effective() Limits {
	return Limits{
		CommandTokens:   limit(l.CommandTokens, DefaultLimits.CommandTokens),
		CommandTime:     limit(l.CommandTime, DefaultLimits.CommandTime),
		ProcessTokens:   limit(l.ProcessTokens, DefaultLimits.ProcessTokens),
		TokenSetMembers: limit(l.TokenSetMembers, DefaultLimits.TokenSetMembers),
		NestingDepth:    limit(l.NestingDepth, DefaultLimits.NestingDepth),
	}
}

// Interrupt stops the running command at its next step with err (nil: a
// budget error for the command's time). It may be called from any
// goroutine; a script that runs is stopped at once. A command that starts
// on an interrupted engine fails at its first step: use a new engine for
// the next command.
func (e *Engine) Interrupt(err error) {
	if err == nil {
		err = refuse(ErrBudgetExceeded, "the command ran longer than its time budget of %s (Limits.CommandTime)", e.k.limits().CommandTime)
	}
	e.stop.Store(&err)
	if s := e.script.Load(); s != nil {
		s.stop()
	}
}

// limits returns the kernel's effective limits, fixed at their first use.
func (k *Kernel) limits() *Limits {
	if l := k.effective.Load(); l != nil {
		return l
	}
	l := k.Limits.Effective()
	k.effective.CompareAndSwap(nil, &l)
	return k.effective.Load()
}

// budgetCheckEvery is how many tokens a command creates between two looks
// at Interrupt: often enough that an interrupted command stops at once,
// seldom enough that the look costs nothing.
const budgetCheckEvery = 64

// startBudget readies the budgets of a command that begins.
func (e *Engine) startBudget() {
	e.tokens, e.nextCheck, e.budgetOf = 0, 0, nil
}

// created counts a token the command is about to create in p. It looks at
// the budgets (checkBudgets) when the count reaches nextCheck, which is
// never later than the first count at which one could be exceeded, and
// when the token is created in another process than the last one.
func (e *Engine) created(p *Process) {
	e.tokens++
	if e.tokens >= e.nextCheck || p != e.budgetOf {
		e.checkBudgets(p)
	}
}

// checkBudgets fails the command if it was interrupted, created more tokens
// than its budget, or p is at its size limit; otherwise it sets the count
// of tokens at which created looks again: after budgetCheckEvery more, or
// sooner if the command's budget or p's size limit would be reached before.
func (e *Engine) checkBudgets(p *Process) {
	if s := e.stop.Load(); s != nil {
		e.Fail(*s)
	}
	l := e.k.limits()
	if l.CommandTokens > 0 && e.tokens > l.CommandTokens {
		e.Fail(refuse(ErrBudgetExceeded, "the command created more than %d node and arc tokens (Limits.CommandTokens) without every token reaching a wait state; "+
			"does the definition have a cycle of nodes that never wait?", l.CommandTokens))
	}
	size := len(p.NodeTokens) + len(p.ArcTokens)
	if l.ProcessTokens > 0 && size >= l.ProcessTokens {
		e.Fail(refuse(ErrLimitExceeded, "process %s would hold more than %d node and arc tokens (Limits.ProcessTokens)", p.ID, l.ProcessTokens))
	}
	next := e.tokens + budgetCheckEvery
	if l.CommandTokens > 0 {
		next = min(next, l.CommandTokens+1)
	}
	if l.ProcessTokens > 0 {
		next = min(next, e.tokens+l.ProcessTokens-size) // p's size reaches the limit there
	}
	e.nextCheck, e.budgetOf = next, p
}

// checkTokenSet refuses a token set larger than the limit.
func (e *Engine) checkTokenSet(count int) {
	if l := e.k.limits().TokenSetMembers; l > 0 && count > l {
		e.Fail(refuse(ErrLimitExceeded, "a token set of %d members is larger than the limit of %d (Limits.TokenSetMembers)", count, l))
	}
}

// checkNesting refuses a nested process deeper than the limit.
func (e *Engine) checkNesting(parent *Process, def string) {
	l := e.k.limits().NestingDepth
	if l <= 0 {
		return
	}
	depth := 1
	for q := parent; q.Parent != nil; q = q.Parent {
		depth++
	}
	if depth > l {
		e.Fail(refuse(ErrLimitExceeded, "nested process of %s would be %d levels deep, more than the limit of %d (Limits.NestingDepth)", def, depth, l))
	}
}

// running is the script a command runs, for Interrupt to stop it; once
// the script is over, stop does nothing (its realm may run another
// command's script by then).
type running struct {
	mu     sync.Mutex
	stopFn func()
}

func (r *running) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopFn != nil {
		r.stopFn()
	}
}

func (r *running) end() {
	r.mu.Lock()
	r.stopFn = nil
	r.mu.Unlock()
}
