package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/internal/duration"
)

// WorkEngine is the part of the Go API the work endpoints use: human
// tasks, jobs for worker programs and incidents.
type WorkEngine interface {
	Tasks(ctx context.Context, f veena.TaskFilter) (*veena.TaskPage, error)
	Task(ctx context.Context, id string) (*veena.Task, error)
	ClaimTask(ctx context.Context, id string, a veena.Actor, idempotencyKey string) (*veena.Task, error)
	ReleaseTask(ctx context.Context, id string, a veena.Actor, idempotencyKey string) (*veena.Task, error)
	SaveTask(ctx context.Context, id string, req veena.SaveTaskRequest) (*veena.Task, error)
	CompleteTask(ctx context.Context, id string, req veena.CompleteTaskRequest) (*veena.Process, error)
	ActivateJobs(ctx context.Context, req veena.ActivateRequest) ([]veena.Job, error)
	Jobs(ctx context.Context, f veena.JobFilter) (*veena.JobPage, error)
	Job(ctx context.Context, id string) (*veena.Job, error)
	CompleteJob(ctx context.Context, id string, req veena.CompleteJobRequest) (*veena.Process, error)
	FailJob(ctx context.Context, id string, req veena.FailJobRequest) (*veena.Job, error)
	ThrowJobError(ctx context.Context, id string, req veena.JobErrorRequest) (*veena.Process, error)
	Incidents(ctx context.Context, f veena.IncidentFilter) (*veena.IncidentPage, error)
	Incident(ctx context.Context, id string) (*veena.Incident, error)
	ResolveIncident(ctx context.Context, id string, req veena.ResolveIncidentRequest) (*veena.Incident, error)
	WorkCounts(ctx context.Context) (*veena.WorkCounts, error)
}

// The work layer's error codes, all 409.
const (
	CodeTaskClaimed  = "task_claimed"
	CodeTaskNotOpen  = "task_not_open"
	CodeJobNotLeased = "job_not_leased"
)

func init() {
	for code, title := range map[string]string{
		CodeTaskClaimed:  "The task is claimed by another user",
		CodeTaskNotOpen:  "The task is not open",
		CodeJobNotLeased: "The job is not leased to this worker",
	} {
		statusOf[code] = http.StatusConflict
		titleOf[code] = title
	}
}

func (s *Server) workRoutes() {
	s.handle("GET", "/api/v1/tasks", auth.RoleViewer, s.listTasks)
	s.handle("GET", "/api/v1/tasks/{id}", auth.RoleViewer, s.getTask)
	s.handle("POST", "/api/v1/tasks/{id}/claim", auth.RoleOperator, s.claimTask)
	s.handle("POST", "/api/v1/tasks/{id}/release", auth.RoleOperator, s.releaseTask)
	s.handle("PATCH", "/api/v1/tasks/{id}", auth.RoleOperator, s.saveTask)
	s.handle("POST", "/api/v1/tasks/{id}/complete", auth.RoleOperator, s.completeTask)

	s.handle("POST", "/api/v1/jobs/activate", auth.RoleOperator, s.activateJobs)
	s.handle("GET", "/api/v1/jobs", auth.RoleViewer, s.listJobs)
	s.handle("GET", "/api/v1/jobs/{id}", auth.RoleViewer, s.getJob)
	s.handle("POST", "/api/v1/jobs/{id}/complete", auth.RoleOperator, s.completeJob)
	s.handle("POST", "/api/v1/jobs/{id}/fail", auth.RoleOperator, s.failJob)
	s.handle("POST", "/api/v1/jobs/{id}/error", auth.RoleOperator, s.jobError)

	s.handle("GET", "/api/v1/incidents", auth.RoleViewer, s.listIncidents)
	s.handle("GET", "/api/v1/incidents/{id}", auth.RoleViewer, s.getIncident)
	s.handle("POST", "/api/v1/incidents/{id}/resolve", auth.RoleOperator, s.resolveIncident)
}

// ActorBody names who acts; the access token says it unless the server is
// open (then the body does), or an admin token acts for another user.
type ActorBody struct {
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// actor is who a request acts as (see API.md, "Who acts").
func actor(r *http.Request, user string, groups []string) (veena.Actor, *Problem) {
	id := identityOf(r.Context())
	g, err := auth.CleanGroups(groups)
	if err != nil {
		return veena.Actor{}, newProblem(CodeInvalidArgument, err.Error())
	}
	if id.open {
		return veena.Actor{User: user, Groups: g}, nil
	}
	a := veena.Actor{User: id.name, Groups: id.groups, Admin: id.role == auth.RoleAdmin}
	if user != "" && user != id.name {
		if !a.Admin {
			return veena.Actor{}, newProblem(CodeForbidden, fmt.Sprintf("this token acts as %q; acting as %q needs an admin token", id.name, user))
		}
		a.User, a.Groups = user, g
	}
	return a, nil
}

// queryActor is actor for a GET: ?user= and ?groups= (comma-separated).
func queryActor(r *http.Request) (veena.Actor, *Problem) {
	q := r.URL.Query()
	var groups []string
	if g := q.Get("groups"); g != "" {
		groups = strings.Split(g, ",")
	}
	return actor(r, q.Get("user"), groups)
}

// list splits a comma-separated query parameter.
func list(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	f := veena.TaskFilter{States: list(q.Get("state")), Assignee: q.Get("assignee"), CandidateUser: q.Get("candidateUser"),
		CandidateGroup: q.Get("candidateGroup"), Queue: q.Get("queue"), Process: q.Get("process"),
		Definition: q.Get("definition"), Limit: limit, After: q.Get("after")}
	switch m := q.Get("mine"); m {
	case "", "false":
	case "true":
		a, p := queryActor(r)
		if p != nil {
			writeProblem(w, p)
			return
		}
		if a.User == "" {
			badRequest(w, "mine=true: name the user (?user=, this server runs without access tokens)")
			return
		}
		f.Mine, f.Actor = true, a
	default:
		badRequest(w, "mine %q: want true or false", m)
		return
	}
	page, err := s.cfg.Engine.Tasks(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.cfg.Engine.Task(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// taskLock runs a claim or release.
func (s *Server) taskLock(w http.ResponseWriter, r *http.Request, run func(ctx context.Context, id string, a veena.Actor, key string) (*veena.Task, error)) {
	var body ActorBody
	if !s.decodeJSON(w, r, &body, true) {
		return
	}
	a, p := actor(r, body.User, body.Groups)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if a.User == "" {
		badRequest(w, "user: name the user who acts (this server runs without access tokens)")
		return
	}
	t, err := run(r.Context(), r.PathValue("id"), a, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) claimTask(w http.ResponseWriter, r *http.Request) {
	s.taskLock(w, r, s.cfg.Engine.ClaimTask)
}

func (s *Server) releaseTask(w http.ResponseWriter, r *http.Request) {
	s.taskLock(w, r, s.cfg.Engine.ReleaseTask)
}

// SaveTaskBody saves a task for later.
type SaveTaskBody struct {
	ActorBody
	Data    attrs `json:"data,omitempty"`
	Release bool  `json:"release,omitempty"`
}

func (s *Server) saveTask(w http.ResponseWriter, r *http.Request) {
	var body SaveTaskBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	a, p := actor(r, body.User, body.Groups)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if a.User == "" {
		badRequest(w, "user: name the user who acts (this server runs without access tokens)")
		return
	}
	data, err := body.Data.values("data")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	t, err := s.cfg.Engine.SaveTask(r.Context(), r.PathValue("id"), veena.SaveTaskRequest{Actor: a, Data: data, Release: body.Release,
		IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// CompleteTaskBody completes a task.
type CompleteTaskBody struct {
	ActorBody
	Data    attrs  `json:"data,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

func (s *Server) completeTask(w http.ResponseWriter, r *http.Request) {
	var body CompleteTaskBody
	if !s.decodeJSON(w, r, &body, true) {
		return
	}
	a, p := actor(r, body.User, body.Groups)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if a.User == "" {
		badRequest(w, "user: name the user who acts (this server runs without access tokens)")
		return
	}
	data, err := body.Data.values("data")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	proc, err := s.cfg.Engine.CompleteTask(r.Context(), r.PathValue("id"), veena.CompleteTaskRequest{Actor: a, Data: data,
		Outcome: body.Outcome, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, proc)
}

// durationField reads a duration field ("30s" or "PT30S"; "" is 0).
func durationField(name, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := duration.ParseFixed(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// ActivateBody asks for jobs.
type ActivateBody struct {
	Type    string `json:"type"`
	Worker  string `json:"worker"`
	MaxJobs int    `json:"maxJobs,omitempty"`
	LockFor string `json:"lockFor,omitempty"`
	Wait    string `json:"wait,omitempty"`
}

// ActivateAnswer is the answer of POST /jobs/activate.
type ActivateAnswer struct {
	Jobs []veena.Job `json:"jobs"`
}

func (s *Server) activateJobs(w http.ResponseWriter, r *http.Request) {
	var body ActivateBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	lockFor, err := durationField("lockFor", body.LockFor)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	wait, err := durationField("wait", body.Wait)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if body.MaxJobs < 0 || body.MaxJobs > 1000 {
		badRequest(w, "maxJobs %d: want 1 to 1000", body.MaxJobs)
		return
	}
	if wait > 0 {
		// A long poll may outlast the server's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + WriteTimeout))
	}
	jobs, err := s.cfg.Engine.ActivateJobs(r.Context(), veena.ActivateRequest{Type: body.Type, Worker: body.Worker,
		MaxJobs: body.MaxJobs, LockFor: lockFor, Wait: wait})
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		s.fail(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []veena.Job{}
	}
	writeJSON(w, http.StatusOK, ActivateAnswer{Jobs: jobs})
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	page, err := s.cfg.Engine.Jobs(r.Context(), veena.JobFilter{Types: list(q.Get("type")), States: list(q.Get("state")),
		Process: q.Get("process"), Limit: limit, After: q.Get("after")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.cfg.Engine.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// CompleteJobBody completes a job.
type CompleteJobBody struct {
	Worker string `json:"worker"`
	Env    attrs  `json:"env,omitempty"`
	Result string `json:"result,omitempty"`
}

func (s *Server) completeJob(w http.ResponseWriter, r *http.Request) {
	var body CompleteJobBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	proc, err := s.cfg.Engine.CompleteJob(r.Context(), r.PathValue("id"), veena.CompleteJobRequest{Worker: body.Worker, Env: env,
		Result: strings.TrimSpace(body.Result), IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, proc)
}

// FailJobBody reports a failed attempt.
type FailJobBody struct {
	Worker  string `json:"worker"`
	Retries *int   `json:"retries,omitempty"`
	RetryIn string `json:"retryIn,omitempty"`
	Message string `json:"message,omitempty"`
}

func (s *Server) failJob(w http.ResponseWriter, r *http.Request) {
	var body FailJobBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	retryIn, err := durationField("retryIn", body.RetryIn)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if body.Retries != nil && *body.Retries < 0 {
		badRequest(w, "retries %d: want 0 or more", *body.Retries)
		return
	}
	j, err := s.cfg.Engine.FailJob(r.Context(), r.PathValue("id"), veena.FailJobRequest{Worker: body.Worker, Retries: body.Retries,
		RetryIn: retryIn, Message: body.Message, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// JobErrorBody throws a business error.
type JobErrorBody struct {
	Worker  string `json:"worker"`
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
	Env     attrs  `json:"env,omitempty"`
}

func (s *Server) jobError(w http.ResponseWriter, r *http.Request) {
	var body JobErrorBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	proc, err := s.cfg.Engine.ThrowJobError(r.Context(), r.PathValue("id"), veena.JobErrorRequest{Worker: body.Worker, Code: body.Code,
		Message: body.Message, Env: env, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, proc)
}

func (s *Server) listIncidents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	page, err := s.cfg.Engine.Incidents(r.Context(), veena.IncidentFilter{Process: q.Get("process"), States: list(q.Get("state")),
		Limit: limit, After: q.Get("after")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getIncident(w http.ResponseWriter, r *http.Request) {
	i, err := s.cfg.Engine.Incident(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

// ResolveBody resolves an incident.
type ResolveBody struct {
	ActorBody
	Retries *int `json:"retries,omitempty"`
}

func (s *Server) resolveIncident(w http.ResponseWriter, r *http.Request) {
	var body ResolveBody
	if !s.decodeJSON(w, r, &body, true) {
		return
	}
	a, p := actor(r, body.User, body.Groups)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if body.Retries != nil && *body.Retries < 1 {
		badRequest(w, "retries %d: want 1 or more", *body.Retries)
		return
	}
	i, err := s.cfg.Engine.ResolveIncident(r.Context(), r.PathValue("id"), veena.ResolveIncidentRequest{Actor: a, Retries: body.Retries,
		IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, i)
}

// workCollector reports the work waiting, counted in the store at each
// scrape: veena_tasks{state}, veena_jobs{type,state} and
// veena_incidents_open{kind}. A count that fails leaves them out.
type workCollector struct {
	eng Engine
	log *slog.Logger
}

var (
	tasksDesc = prometheus.NewDesc("veena_tasks",
		"Human tasks waiting, by state (open, claimed), counted in the store.", []string{"state"}, nil)
	jobsDesc = prometheus.NewDesc("veena_jobs",
		"Jobs waiting for workers, by type and state (open, leased, failed), counted in the store.", []string{"type", "state"}, nil)
	incidentsDesc = prometheus.NewDesc("veena_incidents_open",
		"Open incidents, by kind, counted in the store.", []string{"kind"}, nil)
)

func (c *workCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- jobsDesc
	ch <- incidentsDesc
}

func (c *workCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxTimeout)
	defer cancel()
	w, err := c.eng.WorkCounts(ctx)
	if err != nil {
		c.log.Warn("metrics: could not count tasks, jobs and incidents; left out of this scrape", "err", err)
		return
	}
	for _, s := range []string{"open", "claimed"} {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(w.Tasks[s]), s)
	}
	for _, j := range w.Jobs {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(j.Count), j.Type, j.State)
	}
	kinds := make([]string, 0, len(w.Incidents))
	for k := range w.Incidents {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(incidentsDesc, prometheus.GaugeValue, float64(w.Incidents[k]), k)
	}
}
