package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	veena "github.com/veena-wf/veena"
)

// FromEngine is a Source on an engine in this process.
func FromEngine(e *veena.Engine) Source { return engineSource{e} }

type engineSource struct{ e *veena.Engine }

func (s engineSource) Activate(ctx context.Context, req veena.ActivateRequest) ([]Job, error) {
	return s.e.ActivateJobs(ctx, req)
}

func (s engineSource) Complete(ctx context.Context, id string, req veena.CompleteJobRequest) error {
	_, err := s.e.CompleteJob(ctx, id, req)
	return err
}

func (s engineSource) ReportResult(ctx context.Context, id string, req veena.JobResultRequest) error {
	_, err := s.e.ReportJobResult(ctx, id, req)
	return err
}

func (s engineSource) Fail(ctx context.Context, id string, req veena.FailJobRequest) error {
	_, err := s.e.FailJob(ctx, id, req)
	return err
}

func (s engineSource) Throw(ctx context.Context, id string, req veena.JobErrorRequest) error {
	_, err := s.e.ThrowJobError(ctx, id, req)
	return err
}

// HTTP is a Source on a Veena server's HTTP API.
type HTTP struct {
	base   string
	token  string
	client *http.Client
}

// NewHTTP returns a Source on the server at base (http://host:port) with an
// access token ("" for an open server).
func NewHTTP(base, token string) *HTTP {
	return &HTTP{base: strings.TrimSuffix(base, "/"), token: token, client: &http.Client{}}
}

// Error is a refusal of the server: its HTTP status and stable code.
type Error struct {
	Status int
	Code   string
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Detail) }

func (h *HTTP) post(ctx context.Context, path string, in, out any, timeout time.Duration) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &p)
		if p.Code == "" {
			p.Detail = strings.TrimSpace(string(body))
		}
		return &Error{Status: resp.StatusCode, Code: p.Code, Detail: p.Detail}
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// Activate leases jobs.
func (h *HTTP) Activate(ctx context.Context, req veena.ActivateRequest) ([]Job, error) {
	body := map[string]any{"type": req.Type, "worker": req.Worker, "maxJobs": req.MaxJobs}
	if req.LockFor > 0 {
		body["lockFor"] = dur(req.LockFor)
	}
	if req.Wait > 0 {
		body["wait"] = dur(req.Wait)
	}
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := h.post(ctx, "/api/v1/jobs/activate", body, &out, req.Wait+30*time.Second)
	return out.Jobs, err
}

// Complete completes a job.
func (h *HTTP) Complete(ctx context.Context, id string, req veena.CompleteJobRequest) error {
	body := map[string]any{"worker": req.Worker}
	if len(req.Env) > 0 {
		body["env"] = req.Env
	}
	if req.Result != "" {
		body["result"] = req.Result
	}
	return h.post(ctx, "/api/v1/jobs/"+url.PathEscape(id)+"/complete", body, nil, 0)
}

// ReportResult sends an intermediate result of a Petri net activity's job
// (POST /api/v1/jobs/{id}/results).
func (h *HTTP) ReportResult(ctx context.Context, id string, req veena.JobResultRequest) error {
	body := map[string]any{"worker": req.Worker, "result": req.Result}
	if len(req.Env) > 0 {
		body["env"] = req.Env
	}
	return h.post(ctx, "/api/v1/jobs/"+url.PathEscape(id)+"/results", body, nil, 0)
}

// Fail reports a failed attempt.
func (h *HTTP) Fail(ctx context.Context, id string, req veena.FailJobRequest) error {
	body := map[string]any{"worker": req.Worker, "message": req.Message}
	if req.Retries != nil {
		body["retries"] = *req.Retries
	}
	if req.RetryIn > 0 {
		body["retryIn"] = dur(req.RetryIn)
	}
	return h.post(ctx, "/api/v1/jobs/"+url.PathEscape(id)+"/fail", body, nil, 0)
}

// Throw throws a business error.
func (h *HTTP) Throw(ctx context.Context, id string, req veena.JobErrorRequest) error {
	body := map[string]any{"worker": req.Worker, "code": req.Code, "message": req.Message}
	if len(req.Env) > 0 {
		body["env"] = req.Env
	}
	return h.post(ctx, "/api/v1/jobs/"+url.PathEscape(id)+"/error", body, nil, 0)
}
