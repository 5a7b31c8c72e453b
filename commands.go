package veena

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/veena-wf/veena/kernel"
)

// An op is a command on an existing process tree written as data, so that
// it can wait in the tree's durable inbox and be applied there by any
// engine. Every command but a start is one: completing, backtracking and
// cancelling, patching an environment, an incoming event and a due timer.
// Its arguments are checked before it is queued; what depends on the
// state of the process is checked when it is applied.
type op struct {
	Kind    opKind `json:"kind"`
	Process string `json:"process"`         // the process it is addressed to
	Token   int    `json:"token,omitempty"` // node token index (complete, backtrack, token env, timer)

	// Arcs are the arc names a completion takes ("" the default arcs); nil
	// means the default arcs, an empty list no arc (so null and [] differ).
	Arcs     []string           `json:"arcs"`
	Env      map[string]*Value  `json:"env,omitempty"`      // attributes to merge (nil removes one)
	TokenSet *opTokenSet        `json:"tokenSet,omitempty"` // complete with a new token set
	Match    map[string]string  `json:"match,omitempty"`    // event: the context it matched
	Node     string             `json:"node,omitempty"`     // event: the node whose token it completes
	Wake     *kernel.WakeResult `json:"wake,omitempty"`     // wake: the outcome of a token's wake
	Message  *kernel.Message    `json:"message,omitempty"`  // message: a named event for the process
	Args     *workArgs          `json:"args,omitempty"`     // the work layer's commands (work.go)
	// Await, Name and Key: deliver (messages.go) gives what the token must
	// still be waiting for.
	Await string `json:"await,omitempty"`
	Name  string `json:"name,omitempty"`
	Key   string `json:"key,omitempty"`
	// MessageID and IDUntil: a message's id, remembered until IDUntil
	// (Unix ns) in the transaction that delivers it.
	MessageID string `json:"messageId,omitempty"`
	IDUntil   int64  `json:"idUntil,omitempty"`
	// Request identifies the request the op carries out (see requestID),
	// when it has an idempotency key: the key is bound to it.
	Request string `json:"request,omitempty"`
	// Async completes without running the new arc tokens (they wait in
	// the queue for an execute_queued op).
	Async bool `json:"async,omitempty"`
	// Arc is the arc token index of a retry_arc op.
	Arc int `json:"arc,omitempty"`
	// Listener and Events name a process listener and its event types.
	Listener string   `json:"listener,omitempty"`
	Events   []string `json:"events,omitempty"`
	// Transient are transient attributes for the command: never stored,
	// so not in the inbox either (see Engine.transients).
	Transient map[string]any `json:"-"`
}

// opKind names what an op does.
type opKind string

const (
	opDeliver    opKind = "deliver" // a message or a signal for a waiting token (messages.go)
	opComplete   opKind = "complete"
	opBacktrack  opKind = "backtrack"
	opCancel     opKind = "cancel"
	opProcessEnv opKind = "process_env"
	opTokenEnv   opKind = "token_env"
	opEvent      opKind = "event"
	opTimer      opKind = "timer"
	opWake       opKind = "wake"
	opMessage    opKind = "message"
	// opIndex rewrites the rows of a tree unchanged but for what the store
	// indexes (where each process waits), for rows an older Veena wrote.
	opIndex opKind = "index"
)

type opTokenSet struct {
	Arc       string             `json:"arc"`
	Name      string             `json:"name"`
	Count     int                `json:"count"`
	Env       map[string]Value   `json:"env,omitempty"`
	MemberEnv map[string][]Value `json:"memberEnv,omitempty"`
}

// outcome is what an op came to: the process afterwards (and, for a token
// environment patch, the token's environment), nothing to do, or a refusal.
// Idempotency records and finished inbox commands keep it as JSON.
type outcome struct {
	// Request identifies the request that produced the outcome, for the
	// idempotency key it is recorded under: a retry must be the same
	// request (see checkRequest).
	Request string           `json:"request,omitempty"`
	Process *Process         `json:"process,omitempty"`
	Env     map[string]Value `json:"env,omitempty"`
	None    bool             `json:"none,omitempty"`
	Error   *outcomeError    `json:"error,omitempty"`
	// Run is a token's work with a runner that a timer found due: the
	// caller runs it (fireTimer).
	Run *kernel.Wake `json:"run,omitempty"`
	// The work layer's commands answer a task, job, incident or attachment.
	Task       *Task       `json:"task,omitempty"`
	Job        *Job        `json:"job,omitempty"`
	Incident   *Incident   `json:"incident,omitempty"`
	Attachment *Attachment `json:"attachment,omitempty"`
	// Fired are the transitions a Petri net event fired.
	Fired []string `json:"fired,omitempty"`
}

type outcomeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrIdempotencyKeyReused: an idempotency key already answered a different
// request (operation, target or body); nothing is done.
var ErrIdempotencyKeyReused = &kernel.Error{Code: "idempotency_key_reused", Msg: "the idempotency key was used for a different request"}

// requestID identifies a request by a digest of its operation, target and
// body (the parts, encoded as JSON: maps in key order).
func requestID(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", parts))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// requestID identifies the request an op carries out: its kind, target
// and arguments.
//
// Who acts (the user of a task command, the worker of a job's) is not part
// of it: a worker restarted after a crash retries under a new name, and its
// retry is still the same request.
func (o *op) requestID() string {
	c := *o
	c.Request = ""
	if c.Args != nil {
		a := *c.Args
		a.User, a.Groups, a.Admin, a.Worker = "", nil, false, ""
		c.Args = &a
	}
	return requestID("op", &c)
}

// checkRequest refuses to answer request with the outcome recorded under
// key if another request produced it. Outcomes recorded before requests
// were bound to keys say nothing, and are taken as the same.
func (o *outcome) checkRequest(key, request string) error {
	if o.Request == "" || request == "" || o.Request == request {
		return nil
	}
	return &kernel.Error{Code: ErrIdempotencyKeyReused.Code, Msg: fmt.Sprintf(
		"idempotency key %q was already used for a different request (another operation, target or body); a retry must repeat the first request exactly, and a new request needs a new key", key)}
}

// failure turns a command's error into the outcome the caller sees.
func failure(err error) *outcome {
	if errors.Is(err, errNoChange) {
		return &outcome{None: true}
	}
	var due *wakeDue
	if errors.As(err, &due) {
		return &outcome{None: true, Run: &due.work}
	}
	return &outcome{Error: &outcomeError{Code: Code(err), Message: err.Error()}}
}

// err is the outcome's refusal as an error, nil if it succeeded.
func (o *outcome) err() error {
	if o.Error == nil {
		return nil
	}
	return &kernel.Error{Code: o.Error.Code, Msg: o.Error.Message}
}

// decodeOutcome reads an outcome. An idempotency record written before
// outcomes existed holds the process alone: an object with an "id", which
// an outcome never has.
func decodeOutcome(b []byte) (*outcome, error) {
	var probe struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	if probe.ID != "" {
		var p Process
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		return &outcome{Process: &p}, nil
	}
	var o outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if o.Process == nil && o.Env == nil && !o.None && o.Error == nil && o.Task == nil && o.Job == nil && o.Incident == nil && o.Attachment == nil {
		return nil, fmt.Errorf("empty command outcome %s", b)
	}
	return &o, nil
}

// bind turns an op into the kernel part of its command. res receives the
// token environment a token_env op returns.
func (o *op) bind(res *outcome) commandFunc {
	return func(ke *kernel.Engine, t *tree, c *cmd) (*kernel.Process, error) {
		p := t.root.Find(o.Process)
		if p == nil {
			return nil, notFound("process %s", o.Process)
		}
		if o.Kind.isWork() {
			return p, o.work(ke, p, c, res)
		}
		if o.Kind.isNet() {
			return p, o.net(ke, p, c, res)
		}
		if o.Kind.isKernelOp() {
			return o.kernelOp(ke, p)
		}
		switch o.Kind {
		case opCancel:
			return p, ke.Cancel(p)
		case opProcessEnv:
			applyPatch(p.Env, o.Env)
			p.Dirty = true
			seq, err := ke.FireProcessEvent(p, kernel.EnvChanged)
			c.note(p.ID, seq, o.user(), patchKeys(o.Env))
			return p, err
		case opEvent:
			return p, o.event(ke, p)
		case opIndex:
			if len(t.unindexed) == 0 {
				return nil, errNoChange
			}
			t.root.Walk(func(q *kernel.Process) { q.Dirty = q.Dirty || t.unindexed[q.ID] })
			return p, nil
		case opDeliver:
			return p, o.deliver(ke, p, c)
		case opTimer:
			if o.Token < 0 || o.Token >= len(p.NodeTokens) {
				return nil, errNoChange
			}
			tok := p.NodeTokens[o.Token]
			if p.State != kernel.Executing || !tok.Active() {
				return nil, errNoChange
			}
			if tok.GuardAction != kernel.Delay {
				w := ke.Kernel().WakeOf(tok)
				if w == nil || w.Due.After(ke.Now()) {
					return nil, errNoChange
				}
				if w.Runner != "" {
					return nil, &wakeDue{work: *w}
				}
				return p, ke.Woken(tok, kernel.WakeResult{Key: w.Key})
			}
			// A delayed token whose guard failed waits for its incident.
			if tok.DelayUntil().After(ke.Now()) || tok.Holds(kernel.HoldsIncident) {
				return nil, errNoChange
			}
			return p, ke.ReevaluateDelayedToken(tok)
		case opWake:
			if o.Token < 0 || o.Token >= len(p.NodeTokens) || o.Wake == nil {
				return nil, notFound("node token %q", nodeTokenID(p.ID, o.Token))
			}
			return p, ke.Woken(p.NodeTokens[o.Token], *o.Wake)
		case opMessage:
			if o.Message == nil {
				return nil, invalid("a message command without a message")
			}
			return p, ke.Receive(p, o.Message)
		}
		if o.Token < 0 || o.Token >= len(p.NodeTokens) {
			return nil, notFound("node token %q", nodeTokenID(p.ID, o.Token))
		}
		tok := p.NodeTokens[o.Token]
		switch o.Kind {
		case opComplete:
			return p, o.complete(ke, tok)
		case opBacktrack:
			_, err := ke.Backtrack(tok)
			return p, err
		case opTokenEnv:
			applyTokenPatch(tok, o.Env)
			p.Dirty = true
			res.Env = tok.Env.Map()
			seq, err := ke.FireWorkEvent(tok, kernel.EnvChanged)
			c.note(p.ID, seq, o.user(), patchKeys(o.Env))
			return p, err
		}
		return nil, invalid("unknown command %q", o.Kind)
	}
}

func (o *op) complete(ke *kernel.Engine, t *kernel.NodeToken) error {
	p := t.Process
	id := nodeTokenID(p.ID, t.ID)
	if p.State != kernel.Executing {
		return &kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not executing", p.ID, p.State)}
	}
	if t.Complete {
		return &kernel.Error{Code: kernel.ErrTokenComplete.Code, Msg: fmt.Sprintf("node token %s is already complete", id)}
	}
	applyTokenPatch(t, o.Env)
	for k, v := range o.Transient {
		t.SetTransient(k, v)
	}
	if ts := o.TokenSet; ts != nil {
		env := kernel.NewEnv()
		for k, v := range ts.Env {
			env.Set(k, v)
		}
		var err error
		if o.Async {
			_, err = ke.CompleteWithNewTokenSetAsync(t, ts.Arc, ts.Name, ts.Count, env, ts.MemberEnv)
		} else {
			_, err = ke.CompleteWithNewTokenSet(t, ts.Arc, ts.Name, ts.Count, env, ts.MemberEnv)
		}
		return err
	}
	if o.Async {
		return ke.CompleteAsync(t, o.Arcs...)
	}
	return ke.Complete(t, o.Arcs...)
}

// event completes the one active token an incoming event is for.
func (o *op) event(ke *kernel.Engine, p *kernel.Process) error {
	if p.State != kernel.Executing {
		return notFound("executing process with context %v", sortedPairs(o.Match))
	}
	var found []*kernel.NodeToken
	p.Walk(func(q *kernel.Process) {
		if q.State != kernel.Executing {
			return
		}
		for _, tok := range q.NodeTokens {
			if tok.Active() && !tok.Complete && tok.GuardAction == kernel.Accept && (o.Node == "" || tok.Node.Name == o.Node) {
				found = append(found, tok)
			}
		}
	})
	what := "an active token"
	if o.Node != "" {
		what = fmt.Sprintf("an active token on node %q", o.Node)
	}
	switch len(found) {
	case 0:
		return notFound("process %s: %s", p.ID, what)
	case 1:
	default:
		return &kernel.Error{Code: ErrConflict.Code, Msg: fmt.Sprintf("process %s has %d candidates for %s", p.ID, len(found), what)}
	}
	applyPatch(p.Env, o.Env)
	setTransients(p.Env, o.Transient)
	p.Dirty = true
	return ke.Complete(found[0])
}

// user is who sent the op, if it says.
func (o *op) user() string {
	if o.Args == nil {
		return ""
	}
	return o.Args.User
}

// patchKeys lists the attributes a patch sets or removes, for the audit trail.
func patchKeys(m map[string]*Value) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v == nil {
			k = "-" + k
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
