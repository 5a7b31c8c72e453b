package schema_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store/memstore"
)

// TestJobsAndIncidents: a job action is offered to outside workers and its
// result lands in the almanac; a registered action that keeps failing
// retries as declared, then opens an incident; resolving it runs the
// action again.
func TestJobsAndIncidents(t *testing.T) {
	ctx := context.Background()
	rt := schema.New()
	var bookFails atomic.Int32
	bookFails.Store(5)
	rt.Action("carrier.book", func(ctx context.Context, c *schema.Call) (any, error) {
		if bookFails.Add(-1) >= 0 {
			return nil, errors.New("carrier refuses")
		}
		price, _ := c.Arg("price").(float64)
		if price != 12.5 {
			return nil, veena.Permanent(errors.New("wrong price"))
		}
		return "LBL-1", nil
	})
	k := kernel.New()
	rt.Register(k)
	c := &clock{now: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)}
	e, err := veena.Open(ctx, veena.Options{Store: memstore.New(), Kernel: k, Clock: c.Now, TimerInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rt.Attach(e)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: e, rt: rt, clock: c}
	if _, _, err := e.LoadDefinition(ctx, "jobs.yaml", mustRead(t, "testdata/jobs.yaml"), ""); err != nil {
		t.Fatal(err)
	}
	p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "shipping", Context: map[string]string{"orderId": "o-1"}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "carrier.quote", Worker: "w1", MaxJobs: 1, LockFor: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("activate: %v %v", jobs, err)
	}
	j := jobs[0]
	if j.Env["orderId"].Any() != "o-1" || j.Env["weight"].Any() != int64(3) || j.Headers["action"] != "quote" {
		t.Errorf("job: %+v", j)
	}
	// The worker fails it once with no retries left: the action shows
	// failed, an incident opens; resolving it offers the job again.
	zero := 0
	if _, err := e.FailJob(ctx, j.ID, veena.FailJobRequest{Worker: "w1", Retries: &zero, Message: "carrier down"}); err != nil {
		t.Fatal(err)
	}
	in, _ := rt.Nodes(ctx, p.ID)
	if in.Nodes[0].State != schema.NodeFailed || in.Nodes[0].Actions[0].State != schema.ActionFailed {
		t.Fatalf("after the job failed: %+v", in.Nodes[0])
	}
	jinc, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
	if err != nil || len(jinc.Items) != 1 || jinc.Items[0].Kind != "job_failed" {
		t.Fatalf("job incident: %+v %v", jinc, err)
	}
	one := 1
	if _, err := e.ResolveIncident(ctx, jinc.Items[0].ID, veena.ResolveIncidentRequest{Retries: &one}); err != nil {
		t.Fatal(err)
	}
	jobs, err = e.ActivateJobs(ctx, veena.ActivateRequest{Type: "carrier.quote", Worker: "w2", MaxJobs: 1, LockFor: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("activate again: %v %v", jobs, err)
	}
	j = jobs[0]
	if _, err := e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: "w2", Env: map[string]any{"price": 12.5, "currency": "EUR"}}); err != nil {
		t.Fatal(err)
	}
	// carrier.book fails: tried, retried after 5 s, then an incident.
	h.settle(p.ID)
	c.Add(6 * time.Second)
	waitTimers(t, h)
	h.settle(p.ID)
	incs, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(incs.Items) != 1 || incs.Items[0].Kind != "action_failed" {
		t.Fatalf("incidents: %+v", incs.Items)
	}
	in, _ = rt.Nodes(ctx, p.ID)
	book := in.Nodes[0].Actions[1]
	if book.State != schema.ActionFailed || book.Attempts != 2 || book.Error != "carrier refuses" || in.Nodes[0].State != schema.NodeFailed {
		t.Fatalf("after the retries: %+v / %+v", in.Nodes[0], book)
	}
	if alm := h.almanac(p.ID); alm["quote"] == nil {
		t.Errorf("almanac has no quote: %v", alm)
	}
	// The carrier mends; resolving runs the action again.
	bookFails.Store(0)
	if _, err := e.ResolveIncident(ctx, incs.Items[0].ID, veena.ResolveIncidentRequest{}); err != nil {
		t.Fatal(err)
	}
	h.settle(p.ID)
	got, _ := e.Process(ctx, p.ID)
	if got.State != "completed" {
		in, _ := rt.Nodes(ctx, p.ID)
		t.Fatalf("after resolving: %s %+v", got.State, in.Nodes)
	}
	if alm := h.almanac(p.ID); alm["label"] != "LBL-1" {
		t.Errorf("label: %v", alm)
	}
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
