package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/veena-wf/veena/kernel"
)

// The states of a node instance.
const (
	NodeWaiting   = "waiting"   // an event or timer node before its event or time
	NodeRunning   = "running"   // running its actions
	NodeCompleted = "completed" // its actions done and a connection taken
	NodeFailed    = "failed"    // an action failed for good or no connection held: an incident
	NodeCanceled  = "canceled"  // the instance was cancelled while it was here
)

// The states of an action instance.
const (
	ActionPending   = "pending"   // not started
	ActionRunning   = "running"   // started, its result not yet in
	ActionRetrying  = "retrying"  // failed, to be tried again at its due time
	ActionCompleted = "completed" // done; its result is kept
	ActionFailed    = "failed"    // failed after its last attempt
	ActionCanceled  = "canceled"  // never finished: the instance was cancelled
)

// instance is a schema instance's own state, kept with its process
// (kernel.Extension): the node instances, one per visit, with their action
// instances, and the events queued for later. The almanac is the process
// environment; the context the process context.
type instance struct {
	Nodes []*nodeInstance `json:"nodes,omitempty"`
	// Queue holds events that arrived while the instance was not waiting
	// for them, in arrival order.
	Queue []*kernel.Message `json:"queue,omitempty"`
	// Start is the event (or request) that created the instance.
	Start *kernel.Message `json:"start,omitempty"`
	// Dropped counts events dropped because the queue was full or the
	// instance had ended.
	Dropped int `json:"dropped,omitempty"`
	// Trimmed counts the oldest finished node instances no longer kept
	// (see maxVisitsKept).
	Trimmed int `json:"trimmed,omitempty"`
	// byToken indexes Nodes by node token id.
	byToken map[int]*nodeInstance
}

// nodeInstance is one visit of a node: its node token, state, times, the
// event it consumed and its action instances.
type nodeInstance struct {
	Token      int             `json:"token"`
	Node       string          `json:"node"`
	Kind       string          `json:"kind"`
	State      string          `json:"state"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	Due        *time.Time      `json:"due,omitempty"` // a timer node's time
	Event      *kernel.Message `json:"event,omitempty"`
	Actions    []*actionInst   `json:"actions"`
	Cursor     int             `json:"cursor"`          // the action running or next
	Arc        string          `json:"arc,omitempty"`   // the connection taken
	Error      string          `json:"error,omitempty"` // why it failed
	Incident   string          `json:"incident,omitempty"`
	Children   []string        `json:"children,omitempty"` // instances its actions started
}

// actionInst is one action's instance in one visit.
type actionInst struct {
	Name       string     `json:"name"`
	Do         string     `json:"do"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Due        *time.Time `json:"due,omitempty"` // when a retry or a running attempt is taken up
	Args       any        `json:"args,omitempty"`
	Result     any        `json:"result,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// EncodeExt implements kernel.Extension.
func (s *instance) EncodeExt() ([]byte, error) { return json.Marshal(s) }

// stateOf returns the instance state of a schema process, decoding it from
// the stored bytes the first time.
func stateOf(p *kernel.Process) (*instance, error) {
	if s, ok := p.Ext.(*instance); ok {
		return s, nil
	}
	s := &instance{}
	if len(p.ExtData) > 0 {
		if err := json.Unmarshal(p.ExtData, s); err != nil {
			return nil, fmt.Errorf("schema instance %s: decode its state: %w", p.ID, err)
		}
	}
	s.byToken = make(map[int]*nodeInstance, len(s.Nodes))
	for _, n := range s.Nodes {
		s.byToken[n.Token] = n
	}
	p.Ext = s
	p.ExtData = nil
	return s, nil
}

// cowKey marks, for one command, a process whose state it already copied.
type cowKey struct{ p *kernel.Process }

// mustState is stateOf inside a command, for changing the state: the
// first time in a command, the process is saved in the command's undo
// journal and given a copy of its state (the visits that may still change
// copied deeply), so that a command that fails leaves the state it found.
// A state that cannot be read fails the command.
func mustState(e *kernel.Engine, p *kernel.Process) *instance {
	s, err := stateOf(p)
	if err != nil {
		e.Fail(err)
	}
	if e.Value(cowKey{p}) != nil {
		return s
	}
	e.SaveProcess(p)
	c := s.clone()
	p.Ext = c
	e.SetValue(cowKey{p}, true)
	return c
}

// clone copies the state; finished visits are shared (nothing changes
// them again).
func (s *instance) clone() *instance {
	c := &instance{Queue: slices.Clone(s.Queue), Start: s.Start, Dropped: s.Dropped, Trimmed: s.Trimmed,
		Nodes: make([]*nodeInstance, len(s.Nodes)), byToken: make(map[int]*nodeInstance, len(s.Nodes))}
	for i, n := range s.Nodes {
		if n.State != NodeCompleted {
			x := *n
			x.Actions = make([]*actionInst, len(n.Actions))
			for j, a := range n.Actions {
				y := *a
				x.Actions[j] = &y
			}
			x.Children = slices.Clone(n.Children)
			n = &x
		}
		c.Nodes[i] = n
		c.byToken[n.Token] = n
	}
	return c
}

func (s *instance) node(token int) *nodeInstance { return s.byToken[token] }

// maxVisitsKept bounds the node instances an instance keeps: a
// conversation that loops for months would otherwise carry (and rewrite
// at every step) its whole history. The oldest finished visits go first;
// the token history keeps every visit.
const maxVisitsKept = 500

func (s *instance) add(n *nodeInstance) {
	s.Nodes = append(s.Nodes, n)
	s.byToken[n.Token] = n
	if len(s.Nodes) > maxVisitsKept {
		drop := len(s.Nodes) - maxVisitsKept
		kept := s.Nodes[:0:0]
		for i, x := range s.Nodes {
			if i < drop && (x.State == NodeCompleted) {
				delete(s.byToken, x.Token)
				s.Trimmed++
				continue
			}
			kept = append(kept, x)
		}
		s.Nodes = kept
	}
}

func timePtr(t time.Time) *time.Time { return &t }
