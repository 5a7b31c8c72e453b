package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
)

// RecordEngine is the part of the Go API the record endpoints use: the
// audit trail, metrics, attachments and document of a process, and the
// subscriptions that start processes from documents.
type RecordEngine interface {
	Audit(ctx context.Context, processID, after string, limit int) (*veena.AuditPage, error)
	Metrics(ctx context.Context, processID, after string, limit int) (*veena.MetricPage, error)
	Document(ctx context.Context, processID string) (*veena.ProcessDocument, error)
	Attachments(ctx context.Context, processID string) ([]veena.Attachment, error)
	SetAttachment(ctx context.Context, processID string, a veena.Attachment, user, idempotencyKey string) (*veena.Attachment, error)
	CreateSubscription(ctx context.Context, s veena.Subscription) (*veena.Subscription, error)
	Subscriptions(ctx context.Context) ([]veena.Subscription, error)
	Subscription(ctx context.Context, name string) (*veena.Subscription, error)
	DeleteSubscription(ctx context.Context, name string) (*veena.Subscription, error)
	SubmitDocument(ctx context.Context, doc veena.Document, user, idempotencyKey string) (*veena.DocumentResult, error)
}

// CodeMatchInvalid: a subscription's condition does not compile (422).
const CodeMatchInvalid = "match_invalid"

func init() {
	statusOf[CodeMatchInvalid] = http.StatusUnprocessableEntity
	titleOf[CodeMatchInvalid] = "The subscription's condition does not compile"
}

func (s *Server) recordRoutes() {
	s.handle("GET", "/api/v1/processes/{id}/audit", auth.RoleViewer, s.getAudit)
	s.handle("GET", "/api/v1/processes/{id}/metrics", auth.RoleViewer, s.getMetrics)
	s.handle("GET", "/api/v1/processes/{id}/document", auth.RoleViewer, s.getDocument)
	s.handle("GET", "/api/v1/processes/{id}/attachments", auth.RoleViewer, s.getAttachments)
	s.handle("PUT", "/api/v1/processes/{id}/attachments/{name}", auth.RoleOperator, s.putAttachment)

	s.handle("POST", "/api/v1/subscriptions", auth.RoleAdmin, s.createSubscription)
	s.handle("GET", "/api/v1/subscriptions", auth.RoleViewer, s.listSubscriptions)
	s.handle("GET", "/api/v1/subscriptions/{name}", auth.RoleViewer, s.getSubscription)
	s.handle("DELETE", "/api/v1/subscriptions/{name}", auth.RoleAdmin, s.deleteSubscription)
	s.handle("POST", "/api/v1/documents", auth.RoleOperator, s.submitDocument)
}

func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	page, err := s.cfg.Engine.Audit(r.Context(), r.PathValue("id"), r.URL.Query().Get("after"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request) {
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	page, err := s.cfg.Engine.Metrics(r.Context(), r.PathValue("id"), r.URL.Query().Get("after"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// wantsXML reports whether the client prefers XML to JSON.
func wantsXML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt := mediaType(part)
		if mt == "application/json" || strings.HasSuffix(mt, "+json") {
			return false
		}
		if mt == "application/xml" || mt == "text/xml" {
			return true
		}
	}
	return false
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Engine.Document(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	if wantsXML(r) {
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(d.XML())
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) getAttachments(w http.ResponseWriter, r *http.Request) {
	atts, err := s.cfg.Engine.Attachments(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Page[veena.Attachment]{Items: atts})
}

// AttachmentBody sets an attachment.
type AttachmentBody struct {
	URI         string `json:"uri"`
	Cardinality int    `json:"cardinality,omitempty"`
	User        string `json:"user,omitempty"`
}

func (s *Server) putAttachment(w http.ResponseWriter, r *http.Request) {
	var body AttachmentBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	a, p := actor(r, body.User, nil)
	if p != nil {
		writeProblem(w, p)
		return
	}
	att, err := s.cfg.Engine.SetAttachment(r.Context(), r.PathValue("id"), veena.Attachment{Name: r.PathValue("name"), URI: body.URI,
		Cardinality: body.Cardinality}, a.User, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, att)
}

// SubscriptionBody creates a subscription.
type SubscriptionBody struct {
	Name       string `json:"name"`
	Definition string `json:"definition"`
	Version    int    `json:"version,omitempty"`
	Match      string `json:"match"`
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var body SubscriptionBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	sub, err := s.cfg.Engine.CreateSubscription(r.Context(), veena.Subscription{Name: body.Name, Definition: body.Definition,
		Version: body.Version, Match: body.Match})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/subscriptions/"+sub.Name)
	writeJSON(w, http.StatusCreated, sub)
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := s.cfg.Engine.Subscriptions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Page[veena.Subscription]{Items: subs})
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	sub, err := s.cfg.Engine.Subscription(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	sub, err := s.cfg.Engine.DeleteSubscription(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

// DocumentBody is an incoming document.
type DocumentBody struct {
	URI         string          `json:"uri"`
	Collections []string        `json:"collections,omitempty"`
	Content     json.RawMessage `json:"content,omitempty"`
	User        string          `json:"user,omitempty"`
}

func (s *Server) submitDocument(w http.ResponseWriter, r *http.Request) {
	var body DocumentBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	a, p := actor(r, body.User, nil)
	if p != nil {
		writeProblem(w, p)
		return
	}
	var content any
	if len(body.Content) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body.Content))
		dec.UseNumber()
		if err := dec.Decode(&content); err != nil {
			badRequest(w, "content: %v", err)
			return
		}
		content = plainJSON(content)
	}
	res, err := s.cfg.Engine.SubmitDocument(r.Context(), veena.Document{URI: body.URI, Collections: body.Collections, Content: content},
		a.User, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// plainJSON turns json.Numbers into int64 or float64, for CEL.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i, e := range x {
			x[i] = plainJSON(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = plainJSON(e)
		}
	}
	return v
}
