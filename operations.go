package veena

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/kernel"
)

// The operations Sarasvati's engine offers beyond starting, completing,
// backtracking and cancelling, durable: finalising a process a listener
// left pending completion or pending cancel, running the arc tokens an
// asynchronous completion queued, re-evaluating a delayed token now,
// retrying an arc token waiting at its join, executing a node whose
// execution a listener delayed, and subscribing a process to a registered
// listener. Each is a command like the others (an op, serialised per
// process tree, with an idempotency key).

const (
	opFinalizeComplete opKind = "finalize_complete"
	opFinalizeCancel   opKind = "finalize_cancel"
	opExecuteQueued    opKind = "execute_queued"
	opReevaluate       opKind = "reevaluate"
	opExecuteNode      opKind = "execute_node"
	opRetryArc         opKind = "retry_arc"
	opAddListener      opKind = "add_listener"
	opRemoveListener   opKind = "remove_listener"
)

// isKernelOp reports whether an op is one of these operations.
func (k opKind) isKernelOp() bool {
	switch k {
	case opFinalizeComplete, opFinalizeCancel, opExecuteQueued, opReevaluate, opExecuteNode, opRetryArc, opAddListener, opRemoveListener:
		return true
	}
	return false
}

// kernelOp runs one of these operations on process p.
func (o *op) kernelOp(ke *kernel.Engine, p *kernel.Process) (*kernel.Process, error) {
	switch o.Kind {
	case opFinalizeComplete:
		if p.State != kernel.PendingCompletion {
			return nil, &kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not pending completion", p.ID, p.State)}
		}
		return p, ke.FinalizeComplete(p)
	case opFinalizeCancel:
		if p.State != kernel.PendingCancel {
			return nil, &kernel.Error{Code: kernel.ErrProcessNotExecuting.Code, Msg: fmt.Sprintf("process %s is %s, not pending cancel", p.ID, p.State)}
		}
		return p, ke.FinalizeCancel(p)
	case opExecuteQueued:
		return p, ke.ExecuteQueuedArcTokens(p)
	case opAddListener:
		types, err := eventTypes(o.Events)
		if err != nil {
			return nil, err
		}
		if err := ke.AddProcessListener(p, o.Listener, types...); err != nil {
			return nil, err
		}
		return p, nil
	case opRemoveListener:
		types, err := eventTypes(o.Events)
		if err != nil {
			return nil, err
		}
		ke.RemoveProcessListener(p, o.Listener, types...)
		return p, nil
	case opRetryArc:
		if o.Arc < 0 || o.Arc >= len(p.ArcTokens) {
			return nil, notFound("arc token %q", arcTokenID(p.ID, o.Arc))
		}
		_, err := ke.RetryIncompleteArcToken(p.ArcTokens[o.Arc])
		return p, err
	}
	if o.Token < 0 || o.Token >= len(p.NodeTokens) {
		return nil, notFound("node token %q", nodeTokenID(p.ID, o.Token))
	}
	tok := p.NodeTokens[o.Token]
	switch o.Kind {
	case opReevaluate:
		return p, ke.ReevaluateDelayedToken(tok)
	case opExecuteNode:
		return p, ke.ExecuteNode(tok)
	}
	return nil, invalid("unknown command %q", o.Kind)
}

// eventTypes parses event type names (none: every type).
func eventTypes(names []string) ([]kernel.EventType, error) {
	out := make([]kernel.EventType, 0, len(names))
	for _, n := range names {
		t, ok := kernel.ParseEventType(n)
		if !ok {
			return nil, invalid("unknown event type %q", n)
		}
		out = append(out, t)
	}
	return out, nil
}

// FinalizeComplete completes a process that a listener left pending
// completion (DelayFinalizeComplete); a nested one then completes its
// parent's node token. Any other state answers process_not_executing.
func (e *Engine) FinalizeComplete(ctx context.Context, id, idempotencyKey string) (*Process, error) {
	return e.onProcess(ctx, &op{Kind: opFinalizeComplete, Process: id}, idempotencyKey)
}

// FinalizeCancel cancels a process that a listener left pending cancel
// (DelayFinalizeCancel). Any other state answers process_not_executing.
func (e *Engine) FinalizeCancel(ctx context.Context, id, idempotencyKey string) (*Process, error) {
	return e.onProcess(ctx, &op{Kind: opFinalizeCancel, Process: id}, idempotencyKey)
}

// ExecuteQueuedArcTokens runs the arc tokens that asynchronous completions
// (CompleteRequest.Async) left pending, then checks whether the process
// is done.
func (e *Engine) ExecuteQueuedArcTokens(ctx context.Context, id, idempotencyKey string) (*Process, error) {
	return e.onProcess(ctx, &op{Kind: opExecuteQueued, Process: id}, idempotencyKey)
}

// ReevaluateDelayedToken runs the guard of a delayed node token again now,
// whether or not its time has come, and acts on the new result.
func (e *Engine) ReevaluateDelayedToken(ctx context.Context, tokenID, idempotencyKey string) (*Process, error) {
	o, err := tokenOp(opReevaluate, tokenID)
	if err != nil {
		return nil, err
	}
	return e.onProcess(ctx, o, idempotencyKey)
}

// ExecuteNode runs the node of an accepted token whose execution a
// listener delayed (DelayNodeExecution).
func (e *Engine) ExecuteNode(ctx context.Context, tokenID, idempotencyKey string) (*Process, error) {
	o, err := tokenOp(opExecuteNode, tokenID)
	if err != nil {
		return nil, err
	}
	return e.onProcess(ctx, o, idempotencyKey)
}

// RetryArcToken evaluates again the join of an arc token waiting at its
// node (Sarasvati's retryIncompleteArcToken).
func (e *Engine) RetryArcToken(ctx context.Context, arcTokenID, idempotencyKey string) (*Process, error) {
	pid, idx, err := parseArcTokenID(arcTokenID)
	if err != nil {
		return nil, err
	}
	return e.onProcess(ctx, &op{Kind: opRetryArc, Process: pid, Arc: idx}, idempotencyKey)
}

// AddProcessListener subscribes a process to a listener registered on the
// kernel (kernel.Kernel.RegisterListener) for the named event types (none:
// all); the subscription is stored with the process.
func (e *Engine) AddProcessListener(ctx context.Context, id, listener string, events []string, idempotencyKey string) (*Process, error) {
	if _, ok := e.k.Listener(listener); !ok {
		return nil, notFound("listener %q", listener)
	}
	if _, err := eventTypes(events); err != nil {
		return nil, err
	}
	return e.onProcess(ctx, &op{Kind: opAddListener, Process: id, Listener: listener, Events: events}, idempotencyKey)
}

// RemoveProcessListener unsubscribes a process from a listener for the
// named event types (none: all of them).
func (e *Engine) RemoveProcessListener(ctx context.Context, id, listener string, events []string, idempotencyKey string) (*Process, error) {
	if _, err := eventTypes(events); err != nil {
		return nil, err
	}
	return e.onProcess(ctx, &op{Kind: opRemoveListener, Process: id, Listener: listener, Events: events}, idempotencyKey)
}

// parseArcTokenID splits an arc token id into its process id and the
// token's index.
func parseArcTokenID(id string) (string, int, error) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || i+2 > len(id) || id[i+1] != 'a' {
		return "", 0, notFound("arc token %q", id)
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 1 || strconv.Itoa(n) != id[i+2:] {
		return "", 0, notFound("arc token %q", id)
	}
	return id[:i], n - 1, nil
}

// setTransients gives an environment the transient attributes a request
// carries. Transient attributes are never stored: they live for the
// command (see dropTransients).
func setTransients(env *kernel.Env, m map[string]any) {
	for k, v := range m {
		env.SetTransient(k, v)
	}
}

// dropTransients removes the transient attributes of a process: the
// engine keeps nothing between commands that the store does not have, so
// a later command sees none, whether it finds the tree cached or reads it.
func dropTransients(p *kernel.Process) {
	p.Env.DropTransients()
	for _, t := range p.NodeTokens {
		if !t.Env.IsEmpty() {
			t.Env.DropTransients()
		}
	}
	for _, s := range p.TokenSets {
		s.Env.DropTransients()
		m := s.MemberEnv()
		for i := 0; i < m.Members(); i++ {
			m.Env(i).DropTransients()
		}
	}
}
