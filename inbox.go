package veena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/veena-wf/veena/store"
)

// Commands to one process tree are applied one after another, in arrival
// order. A command that finds its tree free (no other command running on
// it here or in another engine, nothing waiting in its inbox) runs at once
// in one transaction. Otherwise it is appended to the tree's durable inbox
// and its caller becomes a drainer: it takes the tree and applies the
// inbox in order, each command in its own transaction, until its own is
// done. Several engines may drain one tree; the tree's lock in the store
// lets one apply at a time, and a command is marked done in the
// transaction that applies it, so none is applied twice. A command whose
// caller went away (its context ended, its engine died) stays in the inbox
// and is applied by the next drainer or by the background loop.

// inboxGrace is how long a command may wait in an inbox before the
// background loop of any engine drains its tree; the caller that queued it
// normally drains it long before.
const inboxGrace = 2 * time.Second

// inboxKeep is how long finished inbox commands are kept for callers that
// come back for their outcome.
const inboxKeep = time.Hour

// submit runs an op on its process tree, queueing it if the tree is busy.
func (e *Engine) submit(ctx context.Context, o *op, key string) (*outcome, error) {
	root, err := e.rootOf(ctx, o.Process)
	if err != nil {
		return nil, err
	}
	if key != "" && o.Request == "" {
		o.Request = o.requestID()
	}
	unlock, holder, ticket := e.locks.tryLock(root)
	if unlock != nil {
		res := &outcome{Request: o.Request}
		out, err := e.command(ctx, root, key, o.bind(res), res, func() int64 { return e.locks.queuedSince(root, holder) })
		unlock()
		if !errors.Is(err, store.ErrBusy) {
			return out, err
		}
	}
	return e.enqueue(ctx, root, key, o, ticket)
}

// enqueue appends an op to its tree's inbox, drains the tree up to it and
// returns its outcome.
// A ticket (a command turned away by this engine's lock holder) is handed
// back to the lock with the command's seq.
func (e *Engine) enqueue(ctx context.Context, root, key string, o *op, ticket *lockTicket) (*outcome, error) {
	payload, err := json.Marshal(o)
	if err != nil {
		e.locks.queuedAt(ticket, 0)
		return nil, fmt.Errorf("encode the command: %w", err)
	}
	c := &store.Command{Root: root, Key: key, Payload: payload, EnqueuedAt: e.clock()}
	if err := e.store.Enqueue(ctx, c); err != nil {
		e.locks.queuedAt(ticket, 0)
		return nil, storeError("queue the command", err)
	}
	e.locks.queuedAt(ticket, c.Seq)
	if len(o.Transient) > 0 {
		e.transients.Store(c.Seq, o.Transient)
		defer e.transients.Delete(c.Seq)
	}
	if err := e.drain(ctx, root, c.Seq); err != nil {
		return nil, err
	}
	done, err := e.store.Command(ctx, c.Seq)
	if err != nil {
		return nil, storeError("read the command's outcome", err)
	}
	if !done.Done {
		return nil, fmt.Errorf("command %d for process %s is still waiting after its tree was drained", c.Seq, root)
	}
	out, err := decodeOutcome(done.Outcome)
	if err != nil {
		return nil, fmt.Errorf("command %d for process %s: %w", c.Seq, root, err)
	}
	return out, nil
}

// drain applies the commands waiting in a tree's inbox, in order, up to
// and including seq upTo.
func (e *Engine) drain(ctx context.Context, root string, upTo int64) error {
	unlock, err := e.locks.lock(ctx, root)
	if err != nil {
		return err
	}
	defer unlock()
	for {
		c, err := e.applyNext(ctx, root, upTo)
		if err != nil {
			return err
		}
		if c == nil {
			return nil
		}
	}
}

// applyNext applies the oldest waiting command of a tree, if its seq is
// at most upTo, and returns it (nil if there was none). A command that
// fails is marked done with its error in a transaction of its own, so
// that it cannot hold up the commands behind it; a store that cannot be
// reached leaves it waiting.
func (e *Engine) applyNext(ctx context.Context, root string, upTo int64) (*store.Command, error) {
	var c *store.Command
	var done *plan
	err := e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		c, done = nil, nil
		version, err := tx.LockTree(ctx, root)
		if err != nil {
			return err
		}
		if c, err = tx.NextCommand(ctx, root); err != nil || c == nil {
			return err
		}
		if c.Seq > upTo {
			c = nil
			return nil
		}
		var o op
		if err := json.Unmarshal(c.Payload, &o); err != nil {
			return invalid("command %d: %v", c.Seq, err)
		}
		if tr, ok := e.transients.Load(c.Seq); ok {
			o.Transient = tr.(map[string]any)
		}
		var out *outcome
		if c.Key != "" {
			if out, err = lookupKey(ctx, tx, c.Key); err != nil {
				return err
			}
			if out != nil {
				if err := out.checkRequest(c.Key, o.Request); err != nil {
					return err
				}
			}
		}
		if out == nil {
			t := e.cache.take(root)
			if t == nil || t.version != version {
				rows, err := tx.Tree(ctx, root)
				if err != nil {
					return err
				}
				if t, err = e.decodeTree(ctx, rows, version); err != nil {
					return err
				}
			}
			out = &outcome{Request: o.Request}
			p := e.run(t, o.bind(out), tx, ctx)
			if p.err != nil {
				return p.err
			}
			if err := p.apply(ctx, tx); err != nil {
				return err
			}
			out.Process = p.result
			if c.Key != "" {
				if err := putOutcome(ctx, tx, c.Key, out, e.clock()); err != nil {
					return err
				}
			}
			done = p
		}
		b, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("encode the outcome of command %d: %w", c.Seq, err)
		}
		return tx.FinishCommand(ctx, c.Seq, b, e.clock())
	})
	if err == nil {
		if done != nil {
			e.committed(done)
		}
		return c, nil
	}
	if c == nil || transient(err) {
		return nil, storeError("apply a queued command", err)
	}
	// The command itself failed: record why, unless another drainer got
	// to it first.
	failed := c
	b, merr := json.Marshal(failure(storeError("apply a queued command", err)))
	if merr != nil {
		return nil, merr
	}
	err = e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.LockTree(ctx, root); err != nil {
			return err
		}
		next, err := tx.NextCommand(ctx, root)
		if err != nil || next == nil || next.Seq != failed.Seq {
			return err
		}
		return tx.FinishCommand(ctx, failed.Seq, b, e.clock())
	})
	if err != nil {
		return nil, storeError("record a queued command's failure", err)
	}
	return failed, nil
}

// transient reports whether a failed transaction may succeed if tried
// again: the store was unreachable or the caller gave up.
func transient(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lookupKey returns the outcome recorded under an idempotency key, nil if
// no committed command used it (the key is then reserved for this
// transaction, as store.Tx.Key says).
func lookupKey(ctx context.Context, tx store.Tx, key string) (*outcome, error) {
	b, found, err := tx.Key(ctx, key)
	if err != nil || !found {
		return nil, err
	}
	out, err := decodeOutcome(b)
	if err != nil {
		return nil, fmt.Errorf("idempotency key %q: %w", key, err)
	}
	return out, nil
}

// putOutcome records a command's outcome under its idempotency key, as
// created at at (it expires Options.IdempotencyTTL later).
func putOutcome(ctx context.Context, tx store.Tx, key string, out *outcome, at time.Time) error {
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("idempotency key %q: encode the result: %w", key, err)
	}
	return tx.PutKey(ctx, key, b, at)
}

// errLookedUp ends the transaction of a look-up that must not reserve its key.
var errLookedUp = errors.New("looked up")

// recorded returns the outcome recorded under an idempotency key, nil if
// no command has used it.
func (e *Engine) recorded(ctx context.Context, key string) (*outcome, error) {
	var prev *outcome
	err := e.store.Update(ctx, func(ctx context.Context, tx store.Tx) (err error) {
		if prev, err = lookupKey(ctx, tx, key); err != nil {
			return err
		}
		return errLookedUp // keep no reservation of the key
	})
	if err != nil && !errors.Is(err, errLookedUp) {
		return nil, storeError("look up an idempotency key", err)
	}
	return prev, nil
}

// drainAbandoned applies the commands that have waited in inboxes longer
// than inboxGrace (their callers are gone), and once a minute forgets
// finished commands older than inboxKeep and idempotency records older
// than Options.IdempotencyTTL. Only the background loop (and tests) call it.
func (e *Engine) drainAbandoned(ctx context.Context) {
	now := e.clock()
	roots, err := e.store.InboxRoots(ctx, now.Add(-inboxGrace), 50)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("veena: look for queued commands", "err", err)
		}
		return
	}
	for _, root := range roots {
		if err := e.drain(ctx, root, math.MaxInt64); err != nil && ctx.Err() == nil {
			e.log.Warn("veena: apply queued commands", "process", root, "err", err)
		}
	}
	if now.Sub(e.lastPurge) < time.Minute {
		return
	}
	e.lastPurge = now
	if _, err := e.store.PurgeCommands(ctx, now.Add(-inboxKeep)); err != nil && ctx.Err() == nil {
		e.log.Warn("veena: purge finished commands", "err", err)
	}
	if ttl := e.opts.IdempotencyTTL; ttl > 0 {
		if _, err := e.store.PurgeKeys(ctx, now.Add(-ttl)); err != nil && ctx.Err() == nil {
			e.log.Warn("veena: purge expired idempotency keys", "err", err)
		}
	}
	if _, err := e.store.PurgeMessages(ctx, e.clock()); err != nil && ctx.Err() == nil {
		e.log.Warn("veena: purge expired messages", "err", err)
	}
}

// WaitingCommands counts the commands waiting in the durable inboxes of
// process trees, not yet applied. The count is the store's: every engine
// sharing a database counts the same commands.
func (e *Engine) WaitingCommands(ctx context.Context) (int, error) {
	n, err := e.store.WaitingCommands(ctx)
	if err != nil {
		return 0, storeError("count the waiting commands", err)
	}
	return n, nil
}
