package veena

import (
	"errors"
	"time"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// Value is a typed environment attribute (string, integer, float, boolean, date).
type Value = kernel.Value

// Definition is one version of a loaded process definition, as the API shows it.
type Definition struct {
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Format    string    `json:"format"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
	Nodes     []Node    `json:"nodes"`
	Arcs      []Arc     `json:"arcs"`
	// Net is a Petri net's places, transitions and arcs with their
	// markings, annotations and weights (nil for other formats).
	Net *NetView `json:"net,omitempty"`
	// Label is the definition's display name (a BPMN process's name).
	Label string `json:"label,omitempty"`
	// Related names the other definitions loaded from the same file (a
	// BPMN file with several executable processes, a schema's children).
	Related []string `json:"related,omitempty"`
	// Warnings are the static checks' findings (unreachable elements,
	// joins that can deadlock, …), each with the line and column of the
	// element it names.
	Warnings []Problem `json:"warnings,omitempty"`
	// Detail is what the definition's format says of it beyond nodes and
	// arcs (a schema's context keys, trigger, initial almanac).
	Detail any `json:"detail,omitempty"`
}

// Problem is a message about a definition, with where it is in the file.
type Problem = graph.Problem

// Node is a node of a definition. External is the instance it was imported
// through ("" for the definition's own nodes).
type Node struct {
	Name      string `json:"name"`
	External  string `json:"external"`
	Type      string `json:"type"`
	Start     bool   `json:"start"`
	Join      string `json:"join"`
	JoinParam string `json:"joinParam"`
	Guard     string `json:"guard"`
	// Label is the display name (BPMN name, PNML name text); Kind the
	// element the node was compiled from (userTask, exclusiveGateway, …;
	// "node", "wait", … for Sarasvati nodes).
	Label string `json:"label"`
	Kind  string `json:"kind"`
	// Detail is what the format says of the node (a schema node's
	// actions, waits and connections).
	Detail any `json:"detail,omitempty"`
}

// Arc is an arc of a definition; Name is nil for the default arc.
type Arc struct {
	From         string  `json:"from"`
	To           string  `json:"to"`
	Name         *string `json:"name"`
	FromExternal string  `json:"fromExternal"`
	ToExternal   string  `json:"toExternal"`
}

// Process is a process as the API shows it. Env holds persistent attributes only.
type Process struct {
	ID          string           `json:"id"`
	Definition  string           `json:"definition"`
	Version     int              `json:"version"`
	State       string           `json:"state"`
	Env         map[string]Value `json:"env"`
	ParentToken *string          `json:"parentToken"`
	// Parent is the process that started this one as a detached child
	// (a schema's child instance); "" otherwise.
	Parent    string            `json:"parent,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
	// WaitingAt is where an executing process waits: its active node
	// tokens and the joins where arc tokens wait (up to 20 in lists;
	// WaitingMore counts the others).
	WaitingAt   []Wait `json:"waitingAt"`
	WaitingMore int    `json:"waitingMore,omitempty"`
	// Stalled is true for an executing process that cannot move on by
	// itself: it has no active node token, only arc tokens waiting at
	// joins that nothing will complete. Stall (on a single process) says
	// which join waits for which arcs.
	Stalled bool          `json:"stalled"`
	Stall   []StalledJoin `json:"stall,omitempty"`
	// TimerFailures (on a single process) are delayed tokens whose guard
	// failed when their time came.
	TimerFailures []TimerFailure `json:"timerFailures,omitempty"`
}

// TokenSetRef is a token's membership in a token set.
type TokenSetRef struct {
	Set    string `json:"set"`
	Name   string `json:"name"`
	Member int    `json:"member"`
}

// NodeToken is a node token as the API shows it. Parents and Children are arc token ids.
type NodeToken struct {
	ID            string           `json:"id"`
	Process       string           `json:"process"`
	Node          string           `json:"node"`
	External      string           `json:"external"`
	Complete      bool             `json:"complete"`
	ExecutionType string           `json:"executionType"`
	GuardAction   *string          `json:"guardAction"`
	Parents       []string         `json:"parents"`
	Children      []string         `json:"children"`
	TokenSets     []TokenSetRef    `json:"tokenSets"`
	Env           map[string]Value `json:"env"`
	CreatedAt     time.Time        `json:"createdAt"`
	CompletedAt   *time.Time       `json:"completedAt"`
	DelayUntil    *time.Time       `json:"delayUntil,omitempty"`
}

// ArcToken is an arc token as the API shows it.
type ArcToken struct {
	ID            string        `json:"id"`
	Process       string        `json:"process"`
	Arc           Arc           `json:"arc"`
	Parent        string        `json:"parent"`
	Child         *string       `json:"child"`
	Pending       bool          `json:"pending"`
	Complete      bool          `json:"complete"`
	ExecutionType string        `json:"executionType"`
	TokenSets     []TokenSetRef `json:"tokenSets"`
}

// TokenHistory is every node and arc token of a process, in creation order,
// or a page of them (see Engine.TokenPage): Next is then the cursor of the
// next page, "" after the last.
type TokenHistory struct {
	NodeTokens []NodeToken `json:"nodeTokens"`
	ArcTokens  []ArcToken  `json:"arcTokens"`
	Next       string      `json:"next"`
}

// Event is one execution event of a process. ArcNames holds nil for the default arc.
type Event struct {
	Seq       int64     `json:"seq"`
	Process   string    `json:"process"`
	Type      string    `json:"type"`
	NodeToken *string   `json:"nodeToken"`
	ArcToken  *string   `json:"arcToken"`
	ArcNames  []*string `json:"arcNames"`
	At        time.Time `json:"at"`
}

// StartRequest starts a process of the named definition (Version 0 = latest).
type StartRequest struct {
	Definition string
	Version    int
	Env        map[string]any // attribute values: string, bool, numbers, time.Time, json.Number, Value
	// Context routes incoming events to this process (see SendEvent).
	Context map[string]string
	// IdempotencyKey, if set, makes a retry of the same start return the
	// first result (for Options.IdempotencyTTL).
	IdempotencyKey string
	// Setup, if set, prepares the new process before its start nodes run:
	// a format's initial state (see kernel.Engine.StartWith).
	Setup func(p *kernel.Process) error
	// Transient are transient attributes of the process environment (any
	// Go values) for the command: guards, scripts, node types and
	// listeners see them while it runs; they are never stored nor
	// answered, and the next command does not see them. They are not part
	// of the request an idempotency key is bound to.
	Transient map[string]any
	// User is who starts the process, for the audit trail.
	User string
	// Attachments are the process's named document references from the
	// start (cardinality 0 means 1).
	Attachments []Attachment
}

// CompleteRequest completes a node token. Arcs nil means the default arcs;
// a nil element names the default arcs; an empty non-nil slice takes no arc.
type CompleteRequest struct {
	Arcs           []*string
	Env            map[string]any // merged into the token's env first; nil values remove
	TokenSet       *TokenSetRequest
	IdempotencyKey string
	// Async completes the token but leaves its new arc tokens pending, for
	// Engine.ExecuteQueuedArcTokens to run (Sarasvati's
	// completeAsynchronous).
	Async bool
	// Transient are transient attributes set on the token's environment
	// for this command only (see StartRequest.Transient).
	Transient map[string]any
}

// EventRequest is an incoming event, routed by context (see SendEvent).
type EventRequest struct {
	Match          map[string]string // context pairs the process must hold
	Node           string            // the node whose active token the event completes; "" for the only one
	Env            map[string]any    // merged into the process environment
	IdempotencyKey string
	// Transient are transient attributes set on the process environment
	// for this command only: never stored, never answered (see
	// StartRequest.Transient).
	Transient map[string]any
}

// TokenSetRequest completes with a new token set on the single arc name given in Arcs.
type TokenSetRequest struct {
	Name      string
	Count     int
	Env       map[string]any
	MemberEnv map[string][]any
}

// ProcessFilter selects processes for listing; Limit defaults to 100 (max
// 1000). Every condition given must hold.
type ProcessFilter struct {
	Definition  string
	Version     int    // with Definition: that version only
	State       string // a state, or several separated by commas
	ParentToken string // nested processes started by this node token
	ID          string // an ID or the start of one
	Node        string // waiting at this node ("external:name" for an imported one)
	Stalled     bool   // stalled processes only
	// Context selects processes started with these context pairs, running or not.
	Context map[string]string
	// Search matches the start of an ID or any context value.
	Search string
	// CreatedAfter and CreatedBefore bound the creation time (from
	// inclusive, to exclusive); zero does not bound.
	CreatedAfter, CreatedBefore time.Time
	Oldest                      bool   // oldest first (default: newest first)
	NoTotal                     bool   // leave the total count out
	Limit                       int    //
	After                       string // cursor from the previous page's Next
}

// ProcessPage is one page of processes; Next is "" on the last page. Total
// counts every process the filter selects, up to TotalCap: with
// TotalCapped, there are at least that many.
type ProcessPage struct {
	Items       []Process `json:"items"`
	Next        string    `json:"next"`
	Total       int       `json:"total"`
	TotalCapped bool      `json:"totalCapped,omitempty"`
}

// Error codes of the API that are not kernel refusals.
var (
	ErrNotFound          = &kernel.Error{Code: "not_found", Msg: "not found"}
	ErrDefinitionInvalid = &kernel.Error{Code: "definition_invalid", Msg: "definition invalid"}
	ErrConflict          = &kernel.Error{Code: "conflict", Msg: "conflict"}
	ErrInvalidArgument   = kernel.ErrInvalidArgument
	ErrUnavailable       = &kernel.Error{Code: "store_unavailable", Msg: "the store is unavailable"}
)

// Code returns the stable error code of err ("internal" if it has none).
func Code(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return "internal"
}
