// Package server puts a Veena engine behind the HTTP API of API.md: the
// routes under /api/v1, problem+json errors with stable codes, bearer-token
// access control, server-sent event streams, /healthz, /readyz, /metrics and
// the OpenAPI document. Handlers translate and call the Go API; they hold no
// workflow logic.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/auth"
)

// Engine is the part of the Go API the server uses; *veena.Engine has it.
type Engine interface {
	LoadDefinition(ctx context.Context, file string, src []byte, format string) (*veena.Definition, bool, error)
	Definitions(ctx context.Context) ([]*veena.Definition, error)
	Definition(ctx context.Context, name string, version int) (*veena.Definition, error)
	DefinitionVersions(ctx context.Context, name string) ([]*veena.Definition, error)
	DefinitionSource(ctx context.Context, name string, version int) ([]byte, error)
	StartProcess(ctx context.Context, req veena.StartRequest) (*veena.Process, error)
	Process(ctx context.Context, id string) (*veena.Process, error)
	Processes(ctx context.Context, f veena.ProcessFilter) (*veena.ProcessPage, error)
	CancelProcess(ctx context.Context, id, idempotencyKey string) (*veena.Process, error)
	Tokens(ctx context.Context, processID string) (*veena.TokenHistory, error)
	TokenPage(ctx context.Context, processID, after string, limit int) (*veena.TokenHistory, error)
	TokenSets(ctx context.Context, processID string) ([]veena.TokenSet, error)
	FinalizeComplete(ctx context.Context, id, idempotencyKey string) (*veena.Process, error)
	FinalizeCancel(ctx context.Context, id, idempotencyKey string) (*veena.Process, error)
	ExecuteQueuedArcTokens(ctx context.Context, id, idempotencyKey string) (*veena.Process, error)
	ReevaluateDelayedToken(ctx context.Context, tokenID, idempotencyKey string) (*veena.Process, error)
	ExecuteNode(ctx context.Context, tokenID, idempotencyKey string) (*veena.Process, error)
	RetryArcToken(ctx context.Context, arcTokenID, idempotencyKey string) (*veena.Process, error)
	AddProcessListener(ctx context.Context, id, listener string, events []string, idempotencyKey string) (*veena.Process, error)
	RemoveProcessListener(ctx context.Context, id, listener string, events []string, idempotencyKey string) (*veena.Process, error)
	EachToken(ctx context.Context, processID string, node func(*veena.NodeToken) error, arc func(*veena.ArcToken) error) error
	Events(ctx context.Context, processID string, afterSeq int64, limit int) ([]veena.Event, error)
	Subscribe(processID string) (<-chan veena.Event, func())
	ProcessEnv(ctx context.Context, id string) (map[string]veena.Value, error)
	PatchProcessEnv(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]veena.Value, error)
	NodeToken(ctx context.Context, id string) (*veena.NodeToken, error)
	CompleteToken(ctx context.Context, id string, req veena.CompleteRequest) (*veena.Process, error)
	Backtrack(ctx context.Context, tokenID, idempotencyKey string) (*veena.Process, error)
	TokenEnv(ctx context.Context, id string) (map[string]veena.Value, error)
	PatchTokenEnv(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]veena.Value, error)
	SendEvent(ctx context.Context, req veena.EventRequest) (*veena.Process, error)
	PublishMessage(ctx context.Context, req veena.PublishRequest) (*veena.PublishResult, error)
	BroadcastSignal(ctx context.Context, req veena.SignalRequest) (*veena.SignalResult, error)
	StartTimers(ctx context.Context, definition string) ([]veena.StartTimer, error)
	Ready(ctx context.Context) error
	WaitingCommands(ctx context.Context) (int, error)
	Attention(ctx context.Context) (*veena.Attention, error)
	Waiting(ctx context.Context, f veena.ProcessFilter) (*veena.WaitingPage, error)
	WorkEngine
	RecordEngine
}

// Config configures a Server.
type Config struct {
	// Engine runs the workflows; the handlers only translate to it.
	Engine Engine
	// Auth checks bearer tokens. Nil or without tokens: the API is open,
	// which is allowed only when Loopback is true.
	Auth *auth.Authenticator
	// Loopback says the server listens on loopback addresses only. Without
	// configured tokens, a server that is not on loopback refuses every
	// API request.
	Loopback bool
	// Console is mounted at "/" (everything not under /api, /healthz,
	// /readyz or /metrics). Nil answers 404 there.
	Console http.Handler
	// Logger receives failed requests and panics (default slog.Default()).
	Logger *slog.Logger
	// MaxBody limits request bodies (default 4 MiB).
	MaxBody int64
	// Heartbeat is the interval of comments on event streams (default 15 s).
	Heartbeat time.Duration
	// Registry receives the server's metrics; nil makes a private registry.
	Registry *prometheus.Registry
	// Schemas runs schema instances (named events, almanacs, node
	// instances); nil answers those requests with not_configured.
	Schemas Schemas
}

// Server is the HTTP handler of the API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	api     *http.ServeMux
	routes  []Route
	metrics *metrics
	root    http.Handler

	closeOnce sync.Once
	closing   chan struct{}
}

// Route is one API route: method, path pattern and the role it needs
// (auth.RoleNone: public).
type Route struct {
	Method  string
	Pattern string
	Role    auth.Role
}

// DefaultMaxBody is the request body limit unless configured.
const DefaultMaxBody = 4 << 20

// New returns the server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, api: http.NewServeMux(), closing: make(chan struct{})}
	s.metrics = newMetrics(cfg.Registry, cfg.Engine, cfg.Logger)

	s.handle("POST", "/api/v1/definitions", auth.RoleAdmin, s.loadDefinition)
	s.handle("GET", "/api/v1/definitions", auth.RoleViewer, s.listDefinitions)
	s.handle("GET", "/api/v1/definitions/{name}", auth.RoleViewer, s.getDefinition)
	s.handle("GET", "/api/v1/definitions/{name}/versions", auth.RoleViewer, s.listVersions)
	s.handle("GET", "/api/v1/definitions/{name}/versions/{version}", auth.RoleViewer, s.getDefinition)
	s.handle("GET", "/api/v1/definitions/{name}/versions/{version}/source", auth.RoleViewer, s.getSource)
	s.handle("GET", "/api/v1/definitions/{name}/analysis", auth.RoleViewer, s.analyseDefinition)
	s.handle("GET", "/api/v1/definitions/{name}/start-timers", auth.RoleViewer, s.startTimers)
	s.handle("GET", "/api/v1/processes/{id}/marking", auth.RoleViewer, s.getMarking)
	s.handle("POST", "/api/v1/processes/{id}/fire", auth.RoleOperator, s.fireTransition)
	s.handle("POST", "/api/v1/processes/{id}/transition-events", auth.RoleOperator, s.sendTransitionEvent)
	s.handle("POST", "/api/v1/jobs/{id}/results", auth.RoleOperator, s.reportJobResult)

	s.handle("POST", "/api/v1/processes", auth.RoleOperator, s.startProcess)
	s.handle("GET", "/api/v1/processes", auth.RoleViewer, s.listProcesses)
	s.handle("GET", "/api/v1/waiting", auth.RoleViewer, s.listWaiting)
	s.handle("GET", "/api/v1/processes/{id}", auth.RoleViewer, s.getProcess)
	s.handle("POST", "/api/v1/processes/{id}/cancel", auth.RoleOperator, s.cancelProcess)
	s.handle("GET", "/api/v1/processes/{id}/tokens", auth.RoleViewer, s.getTokens)
	s.handle("GET", "/api/v1/processes/{id}/token-sets", auth.RoleViewer, s.getTokenSets)
	s.handleStream("GET", "/api/v1/processes/{id}/events", auth.RoleViewer, s.getEvents)
	s.handle("GET", "/api/v1/processes/{id}/env", auth.RoleViewer, s.getProcessEnv)
	s.handle("PATCH", "/api/v1/processes/{id}/env", auth.RoleOperator, s.patchProcessEnv)

	s.handle("GET", "/api/v1/node-tokens/{id}", auth.RoleViewer, s.getNodeToken)
	s.handle("POST", "/api/v1/node-tokens/{id}/complete", auth.RoleOperator, s.completeToken)
	s.handle("POST", "/api/v1/node-tokens/{id}/backtrack", auth.RoleOperator, s.backtrack)
	s.handle("POST", "/api/v1/node-tokens/{id}/reevaluate", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.ReevaluateDelayedToken)
	})
	s.handle("POST", "/api/v1/node-tokens/{id}/execute", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.ExecuteNode)
	})
	s.handle("POST", "/api/v1/arc-tokens/{id}/retry", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.RetryArcToken)
	})
	s.handle("POST", "/api/v1/processes/{id}/finalize-complete", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.FinalizeComplete)
	})
	s.handle("POST", "/api/v1/processes/{id}/finalize-cancel", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.FinalizeCancel)
	})
	s.handle("POST", "/api/v1/processes/{id}/execute-queued", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		s.command(w, r, s.cfg.Engine.ExecuteQueuedArcTokens)
	})
	s.handle("POST", "/api/v1/processes/{id}/listeners", auth.RoleOperator, s.addListener)
	s.handle("DELETE", "/api/v1/processes/{id}/listeners/{name}", auth.RoleOperator, s.removeListener)
	s.handle("GET", "/api/v1/node-tokens/{id}/env", auth.RoleViewer, s.getTokenEnv)
	s.handle("PATCH", "/api/v1/node-tokens/{id}/env", auth.RoleOperator, s.patchTokenEnv)

	s.handle("POST", "/api/v1/events", auth.RoleOperator, s.sendEvent)
	s.handle("POST", "/api/v1/messages", auth.RoleOperator, s.publishMessage)
	s.handle("POST", "/api/v1/signals", auth.RoleOperator, s.broadcastSignal)

	s.workRoutes()
	s.recordRoutes()

	s.handle("GET", "/api/v1/processes/{id}/almanac", auth.RoleViewer, s.getAlmanac)
	s.handle("PATCH", "/api/v1/processes/{id}/almanac", auth.RoleOperator, s.patchAlmanac)
	s.handle("GET", "/api/v1/processes/{id}/nodes", auth.RoleViewer, s.getNodes)

	s.handle("GET", "/api/v1/whoami", auth.RoleViewer, s.whoami)
	s.handle("GET", "/api/v1/openapi.json", auth.RoleNone, s.openapi)

	top := http.NewServeMux()
	top.Handle("/api/", http.HandlerFunc(s.serveAPI))
	top.Handle("GET /healthz", s.instrument("GET /healthz", http.HandlerFunc(s.healthz)))
	top.Handle("GET /readyz", s.instrument("GET /readyz", http.HandlerFunc(s.readyz)))
	top.Handle("GET /metrics", s.instrument("GET /metrics", s.guard(auth.RoleViewer, s.metrics.handler().ServeHTTP)))
	if cfg.Console != nil {
		top.Handle("/", cfg.Console)
	} else {
		top.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, newProblem(CodeNotFound, "nothing is served at "+r.URL.Path))
		}))
	}
	s.root = s.recover(top)
	return s
}

// CloseStreams ends every open event stream (clients reconnect with
// Last-Event-ID). Register it with http.Server.RegisterOnShutdown, so that
// a shutdown does not wait for streams that never end by themselves.
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() { close(s.closing) })
}

// Routes lists the API routes (for documentation and tests).
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.root.ServeHTTP(w, r) }

func (s *Server) handle(method, path string, role auth.Role, h http.HandlerFunc) {
	pattern := method + " " + path
	s.routes = append(s.routes, Route{Method: method, Pattern: path, Role: role})
	s.api.Handle(pattern, s.instrument(pattern, s.guard(role, h)))
}

// handleStream is handle for a route that also answers a server-sent event
// stream: a request for the stream may carry its access token as
// ?access_token=, since a browser's EventSource cannot send headers.
func (s *Server) handleStream(method, path string, role auth.Role, h http.HandlerFunc) {
	pattern := method + " " + path
	s.routes = append(s.routes, Route{Method: method, Pattern: path, Role: role})
	s.api.Handle(pattern, s.instrument(pattern, s.guardStream(role, h, true)))
}

// serveAPI dispatches /api/ requests; unknown paths and methods answer
// problem+json rather than the mux's plain text.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if h, pattern := s.api.Handler(r); pattern == "" {
		// The mux's own handler says whether the path exists for another
		// method (405 with Allow) or not at all (404).
		probe := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			s.metrics.observe("unmatched", r.Method, http.StatusMethodNotAllowed, 0)
			writeProblem(w, newProblem(CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)))
			return
		}
		s.metrics.observe("unmatched", r.Method, http.StatusNotFound, 0)
		writeProblem(w, newProblem(CodeNotFound, "no API endpoint at "+r.URL.Path))
		return
	}
	s.api.ServeHTTP(w, r)
}

// headerRecorder records the status and headers a handler answers, and
// drops the body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = 200
	}
	return len(b), nil
}
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

type ctxKey int

const identityKey ctxKey = 0

// identity is who made the request; open when the server runs without
// access tokens (every request then has the admin role).
type identity struct {
	name   string
	groups []string
	role   auth.Role
	open   bool
}

func identityOf(ctx context.Context) identity {
	id, _ := ctx.Value(identityKey).(identity)
	return id
}

// open reports whether the API runs without access tokens.
func (s *Server) open() bool {
	return !s.cfg.Auth.Configured() && s.cfg.Loopback
}

// guard authenticates the request and checks that its role suffices. It also
// stops requests made by other web sites on behalf of a browser (cross-site
// writes and, on an open server, DNS rebinding).
func (s *Server) guard(need auth.Role, h http.HandlerFunc) http.HandlerFunc {
	return s.guardStream(need, h, false)
}

// guardStream is guard; with queryToken, a request for an event stream
// (Accept: text/event-stream) may give its token as ?access_token=.
func (s *Server) guardStream(need auth.Role, h http.HandlerFunc, queryToken bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if need == auth.RoleNone {
			h(w, r)
			return
		}
		if p := s.crossSite(r); p != nil {
			writeProblem(w, p)
			return
		}
		if s.open() {
			ctx := context.WithValue(r.Context(), identityKey, identity{name: "open", role: auth.RoleAdmin, open: true})
			h(w, r.WithContext(ctx))
			return
		}
		secret := bearer(r)
		if secret == "" && queryToken && r.Method == http.MethodGet && wantsStream(r) {
			// EventSource cannot send headers; the stream (and only the
			// stream) accepts the token as a query parameter.
			secret = r.URL.Query().Get("access_token")
		}
		if secret == "" {
			detail := "this server needs an access token: send Authorization: Bearer <token>"
			if !s.cfg.Auth.Configured() {
				detail = "this server listens beyond loopback and has no access tokens configured, so it refuses every request; create one with `veena access-token create`"
			}
			writeProblem(w, newProblem(CodeUnauthorized, detail))
			return
		}
		id, ok := s.cfg.Auth.Check(secret)
		if !ok {
			writeProblem(w, newProblem(CodeUnauthorized, "the access token is not valid (unknown or revoked)"))
			return
		}
		if !id.Role.Allows(need) {
			writeProblem(w, newProblem(CodeForbidden, fmt.Sprintf("the %s role may not do this; it needs the %s role", id.Role, need)))
			return
		}
		ctx := context.WithValue(r.Context(), identityKey, identity{name: id.Name, groups: id.Groups, role: id.Role})
		h(w, r.WithContext(ctx))
	}
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// crossSite refuses writes that a browser makes for another site, and, on an
// open server, requests whose Host is not a loopback name (DNS rebinding).
func (s *Server) crossSite(r *http.Request) *Problem {
	if s.open() && !loopbackHost(r.Host) {
		return newProblem(CodeForbidden, "an open server (no access tokens) answers only requests addressed to a loopback host")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return newProblem(CodeForbidden, "cross-site requests may not change anything")
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
		host := origin
		if i := strings.Index(host, "://"); i >= 0 {
			host = host[i+3:]
		}
		if !strings.EqualFold(host, r.Host) {
			return newProblem(CodeForbidden, "cross-origin requests may not change anything")
		}
	} else if origin == "null" {
		return newProblem(CodeForbidden, "cross-origin requests may not change anything")
	}
	return nil
}

// loopbackHost reports whether a Host header names a loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) is on loopback
// only: an empty host means every interface.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) recover(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic while serving", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeProblem(w, newProblem(CodeInternal, ""))
			}
		}()
		h.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.cfg.Engine.Ready(ctx); err != nil {
		p := problemFor(err)
		if p.Status < 500 || p.Code == CodeInternal {
			p = newProblem(CodeUnavailable, err.Error())
		}
		writeProblem(w, p)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// WhoAmI is the answer of GET /api/v1/whoami.
type WhoAmI struct {
	Role         string   `json:"role"`
	Name         string   `json:"name,omitempty"`
	Groups       []string `json:"groups,omitempty"`
	AuthRequired bool     `json:"authRequired"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	if id.open {
		writeJSON(w, http.StatusOK, WhoAmI{Role: "open", AuthRequired: false})
		return
	}
	writeJSON(w, http.StatusOK, WhoAmI{Role: id.role.String(), Name: id.name, Groups: id.groups, AuthRequired: true})
}

// Timeouts of the HTTP server. WriteTimeout does not bound event streams:
// they extend their own deadline as they write.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// HTTPServer returns an http.Server for h with the timeouts and limits that
// keep slow or stalled clients from holding the server.
func HTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.Default()
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if s, ok := h.(*Server); ok {
		hs.RegisterOnShutdown(s.CloseStreams)
	}
	return hs
}
