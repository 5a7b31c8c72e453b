package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/expr"
)

// MessageBody is the body of POST /api/v1/messages.
type MessageBody struct {
	Name           string `json:"name"`
	CorrelationKey string `json:"correlationKey,omitempty"`
	Env            attrs  `json:"env,omitempty"`
	TTL            string `json:"ttl,omitempty"`
	MessageID      string `json:"messageId,omitempty"`
}

// SignalBody is the body of POST /api/v1/signals.
type SignalBody struct {
	Name string `json:"name"`
	Env  attrs  `json:"env,omitempty"`
}

// parseDuration reads a duration as Go writes it (5m) or as ISO 8601 (PT5M).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	d, err := expr.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d.Months != 0 {
		return 0, errMonths
	}
	return d.D, nil
}

type durationError string

func (e durationError) Error() string { return string(e) }

const errMonths = durationError("a duration in months or years has no fixed length: give days or smaller units")

// publishMessage publishes a message (API.md "Messages and signals").
func (s *Server) publishMessage(w http.ResponseWriter, r *http.Request) {
	var body MessageBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	if strings.TrimSpace(body.Name) == "" {
		badRequest(w, "name: a message needs a name")
		return
	}
	ttl, err := parseDuration(body.TTL)
	if err != nil || ttl < 0 {
		badRequest(w, "ttl: %q is not a duration (5m, PT5M)", body.TTL)
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	res, err := s.cfg.Engine.PublishMessage(r.Context(), veena.PublishRequest{
		Name: body.Name, CorrelationKey: body.CorrelationKey, Env: env, TTL: ttl, MessageID: body.MessageID,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// broadcastSignal broadcasts a signal.
func (s *Server) broadcastSignal(w http.ResponseWriter, r *http.Request) {
	var body SignalBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	if strings.TrimSpace(body.Name) == "" {
		badRequest(w, "name: a signal needs a name")
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	res, err := s.cfg.Engine.BroadcastSignal(r.Context(), veena.SignalRequest{Name: body.Name, Env: env})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// startTimers lists the timer start events of a definition's armed
// version: when each starts a process next, and how many it started.
func (s *Server) startTimers(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := s.cfg.Engine.Definition(r.Context(), name, 0); err != nil {
		s.fail(w, r, err)
		return
	}
	ts, err := s.cfg.Engine.StartTimers(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ts})
}
