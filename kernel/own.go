package kernel

// This file holds the extension point for formats whose processes are not
// driven by start nodes and arcs: a Petri net's marking decides what
// happens and when the process is done. Such a format registers a
// ProcessRunner; StartWith starts its processes through it, and the kernel
// completes one only when the runner says it is done. The runner keeps
// its state in Process.Ext (replaced through SetExt, so that a failed
// command undoes it) and uses node tokens for the work it waits for
// (jobs, incidents, wakes), which end their work as any token's does.

// ProcessRunner runs the processes of a format its own way.
type ProcessRunner interface {
	// Begin brings a new process to life, inside its start command, after
	// StartWith's setup: it may create tokens, change the environment and
	// fire events.
	Begin(e *Engine, p *Process) error
	// Done reports whether an executing process that has no active token
	// may complete. It must not change anything.
	Done(p *Process) bool
}

// RegisterProcessRunner makes r run the processes of graphs of that format.
func (k *Kernel) RegisterProcessRunner(format string, r ProcessRunner) {
	if k.runners == nil {
		k.runners = map[string]ProcessRunner{}
	}
	k.runners[format] = r
}

// ProcessRunner returns the runner of a format, nil if it has none.
func (k *Kernel) ProcessRunner(format string) ProcessRunner { return k.runners[format] }

// beginOwn starts a process of a format with a runner.
func (e *Engine) beginOwn(p *Process, r ProcessRunner) {
	e.mutP(p)
	p.State = Executing
	p.Dirty = true
	e.fire(p, ProcessStarted, nil, nil, nil, 0)
	was := p.inLoop
	p.inLoop = true
	if err := r.Begin(e, p); err != nil {
		e.Fail(failed(err, "start process of %s", p.Graph))
	}
	p.inLoop = was
	e.executeQueuedArcTokens(p)
}

// keptOpen reports whether p's format keeps it executing although the
// kernel would complete it.
func (e *Engine) keptOpen(p *Process) bool {
	r := e.k.runners[p.Graph.Format]
	return r != nil && !r.Done(p)
}

// SetExt replaces the format's state of p within a command, so that a
// command that fails gives the process its state back. A runner replaces
// its state (a copy it changes) rather than changing it in place.
func (e *Engine) SetExt(p *Process, x Extension) {
	e.mutP(p)
	p.Ext = x
	p.ExtData = nil
	p.Dirty = true
}

// FireNamed fires an event of type typ on p about token t (nil for none)
// with names (a transition's id, an event's name), for formats whose
// events name what they are about, and returns its sequence number.
func (e *Engine) FireNamed(p *Process, typ EventType, t *NodeToken, names []string) (seq int64, err error) {
	err = e.run(p, func() {
		e.fire(p, typ, t, nil, names, 0)
		seq = p.EventSeq
	})
	return seq, err
}

// Settle runs what the commands of a runner queued and completes the
// process if it is done: the end of a runner's step.
func (e *Engine) Settle(p *Process) error {
	return e.run(p, func() {
		if p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
}
