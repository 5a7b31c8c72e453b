package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/veena-wf/veena"
)

// The work workloads. "job": a process whose one step is a job; the client
// starts it, then acts as a worker: it leases one job of the type (its own
// or another client's: workers take whatever is there) and completes it.
// "task": a process whose one step is a human task; the client starts it,
// claims its task and completes it. Their cycles (activate + complete,
// claim + complete) are measured against "wait2", a process with two plain
// waits the client completes: the same start, then two completions.

const wait2XML = `<?xml version="1.0"?>
<process-definition name="bench-wait2" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="first"/></node>
  <node name="first" type="wait"><arc to="second"/></node>
  <node name="second" type="wait"><arc to="end"/></node>
  <node name="end"/>
</process-definition>
`

const jobXML = `<?xml version="1.0"?>
<process-definition name="bench-job" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="work"/></node>
  <node name="work" type="wait"><arc to="end"/><custom><job type="bench-job"/></custom></node>
  <node name="end"/>
</process-definition>
`

const taskXML = `<?xml version="1.0"?>
<process-definition name="bench-task" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="review"/></node>
  <node name="review" type="wait"><arc to="end"/><custom><task><candidateGroups>bench</candidateGroups></task></custom></node>
  <node name="end"/>
</process-definition>
`

// driveJob leases one job and completes it.
func driveJob(ctx context.Context, e *veena.Engine, p *veena.Process, lat *[]time.Duration) (int, error) {
	t := time.Now()
	jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "bench-job", Worker: "bench", MaxJobs: 1, LockFor: time.Minute, Wait: 10 * time.Second})
	*lat = append(*lat, time.Since(t))
	if err != nil {
		return 1, err
	}
	if len(jobs) == 0 {
		return 1, fmt.Errorf("no job of process %s was offered within 10s", p.ID)
	}
	t = time.Now()
	q, err := e.CompleteJob(ctx, jobs[0].ID, veena.CompleteJobRequest{Worker: "bench", Env: map[string]any{"done": true}})
	*lat = append(*lat, time.Since(t))
	if err != nil {
		return 2, err
	}
	if q.State != "completed" {
		return 2, fmt.Errorf("process %s is %s after its job", q.ID, q.State)
	}
	return 2, nil
}

// driveTask claims the process's task and completes it.
func driveTask(ctx context.Context, e *veena.Engine, p *veena.Process, lat *[]time.Duration) (int, error) {
	page, err := e.Tasks(ctx, veena.TaskFilter{Process: p.ID})
	if err != nil {
		return 0, err
	}
	if len(page.Items) != 1 {
		return 0, fmt.Errorf("process %s has %d open tasks", p.ID, len(page.Items))
	}
	id := page.Items[0].ID
	who := veena.Actor{User: "bench", Groups: []string{"bench"}}
	t := time.Now()
	_, err = e.ClaimTask(ctx, id, who, "")
	*lat = append(*lat, time.Since(t))
	if err != nil {
		return 1, err
	}
	t = time.Now()
	q, err := e.CompleteTask(ctx, id, veena.CompleteTaskRequest{Actor: who, Data: map[string]any{"ok": true}})
	*lat = append(*lat, time.Since(t))
	if err != nil {
		return 2, err
	}
	if q.State != "completed" {
		return 2, fmt.Errorf("process %s is %s after its task", q.ID, q.State)
	}
	return 2, nil
}
