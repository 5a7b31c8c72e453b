package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/graph"
)

// Problem is an error answer (RFC 9457 problem details) with Veena's stable
// code. Errors lists the problems of a definition that failed to load.
type Problem struct {
	Type   string          `json:"type"`
	Title  string          `json:"title"`
	Status int             `json:"status"`
	Detail string          `json:"detail"`
	Code   string          `json:"code"`
	Errors []graph.Problem `json:"errors,omitempty"`
}

// The codes the server produces itself (the others come from the engine).
const (
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidArgument      = "invalid_argument"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeInternal             = "internal"
	CodeUnavailable          = "store_unavailable"
)

// statusOf maps every stable code to its HTTP status. Codes not listed are
// internal errors (500).
var statusOf = map[string]int{
	CodeInvalidJSON:          http.StatusBadRequest,
	CodeInvalidArgument:      http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeForbidden:            http.StatusForbidden,
	CodeNotFound:             http.StatusNotFound,
	"definition_not_found":   http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	"token_complete":         http.StatusConflict,
	"process_not_executing":  http.StatusConflict,
	"backtrack_not_allowed":  http.StatusConflict,
	"conflict":               http.StatusConflict,
	"join_not_member":        http.StatusConflict,
	"no_start_nodes":         http.StatusConflict,
	"token_not_delayed":      http.StatusConflict,
	"nested_process_active":  http.StatusConflict,
	CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	"definition_invalid":     http.StatusUnprocessableEntity,
	"execution_failed":       http.StatusUnprocessableEntity,
	"budget_exceeded":        http.StatusUnprocessableEntity,
	"idempotency_key_reused": http.StatusUnprocessableEntity,
	"limit_exceeded":         http.StatusUnprocessableEntity,
	CodeUnavailable:          http.StatusServiceUnavailable,
	CodeNotConfigured:        http.StatusNotImplemented,
	"not_a_schema_instance":  http.StatusConflict,
	"event_queue_full":       http.StatusConflict,
	"stale_wake":             http.StatusConflict,
	"schema_mismatch":        http.StatusServiceUnavailable,
	CodeInternal:             http.StatusInternalServerError,
}

// titleOf is the problem title of every stable code.
var titleOf = map[string]string{
	CodeInvalidJSON:          "The request body is not valid JSON",
	CodeInvalidArgument:      "Invalid argument",
	CodeUnauthorized:         "Authentication required",
	CodeForbidden:            "Not allowed",
	CodeNotFound:             "Not found",
	"definition_not_found":   "Definition not found",
	CodeMethodNotAllowed:     "Method not allowed",
	"token_complete":         "The node token is already complete",
	"process_not_executing":  "The process is not executing",
	"backtrack_not_allowed":  "Backtracking is not allowed",
	"conflict":               "Conflict",
	"join_not_member":        "A token outside every token set reached a tokenSet join",
	"no_start_nodes":         "The definition has no start nodes",
	"token_not_delayed":      "The node token is not delayed",
	"nested_process_active":  "The node token's nested process is still running",
	CodePayloadTooLarge:      "The request body is too large",
	CodeUnsupportedMediaType: "Unsupported content type",
	"definition_invalid":     "The definition is invalid",
	"execution_failed":       "Execution failed",
	"budget_exceeded":        "The command exceeded its budget",
	"idempotency_key_reused": "The idempotency key was used for a different request",
	"limit_exceeded":         "A size limit was exceeded",
	CodeUnavailable:          "The store is unavailable",
	"schema_mismatch":        "The database schema does not match this Veena",
	CodeInternal:             "Internal server error",
}

// StatusOf returns the HTTP status the server answers for a code.
func StatusOf(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Codes returns every code the server may answer with.
func Codes() []string {
	out := make([]string, 0, len(statusOf))
	for c := range statusOf {
		out = append(out, c)
	}
	return out
}

// newProblem returns the problem of a code; an empty detail repeats the
// title.
func newProblem(code, detail string) *Problem {
	status := StatusOf(code)
	title := titleOf[code]
	if title == "" {
		title = http.StatusText(status)
	}
	if detail == "" {
		detail = title
	}
	return &Problem{Type: "about:blank", Title: title, Status: status, Detail: detail, Code: code}
}

// problemFor turns an engine error into a problem.
func problemFor(err error) *Problem {
	code := veena.Code(err)
	if code == CodeInternal {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			code = CodePayloadTooLarge
		}
	}
	p := newProblem(code, err.Error())
	if code == CodeInternal {
		// Internal details belong in the log, not in the answer.
		p.Detail = "the server failed to do this; its log has the details"
	}
	var le *graph.LoadError
	if errors.As(err, &le) {
		p.Errors = le.Problems
		if p.Errors == nil {
			p.Errors = []graph.Problem{}
		}
	} else if code == "definition_invalid" {
		p.Errors = []graph.Problem{{Message: err.Error()}}
	}
	return p
}

// writeProblem answers with a problem.
func writeProblem(w http.ResponseWriter, p *Problem) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="veena"`)
	}
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	_, _ = w.Write(append(b, '\n'))
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, newProblem(CodeInternal, ""))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// mediaType returns the lower-case media type of a Content-Type header.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isJSONType reports whether a media type is JSON (application/json or a
// +json type).
func isJSONType(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
