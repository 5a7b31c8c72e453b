package bpmn_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/bpmn"
	fbpmn "github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

const corpusDir = "../../shared/corpus/bpmn"

// drive runs a process to its end as its model intends: user tasks and
// jobs are completed (with the answers given for their node, if any),
// messages and signals are sent to the tokens waiting for them, the clock
// moves on to the next timer. It reports what happened, or why it stuck.
func drive(t *testing.T, r *run, answers map[string]map[string]any, answer func(node string, vars func(string) any) map[string]any, maxSteps int) (string, error) {
	var log []string
	for step := 0; step < maxSteps; step++ {
		if r.p.State == kernel.Completed {
			return strings.Join(log, " "), nil
		}
		if r.p.State != kernel.Executing {
			return strings.Join(log, " "), fmt.Errorf("process is %s", r.p.State)
		}
		var work, waiting, delayed []*kernel.NodeToken
		var incidents []string
		r.p.Walk(func(q *kernel.Process) {
			if q.State != kernel.Executing {
				return
			}
			for _, tok := range q.NodeTokens {
				if !tok.Active() || tok.Complete {
					continue
				}
				switch {
				case tok.Holds(kernel.HoldsIncident):
					incidents = append(incidents, tok.Node.Name)
				case tok.Holds(kernel.HoldsTask) || tok.Holds(kernel.HoldsJob):
					work = append(work, tok)
				case tok.GuardAction == kernel.Delay:
					delayed = append(delayed, tok)
				case tok.Note("await") == "message" || tok.Note("await") == "signal":
					if tok.Note("mode") != "listen" {
						waiting = append(waiting, tok)
					}
				}
			}
		})
		if len(incidents) > 0 {
			var msgs []string
			for _, ef := range r.p.Effects {
				if ef.Kind == kernel.IncidentRaised {
					msgs = append(msgs, ef.Token.Node.Name+": "+ef.Incident.Message)
				}
			}
			return strings.Join(log, " "), fmt.Errorf("incidents at %v: %s", incidents, strings.Join(msgs, "; "))
		}
		e := r.engine()
		sort.SliceStable(delayed, func(i, j int) bool { return delayed[i].DelayUntilNs < delayed[j].DelayUntilNs })
		dueNow := len(delayed) > 0 && !delayed[0].DelayUntil().After(r.now)
		switch {
		case len(work) > 0 && !dueNow:
			tok := work[0]
			vars := answers[tok.Node.Name]
			if vars == nil {
				vars = answers["*"]
			}
			if answer != nil {
				if v := answer(tok.Node.Name, func(name string) any {
					x, _ := tok.FullEnv().Get(name)
					return x.Any()
				}); v != nil {
					vars = v
				}
			}
			log = append(log, tok.Node.Name)
			r.work(tok, vars, "")
		case len(waiting) > 0 && !dueNow:
			tok := waiting[0]
			log = append(log, tok.Note("await")+":"+tok.Note("name"))
			env, _ := kernel.EnvFromMap(answers[tok.Node.Name])
			if err := e.CompleteWith(tok, env); err != nil {
				return strings.Join(log, " "), err
			}
		case len(delayed) > 0:
			due := delayed[0].DelayUntil()
			if due.After(r.now) {
				r.now = due
			}
			log = append(log, "timer:"+delayed[0].Node.Name)
			if err := r.k.Engine(r.now).ReevaluateDelayedToken(delayed[0]); err != nil {
				return strings.Join(log, " "), err
			}
		default:
			// Only listeners left, or a deadlock.
			var left []string
			r.p.Walk(func(q *kernel.Process) {
				for _, tok := range q.ActiveNodeTokens() {
					left = append(left, tok.Node.Name+"("+tok.Note("mode")+")")
				}
				for _, a := range q.ActiveArcTokens() {
					left = append(left, "arc->"+a.Arc.To.Name)
				}
			})
			return strings.Join(log, " "), fmt.Errorf("stuck: nothing to do, active: %v", left)
		}
	}
	return strings.Join(log, " "), fmt.Errorf("not done after %d steps", maxSteps)
}

// corpusRuns gives, for the models whose conditions read variables, the
// start variables and the answers to their tasks; every other model runs
// with none.
var corpusRuns = map[string]struct {
	start   map[string]any
	answers map[string]map[string]any
	// answer computes a task's or job's answer from the variables.
	answer func(node string, vars func(string) any) map[string]any
	// incident: the model is meant to stop at an incident (an invalid
	// expression on purpose); its message must contain this.
	incident string
}{
	"lib-bpmn-engine/exclusive-gateway-with-condition.bpmn":             {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/exclusive-gateway-with-condition-and-default.bpmn": {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/inclusive-gateway-with-condition.bpmn":             {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/inclusive-gateway-with-condition-and-default.bpmn": {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/exclusive-gateway-multiple-tasks.bpmn":             {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/exclusive-gateway-multiple-tasks-no-default.bpmn":  {start: map[string]any{"price": 0}},
	"lib-bpmn-engine/inclusive-gateway-multiple-tasks.bpmn":             {start: map[string]any{"price": 10}},
	"lib-bpmn-engine/subprocess-with-gateways.bpmn":                     {start: map[string]any{"COUNT": 27}},
	"lib-bpmn-engine/message-intermediate-timer-event-expression.bpmn":  {start: map[string]any{"timeoutValue": "PT1M"}},
	// The model's timer expression is broken on purpose (a-b): its
	// evaluation fails where the timer fires (an incident in the engine).
	"lib-bpmn-engine/message-intermediate-timer-event-invalid-expression.bpmn": {incident: "not a date, duration or cycle"},
	// A worker counts; the loop ends after 3.
	"lib-bpmn-engine/simple-count-loop.bpmn": {start: map[string]any{"counter": 0}, answer: func(node string, v func(string) any) map[string]any {
		n, _ := v("counter").(int64)
		return map[string]any{"counter": n + 1}
	}},
	"lib-bpmn-engine/simple-count-loop-with-message.bpmn": {start: map[string]any{"engineValidationAttempts": 0}, answer: func(node string, v func(string) any) map[string]any {
		if node != "validate" {
			return nil
		}
		n, _ := v("engineValidationAttempts").(int64)
		return map[string]any{"engineValidationAttempts": n + 1, "hasReachedMaxAttempts": n+1 >= 3}
	}},
	"marklogicworkflow/bpmn2/011_gateways_test.bpmn":         {start: map[string]any{"choiceA": "B", "choiceB": "C"}},
	"marklogicworkflow/bpmn2/021-initiating-attachment.bpmn": {start: map[string]any{"collections": "Approved"}, answers: map[string]map[string]any{"*": {"wf:action": "Approved"}}},
	"marklogicworkflow/bpmn2/InclusiveGatewayTest-01.bpmn2":  {start: map[string]any{"value": "A"}},
	"marklogicworkflow/bpmn2/InclusiveGatewayTest-02.bpmn":   {start: map[string]any{"value1": "A", "value2": "B"}},
	"miwg/C.1.1.bpmn": {start: map[string]any{"approver": "mary"}, answers: map[string]map[string]any{"*": {"approved": true, "clarified": "yes"}}},
	// A descriptive model whose loop (gateway to task and back) has no
	// conditions: it never ends; the kernel's limit stops the step.
	"miwg/C.2.0.bpmn/WFP-Page_1-3": {incident: "more than 100000"},
}

// Every executable model of the corpus that loads runs to its end.
func TestCorpusRuns(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("the corpus is not here (%v): skipped", err)
	}
	var files []string
	_ = filepath.Walk(corpusDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".bpmn") || strings.HasSuffix(p, ".bpmn2")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	ran, stopped := 0, 0
	for _, f := range files {
		rel, _ := filepath.Rel(corpusDir, f)
		src, _ := os.ReadFile(f)
		gs, err := fbpmn.Load(filepath.Base(f), src)
		if err != nil {
			continue // refused: see format/bpmn's TestCorpus
		}
		for _, g := range gs {
			t.Run(rel+"/"+g.Name, func(t *testing.T) {
				cfg, ok := corpusRuns[rel+"/"+g.Name]
				if !ok {
					cfg = corpusRuns[rel]
				}
				r := newRun(t, gs)
				r.g = g
				if cfg.incident != "" && len(g.StartNodes()) > 0 {
					e, _ := kernel.EnvFromMap(cfg.start)
					p, err := r.engine().Start(g, e)
					if err != nil {
						if strings.Contains(err.Error(), cfg.incident) {
							stopped++
							return
						}
						t.Fatalf("start: %v", err)
					}
					r.p = p
				} else if len(g.StartNodes()) > 0 {
					r.start(cfg.start)
				} else {
					starts := bpmn.StartEvents(g)
					if len(starts) == 0 {
						t.Skip("no start event")
					}
					r.startAt(starts[0].Node, cfg.start)
				}
				log, err := drive(t, r, cfg.answers, cfg.answer, 500)
				switch {
				case cfg.incident != "":
					if err == nil || !strings.Contains(err.Error(), cfg.incident) {
						t.Fatalf("want an incident with %q, got %v after %s", cfg.incident, err, log)
					}
					stopped++
				case err != nil:
					t.Fatalf("%v\nafter: %s\n%s", err, log, r.history())
				default:
					ran++
				}
			})
		}
	}
	t.Logf("%d processes ran to their end, %d stopped at the incident they are meant to", ran, stopped)
}

// newRun prepares the graphs of a file on a kernel of their own.
func newRun(t *testing.T, gs []*graph.Graph) *run {
	k := kernel.New()
	bpmn.Register(k)
	n := 0
	k.NewID = func() string { n++; return fmt.Sprintf("p%d", n) }
	r := &run{t: t, k: k, defs: map[string]*graph.Graph{}, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	for _, g := range gs {
		g.Version = 1
		r.defs[g.Name] = g
		if err := k.Prepare(g); err != nil {
			t.Fatalf("prepare %s: %v", g.Name, err)
		}
	}
	k.Definitions = func(name string) *graph.Graph { return r.defs[name] }
	return r
}
