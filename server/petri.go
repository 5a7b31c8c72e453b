package server

import (
	"context"
	"net/http"
	"strconv"

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
