package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	veena "github.com/veena-wf/veena"
)

// The Petri net endpoints (API.md "Petri nets"): the analysis of any
// definition, and a net process's marking, events and firings.

// The codes of the Petri net endpoints.
const (
	CodeNotImplemented       = "not_implemented"
	CodeTransitionNotEnabled = "transition_not_enabled"
	CodeNotANet              = "not_a_net"
	CodeActionFailed         = "action_failed"
	CodeStepBudgetExceeded   = "step_budget_exceeded"
)

func init() {
	for code, st := range map[string]struct {
		status int
		title  string
	}{
		CodeNotImplemented:       {http.StatusNotImplemented, "Not implemented by this engine"},
		CodeTransitionNotEnabled: {http.StatusConflict, "The transition is not enabled"},
		CodeNotANet:              {http.StatusConflict, "The process is not a Petri net process"},
		CodeActionFailed:         {http.StatusConflict, "The transition's action failed"},
		CodeStepBudgetExceeded:   {http.StatusUnprocessableEntity, "The step fired more transitions than its budget allows"},
	} {
		statusOf[code], titleOf[code] = st.status, st.title
	}
}

// NetEngine is what an Engine offers for Petri nets, an optional
// capability (veena.Engine has it): without it these endpoints answer 501.
type NetEngine interface {
	AnalyseDefinition(ctx context.Context, name string, version int, opts veena.AnalyseOptions) (*veena.Analysis, error)
	NetMarking(ctx context.Context, processID string) (*veena.Marking, error)
	FireTransition(ctx context.Context, processID, transition, idempotencyKey string) (*veena.Process, error)
	SendTransitionEvent(ctx context.Context, processID, name string, args map[string]any, idempotencyKey string) (*veena.TransitionEventResult, error)
	ReportJobResult(ctx context.Context, jobID string, req veena.JobResultRequest) (*veena.Process, error)
}

// net returns the engine's Petri net capability, answering 501 if it has none.
func (s *Server) net(w http.ResponseWriter) NetEngine {
	e, ok := s.cfg.Engine.(NetEngine)
	if !ok {
		writeProblem(w, newProblem(CodeNotImplemented, "this engine does not run Petri nets"))
		return nil
	}
	return e
}

// analyseDefinition answers GET /api/v1/definitions/{name}/analysis
// (?version=, default latest; ?maxStates=, default the engine's).
func (s *Server) analyseDefinition(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	version := 0
	if v := q.Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badRequest(w, "version %q: want a whole number from 1", v)
			return
		}
		version = n
	}
	var opts veena.AnalyseOptions
	if v := q.Get("maxStates"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > veena.MaxAnalysisStates {
			badRequest(w, "maxStates %q: want a whole number from 1 to %d", v, veena.MaxAnalysisStates)
			return
		}
		opts.MaxStates = n
	}
	e := s.net(w)
	if e == nil {
		return
	}
	rep, err := e.AnalyseDefinition(r.Context(), r.PathValue("name"), version, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// getMarking answers GET /api/v1/processes/{id}/marking.
func (s *Server) getMarking(w http.ResponseWriter, r *http.Request) {
	e := s.net(w)
	if e == nil {
		return
	}
	m, err := e.NetMarking(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// FireBody fires one transition.
type FireBody struct {
	Transition string `json:"transition"`
}

// fireTransition answers POST /api/v1/processes/{id}/fire.
func (s *Server) fireTransition(w http.ResponseWriter, r *http.Request) {
	var body FireBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	e := s.net(w)
	if e == nil {
		return
	}
	p, err := e.FireTransition(r.Context(), r.PathValue("id"), strings.TrimSpace(body.Transition), r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// TransitionEventBody is an event for a net process (seed 003).
type TransitionEventBody struct {
	Name string `json:"name"`
	Args attrs  `json:"args,omitempty"`
}

// sendTransitionEvent answers POST /api/v1/processes/{id}/transition-events.
func (s *Server) sendTransitionEvent(w http.ResponseWriter, r *http.Request) {
	var body TransitionEventBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	args, err := body.Args.values("args")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	e := s.net(w)
	if e == nil {
		return
	}
	res, err := e.SendTransitionEvent(r.Context(), r.PathValue("id"), body.Name, args, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// JobResultBody is an intermediate result of a Petri net activity's job.
type JobResultBody struct {
	Worker string `json:"worker"`
	Result string `json:"result"`
	Env    attrs  `json:"env,omitempty"`
}

// reportJobResult answers POST /api/v1/jobs/{id}/results.
func (s *Server) reportJobResult(w http.ResponseWriter, r *http.Request) {
	var body JobResultBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	e := s.net(w)
	if e == nil {
		return
	}
	p, err := e.ReportJobResult(r.Context(), r.PathValue("id"), veena.JobResultRequest{Worker: body.Worker, Result: strings.TrimSpace(body.Result),
		Env: env, IdempotencyKey: r.Header.Get("Idempotency-Key")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
