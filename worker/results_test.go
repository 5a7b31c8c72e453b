package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/worker"
)

// netLDAP is seed 003's multi-output activity: an LDAP search on place
// "query" gives entry after entry (each fires "found", which puts the
// token back and one into "entries") and ends with "done".
const netLDAP = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="ldap" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="idle"><initialMarking><text>1</text></initialMarking></place>
   <place id="query"><name><text>ldap_search(base)</text></name></place>
   <place id="entries"/><place id="done"/>
   <transition id="ask"><name><text>search(&amp;base)</text></name></transition>
   <transition id="found"/><transition id="finish"/>
   <arc id="1" source="idle" target="ask"/><arc id="2" source="ask" target="query"/>
   <arc id="3" source="query" target="found"><name><text>entry</text></name></arc>
   <arc id="4" source="found" target="query"/><arc id="5" source="found" target="entries"/>
   <arc id="6" source="query" target="finish"><name><text>done</text></name></arc>
   <arc id="7" source="finish" target="done"/>
  </page>
 </net>
</pnml>`

// TestIntermediateResults: a worker's handler for the multi-output LDAP
// activity reports each entry with worker.Report while it runs — each
// fires the entry arc at once and the activity stays running — and ends
// the activity with its returned result; through the engine and through
// the HTTP API.
func TestIntermediateResults(t *testing.T) {
	for _, over := range []string{"engine", "http"} {
		t.Run(over, func(t *testing.T) {
			ctx := context.Background()
			e, err := veena.Open(ctx, veena.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if _, _, err := e.LoadDefinition(ctx, "ldap.pnml", []byte(netLDAP), ""); err != nil {
				t.Fatal(err)
			}
			src := worker.FromEngine(e)
			if over == "http" {
				ts := httptest.NewServer(server.New(server.Config{Engine: e, Loopback: true}))
				defer ts.Close()
				src = worker.NewHTTP(ts.URL, "")
			}
			p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "ldap"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.SendTransitionEvent(ctx, p.ID, "search", map[string]any{"base": "dc=example"}, ""); err != nil {
				t.Fatal(err)
			}
			marking := func() *veena.Marking {
				m, err := e.NetMarking(ctx, p.ID)
				if err != nil {
					t.Error(err)
					return &veena.Marking{}
				}
				return m
			}
			handled := make(chan error, 1)
			w, err := worker.New(src, worker.Config{Type: "ldap_search", Name: "w1", PollWait: 100 * time.Millisecond},
				func(ctx context.Context, job *worker.Job) (worker.Result, error) {
					err := func() error {
						if job.Env["base"].Any() != "dc=example" {
							return fmt.Errorf("job env %v", job.Env)
						}
						for i := range 3 {
							if err := worker.Report(ctx, worker.Result{Result: "entry", Env: map[string]any{"last": i}}); err != nil {
								return err
							}
							// The entry fired at once; the activity runs on.
							if m := marking(); m.Places["entries"] != i+1 || len(m.Activities) != 1 || m.Activities[0].Job != job.ID {
								return fmt.Errorf("after entry %d: %+v", i, m)
							}
						}
						return nil
					}()
					handled <- err
					return worker.Result{Result: "done"}, err
				})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer w.Stop(ctx)
			select {
			case err := <-handled:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the worker took no job")
			}
			waitState(t, e, []string{p.ID}, "completed")
			m := marking()
			if m.Places["done"] != 1 || m.Places["entries"] != 3 || len(m.Activities) != 0 || m.Variables["last"].Any() != int64(2) {
				t.Fatalf("after the final result: %+v", m)
			}
		})
	}
}

// TestReportOutsideAWorker: Report needs a handler's context.
func TestReportOutsideAWorker(t *testing.T) {
	if err := worker.Report(context.Background(), worker.Result{Result: "entry"}); !errors.Is(err, worker.ErrNoReporter) {
		t.Fatalf("Report outside a worker: %v", err)
	}
}

// TestCommandIntermediateResults: a command run by the worker writes the
// LDAP search's entries to file descriptor 3 as it finds them, one JSON
// object a line, and its final result to stdout.
func TestCommandIntermediateResults(t *testing.T) {
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, _, err := e.LoadDefinition(ctx, "ldap.pnml", []byte(netLDAP), ""); err != nil {
		t.Fatal(err)
	}
	search := func() string {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "ldap"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.SendTransitionEvent(ctx, p.ID, "search", map[string]any{"base": "dc=example"}, ""); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	run := func(script string) {
		t.Helper()
		h, err := worker.Command([]string{"sh", "-c", script})
		if err != nil {
			t.Fatal(err)
		}
		w, err := worker.New(worker.FromEngine(e), worker.Config{Type: "ldap_search", Name: "w1", PollWait: 100 * time.Millisecond}, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(ctx) })
	}

	p := search()
	run(`test "$VEENA_RESULTS_FD" = 3 || exit 9
for i in 0 1 2; do echo "{\"_result\": \"entry\", \"last\": $i}" >&3; done
echo '{"_result": "done"}'`)
	waitState(t, e, []string{p}, "completed")
	m, err := e.NetMarking(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Places["done"] != 1 || m.Places["entries"] != 3 || m.Variables["last"].Any() != int64(2) {
		t.Fatalf("after the command: %+v", m)
	}
}

// TestCommandBadIntermediateResult: a line on file descriptor 3 that is no
// result stops the command at once and fails the job for good.
func TestCommandBadIntermediateResult(t *testing.T) {
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, _, err := e.LoadDefinition(ctx, "ldap.pnml", []byte(netLDAP), ""); err != nil {
		t.Fatal(err)
	}
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "ldap"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendTransitionEvent(ctx, p.ID, "search", map[string]any{"base": "dc=example"}, ""); err != nil {
		t.Fatal(err)
	}
	h, err := worker.Command([]string{"sh", "-c", `echo 'not json' >&3; exec sleep 20`})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.FromEngine(e), worker.Config{Type: "ldap_search", Name: "w1", PollWait: 100 * time.Millisecond}, h)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	for {
		jobs, err := e.Jobs(ctx, veena.JobFilter{Process: p.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs.Items) == 1 && jobs.Items[0].State == "failed" {
			if msg := jobs.Items[0].ErrorMessage; msg == nil || !strings.Contains(*msg, "intermediate result") {
				t.Fatalf("failed job's message: %v", msg)
			}
			break
		}
		if time.Since(began) > 30*time.Second {
			t.Fatalf("the job did not fail: %+v", jobs.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
