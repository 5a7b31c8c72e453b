package veena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/veena-wf/veena/kernel"
)

// Node tokens may wait for work done outside the kernel (kernel.Wake): an
// action that calls another system, say. The step that creates such work
// commits a durable timer for it; the engine that committed the step runs
// the work at once (RunNow), and if it dies meanwhile, any engine takes the
// work up when its timer is due. The result goes back to the token's node
// type in a step of its own (kernel.Engine.WorkDone), so a completed piece
// of work is never done again once that step has committed; a result for
// work the token no longer waits for is dropped.

// Runner does a token's outside work, outside any transaction, and returns
// its result as JSON. An error fails this attempt; wrap it with Permanent
// when trying again cannot help.
type Runner func(ctx context.Context, req RunRequest) ([]byte, error)

// RunRequest is a piece of outside work.
type RunRequest struct {
	Process string // the process whose token waits
	Token   string // the node token id
	Node    string
	Key     string
	Input   []byte
}

// PermanentError marks a runner failure that trying again cannot mend.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a failure that retrying cannot mend.
func Permanent(err error) error { return &PermanentError{Err: err} }

// RegisterRunner makes a runner available to node types' work
// (kernel.Wake.Runner names it). Register runners before the engine runs
// commands.
func (e *Engine) RegisterRunner(name string, r Runner) {
	e.runMuR.Lock()
	defer e.runMuR.Unlock()
	if e.runners == nil {
		e.runners = map[string]Runner{}
	}
	e.runners[name] = r
}

func (e *Engine) runner(name string) Runner {
	e.runMuR.Lock()
	defer e.runMuR.Unlock()
	return e.runners[name]
}

// maxRunning bounds the pieces of outside work one engine runs at once.
const maxRunning = 64

// workPool runs outside work in the background of an engine.
type workPool struct {
	once sync.Once
	ctx  context.Context
	stop context.CancelFunc
	sem  chan struct{}
	wg   sync.WaitGroup
}

func (w *workPool) init() {
	w.once.Do(func() {
		w.ctx, w.stop = context.WithCancel(context.Background())
		w.sem = make(chan struct{}, maxRunning)
	})
}

// close stops new work and waits for the running pieces.
func (w *workPool) close() {
	w.init()
	w.stop()
	w.wg.Wait()
}

// dispatch runs the outside work a committed command created.
func (e *Engine) dispatch(runs []wakeRun) {
	e.pool.init()
	for _, r := range runs {
		if e.runner(r.work.Runner) == nil {
			continue // another engine may have it; the timer brings it there
		}
		if e.pool.ctx.Err() != nil {
			return
		}
		e.pool.wg.Add(1)
		go func(r wakeRun) {
			defer e.pool.wg.Done()
			select {
			case e.pool.sem <- struct{}{}:
			case <-e.pool.ctx.Done():
				return
			}
			defer func() { <-e.pool.sem }()
			if err := e.runWake(e.pool.ctx, r); err != nil && e.pool.ctx.Err() == nil {
				e.log.Warn("veena: outside work", "process", r.process, "token", r.token, "key", r.work.Key, "err", err)
			}
		}(r)
	}
}

// runWake runs one piece of work and hands its result to the token.
func (e *Engine) runWake(ctx context.Context, r wakeRun) error {
	run := e.runner(r.work.Runner)
	if run == nil {
		return fmt.Errorf("no runner %q is registered", r.work.Runner)
	}
	res := kernel.WakeResult{Key: r.work.Key}
	out, err := func() (out []byte, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("runner %s panicked: %v", r.work.Runner, p)
			}
		}()
		return run(ctx, RunRequest{Process: r.process, Token: nodeTokenID(r.process, r.token), Key: r.work.Key, Input: r.work.Input})
	}()
	if ctx.Err() != nil {
		return nil // stopping: the timer brings the work back
	}
	if err != nil {
		res.Err = err.Error()
		var pe *PermanentError
		res.Permanent = errors.As(err, &pe)
	} else {
		if out != nil && !json.Valid(out) {
			res.Err = fmt.Sprintf("runner %s returned a result that is not JSON", r.work.Runner)
			res.Permanent = true
		}
		res.Output = out
	}
	o := &op{Kind: opWake, Process: r.process, Token: r.token, Wake: &res}
	outc, err := e.submit(ctx, o, "")
	if err != nil {
		return err
	}
	if outc.Error != nil && outc.Error.Code != kernel.ErrStaleWake.Code && outc.Error.Code != ErrNotFound.Code && outc.Error.Code != kernel.ErrProcessNotExecuting.Code && outc.Error.Code != kernel.ErrTokenComplete.Code {
		return outc.err()
	}
	return nil
}

// wakeDue ends a timer command whose token's work has a runner: the
// work is run outside the command (see fireTimer).
type wakeDue struct{ work kernel.Wake }

func (w *wakeDue) Error() string { return "work " + w.work.Key + " is due" }
