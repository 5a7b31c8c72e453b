// Package worker runs handlers for the jobs of a Veena server: it leases
// jobs of one type (long-polling for them), runs a handler per job with up
// to Concurrency at once, and reports each result — completion with
// variables and a result code, failure with a back-off, or a business
// error. Stop ends it gracefully: no new jobs are leased, and the jobs
// running finish and are reported.
//
// A handler steers what happens to its job by what it returns: a Result
// completes the job; a plain error fails it (the job is offered again after
// a back-off while retries remain, then an incident opens); Retry(err,
// after) chooses the back-off; NoRetry(err) fails it for good; Throw(code,
// message) is a business error thrown at the job's node.
//
// A handler of a Petri net activity with several outputs (seed 003: an
// LDAP search giving entry after entry) calls Report for each
// intermediate result: its code fires the arcs that take it while the
// job runs on; the Result the handler returns ends the activity.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	veena "github.com/veena-wf/veena"
)

// Job is a leased job.
type Job = veena.Job

// Result is what a handler returns for a job that succeeded: variables to
// merge into the process and an optional result code choosing arcs.
type Result struct {
	Env    map[string]any
	Result string
}

// Handler does the work of one job. Its context ends when the lease runs
// out or the worker is stopped hard.
type Handler func(ctx context.Context, job *Job) (Result, error)

// Source is where jobs come from and results go: a server over HTTP
// (NewHTTP) or an engine in this process (FromEngine).
type Source interface {
	Activate(ctx context.Context, req veena.ActivateRequest) ([]Job, error)
	Complete(ctx context.Context, id string, req veena.CompleteJobRequest) error
	Fail(ctx context.Context, id string, req veena.FailJobRequest) error
	Throw(ctx context.Context, id string, req veena.JobErrorRequest) error
}

// ResultReporter is a Source that takes intermediate results of jobs
// (both Sources of this package do): an optional capability, as Report
// needs it.
type ResultReporter interface {
	ReportResult(ctx context.Context, id string, req veena.JobResultRequest) error
}

// ErrNoReporter is Report's error outside a handler run by a Worker, or
// with a Source that takes no intermediate results.
var ErrNoReporter = errors.New("worker: no intermediate results here: Report is for handlers a Worker runs, on a Source that takes them")

// reporterKey keys the job's reporter in a handler's context.
type reporterKey struct{}

// reporter sends the intermediate results of one job.
type reporter struct {
	src    ResultReporter
	worker string
	job    string
}

// Report sends an intermediate result of the job whose handler ctx
// belongs to: the result code fires the arcs of the activity's place that
// take it, Env goes into the net's variables, and the job stays leased to
// this worker, running on until the handler returns. Only Petri net
// activities take intermediate results (job_not_leased when the lease has
// gone to another worker).
func Report(ctx context.Context, r Result) error {
	rp, ok := ctx.Value(reporterKey{}).(*reporter)
	if !ok || rp.src == nil {
		return ErrNoReporter
	}
	return rp.src.ReportResult(ctx, rp.job, veena.JobResultRequest{Worker: rp.worker, Result: r.Result, Env: r.Env})
}

// retryError asks for a back-off of its own.
type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// Retry fails the job with err and offers it again after after (while
// retries remain).
func Retry(err error, after time.Duration) error { return &retryError{err: err, after: after} }

// noRetryError fails a job for good.
type noRetryError struct{ err error }

func (e *noRetryError) Error() string { return e.err.Error() }
func (e *noRetryError) Unwrap() error { return e.err }

// NoRetry fails the job with err and no retries left: an incident opens.
func NoRetry(err error) error { return &noRetryError{err: err} }

// BusinessError is a business error thrown at the job's node (a BPMN error
// boundary may catch it; otherwise an incident opens).
type BusinessError struct {
	Code    string
	Message string
	Env     map[string]any
}

func (e *BusinessError) Error() string {
	if e.Message == "" {
		return "business error " + e.Code
	}
	return "business error " + e.Code + ": " + e.Message
}

// Throw returns a business error with a code.
func Throw(code, message string) *BusinessError { return &BusinessError{Code: code, Message: message} }

// Config configures a Worker.
type Config struct {
	// Type is the job type the worker does (required).
	Type string
	// Name identifies the worker to the server (default: a random name).
	Name string
	// Concurrency is how many jobs run at once (default 1).
	Concurrency int
	// LockFor is the lease of each job (default 5 minutes); a handler
	// still running when it ends loses the job to another worker.
	LockFor time.Duration
	// PollWait is how long one activation long-polls (default 30 s).
	PollWait time.Duration
	// Backoff is the delay before a failed job is offered again, by the
	// number of the failure (1, 2, …); default exponential from 1 s to 5 min.
	Backoff func(failure int) time.Duration
	// Logger receives the worker's warnings (default slog.Default()).
	Logger *slog.Logger
}

// Worker leases and runs jobs of one type.
type Worker struct {
	src Source
	cfg Config
	h   Handler

	mu      sync.Mutex
	stop    context.CancelFunc // stops leasing
	kill    context.CancelFunc // ends running handlers
	done    chan struct{}
	running sync.WaitGroup
	err     error
}

// New returns a worker of cfg.Type running h on jobs from src.
func New(src Source, cfg Config, h Handler) (*Worker, error) {
	if cfg.Type == "" {
		return nil, errors.New("worker: a job type is required")
	}
	if h == nil {
		return nil, errors.New("worker: a handler is required")
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("%s-%06x", cfg.Type, rand.Uint32()&0xffffff)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.LockFor <= 0 {
		cfg.LockFor = veena.DefaultJobLock
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 30 * time.Second
	}
	if cfg.Backoff == nil {
		cfg.Backoff = ExponentialBackoff(time.Second, 5*time.Minute)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{src: src, cfg: cfg, h: h}, nil
}

// Name is the worker's name as the server knows it.
func (w *Worker) Name() string { return w.cfg.Name }

// ExponentialBackoff doubles the delay from base with each failure, up to
// most, with a little jitter.
func ExponentialBackoff(base, most time.Duration) func(int) time.Duration {
	return func(failure int) time.Duration {
		d := base
		for i := 1; i < failure && d < most; i++ {
			d *= 2
		}
		d = min(d, most)
		return d + time.Duration(rand.Int64N(int64(d)/10+1))
	}
}

// Start begins leasing and running jobs in the background; Stop ends it.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return errors.New("worker: started already")
	}
	runCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	leaseCtx, stop := context.WithCancel(ctx)
	w.stop, w.kill, w.done = stop, kill, make(chan struct{})
	go w.loop(leaseCtx, runCtx)
	return nil
}

// Run runs the worker until ctx ends, then stops it gracefully (waiting
// for the running jobs).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return w.Stop(context.Background())
}

// Stop stops leasing jobs and waits for the running ones to finish and be
// reported; if ctx ends first, their handlers' contexts are cancelled.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	stop, kill, done := w.stop, w.kill, w.done
	w.mu.Unlock()
	if done == nil {
		return nil
	}
	stop()
	select {
	case <-done:
	case <-ctx.Done():
		kill()
		<-done
	}
	kill()
	return w.err
}

func (w *Worker) loop(leaseCtx, runCtx context.Context) {
	defer close(w.done)
	slots := make(chan struct{}, w.cfg.Concurrency)
	for i := 0; i < w.cfg.Concurrency; i++ {
		slots <- struct{}{}
	}
	failures := 0
	for leaseCtx.Err() == nil {
		// Wait for a free slot, then take every free one.
		select {
		case <-slots:
		case <-leaseCtx.Done():
			continue
		}
		free := 1
	more:
		for {
			select {
			case <-slots:
				free++
			default:
				break more
			}
		}
		jobs, err := w.src.Activate(leaseCtx, veena.ActivateRequest{Type: w.cfg.Type, Worker: w.cfg.Name, MaxJobs: free,
			LockFor: w.cfg.LockFor, Wait: w.cfg.PollWait})
		if err != nil {
			for i := 0; i < free; i++ {
				slots <- struct{}{}
			}
			if leaseCtx.Err() != nil {
				break
			}
			failures++
			d := ExponentialBackoff(100*time.Millisecond, 10*time.Second)(failures)
			w.cfg.Logger.Warn("worker: activate jobs", "type", w.cfg.Type, "err", err, "retry_in", d)
			select {
			case <-time.After(d):
			case <-leaseCtx.Done():
			}
			continue
		}
		failures = 0
		for i := len(jobs); i < free; i++ {
			slots <- struct{}{}
		}
		for i := range jobs {
			job := jobs[i]
			w.running.Add(1)
			go func() {
				defer w.running.Done()
				defer func() { slots <- struct{}{} }()
				w.run(runCtx, &job)
			}()
		}
	}
	w.running.Wait()
}

// run runs the handler on one job and reports what came of it.
func (w *Worker) run(ctx context.Context, job *Job) {
	hctx, cancel := context.WithTimeout(ctx, w.cfg.LockFor)
	rr, _ := w.src.(ResultReporter)
	hctx = context.WithValue(hctx, reporterKey{}, &reporter{src: rr, worker: w.cfg.Name, job: job.ID})
	res, err := w.call(hctx, job)
	cancel()
	// The report goes out even while stopping: the job is done.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	var rerr error
	var be *BusinessError
	var re *retryError
	var nr *noRetryError
	switch {
	case err == nil:
		rerr = w.src.Complete(rctx, job.ID, veena.CompleteJobRequest{Worker: w.cfg.Name, Env: res.Env, Result: res.Result})
	case errors.As(err, &be):
		rerr = w.src.Throw(rctx, job.ID, veena.JobErrorRequest{Worker: w.cfg.Name, Code: be.Code, Message: be.Message, Env: be.Env})
	case errors.As(err, &nr):
		zero := 0
		rerr = w.src.Fail(rctx, job.ID, veena.FailJobRequest{Worker: w.cfg.Name, Retries: &zero, Message: err.Error()})
	default:
		left := max(job.Retries-1, 0)
		after := w.cfg.Backoff(failureNumber(job))
		if errors.As(err, &re) {
			after = re.after
		}
		rerr = w.src.Fail(rctx, job.ID, veena.FailJobRequest{Worker: w.cfg.Name, Retries: &left, RetryIn: after, Message: err.Error()})
	}
	if rerr != nil {
		w.cfg.Logger.Warn("worker: report job", "job", job.ID, "err", rerr)
	}
}

// failureNumber guesses which failure this is from the retries left of a
// job declared with the usual three.
func failureNumber(job *Job) int {
	return max(1, 4-job.Retries)
}

// call runs the handler, turning a panic into an error.
func (w *Worker) call(ctx context.Context, job *Job) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return w.h(ctx, job)
}
