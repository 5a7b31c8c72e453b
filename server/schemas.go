package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/schema"
)

// Schemas is the part of the schema runtime's Go API the server uses;
// *schema.Runtime has it.
type Schemas interface {
	Send(ctx context.Context, ev schema.Event) (*schema.SendResult, error)
	Almanac(ctx context.Context, id string) (map[string]veena.Value, error)
	PatchAlmanac(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]veena.Value, error)
	Nodes(ctx context.Context, id string) (*schema.Instance, error)
}

// CodeNotConfigured: the server runs without the part that would answer.
const CodeNotConfigured = "not_configured"

func (s *Server) schemas(w http.ResponseWriter) Schemas {
	if s.cfg.Schemas == nil {
		writeProblem(w, newProblem(CodeNotConfigured, "this server runs no schema runtime"))
		return nil
	}
	return s.cfg.Schemas
}

// sendSchemaEvent routes a named event to the schema instance its context
// identifies (or to the instance a trigger starts: 201).
func (s *Server) sendSchemaEvent(w http.ResponseWriter, r *http.Request, body *EventBody) {
	sc := s.schemas(w)
	if sc == nil {
		return
	}
	ctx := body.Context
	if ctx == nil {
		ctx = body.Match
	} else if body.Match != nil {
		badRequest(w, "give the event's context as \"context\" or \"match\", not both")
		return
	}
	if body.Node != "" || body.Env != nil {
		badRequest(w, "a named event carries \"context\" and \"payload\"; \"node\" and \"env\" are for unnamed events")
		return
	}
	var payload any
	if len(body.Payload) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body.Payload))
		dec.UseNumber()
		if err := dec.Decode(&payload); err != nil {
			badRequest(w, "payload: %v", err)
			return
		}
	}
	id := r.Header.Get("Idempotency-Key")
	if body.ID != "" {
		if id != "" && id != body.ID {
			badRequest(w, "the body's id %q and the Idempotency-Key header %q differ", body.ID, id)
			return
		}
		id = body.ID
	}
	res, err := sc.Send(r.Context(), schema.Event{Name: body.Name, Context: ctx, Payload: payload, ID: id})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Started {
		status = http.StatusCreated
		w.Header().Set("Location", fmt.Sprintf("/api/v1/processes/%s", res.Process.ID))
	}
	writeJSON(w, status, res.Process)
}

func (s *Server) getAlmanac(w http.ResponseWriter, r *http.Request) {
	sc := s.schemas(w)
	if sc == nil {
		return
	}
	s.getEnv(w, r, sc.Almanac)
}

func (s *Server) patchAlmanac(w http.ResponseWriter, r *http.Request) {
	sc := s.schemas(w)
	if sc == nil {
		return
	}
	s.patchEnv(w, r, sc.PatchAlmanac)
}

func (s *Server) getNodes(w http.ResponseWriter, r *http.Request) {
	sc := s.schemas(w)
	if sc == nil {
		return
	}
	in, err := sc.Nodes(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}
