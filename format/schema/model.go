package schema

import (
	"time"

	"github.com/veena-wf/veena/graph"
)

// Format is the format name of schema definitions.
const Format = "schema"

// The node kinds of a schema, as the seed names them: the root node where
// an instance starts, execution nodes that run their actions, logical
// event and timer nodes that wait before running theirs, and terminators
// that end the instance.
const (
	KindRoot       = "root"
	KindExecution  = "execution"
	KindEvent      = "event"
	KindTimer      = "timer"
	KindTerminator = "terminator"
)

// NodeType is the graph node type of a schema node kind ("schema.root", …).
func NodeType(kind string) string { return "schema." + kind }

// The built-in actions.
const (
	ActAlmanacSet       = "almanac.set"
	ActAlmanacUnset     = "almanac.unset"
	ActAlmanacSetParent = "almanac.setParent"
	ActAlmanacSetChild  = "almanac.setChild"
	ActContextSet       = "context.set"
	ActEmit             = "emit"
	ActChildStart       = "child.start"
)

// Builtin reports whether an action name is one of the built-in actions.
func Builtin(do string) bool {
	switch do {
	case ActAlmanacSet, ActAlmanacUnset, ActAlmanacSetParent, ActAlmanacSetChild, ActContextSet, ActEmit, ActChildStart:
		return true
	}
	return false
}

// Where an emitted event goes (emit's with.to).
const (
	ToParent   = "parent"
	ToChildren = "children"
	ToContext  = "context"
)

// Schema is one schema of a file, compiled: the top-level schema or one of
// its children (any depth). It is the Props of its graph.
type Schema struct {
	// Name is the definition name: the file's "schema" for the top level,
	// "<parent name>.<child schema>" for a child.
	Name string
	// Local is the name as written in the file ("schema").
	Local       string
	Description string
	Pos         graph.Pos
	// ContextKeys are the schema's own context keys; Inherit the parent
	// keys a child copies into its context.
	ContextKeys []string
	Inherit     []string
	Trigger     *Trigger
	// Almanac is the initial almanac, in file order.
	Almanac []Entry
	// QueueLimit is how many events an instance keeps for later while it
	// does not wait for them (default DefaultQueueLimit).
	QueueLimit int
	Nodes      []*Node
	Children   []*Schema
	Parent     *Schema // nil for the top level

	hash string // of the file (top level) or of the child's own content
}

// DefaultQueueLimit is how many events an instance queues by default.
const DefaultQueueLimit = 100

// RoutingKeys are the context keys that identify an instance of this
// schema: the inherited keys, then its own, each once.
func (s *Schema) RoutingKeys() []string {
	out := make([]string, 0, len(s.Inherit)+len(s.ContextKeys))
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, s.Inherit...), s.ContextKeys...) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Node returns the node with that id, or nil.
func (s *Schema) Node(id string) *Node {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Child returns the direct child schema with that local name, or nil.
func (s *Schema) Child(local string) *Schema {
	for _, c := range s.Children {
		if c.Local == local {
			return c
		}
	}
	return nil
}

// Root returns the root node.
func (s *Schema) Root() *Node {
	for _, n := range s.Nodes {
		if n.Kind == KindRoot {
			return n
		}
	}
	return nil
}

// Entry is one initial almanac entry: a key and a literal JSON value.
type Entry struct {
	Key   string
	Value any // string, json.Number, bool, nil, map[string]any, []any
}

// Trigger says which events create instances of a schema: events of that
// name routed by context that reach no instance (or, with FromParent,
// events a parent emits to its children), when the condition holds.
type Trigger struct {
	Event      string
	When       *Expr
	FromParent bool
	Pos        graph.Pos
}

// Node is a node of a schema: its kind, what it waits for, its ordered
// actions and its ordered connections.
type Node struct {
	ID          string
	Kind        string
	Label       string
	Description string
	Pos         graph.Pos
	Event       *EventWait // event nodes
	Timer       *TimerWait // timer nodes
	Actions     []*Action
	Next        []*Next
}

// EventWait is what an event node waits for: an event of that name routed
// to the instance, for which the filter (if any) holds.
type EventWait struct {
	Name string
	When *Expr
}

// TimerWait is what a timer node waits for: a duration after the node was
// entered, or the time an expression gives.
type TimerWait struct {
	After time.Duration
	At    *Expr
}

// Action is one action of a node: a built-in, an action registered from Go
// (Do), or a job for outside programs (Job).
type Action struct {
	ID     string
	Do     string // built-in or registered action; "" for a job
	Job    string // job type; "" unless done by an outside program
	With   *Arg   // arguments (nil: none)
	Result string // almanac key that receives the result
	Retry  Retry
	// Timeout bounds one attempt of a registered action; after it another
	// engine may try again (default DefaultActionTimeout).
	Timeout time.Duration
	Pos     graph.Pos
}

// DefaultActionTimeout bounds an attempt of a registered action unless the
// action says otherwise.
const DefaultActionTimeout = 30 * time.Second

// Name is what the action does: its Do, or "job:<type>".
func (a *Action) Name() string {
	if a.Job != "" {
		return "job:" + a.Job
	}
	return a.Do
}

// Retry says how often a failing action is tried again, and after how
// long; after the last failure an incident opens.
type Retry struct {
	Max   int
	Delay time.Duration
}

// Next is one connection out of a node: taken when its condition holds
// (no condition: the default), the first that holds wins.
type Next struct {
	To    string
	When  *Expr
	Label string
	Arc   string // the name of the graph arc it compiles to
	Pos   graph.Pos
}
