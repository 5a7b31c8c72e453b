package veena

import (
	"context"
	"time"

	"github.com/veena-wf/veena/store"
)

// HoldTree takes a process tree's lock in this engine, as a running command
// does, until the returned function is called: commands sent meanwhile
// queue in the tree's inbox.
func HoldTree(ctx context.Context, e *Engine, root string) (func(), error) {
	return e.locks.lock(ctx, root)
}

// DrainAbandoned runs one round of the background loop's inbox work.
func DrainAbandoned(ctx context.Context, e *Engine) { e.drainAbandoned(ctx) }

// Cached tells whether the engine keeps the tree rooted at root decoded.
func Cached(e *Engine, root string) bool { return e.cache.has(root) }

// StoreOf is the store an engine runs on.
func StoreOf(e *Engine) store.Store { return e.store }

// EnqueueComplete queues the completion of a node token in its tree's
// durable inbox, as a command that found the tree busy does, and returns
// its outcome once applied.
func EnqueueComplete(ctx context.Context, e *Engine, token, key string) (*Process, error) {
	o, err := tokenOp(opComplete, token)
	if err != nil {
		return nil, err
	}
	if key != "" {
		o.Request = o.requestID()
	}
	root, err := e.rootOf(ctx, o.Process)
	if err != nil {
		return nil, err
	}
	out, err := e.enqueue(ctx, root, key, o, nil)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	return out.Process, nil
}

// SetJobPoll sets how often a waiting activation of the engine looks for
// jobs by itself (set before its first activation).
func SetJobPoll(e *Engine, d time.Duration) { e.jobPoll = d }

// ListeningForJobs tells whether the engine hears the jobs other engines
// announce.
func ListeningForJobs(e *Engine) bool { return e.listening.Load() }

// JobWaiters is the number of activations waiting in the engine for jobs
// of a type.
func JobWaiters(e *Engine, typ string) int {
	e.jobMu.Lock()
	defer e.jobMu.Unlock()
	return len(e.jobWait[typ])
}
