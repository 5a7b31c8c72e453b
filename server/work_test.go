package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
)

// defApproval: a task for the sales group (outcomes approve and reject),
// then a job of type charge-card.
const defApproval = `<?xml version="1.0"?>
<process-definition name="approval" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="start" isStart="true"><arc to="review"/></node>
  <node name="review" type="wait">
    <arc to="charge" name="approve"/>
    <arc to="rejected" name="reject"/>
    <custom><task><label>Review</label><candidateGroups>sales</candidateGroups><priority env="priority"/></task></custom>
  </node>
  <node name="charge" type="wait">
    <arc to="done"/>
    <custom><job type="charge-card" retries="2"><header name="currency">EUR</header></job></custom>
  </node>
  <node name="done"/>
  <node name="rejected"/>
</process-definition>
`

func (e *env) tasks(query string) veena.TaskPage {
	e.t.Helper()
	r := e.get("/api/v1/tasks" + query)
	e.want(r, http.StatusOK, "")
	var page veena.TaskPage
	r.decode(e.t, &page)
	return page
}

func (e *env) taskOf(processID string) veena.Task {
	e.t.Helper()
	page := e.tasks("?process=" + processID)
	if len(page.Items) != 1 {
		e.t.Fatalf("%d tasks of %s", len(page.Items), processID)
	}
	return page.Items[0]
}

func (e *env) activate(body string) []veena.Job {
	e.t.Helper()
	r := e.post("/api/v1/jobs/activate", body)
	e.want(r, http.StatusOK, "")
	var a struct{ Jobs []veena.Job }
	r.decode(e.t, &a)
	return a.Jobs
}

// Every work endpoint and status code, on an open server (the body names
// the user), on every backend.
func TestWorkEndpoints(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, envOptions{})
			e.load(defApproval)
			p := e.start("approval", `{"priority": 70}`)
			task := e.taskOf(p.ID)
			if task.Label != "Review" || task.Priority != 70 || task.State != "open" || task.NodeToken == "" {
				t.Fatalf("task %+v", task)
			}
			taskPath := "/api/v1/tasks/" + task.ID

			// Inboxes.
			if page := e.tasks("?candidateGroup=sales"); len(page.Items) != 1 {
				t.Fatalf("sales inbox %+v", page)
			}
			if page := e.tasks("?candidateGroup=support"); len(page.Items) != 0 {
				t.Fatalf("support inbox %+v", page)
			}
			if page := e.tasks("?mine=true&user=alice&groups=sales"); len(page.Items) != 1 {
				t.Fatalf("alice's inbox %+v", page)
			}
			e.want(e.get("/api/v1/tasks?mine=true"), 400, "invalid_argument")
			e.want(e.get("/api/v1/tasks?mine=perhaps&user=a"), 400, "invalid_argument")
			e.want(e.get("/api/v1/tasks?state=bogus"), 400, "invalid_argument")
			e.want(e.get("/api/v1/tasks?limit=0"), 400, "invalid_argument")
			e.want(e.get("/api/v1/tasks/"+p.ID+".t999"), 404, "not_found")
			e.want(e.get("/api/v1/tasks/nope"), 404, "not_found")

			// Claim, release, save: the lock.
			e.want(e.post(taskPath+"/claim", ``), 400, "invalid_argument") // who?
			e.want(e.post(taskPath+"/claim", `{"user":"alice"`), 400, "invalid_json")
			e.want(e.post(taskPath+"/claim", `{"user":"alice","extra":1}`), 400, "invalid_argument")
			e.want(e.do(req{method: "POST", path: taskPath + "/claim", body: `{"user":"alice"}`, ctype: "text/plain"}), 415, "unsupported_media_type")
			e.want(e.post(taskPath+"/claim", `{"user":"alice","groups":["sales"]}`), 200, "")
			e.want(e.post(taskPath+"/claim", `{"user":"alice"}`), 200, "") // hers already
			e.want(e.post(taskPath+"/claim", `{"user":"bob"}`), 409, "task_claimed")
			e.want(e.post(taskPath+"/release", `{"user":"bob"}`), 409, "task_claimed")
			e.want(e.do(req{method: "PATCH", path: taskPath, body: `{"user":"bob","data":{"x":1}}`}), 409, "task_claimed")
			e.want(e.post(taskPath+"/complete", `{"user":"bob"}`), 409, "task_claimed")
			r := e.do(req{method: "PATCH", path: taskPath, body: `{"user":"alice","data":{"comment":"later"},"release":true}`})
			e.want(r, 200, "")
			var got veena.Task
			r.decode(t, &got)
			if got.State != "open" || got.ClaimedBy != nil || got.Data["comment"].Str() != "later" {
				t.Fatalf("saved and released %+v", got)
			}
			e.want(e.post(taskPath+"/release", `{"user":"bob"}`), 200, "") // free: no change
			e.want(e.do(req{method: "PATCH", path: taskPath, body: `{"user":"bob","data":{"n":123456789012345678901234567890}}`}), 400, "invalid_argument")
			e.want(e.do(req{method: "PATCH", path: taskPath, body: `{"user":"bob","data":{"n":2}}`}), 200, "") // claims it
			if got := e.taskOf(p.ID); got.State != "claimed" || *got.ClaimedBy != "bob" || got.Data["n"].IntValue() != 2 {
				t.Fatalf("saved by bob: %+v", got)
			}
			e.want(e.post(taskPath+"/complete", `{"user":"bob","outcome":"perhaps"}`), 400, "invalid_argument")
			r = e.post(taskPath+"/complete", `{"user":"bob","outcome":"approve","data":{"approved":true}}`)
			e.want(r, 200, "")
			var proc veena.Process
			r.decode(t, &proc)
			if !proc.Env["approved"].BoolValue() || proc.Env["comment"].Str() != "later" {
				t.Fatalf("process env %v", proc.Env)
			}
			e.want(e.post(taskPath+"/complete", `{"user":"bob"}`), 409, "task_not_open")
			e.want(e.post(taskPath+"/claim", `{"user":"bob"}`), 409, "task_not_open")
			if page := e.tasks("?state=completed&process=" + p.ID); len(page.Items) != 1 || *page.Items[0].CompletedBy != "bob" {
				t.Fatalf("completed tasks %+v", page)
			}

			// Jobs.
			e.want(e.post("/api/v1/jobs/activate", `{"worker":"w1"}`), 400, "invalid_argument")
			e.want(e.post("/api/v1/jobs/activate", `{"type":"charge-card","worker":"w1","lockFor":"soon"}`), 400, "invalid_argument")
			e.want(e.post("/api/v1/jobs/activate", `{"type":"charge-card","worker":"w1","lockFor":"P1D"}`), 400, "invalid_argument")
			e.want(e.post("/api/v1/jobs/activate", `{"type":"charge-card","worker":"w1","maxJobs":5000}`), 400, "invalid_argument")
			jobs := e.activate(`{"type":"charge-card","worker":"w1","lockFor":"PT5M"}`)
			if len(jobs) != 1 || jobs[0].Headers["currency"] != "EUR" || !jobs[0].Env["approved"].BoolValue() || *jobs[0].Worker != "w1" {
				t.Fatalf("activated %+v", jobs)
			}
			jobPath := "/api/v1/jobs/" + jobs[0].ID
			e.want(e.get(jobPath), 200, "")
			e.want(e.get("/api/v1/jobs/"+p.ID+".j1"), 404, "not_found")
			e.want(e.post(jobPath+"/complete", `{"worker":"w2"}`), 409, "job_not_leased")
			e.want(e.post(jobPath+"/complete", `{}`), 400, "invalid_argument")
			e.want(e.post(jobPath+"/fail", `{"worker":"w1","retryIn":"later"}`), 400, "invalid_argument")
			e.want(e.post(jobPath+"/fail", `{"worker":"w1","retries":-1}`), 400, "invalid_argument")
			r = e.post(jobPath+"/fail", `{"worker":"w1","retries":0,"message":"card service down"}`)
			e.want(r, 200, "")
			var job veena.Job
			r.decode(t, &job)
			if job.State != "failed" || *job.ErrorMessage != "card service down" {
				t.Fatalf("failed job %+v", job)
			}
			r = e.get("/api/v1/incidents?process=" + p.ID)
			e.want(r, 200, "")
			var incs veena.IncidentPage
			r.decode(t, &incs)
			if len(incs.Items) != 1 || incs.Items[0].Kind != "job_failed" || *incs.Items[0].Job != jobs[0].ID {
				t.Fatalf("incidents %+v", incs)
			}
			incPath := "/api/v1/incidents/" + incs.Items[0].ID
			e.want(e.get(incPath), 200, "")
			e.want(e.get("/api/v1/incidents?state=closed"), 400, "invalid_argument")
			e.want(e.post(incPath+"/resolve", `{"retries":0}`), 400, "invalid_argument")
			e.want(e.post(incPath+"/resolve", `{"retries":1,"user":"carol"}`), 200, "")
			e.want(e.post(incPath+"/resolve", `{}`), 409, "conflict")
			jobs = e.activate(`{"type":"charge-card","worker":"w2"}`)
			if len(jobs) != 1 || jobs[0].Retries != 1 {
				t.Fatalf("after resolving %+v", jobs)
			}
			e.want(e.post(jobPath+"/error", `{"worker":"w2"}`), 400, "invalid_argument")
			e.want(e.post(jobPath+"/error", `{"worker":"w2","code":"NO_FUNDS","message":"insufficient"}`), 200, "")
			r = e.get("/api/v1/incidents?process=" + p.ID)
			r.decode(t, &incs)
			if len(incs.Items) != 1 || incs.Items[0].Kind != "uncaught_error" {
				t.Fatalf("incidents after the error %+v", incs)
			}
			e.want(e.post("/api/v1/incidents/"+incs.Items[0].ID+"/resolve", ``), 200, "")
			jobs = e.activate(`{"type":"charge-card","worker":"w3","maxJobs":3}`)
			if len(jobs) != 1 {
				t.Fatalf("the step ran again: %+v", jobs)
			}
			r = e.post("/api/v1/jobs/"+jobs[0].ID+"/complete", `{"worker":"w3","env":{"receipt":"R-1"}}`)
			e.want(r, 200, "")
			r.decode(t, &proc)
			if proc.State != "completed" || proc.Env["receipt"].Str() != "R-1" {
				t.Fatalf("process after the job %+v", proc)
			}
			r = e.get("/api/v1/jobs?process=" + p.ID + "&state=completed,error_thrown,failed")
			var jp veena.JobPage
			r.decode(t, &jp)
			if len(jp.Items) != 2 {
				t.Fatalf("jobs of the process %+v", jp)
			}
			e.want(e.get("/api/v1/jobs?state=lost"), 400, "invalid_argument")
		})
	}
}

// With access tokens, the token's user acts; only an admin acts for others.
func TestWorkIdentity(t *testing.T) {
	e := newEnv(t, backends(t)[0], envOptions{})
	secret := func(name string, role auth.Role, groups ...string) string {
		s, err := auth.Create(e.tokens, name, role, groups...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	admin := secret("root", auth.RoleAdmin)
	alice := secret("alice", auth.RoleOperator, "sales", "managers")
	bob := secret("bob", auth.RoleOperator)
	viewer := secret("watcher", auth.RoleViewer, "sales")
	waitFor(t, func() bool { return e.get("/api/v1/whoami").status == http.StatusUnauthorized })
	e.token = admin
	e.load(defApproval)
	p := e.start("approval", `{"priority": 50}`)
	task := e.taskOf(p.ID)
	taskPath := "/api/v1/tasks/" + task.ID

	r := e.do(req{method: "GET", path: "/api/v1/whoami", token: alice})
	if !strings.Contains(string(r.body), `"groups":["sales","managers"]`) {
		t.Fatalf("whoami %s", r.body)
	}
	// Alice's inbox through her groups; bob's is empty.
	r = e.do(req{method: "GET", path: "/api/v1/tasks?mine=true", token: alice})
	var page veena.TaskPage
	r.decode(t, &page)
	if len(page.Items) != 1 {
		t.Fatalf("alice's inbox %s", r.body)
	}
	r = e.do(req{method: "GET", path: "/api/v1/tasks?mine=true", token: bob})
	r.decode(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("bob's inbox %s", r.body)
	}
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", token: viewer}), 403, "forbidden")
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", noAuth: true}), 401, "unauthorized")
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", token: alice, body: `{"user":"bob"}`}), 403, "forbidden")
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", token: alice}), 200, "")
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", token: bob}), 409, "task_claimed")
	e.want(e.do(req{method: "POST", path: taskPath + "/release", token: bob}), 409, "task_claimed")
	// An admin breaks the lock, and may act as another user.
	e.want(e.do(req{method: "POST", path: taskPath + "/release", token: admin}), 200, "")
	e.want(e.do(req{method: "POST", path: taskPath + "/claim", token: admin, body: `{"user":"bob"}`}), 200, "")
	if got := e.taskOf(p.ID); *got.ClaimedBy != "bob" {
		t.Fatalf("claimed by %v", got.ClaimedBy)
	}
	r = e.do(req{method: "POST", path: taskPath + "/complete", token: bob, body: `{"outcome":"reject"}`})
	e.want(r, 200, "")
	if got := e.taskOf(p.ID + "&state=completed"); *got.CompletedBy != "bob" {
		t.Fatalf("completed by %v", got.CompletedBy)
	}
}

// A lease that runs out: another worker takes the job over and the first
// one's completion is refused. A waiting activation is woken by a new job.
func TestLeasesOverHTTP(t *testing.T) {
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(defApproval)
	p := e.start("approval", `{"priority": 50}`)
	task := e.taskOf(p.ID)

	woken := make(chan []veena.Job, 1)
	began := time.Now()
	go func() { woken <- e.activate(`{"type":"charge-card","worker":"w1","lockFor":"PT0.3S","wait":"20s"}`) }()
	time.Sleep(100 * time.Millisecond)
	e.want(e.post("/api/v1/tasks/"+task.ID+"/complete", `{"user":"alice","outcome":"approve"}`), 200, "")
	var jobs []veena.Job
	select {
	case jobs = <-woken:
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll was not woken")
	}
	if len(jobs) != 1 || time.Since(began) > 10*time.Second {
		t.Fatalf("long poll gave %+v after %v", jobs, time.Since(began))
	}
	time.Sleep(400 * time.Millisecond)
	taken := e.activate(`{"type":"charge-card","worker":"w2","lockFor":"1m"}`)
	if len(taken) != 1 || taken[0].ID != jobs[0].ID {
		t.Fatalf("take-over %+v", taken)
	}
	e.want(e.post("/api/v1/jobs/"+jobs[0].ID+"/complete", `{"worker":"w1"}`), 409, "job_not_leased")
	e.want(e.post("/api/v1/jobs/"+jobs[0].ID+"/complete", `{"worker":"w2"}`), 200, "")
}

// Twenty users claim one task at once over HTTP: one 200, nineteen 409.
func TestClaimRaceHTTP(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, envOptions{})
			e.load(defApproval)
			p := e.start("approval", `{"priority": 50}`)
			task := e.taskOf(p.ID)
			var wg sync.WaitGroup
			statuses := make(chan int, 20)
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses <- e.post("/api/v1/tasks/"+task.ID+"/claim", fmt.Sprintf(`{"user":"u%d"}`, i)).status
				}()
			}
			wg.Wait()
			close(statuses)
			count := map[int]int{}
			for s := range statuses {
				count[s]++
			}
			if count[200] != 1 || count[409] != 19 {
				t.Fatalf("statuses %v", count)
			}
		})
	}
}

// /metrics counts the tasks, jobs and incidents waiting.
func TestWorkGauges(t *testing.T) {
	e := newEnv(t, backends(t)[1], envOptions{})
	e.load(defApproval)
	for range 3 {
		e.start("approval", `{"priority": 50}`)
	}
	if g := e.gauge(`veena_tasks\{state="open"\}`); g != "3" {
		t.Fatalf("open tasks %s", g)
	}
	tasks := e.tasks("")
	e.want(e.post("/api/v1/tasks/"+tasks.Items[0].ID+"/claim", `{"user":"a"}`), 200, "")
	e.want(e.post("/api/v1/tasks/"+tasks.Items[1].ID+"/complete", `{"user":"a","outcome":"approve"}`), 200, "")
	e.want(e.post("/api/v1/tasks/"+tasks.Items[2].ID+"/complete", `{"user":"a","outcome":"approve"}`), 200, "")
	if g := e.gauge(`veena_tasks\{state="claimed"\}`); g != "1" {
		t.Fatalf("claimed tasks %s", g)
	}
	jobs := e.activate(`{"type":"charge-card","worker":"w","maxJobs":1}`)
	e.want(e.post("/api/v1/jobs/"+jobs[0].ID+"/fail", `{"worker":"w","retries":0}`), 200, "")
	if g := e.gauge(`veena_jobs\{state="open",type="charge-card"\}`); g != "1" {
		t.Fatalf("open jobs %s", g)
	}
	if g := e.gauge(`veena_jobs\{state="failed",type="charge-card"\}`); g != "1" {
		t.Fatalf("failed jobs %s", g)
	}
	if g := e.gauge(`veena_incidents_open\{kind="job_failed"\}`); g != "1" {
		t.Fatalf("incidents %s", g)
	}
}
