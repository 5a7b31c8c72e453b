package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/worker"
)

const defCharge = `<?xml version="1.0"?>
<process-definition name="charge" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="charge"/></node>
  <node name="charge" type="wait">
    <arc to="done"/>
    <arc to="declined" name="declined"/>
    <custom><job type="charge-card" retries="3"><header name="currency">EUR</header></job></custom>
  </node>
  <node name="done"/>
  <node name="declined"/>
</process-definition>
`

func engine(t *testing.T) *veena.Engine {
	t.Helper()
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.LoadDefinition(ctx, "charge.wf.xml", []byte(defCharge), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func startN(t *testing.T, e *veena.Engine, n int, env map[string]any) []string {
	t.Helper()
	var ids []string
	for range n {
		p, err := e.StartProcess(context.Background(), veena.StartRequest{Definition: "charge", Env: env})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	return ids
}

// waitState waits until every process is in state.
func waitState(t *testing.T, e *veena.Engine, ids []string, state string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			p, err := e.Process(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if p.State == state {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %s is %s, want %s", id, p.State, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Twenty jobs, four at a time: all complete, never more than four run at
// once, the handler sees the job's variables and headers.
func TestConcurrency(t *testing.T) {
	e := engine(t)
	ids := startN(t, e, 20, map[string]any{"amount": 12})
	var running, most atomic.Int32
	w, err := worker.New(worker.FromEngine(e), worker.Config{Type: "charge-card", Concurrency: 4, PollWait: time.Second},
		func(ctx context.Context, job *worker.Job) (worker.Result, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			if job.Env["amount"].IntValue() != 12 || job.Headers["currency"] != "EUR" {
				return worker.Result{}, worker.NoRetry(fmt.Errorf("job %+v", job))
			}
			time.Sleep(20 * time.Millisecond)
			return worker.Result{Env: map[string]any{"charged": true}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, ids, "completed")
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m > 4 || m < 2 {
		t.Fatalf("at most %d jobs ran at once, want 2 to 4", m)
	}
	p, _ := e.Process(context.Background(), ids[0])
	if !p.Env["charged"].BoolValue() {
		t.Fatalf("env %v", p.Env)
	}
}

// A handler's errors steer the job: retried after a back-off, failed for
// good (an incident), or a business error (an incident when uncaught); a
// result code chooses the arc.
func TestHandlerErrors(t *testing.T) {
	e := engine(t)
	ctx := context.Background()
	ids := startN(t, e, 4, nil)
	var attempts sync.Map
	w, err := worker.New(worker.FromEngine(e), worker.Config{Type: "charge-card", Concurrency: 2, PollWait: 200 * time.Millisecond,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }},
		func(ctx context.Context, job *worker.Job) (worker.Result, error) {
			n, _ := attempts.LoadOrStore(job.Process, new(atomic.Int32))
			k := n.(*atomic.Int32).Add(1)
			switch job.Process {
			case ids[0]: // fails twice, then succeeds
				if k < 3 {
					return worker.Result{}, errors.New("flaky")
				}
				return worker.Result{}, nil
			case ids[1]:
				return worker.Result{}, worker.NoRetry(errors.New("card number invalid"))
			case ids[2]:
				return worker.Result{}, worker.Throw("NO_FUNDS", "insufficient funds")
			default:
				panic("boom")
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.Start(wctx)
	waitState(t, e, ids[:1], "completed")
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := e.Incidents(ctx, veena.IncidentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]string{}
		for _, i := range page.Items {
			kinds[i.Process] = i.Kind + ": " + i.Message
		}
		if len(kinds) == 3 {
			if !strings.HasPrefix(kinds[ids[1]], "job_failed: card number invalid") ||
				!strings.HasPrefix(kinds[ids[2]], "uncaught_error") ||
				!strings.Contains(kinds[ids[3]], "panicked") {
				t.Fatalf("incidents %v", kinds)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("incidents %v", kinds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Stop(ctx)
}

// Stop waits for the running job, which is reported; no new job is leased.
func TestGracefulStop(t *testing.T) {
	e := engine(t)
	ids := startN(t, e, 2, nil)
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	w, _ := worker.New(worker.FromEngine(e), worker.Config{Type: "charge-card", Concurrency: 1, PollWait: 100 * time.Millisecond},
		func(ctx context.Context, job *worker.Job) (worker.Result, error) {
			started <- struct{}{}
			<-release
			return worker.Result{Result: "declined"}, nil
		})
	w.Start(context.Background())
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a job ran")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, id := range ids {
		p, _ := e.Process(context.Background(), id)
		if p.State == "completed" {
			done++
			h, _ := e.Tokens(context.Background(), id)
			if last := h.NodeTokens[len(h.NodeTokens)-1]; last.Node != "declined" {
				t.Fatalf("the result code chose %s", last.Node)
			}
		}
	}
	if done != 1 {
		t.Fatalf("%d processes completed after a graceful stop, want the one that ran", done)
	}
	jobs, _ := e.Jobs(context.Background(), veena.JobFilter{States: []string{"leased"}})
	if len(jobs.Items) != 0 {
		t.Fatalf("a stopped worker leased %+v", jobs.Items)
	}
}

// A shell command as the handler, over HTTP: variables on stdin, result and
// variables on stdout, failure by exit status.
func TestCommandOverHTTP(t *testing.T) {
	e := engine(t)
	ts := httptest.NewServer(server.New(server.Config{Engine: e, Loopback: true}))
	defer ts.Close()
	ctx := context.Background()
	script := `read vars
case "$vars" in
  *'"amount":1'*) echo '{"_result":"declined","reason":"too small"}' ;;
  *'"amount":2'*) echo "gateway down" >&2; exit 3 ;;
  *'"amount":3'*) echo 'not json' ;;
  *'"amount":4'*) echo '{"_error":{"code":"NO_FUNDS","message":"empty"}}' ;;
  *) echo "{\"paid\": true, \"header\": \"$VEENA_HEADER_CURRENCY\", \"job\": \"$VEENA_JOB_ID\"}" ;;
esac`
	h, err := worker.Command([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for amount := range 5 {
		ids = append(ids, startN(t, e, 1, map[string]any{"amount": amount})...)
	}
	w, _ := worker.New(worker.NewHTTP(ts.URL, ""), worker.Config{Type: "charge-card", Concurrency: 3, PollWait: 200 * time.Millisecond,
		Backoff: func(int) time.Duration { return 5 * time.Millisecond }}, h)
	w.Start(ctx)
	defer w.Stop(ctx)
	waitState(t, e, []string{ids[0], ids[1]}, "completed")
	p0, _ := e.Process(ctx, ids[0])
	if !p0.Env["paid"].BoolValue() || p0.Env["header"].Str() != "EUR" || !strings.HasPrefix(p0.Env["job"].Str(), ids[0]+".j") {
		t.Fatalf("env of the paid one: %v", p0.Env)
	}
	p1, _ := e.Process(ctx, ids[1])
	if p1.Env["reason"].Str() != "too small" {
		t.Fatalf("env of the declined one: %v", p1.Env)
	}
	hist, _ := e.Tokens(ctx, ids[1])
	if hist.NodeTokens[len(hist.NodeTokens)-1].Node != "declined" {
		t.Fatal("_result did not choose the declined arc")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, _ := e.Incidents(ctx, veena.IncidentFilter{})
		msgs := map[string]string{}
		for _, i := range page.Items {
			msgs[i.Process] = i.Kind + ": " + i.Message
		}
		if len(msgs) == 3 {
			if !strings.Contains(msgs[ids[2]], "exited with status 3: gateway down") ||
				!strings.Contains(msgs[ids[3]], "not a JSON object") || !strings.Contains(msgs[ids[4]], "NO_FUNDS") {
				t.Fatalf("incidents %v", msgs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("incidents %v", msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCommandNeedsAProgram(t *testing.T) {
	if _, err := worker.Command(nil); err == nil {
		t.Fatal("no command accepted")
	}
	if _, err := worker.Command([]string{"no-such-program-anywhere"}); err == nil {
		t.Fatal("a missing program accepted")
	}
	if _, err := worker.New(nil, worker.Config{}, nil); err == nil {
		t.Fatal("a worker without a type accepted")
	}
}
