package kernel

import (
	"time"

	"github.com/veena-wf/veena/graph"
)

// State is the life-cycle state of a process.
type State uint8

// The process states.
const (
	Created State = iota
	Executing
	PendingCompletion
	Completed
	PendingCancel
	Canceled
)

var stateNames = [...]string{"created", "executing", "pending_completion", "completed", "pending_cancel", "canceled"}

func (s State) String() string { return stateNames[s] }

// ParseState maps a state name of the API onto a State.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// IsComplete is true in pending_completion and completed.
func (s State) IsComplete() bool { return s == PendingCompletion || s == Completed }

// IsCanceled is true in pending_cancel and canceled.
func (s State) IsCanceled() bool { return s == PendingCancel || s == Canceled }

// ExecutionType says how a token came to be: forward execution, or one of
// the kinds backtracking creates and marks.
type ExecutionType uint8

// The execution types.
const (
	Forward ExecutionType = iota
	ForwardBacktracked
	Backtracked
	UTurn
	UTurnBacktracked
)

var execNames = [...]string{"forward", "forward_backtracked", "backtracked", "uturn", "uturn_backtracked"}
var execShort = [...]string{"F", "FB", "B", "U", "UB"}

func (x ExecutionType) String() string { return execNames[x] }

// Short is the TestProcess notation of the type: F, FB, B, U or UB.
func (x ExecutionType) Short() string { return execShort[x] }

// IsBacktracked is true for forward_backtracked, backtracked and uturn_backtracked.
func (x ExecutionType) IsBacktracked() bool {
	return x == ForwardBacktracked || x == Backtracked || x == UTurnBacktracked
}

// backtracked is the type a token of this type takes when it is backtracked.
func (x ExecutionType) backtracked(complete bool) ExecutionType {
	switch x {
	case Forward:
		return ForwardBacktracked
	case UTurn:
		if complete {
			return UTurnBacktracked
		}
		return Backtracked
	}
	return x
}

// GuardAction is what a node's guard decided for a token.
type GuardAction uint8

// The guard actions; GuardNone means the guard has not run.
const (
	GuardNone GuardAction = iota
	Accept
	Discard
	Skip
	Delay
)

var guardNames = [...]string{"", "accept", "discard", "skip", "delay"}

func (g GuardAction) String() string { return guardNames[g] }

// GuardResult is the outcome of a guard: an action, the arc to skip to, or
// the time to delay until.
type GuardResult struct {
	Action  GuardAction
	ArcName string    // for Skip: the exit arc name, "" for the default arcs
	Until   time.Time // for Delay
}

// Membership places a token in a token set at a member index.
type Membership struct {
	Set    *TokenSet
	Member int
}

// NodeToken is a token placed on a node. Its history (parents, children,
// guard action, completion) is kept for the life of the process.
type NodeToken struct {
	ID          int   // position in Process.NodeTokens
	Seq         int64 // per-process creation sequence, shared with arc tokens
	CompleteSeq int64 // sequence number taken when the token completed (0 while active)
	Process     *Process
	Node        *graph.Node
	Parents     []*ArcToken
	Children    []*ArcToken
	GuardAction GuardAction
	ExecType    ExecutionType
	Complete    bool
	// Work is the outside work the token holds open (see work.go).
	Work   WorkFlags
	active bool // (beside the other one-byte fields: a token is 16 bytes smaller)
	// CreatedNs and CompletedNs are when it was created and completed,
	// DelayUntilNs when a delayed token's guard runs again: Unix
	// nanoseconds, 0 for none (CreatedAt, CompletedAt and DelayUntil read
	// them as times). Times are kept as numbers so that a token has no
	// pointer to a time zone for the garbage collector to follow.
	CreatedNs, CompletedNs, DelayUntilNs int64
	Env                                  *Env // the token's own attributes, shared copy-on-write
	Sets                                 []Membership
	DelayCount                           int
	// Notes is what the token's node type keeps about it while it runs (a
	// subscription's name and key, the token a boundary event is attached
	// to, a loop counter): stored with the token, never inherited by other
	// tokens and not part of any environment. Nil when there is none.
	Notes map[string]string

	epoch   uint64       // the journal epoch that saved it last
	parent1 [1]*ArcToken // backing of Parents when there is one parent
	child1  [1]*ArcToken // backing of Children when there is one child
}

// ArcToken is a token on an arc, between the node token it left and the
// node token it completed into.
type ArcToken struct {
	ID       int
	Seq      int64
	Process  *Process
	Arc      *graph.Arc
	Parent   *NodeToken
	Child    *NodeToken // nil while it waits
	Pending  bool       // created but not yet processed
	Complete bool
	ExecType ExecutionType
	active   bool // processed, incomplete, waiting at its end node
	Sets     []Membership
	// CreatedNs and CompletedNs are when it was created and completed:
	// Unix nanoseconds, 0 for none (see CreatedAt and CompletedAt).
	CreatedNs, CompletedNs int64

	nextWaiting *ArcToken // the next token waiting on the same arc
	epoch       uint64    // the journal epoch that saved it last
}

// nsTime is a time kept as Unix nanoseconds as a time in UTC, the zero
// time for 0.
func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// TimeNs is t in Unix nanoseconds as tokens keep times, 0 for the zero time.
func TimeNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// CreatedAt is when the token was created.
func (t *NodeToken) CreatedAt() time.Time { return nsTime(t.CreatedNs) }

// CompletedAt is when the token completed, the zero time while it has not.
func (t *NodeToken) CompletedAt() time.Time { return nsTime(t.CompletedNs) }

// DelayUntil is when a delayed token's guard runs again, the zero time if
// it is not delayed until a time.
func (t *NodeToken) DelayUntil() time.Time { return nsTime(t.DelayUntilNs) }

// CreatedAt is when the token was created.
func (a *ArcToken) CreatedAt() time.Time { return nsTime(a.CreatedNs) }

// CompletedAt is when the token completed, the zero time while it has not.
func (a *ArcToken) CompletedAt() time.Time { return nsTime(a.CompletedNs) }

// TokenSet groups tokens created together by a completion with a new token
// set, so that a tokenSet join can wait for all of them.
type TokenSet struct {
	ID             int
	Name           string
	MaxMemberIndex int
	Level          int
	Env            *Env // shared by all members

	members []*Env // one per member index, 0..MaxMemberIndex
}

// NewTokenSet makes a token set of count members with empty member
// environments (stores use it to decode a process; commands create sets
// with Engine.CompleteWithNewTokenSet).
func NewTokenSet(id int, name string, count, level int, env *Env) *TokenSet {
	if env == nil {
		env = NewEnv()
	}
	s := &TokenSet{ID: id, Name: name, MaxMemberIndex: count - 1, Level: level, Env: env}
	s.members = make([]*Env, max(count, 0))
	for i := range s.members {
		s.members[i] = NewEnv()
	}
	return s
}

// MemberEnv is the per-member environment of the set.
func (s *TokenSet) MemberEnv() MemberEnv { return MemberEnv{s} }

// ListenerRef is a process-level execution listener, by registered name.
type ListenerRef struct {
	Name string
	Mask EventMask
}

// Process is one execution of a graph, with its whole token history.
// Nested processes hang off their parent; a command works on the whole tree.
type Process struct {
	ID    string
	Graph *graph.Graph
	State State
	// Dirty is set when a command changes the process; the caller clears it.
	// (The one-byte fields share a word: a process is 16 bytes smaller.)
	Dirty       bool
	inLoop      bool
	Env         *Env
	Parent      *Process   // nil unless nested
	ParentToken *NodeToken // the node token of the parent that started it
	Nested      []*Process // nested processes, in creation order
	NodeTokens  []*NodeToken
	ArcTokens   []*ArcToken
	TokenSets   []*TokenSet
	Listeners   []ListenerRef
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Context holds the pairs that route incoming events to this process
	// (the engine indexes them while the process executes). Replace the
	// map, or set Dirty, when changing it.
	Context map[string]string
	// Ext is a format's own state of the process, ExtData its stored
	// encoding until the format decodes it (see Extension).
	Ext     Extension
	ExtData []byte

	// Seq is the last creation sequence number handed out.
	Seq int64
	// EventSeq is the number of events fired in the process so far.
	EventSeq int64
	// Events are the events fired by the current command, for the caller to
	// store and publish; the caller clears it.
	Events []EventRecord
	// Effects are what the current command asks the engine to write
	// beside the process (tasks, jobs, incidents; see work.go); the caller
	// takes and clears them with the events.
	Effects []Effect
	// eventNames holds the arc-name lists of the events in Events.
	eventNames [][]string

	epoch   uint64   // the journal epoch that saved it last
	journal *journal // on a tree's root while a command runs on it

	activeNodes int
	activeArcs  int
	waiting     []waitList  // per arc index: the arc tokens waiting there (not at or joins)
	readyArcs   []int       // per node index: input arcs holding a waiting token outside every set
	queue       []*ArcToken // arc tokens to execute; queue[queueHead:] are waiting
	queueHead   int
	asyncQueue  []*ArcToken
	nodeSlab    []NodeToken // tokens are allocated in growing slabs
	arcSlab     []ArcToken
}

// enqueue adds an arc token to the execution queue.
func (p *Process) enqueue(a *ArcToken) { p.queue = append(p.queue, a) }

// dequeue takes the next arc token from the execution queue. The queue's
// array is kept for the next command once it is empty.
func (p *Process) dequeue() *ArcToken {
	a := p.queue[p.queueHead]
	p.queue[p.queueHead] = nil
	p.queueHead++
	if p.queueHead == len(p.queue) {
		p.queue, p.queueHead = p.queue[:0], 0
	}
	return a
}

// queued is the number of arc tokens waiting in the execution queue.
func (p *Process) queued() int { return len(p.queue) - p.queueHead }

// allocNodeToken hands out the next node token of the current slab, zero
// (slabs are never reused). Slabs are handed out from their end: cutting a
// slice's length writes no pointer, where moving its start would, and
// each pointer written costs a write barrier while the collector marks.
func (p *Process) allocNodeToken() *NodeToken {
	if len(p.nodeSlab) == 0 {
		n := cap(p.NodeTokens) - len(p.NodeTokens) // the tokens expected from the graph's last start
		if n < 1 {
			n = len(p.NodeTokens)
		}
		p.nodeSlab = make([]NodeToken, min(max(1, n), 256))
	}
	n := len(p.nodeSlab) - 1
	t := &p.nodeSlab[n]
	p.nodeSlab = p.nodeSlab[:n]
	return t
}

// allocArcToken hands out the next arc token of the current slab, zero,
// from its end as allocNodeToken does.
func (p *Process) allocArcToken() *ArcToken {
	if len(p.arcSlab) == 0 {
		n := cap(p.ArcTokens) - len(p.ArcTokens)
		if n < 1 {
			n = len(p.ArcTokens)
		}
		p.arcSlab = make([]ArcToken, min(max(1, n), 256))
	}
	n := len(p.arcSlab) - 1
	a := &p.arcSlab[n]
	p.arcSlab = p.arcSlab[:n]
	return a
}

// Event is p.Events[i] with its process, to read its tokens and names by.
func (p *Process) Event(i int) Event {
	r := &p.Events[i]
	return Event{EventRecord: *r, Process: p, Seq: p.EventSeq - int64(len(p.Events)-i) + 1, Type: r.EventType(), ExitArcs: r.Exits()}
}

// EventList is every event in p.Events with its process.
func (p *Process) EventList() []Event {
	out := make([]Event, len(p.Events))
	for i := range p.Events {
		out[i] = p.Event(i)
	}
	return out
}

// Root returns the top of the process's nesting tree.
func (p *Process) Root() *Process {
	for p.Parent != nil {
		p = p.Parent
	}
	return p
}

// Walk calls fn for p and every nested process below it, parents first.
func (p *Process) Walk(fn func(*Process)) {
	fn(p)
	for _, c := range p.Nested {
		c.Walk(fn)
	}
}

// Find returns the process with that id in p's tree, or nil.
func (p *Process) Find(id string) *Process {
	var found *Process
	p.Root().Walk(func(q *Process) {
		if q.ID == id {
			found = q
		}
	})
	return found
}

// ActiveNodeTokens returns the active node tokens in creation order.
func (p *Process) ActiveNodeTokens() []*NodeToken {
	var out []*NodeToken
	for _, t := range p.NodeTokens {
		if t.active {
			out = append(out, t)
		}
	}
	return out
}

// ActiveArcTokens returns the arc tokens waiting at joins, in creation order.
func (p *Process) ActiveArcTokens() []*ArcToken {
	var out []*ArcToken
	for _, a := range p.ArcTokens {
		if a.active {
			out = append(out, a)
		}
	}
	return out
}

// Active reports whether the token is in the process's active list.
func (t *NodeToken) Active() bool { return t.active }

// Active reports whether the arc token waits at its end node.
func (a *ArcToken) Active() bool { return a.active }

// Note returns one of the token's notes ("" when absent).
func (t *NodeToken) Note(key string) string { return t.Notes[key] }

// setNote sets one of the token's notes; "" removes it. The map is
// replaced, never changed in place, so that a journal's copy of the token
// keeps the notes it had.
func (t *NodeToken) setNote(key, value string) {
	notes := make(map[string]string, len(t.Notes)+1)
	for k, v := range t.Notes {
		notes[k] = v
	}
	if value == "" {
		delete(notes, key)
	} else {
		notes[key] = value
	}
	if len(notes) == 0 {
		notes = nil
	}
	t.Notes = notes
	t.Process.Dirty = true
}

// FullEnv is the token's environment over its process's: reads prefer the
// token, writes go to the token.
func (t *NodeToken) FullEnv() FullEnv { return FullEnv{t} }

// Membership returns the token's first membership of a set with that name.
func (t *NodeToken) Membership(name string) (Membership, bool) {
	for _, m := range t.Sets {
		if m.Set.Name == name {
			return m, true
		}
	}
	return Membership{}, false
}

// MemberEnv is the environment of this member of the set: reads and writes
// go to the set's member environment at the membership's index.
func (m Membership) MemberEnv() *Env {
	if m.Set == nil || m.Member < 0 || m.Member >= len(m.Set.members) {
		return NewEnv()
	}
	return m.Set.members[m.Member]
}

// writableEnv returns the token's own environment for a write, creating it
// if the token has none. (Env copies shared attributes itself.)
func (t *NodeToken) writableEnv() *Env {
	if t.Env == nil {
		p := t.Process
		if j := p.Root().journal; j != nil && t.epoch != j.epoch {
			j.saveNode(t)
		}
		epoch := uint64(0)
		if j := p.Root().journal; j != nil {
			epoch = j.epoch
		}
		t.Env = NewEnv().adopt(p, epoch)
	} else if t.Env.owner == nil {
		t.Env.owner = t.Process
	}
	t.Process.Dirty = true
	return t.Env
}

// SetAttr sets an attribute of the token's own environment.
func (t *NodeToken) SetAttr(name string, v Value) { t.writableEnv().Set(name, v) }

// RemoveAttr removes an attribute of the token's own environment.
func (t *NodeToken) RemoveAttr(name string) {
	if t.Env.Has(name) {
		t.writableEnv().Remove(name)
	}
}

// SetTransient sets a transient attribute of the token's own environment.
func (t *NodeToken) SetTransient(name string, v any) { t.writableEnv().SetTransient(name, v) }

// Attr reads an attribute of the token's own environment.
func (t *NodeToken) Attr(name string) (Value, bool) { return t.Env.Get(name) }

// FullEnv reads a token's attributes over its process's.
type FullEnv struct{ t *NodeToken }

// Get reads the token attribute, or else the process attribute.
func (f FullEnv) Get(name string) (Value, bool) {
	if v, ok := f.t.Env.Get(name); ok {
		return v, true
	}
	return f.t.Process.Env.Get(name)
}

// Has reports whether the token or the process has the persistent attribute.
func (f FullEnv) Has(name string) bool { return f.t.Env.Has(name) || f.t.Process.Env.Has(name) }

// HasTransient reports whether the token or the process has the transient attribute.
func (f FullEnv) HasTransient(name string) bool {
	return f.t.Env.HasTransient(name) || f.t.Process.Env.HasTransient(name)
}

// Transient reads a transient attribute of the token, or else of the process.
func (f FullEnv) Transient(name string) (any, bool) {
	if v, ok := f.t.Env.Transient(name); ok {
		return v, true
	}
	return f.t.Process.Env.Transient(name)
}

// Set writes to the token's own environment.
func (f FullEnv) Set(name string, v Value) { f.t.SetAttr(name, v) }

// Remove removes from the token's own environment.
func (f FullEnv) Remove(name string) { f.t.RemoveAttr(name) }

// SetTransient sets a transient attribute in the token's own environment.
func (f FullEnv) SetTransient(name string, v any) { f.t.SetTransient(name, v) }

// RemoveTransient removes a transient attribute from the token's own environment.
func (f FullEnv) RemoveTransient(name string) {
	if f.t.Env.HasTransient(name) {
		f.t.writableEnv().RemoveTransient(name)
	}
}

// Map returns the merged persistent attributes (process, then token over
// it) as a new map, nil when there are none.
func (f FullEnv) Map() map[string]Value { return mergedAttrs(f.t.Process.Env.data(), f.t.Env.data()) }

// mergedAttrs is the persistent attributes of under with those of over
// over them, as a new map, nil when there are none.
func mergedAttrs(under, over *envData) map[string]Value {
	n := 0
	if under != nil {
		n += len(under.attrs)
	}
	if over != nil {
		n += len(over.attrs)
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]Value, n)
	if under != nil {
		for k, v := range under.attrs {
			m[k] = v
		}
	}
	if over != nil {
		for k, v := range over.attrs {
			m[k] = v
		}
	}
	return m
}

// Copy returns the merged attributes (process, then token over it) as a new Env.
func (f FullEnv) Copy() *Env {
	e := f.t.Process.Env.Clone()
	e.Import(f.t.Env)
	return e
}
