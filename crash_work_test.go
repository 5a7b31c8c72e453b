package veena_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
)

// The work part of the crash test: a crashwork process has a task, which
// the child's user (one per slot, so that after a restart the same user
// holds it) claims and completes, and a job, which the children's workers
// lease for a second, fail now and then, and complete. Incidents (a job out
// of retries) are resolved. Acknowledged completions are logged as
// "task <id> <user>" and "job <id> <worker>".

// runWork drives a crashwork process until its task and job are done.
func runWork(ctx context.Context, e *veena.Engine, p *veena.Process, slot int, logAck func(kind, a, b string)) (*veena.Process, error) {
	user := veena.Actor{User: fmt.Sprintf("user-%d", slot), Groups: []string{"crash"}}
	for p.State == "executing" {
		page, err := e.Tasks(ctx, veena.TaskFilter{Process: p.ID})
		if err != nil {
			return nil, err
		}
		for _, t := range page.Items {
			_, err := e.ClaimTask(ctx, t.ID, user, "")
			if errors.Is(err, veena.ErrTaskClaimed) {
				continue // the other engine's user has it
			}
			if err != nil && !errors.Is(err, veena.ErrTaskNotOpen) {
				return nil, fmt.Errorf("claim %s: %w", t.ID, err)
			}
			_, err = e.CompleteTask(ctx, t.ID, veena.CompleteTaskRequest{Actor: user, Outcome: "approve",
				Data: map[string]any{"approvedBy": user.User}, IdempotencyKey: "task-" + t.ID + "-" + user.User})
			switch {
			case err == nil:
				logAck("task", t.ID, user.User)
			case errors.Is(err, veena.ErrTaskNotOpen), errors.Is(err, veena.ErrTaskClaimed):
			default:
				return nil, fmt.Errorf("complete %s: %w", t.ID, err)
			}
		}
		incs, err := e.Incidents(ctx, veena.IncidentFilter{Process: p.ID})
		if err != nil {
			return nil, err
		}
		for _, i := range incs.Items {
			two := 2
			if _, err := e.ResolveIncident(ctx, i.ID, veena.ResolveIncidentRequest{Actor: user, Retries: &two, IdempotencyKey: "resolve-" + i.ID + "-" + user.User}); err != nil && veena.Code(err) != "conflict" {
				return nil, fmt.Errorf("resolve %s: %w", i.ID, err)
			}
		}
		if p, err = e.Process(ctx, p.ID); err != nil {
			return nil, err
		}
		if p.State == "executing" {
			time.Sleep(10 * time.Millisecond) // the workers have the job
		}
	}
	return p, nil
}

// runCrashWorkers runs four workers of crash-job in the child until ctx ends.
func runCrashWorkers(ctx context.Context, e *veena.Engine, slot int, logAck func(kind, a, b string)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("worker-%d-%d", slot, w)
			for ctx.Err() == nil {
				jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "crash-job", Worker: name, MaxJobs: 2,
					LockFor: time.Second, Wait: 200 * time.Millisecond})
				if err != nil {
					if ctx.Err() == nil {
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				for _, j := range jobs {
					if rand.IntN(10) == 0 {
						// A failed attempt: offered again soon.
						_, _ = e.FailJob(ctx, j.ID, veena.FailJobRequest{Worker: name, RetryIn: 20 * time.Millisecond, Message: "flaky"})
						continue
					}
					_, err := e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: name, Env: map[string]any{"paidBy": name},
						IdempotencyKey: "job-" + j.ID + "-" + name})
					if err == nil {
						logAck("job", j.ID, name)
					}
				}
			}
		}()
	}
	return &wg
}

// verifyCrashWork checks the work of a completed crashwork process: one
// task, completed once, by the one user who ever claimed it (no lock held by
// two), who is the one whose completion was acknowledged; its jobs ended,
// none lost, completed once, by the worker whose completion was acknowledged.
func verifyCrashWork(t *testing.T, e *veena.Engine, p veena.Process, taskBy, jobBy map[string]string) {
	ctx := context.Background()
	tasks, err := e.Tasks(ctx, veena.TaskFilter{Process: p.ID, States: []string{"open", "claimed", "completed", "canceled"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks.Items) != 1 || tasks.Items[0].State != "completed" || tasks.Items[0].CompletedBy == nil {
		t.Errorf("process %s: tasks %+v", p.ID, tasks.Items)
		return
	}
	task := tasks.Items[0]
	if want, ok := taskBy[task.ID]; ok && *task.CompletedBy != want {
		t.Errorf("task %s: completed by %s, acknowledged to %s", task.ID, *task.CompletedBy, want)
	}
	if p.Env["approvedBy"].Str() != *task.CompletedBy {
		t.Errorf("process %s: approvedBy %v, task completed by %s", p.ID, p.Env["approvedBy"], *task.CompletedBy)
	}
	audit, err := e.Audit(ctx, p.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	claims, taskDone, jobDone := 0, 0, 0
	for _, a := range audit.Items {
		switch a.Action {
		case "task_claimed":
			claims++
			if a.User == nil || *a.User != *task.CompletedBy {
				t.Errorf("task %s claimed by %v, completed by %s", task.ID, a.User, *task.CompletedBy)
			}
		case "task_completed":
			taskDone++
		case "job_completed":
			jobDone++
		}
	}
	if claims != 1 || taskDone != 1 || jobDone != 1 {
		t.Errorf("process %s: %d claims, %d task completions, %d job completions in the audit trail; want one each", p.ID, claims, taskDone, jobDone)
	}
	jobs, err := e.Jobs(ctx, veena.JobFilter{Process: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	completed := 0
	for _, j := range jobs.Items {
		switch j.State {
		case "completed":
			completed++
			if want, ok := jobBy[j.ID]; ok && (j.Worker == nil || *j.Worker != want || p.Env["paidBy"].Str() != want) {
				t.Errorf("job %s: acknowledged to %s, held by %v, env paidBy %v", j.ID, want, j.Worker, p.Env["paidBy"])
			}
		default:
			t.Errorf("job %s of completed process %s is %s", j.ID, p.ID, j.State)
		}
	}
	if completed != 1 {
		t.Errorf("process %s: %d completed jobs", p.ID, completed)
	}
}
