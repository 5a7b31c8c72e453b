package kernel

import "sync/atomic"

// A command that fails leaves the process tree exactly as it was: the
// kernel keeps an undo journal while a command runs. Before a command
// first changes a process, a node token, an arc token or an environment
// that existed when it began, it saves a copy of it (once per command:
// each of them carries the epoch of the journal that saved it last).
// Whatever the command creates is simply dropped: restoring a process
// restores the lengths of its token, event and token-set lists. On success
// the journal is forgotten; the happy path pays one comparison per change
// and one copy per object a command changes.
//
// Node types and listeners that change tokens through the kernel's methods
// (Complete, SetAttr, Env writes, FullEnv …) are undone with the rest;
// fields they assign directly are not.

// epochs numbers journals; 0 means no journal.
var epochs atomic.Uint64

type journal struct {
	epoch uint64
	procs []procSave
	nodes []nodeSave
	arcs  []arcSave
	envs  []envSave

	// Buffers the saved derived lists of processes are copied into.
	waitBuf  []waitList
	readyBuf []int
	queueBuf []*ArcToken
}

type procSave struct {
	p       *Process
	v       Process
	waiting []waitList
	ready   []int
	queue   []*ArcToken
}

type nodeSave struct {
	t *NodeToken
	v NodeToken
}

type arcSave struct {
	a *ArcToken
	v ArcToken
}

type envSave struct {
	e *Env
	v Env
}

// begin starts a journal for a new command.
func (j *journal) begin() {
	j.epoch = epochs.Add(1)
	clear(j.procs)
	clear(j.nodes)
	clear(j.arcs)
	clear(j.envs)
	j.procs, j.nodes, j.arcs, j.envs = j.procs[:0], j.nodes[:0], j.arcs[:0], j.envs[:0]
	j.waitBuf, j.readyBuf, j.queueBuf = j.waitBuf[:0], j.readyBuf[:0], j.queueBuf[:0]
}

// end forgets the journal: the command is over.
func (j *journal) end() { j.epoch = 0 }

func (j *journal) saveProc(p *Process) {
	p.epoch = j.epoch
	s := procSave{p: p, v: *p}
	if p.waiting != nil {
		n := len(j.waitBuf)
		j.waitBuf = append(j.waitBuf, p.waiting...)
		s.waiting = j.waitBuf[n:len(j.waitBuf):len(j.waitBuf)]
		m := len(j.readyBuf)
		j.readyBuf = append(j.readyBuf, p.readyArcs...)
		s.ready = j.readyBuf[m:len(j.readyBuf):len(j.readyBuf)]
	}
	if len(p.queue) > 0 {
		n := len(j.queueBuf)
		j.queueBuf = append(j.queueBuf, p.queue...)
		s.queue = j.queueBuf[n:len(j.queueBuf):len(j.queueBuf)]
	}
	j.procs = append(j.procs, s)
}

func (j *journal) saveNode(t *NodeToken) {
	t.epoch = j.epoch
	j.nodes = append(j.nodes, nodeSave{t, *t})
}

func (j *journal) saveArc(a *ArcToken) {
	a.epoch = j.epoch
	j.arcs = append(j.arcs, arcSave{a, *a})
}

// saveEnv saves an environment's handle; its attributes are marked shared
// so that the write about to happen copies them and leaves the saved ones
// as they are.
func (j *journal) saveEnv(e *Env) {
	e.epoch = j.epoch
	if e.d != nil {
		e.d.shared = true
	}
	j.envs = append(j.envs, envSave{e, *e})
}

// rollback restores everything the journal saved, newest first.
func (j *journal) rollback() {
	for i := len(j.envs) - 1; i >= 0; i-- {
		*j.envs[i].e = j.envs[i].v
	}
	for i := len(j.arcs) - 1; i >= 0; i-- {
		*j.arcs[i].a = j.arcs[i].v
	}
	for i := len(j.nodes) - 1; i >= 0; i-- {
		*j.nodes[i].t = j.nodes[i].v
	}
	for i := len(j.procs) - 1; i >= 0; i-- {
		s := &j.procs[i]
		*s.p = s.v
		copy(s.p.waiting, s.waiting)
		copy(s.p.readyArcs, s.ready)
		copy(s.p.queue, s.queue)
	}
}

// The change hooks: each saves the object before the command first
// changes it.

func (e *Engine) mutP(p *Process) {
	if e.j.epoch != 0 && p.epoch != e.j.epoch {
		e.j.saveProc(p)
	}
}

func (e *Engine) mutN(t *NodeToken) {
	if e.j.epoch != 0 && t.epoch != e.j.epoch {
		e.j.saveNode(t)
	}
}

func (e *Engine) mutA(a *ArcToken) {
	if e.j.epoch != 0 && a.epoch != e.j.epoch {
		e.j.saveArc(a)
	}
}
