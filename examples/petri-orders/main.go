// Command petri-orders runs the order net of orders.pnml with Veena
// embedded: an action registered from Go, workers for the net's two
// activities (check_credit, ship_order), an event, and the analysis of the
// net's state space.
//
//	go run ./examples/petri-orders
//
// With -serve ADDR it serves the HTTP API and the console instead, with
// the action registered and no workers: be the worker from the shell
// (README, "Petri nets").
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/console"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/worker"
)

//go:embed orders.pnml
var orders []byte

func main() {
	serve := flag.String("serve", "", "serve the HTTP API and the console on this loopback address instead of running the demo")
	flag.Parse()
	ctx := context.Background()
	e, err := veena.Open(ctx, veena.Options{}) // in memory; Options.Store for SQLite or PostgreSQL
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	// The action of transition "reserve": quick and transactional. It may
	// also return petri.Fail (an incident opens) or petri.DeferBy(d).
	e.RegisterAction("reserve", func(c *petri.ActionCall) petri.Result {
		customer, _ := c.Arg("customer")
		fmt.Printf("reserve: stock for %s\n", customer.Str())
		return petri.Succeed()
	})
	if _, _, err := e.LoadDefinition(ctx, "orders.pnml", orders, ""); err != nil {
		log.Fatal(err)
	}
	if *serve != "" {
		if err := e.Start(ctx); err != nil { // timers of deferred actions
			log.Fatal(err)
		}
		fmt.Printf("petri-orders serving on http://%s (console at /)\n", *serve)
		log.Fatal(http.ListenAndServe(*serve, server.New(server.Config{Engine: e, Loopback: true, Console: console.Handler()})))
	}

	// The analysis: a sound workflow net, no deadlock but its end.
	a, err := e.AnalyseDefinition(ctx, "orders", 0, veena.AnalyseOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("analysis: %d states, bounded %v, deadlocks %v, workflow net %v, sound %v\n",
		*a.States, *a.Bounded, a.Deadlocks, a.WorkflowNet, *a.Sound)

	// Workers for the activities: the result code chooses the arc.
	check, _ := worker.New(worker.FromEngine(e), worker.Config{Type: "check_credit", Name: "credit", PollWait: time.Second},
		func(ctx context.Context, j *worker.Job) (worker.Result, error) {
			customer := j.Env["customer"].Str()
			fmt.Printf("check_credit: %s\n", customer)
			switch customer {
			case "acme":
				return worker.Result{Result: "ok", Env: map[string]any{"limit": 5000}}, nil
			case "shady":
				return worker.Result{Result: "refused", Env: map[string]any{"limit": 0}}, nil
			}
			return worker.Result{Result: "unknown"}, nil // no arc names it: the catch-all arc, to review
		})
	ship, _ := worker.New(worker.FromEngine(e), worker.Config{Type: "ship_order", Name: "shipping", PollWait: time.Second},
		func(ctx context.Context, j *worker.Job) (worker.Result, error) {
			fmt.Printf("ship_order: %s\n", j.Env["customer"].Str())
			return worker.Result{}, nil
		})
	for _, w := range []*worker.Worker{check, ship} {
		if err := w.Start(ctx); err != nil {
			log.Fatal(err)
		}
		defer w.Stop(ctx)
	}

	for _, customer := range []string{"acme", "shady", "newcomer"} {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "orders", Env: map[string]any{"customer": customer}})
		if err != nil {
			log.Fatal(err)
		}
		m := wait(ctx, e, p.ID, func(m *veena.Marking) bool { return m.State != "executing" || m.Places["review"] > 0 })
		if m.Places["review"] > 0 {
			// A person decides: the event approve, whose binding argument
			// &reviewer copies its reviewer into the net's variables.
			r, err := e.SendTransitionEvent(ctx, p.ID, "approve", map[string]any{"reviewer": "alice"}, "")
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("approve: fired %v\n", r.Fired)
			m = wait(ctx, e, p.ID, func(m *veena.Marking) bool { return m.State != "executing" })
		}
		fmt.Printf("%s: %s, marking %v, variables %v\n\n", customer, m.State, nonEmpty(m.Places), m.Variables)
	}
}

func wait(ctx context.Context, e *veena.Engine, id string, done func(*veena.Marking) bool) *veena.Marking {
	for {
		m, err := e.NetMarking(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		if done(m) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func nonEmpty(places map[string]int) map[string]int {
	out := map[string]int{}
	for p, n := range places {
		if n != 0 {
			out[p] = n
		}
	}
	return out
}
