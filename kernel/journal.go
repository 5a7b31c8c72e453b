package kernel

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// A command that fails leaves the process tree exactly as it was: the
// kernel keeps an undo journal while a command runs. Before a command
// first changes a process, a node token, an arc token or an environment
// that existed when it began, it saves a copy of it (once per command:
// each of them carries the epoch of the journal that saved it last).
// Whatever the command creates is simply dropped: restoring a process
// restores the lengths of its token, event and token-set lists. On success
// the journal is forgotten; the happy path pays one comparison per change
// of a token or an environment and one copy per object a command changes.
//
// Processes are saved when the command comes to them rather than at each
// change, for the token game changes its process at every step: a command
// saves the process it runs on and that process's ancestors (enter), and
// so does every call into the kernel's API within the command, and every
// move of the kernel onto another process of the tree (cancelling a
// nested one, starting one, delivering to one). A nested process that
// ends completes its parent token in a process saved already, its parent.
// The token game's own steps then only assert that their process is
// saved (saved, checked in builds with the veenajournal tag: go test
// -tags veenajournal ./...).
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

// procSave is what a command may change of a process: its scalars, the
// lengths of its lists (what a command adds is dropped by cutting them
// back), and copies of the derived lists it changes in place (in the
// journal's buffers, from the offsets noted here). It holds few pointers:
// saving costs little even while the collector runs.
type procSave struct {
	p          *Process
	env        *Env
	asyncQueue []*ArcToken
	waitingArr []waitList // the array p.waiting had (nil if none), its contents at waitBuf[waitAt:]
	readyArr   []int      // the array p.readyArcs had, its contents at readyBuf[readyAt:]
	listeners  []ListenerRef
	context    map[string]string
	ext        Extension // formats change it after SaveProcess (Engine.SaveProcess)
	extData    []byte
	updatedAt  time.Time
	seq        int64
	eventSeq   int64
	nNested    int32
	nNodes     int32
	nArcs      int32
	nSets      int32
	nEvents    int32
	nNames     int32
	nEffects   int32
	active     [2]int32 // activeNodes, activeArcs
	waitAt     int32
	readyAt    int32
	queueAt    int32 // the waiting part of the queue is at queueBuf[queueAt:queueAt+nQueue]
	nQueue     int32
	state      State
	dirty      bool
	inLoop     bool
}

type nodeSave struct {
	t           *NodeToken
	children    []*ArcToken
	parents     []*ArcToken
	env         *Env
	completedAt int64
	delayUntil  int64
	completeSeq int64
	delayCount  int
	work        WorkFlags
	notes       map[string]string // replaced, never changed in place
	guard       GuardAction
	exec        ExecutionType
	complete    bool
	active      bool
}

type arcSave struct {
	a           *ArcToken
	child       *NodeToken
	nextWaiting *ArcToken
	completedAt int64
	exec        ExecutionType
	pending     bool
	complete    bool
	active      bool
}

type envSave struct {
	e *Env
	v Env
}

// begin starts a journal for a new command.
func (j *journal) begin() {
	j.epoch = epochs.Add(1)
	// Old entries are overwritten, not cleared: clearing costs every
	// command, and what they still point to is at most one command's
	// copies.
	j.procs, j.nodes, j.arcs, j.envs = j.procs[:0], j.nodes[:0], j.arcs[:0], j.envs[:0]
	j.waitBuf, j.readyBuf, j.queueBuf = j.waitBuf[:0], j.readyBuf[:0], j.queueBuf[:0]
}

// end forgets the journal: the command is over.
func (j *journal) end() { j.epoch = 0 }

func (j *journal) saveProc(p *Process) {
	p.epoch = j.epoch
	s := grow(&j.procs)
	// Every field of s is assigned: it may hold an older command's save
	// (the pointers only where they differ: see set).
	set(&s.p, p)
	set(&s.env, p.Env)
	setSlice(&s.asyncQueue, p.asyncQueue)
	setSlice(&s.listeners, p.Listeners)
	if s.context != nil || p.Context != nil {
		s.context = p.Context
	}
	if s.ext != nil || p.Ext != nil {
		s.ext = p.Ext
	}
	setSlice(&s.extData, p.ExtData)
	set(&s.updatedAt, p.UpdatedAt)
	s.seq, s.eventSeq = p.Seq, p.EventSeq
	s.nNested, s.nNodes, s.nArcs, s.nSets = int32(len(p.Nested)), int32(len(p.NodeTokens)), int32(len(p.ArcTokens)), int32(len(p.TokenSets))
	s.nEvents, s.nNames, s.nEffects = int32(len(p.Events)), int32(len(p.eventNames)), int32(len(p.Effects))
	s.active = [2]int32{int32(p.activeNodes), int32(p.activeArcs)}
	s.state, s.dirty, s.inLoop = p.State, p.Dirty, p.inLoop
	setSlice(&s.waitingArr, p.waiting)
	setSlice(&s.readyArr, p.readyArcs)
	s.waitAt, s.readyAt = int32(len(j.waitBuf)), int32(len(j.readyBuf))
	if p.waiting != nil {
		j.waitBuf = append(j.waitBuf, p.waiting...)
		j.readyBuf = append(j.readyBuf, p.readyArcs...)
	}
	q := p.queue[p.queueHead:]
	s.queueAt, s.nQueue = int32(len(j.queueBuf)), int32(len(q))
	if len(q) > 0 {
		j.queueBuf = append(j.queueBuf, q...)
	}
}

func (j *journal) saveNode(t *NodeToken) {
	t.epoch = j.epoch
	s := grow(&j.nodes)
	// Every field of s is assigned: it may hold an older command's save
	// (the pointers only where they differ: see set).
	set(&s.t, t)
	setSlice(&s.children, t.Children)
	setSlice(&s.parents, t.Parents)
	set(&s.env, t.Env)
	if s.notes != nil || t.Notes != nil {
		s.notes = t.Notes
	}
	s.completedAt, s.delayUntil, s.completeSeq, s.delayCount, s.work = t.CompletedNs, t.DelayUntilNs, t.CompleteSeq, t.DelayCount, t.Work
	s.guard, s.exec, s.complete, s.active = t.GuardAction, t.ExecType, t.Complete, t.active
}

func (j *journal) saveArc(a *ArcToken) {
	a.epoch = j.epoch
	s := grow(&j.arcs)
	// Every field of s is assigned: it may hold an older command's save
	// (the pointers only where they differ: see set).
	set(&s.a, a)
	set(&s.child, a.Child)
	set(&s.nextWaiting, a.nextWaiting)
	s.completedAt = a.CompletedNs
	s.exec, s.pending, s.complete, s.active = a.ExecType, a.Pending, a.Complete, a.active
}

// grow makes *list one element longer and returns that element, for the
// caller to assign every field of: an element left by an earlier command
// is reused as it is. Where there is room it only cuts the slice longer,
// which writes no pointer (each pointer written costs a write barrier while
// the collector marks).
func grow[T any](list *[]T) *T {
	n := len(*list)
	if n < cap(*list) {
		*list = (*list)[:n+1]
	} else {
		var zero T
		*list = append(*list, zero)
	}
	return &(*list)[n]
}

// set assigns v to *dst unless *dst holds it already. While the collector
// marks, every pointer written costs a write barrier, and a journal's save
// often holds what the same slot held in the last command (the same
// process, run command after command).
func set[T comparable](dst *T, v T) {
	if *dst != v {
		*dst = v
	}
}

// setSlice is set for slices: it skips the write when *dst is v already
// (the same array, length and capacity).
func setSlice[T any](dst *[]T, v []T) {
	if d := *dst; unsafe.SliceData(d) != unsafe.SliceData(v) || len(d) != len(v) || cap(d) != cap(v) {
		*dst = v
	}
}

// saveEnv saves an environment's handle; its attributes are marked shared
// so that the write about to happen copies them and leaves the saved ones
// as they are.
func (j *journal) saveEnv(e *Env) {
	e.epoch = j.epoch
	e.d.share()
	j.envs = append(j.envs, envSave{e, *e})
}

// rollback restores everything the journal saved, newest first.
func (j *journal) rollback() {
	for i := len(j.envs) - 1; i >= 0; i-- {
		*j.envs[i].e = j.envs[i].v
	}
	for i := len(j.arcs) - 1; i >= 0; i-- {
		s := &j.arcs[i]
		a := s.a
		a.Child, a.nextWaiting, a.CompletedNs, a.ExecType = s.child, s.nextWaiting, s.completedAt, s.exec
		a.Pending, a.Complete, a.active = s.pending, s.complete, s.active
	}
	for i := len(j.nodes) - 1; i >= 0; i-- {
		s := &j.nodes[i]
		t := s.t
		t.Children, t.Parents, t.Env = s.children, s.parents, s.env
		t.CompletedNs, t.DelayUntilNs, t.CompleteSeq, t.DelayCount = s.completedAt, s.delayUntil, s.completeSeq, s.delayCount
		t.Work, t.Notes = s.work, s.notes
		t.GuardAction, t.ExecType, t.Complete, t.active = s.guard, s.exec, s.complete, s.active
	}
	for i := len(j.procs) - 1; i >= 0; i-- {
		s := &j.procs[i]
		p := s.p
		p.Env, p.asyncQueue, p.UpdatedAt, p.Seq, p.EventSeq = s.env, s.asyncQueue, s.updatedAt, s.seq, s.eventSeq
		p.Nested, p.NodeTokens, p.ArcTokens, p.TokenSets = p.Nested[:s.nNested], p.NodeTokens[:s.nNodes], p.ArcTokens[:s.nArcs], p.TokenSets[:s.nSets]
		p.Events, p.eventNames = p.Events[:s.nEvents], p.eventNames[:s.nNames]
		p.Effects = p.Effects[:s.nEffects]
		p.Listeners, p.Context, p.Ext, p.ExtData = s.listeners, s.context, s.ext, s.extData
		p.activeNodes, p.activeArcs = int(s.active[0]), int(s.active[1])
		p.State, p.Dirty, p.inLoop = s.state, s.dirty, s.inLoop
		p.waiting, p.readyArcs = s.waitingArr, s.readyArr
		copy(p.waiting, j.waitBuf[s.waitAt:])
		copy(p.readyArcs, j.readyBuf[s.readyAt:])
		p.queue, p.queueHead = append(p.queue[:0], j.queueBuf[s.queueAt:s.queueAt+s.nQueue]...), 0
	}
}

// The change hooks: each saves the object before the command first
// changes it. Outside a command (epoch 0) they may save an object into the
// idle journal, which the next command's begin forgets: harmless, and one
// comparison cheaper than asking whether a command runs.

func (e *Engine) mutP(p *Process) {
	if p.epoch != e.j.epoch {
		e.j.saveProc(p)
	}
}

// enter saves p and its ancestors: the command has come to p's process.
func (e *Engine) enter(p *Process) {
	for ; p != nil; p = p.Parent {
		e.mutP(p)
	}
}

// saved asserts that p is saved in the running command's journal (or was
// created by the command), in builds with the veenajournal tag; elsewhere
// it costs nothing.
func (e *Engine) saved(p *Process) {
	if checkJournal && e.j.epoch != 0 && p.epoch != e.j.epoch {
		panic(fmt.Sprintf("kernel: process %s changed by a command that did not save it first", p.ID))
	}
}

// savedN asserts that node token t is saved (or new), as saved does for
// processes.
func (e *Engine) savedN(t *NodeToken) {
	if checkJournal && e.j.epoch != 0 && t.epoch != e.j.epoch {
		panic(fmt.Sprintf("kernel: node token %s changed by a command that did not save it first", t.Label()))
	}
}

func (e *Engine) mutN(t *NodeToken) {
	if t.epoch != e.j.epoch {
		e.j.saveNode(t)
	}
}

func (e *Engine) mutA(a *ArcToken) {
	if a.epoch != e.j.epoch {
		e.j.saveArc(a)
	}
}
