package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
)

// Page is a page of a list: {"items", "next"}.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// Paging limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// fail answers the problem of an engine error, and logs it when it is the
// server's fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p.Status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", p.Code, "err", err)
	}
	writeProblem(w, p)
}

// badRequest answers 400 invalid_argument with the formatted detail.
func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeProblem(w, newProblem(CodeInvalidArgument, fmt.Sprintf(format, args...)))
}

// limitOf reads ?limit= (default 100, 1..1000).
func limitOf(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, MaxLimit)
	}
	return n, nil
}

// paginate returns a page of up to limit items of a sorted list: seen
// reports whether an item is at or before the ?after= cursor, cursor is the
// cursor of the item a full page ends with.
func paginate[T any](items []T, limit int, seen func(T) bool, cursor func(T) string) Page[T] {
	page := Page[T]{Items: []T{}}
	for _, it := range items {
		if seen(it) {
			continue
		}
		if len(page.Items) == limit {
			page.Next = cursor(page.Items[len(page.Items)-1])
			break
		}
		page.Items = append(page.Items, it)
	}
	return page
}

// readBody reads the whole body within the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Problem) {
	if r.ContentLength > s.cfg.MaxBody {
		return nil, newProblem(CodePayloadTooLarge, fmt.Sprintf("the body is %d bytes; the limit is %d bytes", r.ContentLength, s.cfg.MaxBody))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, newProblem(CodePayloadTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", s.cfg.MaxBody))
		}
		return nil, newProblem(CodeInvalidArgument, "could not read the request body: "+err.Error())
	}
	return body, nil
}

// decodeJSON reads a JSON object body into dst. An empty body leaves dst as
// it is when optional; otherwise it is an error. Unknown fields are refused
// so that a misspelt field does not pass silently.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, optional bool) bool {
	body, p := s.readBody(w, r)
	if p != nil {
		writeProblem(w, p)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return true
		}
		writeProblem(w, newProblem(CodeInvalidArgument, "the request needs a JSON body"))
		return false
	}
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "" && !isJSONType(mt) {
		writeProblem(w, newProblem(CodeUnsupportedMediaType, fmt.Sprintf("send the body as application/json, not %s", mt)))
		return false
	} else if mt == "" {
		writeProblem(w, newProblem(CodeUnsupportedMediaType, "send the body with Content-Type: application/json"))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute):
			field := ute.Field
			if field == "" {
				field = "the body"
			}
			writeProblem(w, newProblem(CodeInvalidArgument, fmt.Sprintf("%s: expected %s, got JSON %s", field, ute.Type, ute.Value)))
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			writeProblem(w, newProblem(CodeInvalidArgument, strings.TrimPrefix(err.Error(), "json: ")))
		case strings.Contains(err.Error(), "attribute"):
			writeProblem(w, newProblem(CodeInvalidArgument, err.Error()))
		default:
			writeProblem(w, newProblem(CodeInvalidJSON, "the body is not valid JSON: "+err.Error()))
		}
		return false
	}
	if dec.More() {
		writeProblem(w, newProblem(CodeInvalidJSON, "the body holds more than one JSON value"))
		return false
	}
	return true
}

// attrs is a JSON object of attribute values; null removes an attribute.
type attrs map[string]json.RawMessage

// values converts attributes to Go values for the engine (nil for null).
func (a attrs) values(where string) (map[string]any, error) {
	if a == nil {
		return nil, nil
	}
	out := make(map[string]any, len(a))
	for k, raw := range a {
		v, err := attrValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%s attribute %q: %w", where, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// attrValue converts one JSON attribute value (nil for null): a scalar,
// {"date": "..."}, or any other array or object (collections, payloads).
func attrValue(raw json.RawMessage) (any, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var v kernel.Value
	if err := json.Unmarshal(t, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// pairs is a JSON object of context pairs (correlation keys and values).
// Every value must be a JSON string: a number, boolean or null is refused,
// naming the key, rather than read as "" or converted.
type pairs map[string]string

func (p *pairs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*p = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[map[string]string]()}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(pairs, len(raw))
	for k, v := range raw {
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return &json.UnmarshalTypeError{Value: jsonKind(v), Type: reflect.TypeFor[string](), Field: k}
		}
		out[k] = s
	}
	*p = out
	return nil
}

// jsonKind names the kind of a JSON value for an error message.
func jsonKind(v []byte) string {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v[0] == '"':
		return "string"
	case string(v) == "null":
		return "null"
	case string(v) == "true", string(v) == "false":
		return "bool"
	}
	return "number"
}

// ---- definitions

// formats are the values of ?format= ("" sniffs the format).
var formats = map[string]bool{"": true, "sarasvati": true, "bpmn": true, "pnml": true, "schema": true}

func (s *Server) loadDefinition(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if !formats[format] {
		badRequest(w, "format %q: want sarasvati, bpmn, pnml or schema", format)
		return
	}
	switch mt := mediaType(r.Header.Get("Content-Type")); {
	case mt == "", mt == "application/octet-stream", mt == "text/plain",
		mt == "application/xml", mt == "text/xml", strings.HasSuffix(mt, "+xml"),
		isJSONType(mt), strings.HasSuffix(mt, "yaml"):
	default:
		writeProblem(w, newProblem(CodeUnsupportedMediaType, fmt.Sprintf("a definition is sent as the file itself (XML, JSON or YAML), not as %s", mt)))
		return
	}
	body, p := s.readBody(w, r)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		badRequest(w, "the request body must be the definition file; it is empty")
		return
	}
	file := r.URL.Query().Get("file")
	if file == "" {
		file = "definition"
	}
	d, created, err := s.cfg.Engine.LoadDefinition(r.Context(), file, body, format)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", fmt.Sprintf("/api/v1/definitions/%s/versions/%d", d.Name, d.Version))
	}
	writeJSON(w, status, d)
}

func (s *Server) listDefinitions(w http.ResponseWriter, r *http.Request) {
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	defs, err := s.cfg.Engine.Definitions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	after := r.URL.Query().Get("after")
	writeJSON(w, http.StatusOK, paginate(defs, limit,
		func(d *veena.Definition) bool { return after != "" && d.Name <= after },
		func(d *veena.Definition) string { return d.Name }))
}

// versionOf reads the {version} of the path, 0 when there is none.
func versionOf(r *http.Request) (int, error) {
	v := r.PathValue("version")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("version %q: want a whole number from 1", v)
	}
	return n, nil
}

func (s *Server) getDefinition(w http.ResponseWriter, r *http.Request) {
	version, err := versionOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	d, err := s.cfg.Engine.Definition(r.Context(), r.PathValue("name"), version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	limit, err := limitOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	after := 0
	if a := r.URL.Query().Get("after"); a != "" {
		if after, err = strconv.Atoi(a); err != nil || after < 0 {
			badRequest(w, "after %q: want the version number the previous page ended with", a)
			return
		}
	}
	vs, err := s.cfg.Engine.DefinitionVersions(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(vs) == 0 {
		writeProblem(w, newProblem(CodeNotFound, fmt.Sprintf("no definition named %q", r.PathValue("name"))))
		return
	}
	writeJSON(w, http.StatusOK, paginate(vs, limit,
		func(d *veena.Definition) bool { return d.Version <= after },
		func(d *veena.Definition) string { return strconv.Itoa(d.Version) }))
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request) {
	version, err := versionOf(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	name := r.PathValue("name")
	src, err := s.cfg.Engine.DefinitionSource(r.Context(), name, version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ct := "text/plain; charset=utf-8"
	switch t := bytes.TrimLeft(src, " \t\r\n\xef\xbb\xbf"); {
	case len(t) > 0 && t[0] == '<':
		ct = "application/xml"
	case len(t) > 0 && (t[0] == '{' || t[0] == '['):
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Content-Length", strconv.Itoa(len(src)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(src)
}

// ---- processes

// StartBody is the body of POST /api/v1/processes.
type StartBody struct {
	Definition  string             `json:"definition"`
	Version     int                `json:"version,omitempty"`
	Env         attrs              `json:"env,omitempty"`
	Context     pairs              `json:"context,omitempty"`
	Attachments []veena.Attachment `json:"attachments,omitempty"`
	User        string             `json:"user,omitempty"`
	// Transient attributes of the process environment, for this command
	// only: never stored, never answered.
	Transient map[string]any `json:"transient,omitempty"`
}

func (s *Server) startProcess(w http.ResponseWriter, r *http.Request) {
	var body StartBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	if body.Definition == "" {
		badRequest(w, "definition: the name of the definition to start is required")
		return
	}
	if body.Version < 0 {
		badRequest(w, "version %d: want a version number from 1, or none for the latest", body.Version)
		return
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	who, prob := actor(r, body.User, nil)
	if prob != nil {
		writeProblem(w, prob)
		return
	}
	p, err := s.cfg.Engine.StartProcess(r.Context(), veena.StartRequest{
		Definition:     body.Definition,
		Version:        body.Version,
		Env:            env,
		Context:        body.Context,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Attachments:    body.Attachments,
		User:           who.User,
		Transient:      body.Transient,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/processes/"+p.ID)
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	f, err := processFilter(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	page, err := s.cfg.Engine.Processes(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if page.Items == nil {
		page.Items = []veena.Process{}
	}
	writeJSON(w, http.StatusOK, page)
}

// listWaiting answers the waiting work of executing processes, oldest
// process first unless ?order=newest.
func (s *Server) listWaiting(w http.ResponseWriter, r *http.Request) {
	if st := r.URL.Query().Get("state"); st != "" {
		badRequest(w, "state %q: waiting work is that of executing processes; leave state out", st)
		return
	}
	f, err := processFilter(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if r.URL.Query().Get("order") == "" {
		f.Oldest = true
	}
	page, err := s.cfg.Engine.Waiting(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// processFilter reads the query of GET /api/v1/processes.
func processFilter(r *http.Request) (veena.ProcessFilter, error) {
	q := r.URL.Query()
	f := veena.ProcessFilter{
		Definition:  q.Get("definition"),
		State:       q.Get("state"),
		ParentToken: q.Get("parentToken"),
		ID:          q.Get("id"),
		Node:        q.Get("node"),
		Search:      strings.TrimSpace(q.Get("q")),
		After:       q.Get("after"),
	}
	var err error
	if f.Limit, err = limitOf(r); err != nil {
		return f, err
	}
	for _, st := range strings.Split(f.State, ",") {
		if st = strings.TrimSpace(st); st != "" && !isState(st) {
			return f, fmt.Errorf("state %q: want created, executing, pending_completion, completed, pending_cancel or canceled (several separated by commas)", st)
		}
	}
	if v := q.Get("version"); v != "" {
		if f.Version, err = strconv.Atoi(v); err != nil || f.Version < 1 {
			return f, fmt.Errorf("version %q: want a whole number from 1", v)
		}
		if f.Definition == "" {
			return f, fmt.Errorf("version %q: give the definition it is a version of (?definition=)", v)
		}
	}
	if f.Stalled, err = boolParam(q, "stalled"); err != nil {
		return f, err
	}
	noTotal := false
	if v := q.Get("total"); v != "" {
		total, err := strconv.ParseBool(v)
		if err != nil {
			return f, fmt.Errorf("total %q: want true or false", v)
		}
		noTotal = !total
	}
	f.NoTotal = noTotal
	switch o := q.Get("order"); o {
	case "", "newest":
	case "oldest":
		f.Oldest = true
	default:
		return f, fmt.Errorf("order %q: want newest or oldest", o)
	}
	for _, pair := range q["context"] {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("context %q: want KEY=VALUE", pair)
		}
		if f.Context == nil {
			f.Context = map[string]string{}
		}
		if prev, dup := f.Context[k]; dup && prev != v {
			return f, fmt.Errorf("context %s is given twice (%q and %q)", k, prev, v)
		}
		f.Context[k] = v
	}
	if f.CreatedAfter, err = timeParam(q, "createdAfter"); err != nil {
		return f, err
	}
	if f.CreatedBefore, err = timeParam(q, "createdBefore"); err != nil {
		return f, err
	}
	return f, nil
}

// boolParam reads a true/false query parameter (absent: false).
func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}

// timeParam reads an RFC 3339 time query parameter (absent: zero).
func timeParam(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-05-01T08:00:00Z", name, v)
	}
	return t, nil
}

// isState reports whether name is a process state of the API.
func isState(name string) bool {
	_, ok := kernel.ParseState(name)
	return ok
}

func (s *Server) getProcess(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Engine.Process(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// emptyBody is the optional body of cancel and backtrack: an empty object.
type emptyBody struct{}

func (s *Server) cancelProcess(w http.ResponseWriter, r *http.Request) {
	s.command(w, r, s.cfg.Engine.CancelProcess)
}

// command serves a POST that takes no arguments beyond the path's {id} and
// the Idempotency-Key header (cancel, backtrack): it accepts an empty body or
// an empty object and answers 200 with the process.
func (s *Server) command(w http.ResponseWriter, r *http.Request, run func(ctx context.Context, id, idempotencyKey string) (*veena.Process, error)) {
	if !s.decodeJSON(w, r, &emptyBody{}, true) {
		return
	}
	p, err := run(r.Context(), r.PathValue("id"), r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// getTokenSets answers a process's token sets, in the order they were
// made, each with its shared environment and its members' own.
func (s *Server) getTokenSets(w http.ResponseWriter, r *http.Request) {
	sets, err := s.cfg.Engine.TokenSets(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sets)
}

// getTokens answers a process's token history. With ?limit= or ?after= it
// is a page: at most limit node and arc tokens together (default and most
// 1000) created after the cursor, each list in creation order, and "next"
// the cursor of the next page ("" after the last). Without either it is the
// whole history, written as a stream so that a large one does not have to
// be held in memory as JSON.
func (s *Server) getTokens(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("limit") || q.Has("after") {
		limit := MaxLimit
		if q.Has("limit") {
			var err error
			if limit, err = limitOf(r); err != nil {
				badRequest(w, "%v", err)
				return
			}
		}
		h, err := s.cfg.Engine.TokenPage(r.Context(), r.PathValue("id"), q.Get("after"), limit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, h)
		return
	}
	var bw *bufio.Writer
	arcs := false
	sep := func() {
		if bw == nil {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 32<<10)
			bw.WriteString(`{"nodeTokens":[`)
			return
		}
		bw.WriteByte(',')
	}
	write := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = bw.Write(b)
		return err
	}
	first := true
	err := s.cfg.Engine.EachToken(r.Context(), r.PathValue("id"), func(t *veena.NodeToken) error {
		if first {
			sep()
			first = false
		} else {
			bw.WriteByte(',')
		}
		return write(t)
	}, func(a *veena.ArcToken) error {
		if first {
			sep()
			first = false
		}
		if !arcs {
			bw.WriteString(`],"arcTokens":[`)
			arcs = true
		} else {
			bw.WriteByte(',')
		}
		return write(a)
	})
	switch {
	case err != nil && bw == nil:
		s.fail(w, r, err)
		return
	case err != nil:
		// The answer is under way: break it off rather than end it as if whole.
		s.log.Error("writing a token history failed", "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
	if bw == nil {
		sep()
	}
	if !arcs {
		bw.WriteString(`],"arcTokens":[`)
	}
	bw.WriteString("],\"next\":\"\"}\n")
	_ = bw.Flush()
}

func (s *Server) getProcessEnv(w http.ResponseWriter, r *http.Request) {
	s.getEnv(w, r, s.cfg.Engine.ProcessEnv)
}

func (s *Server) patchProcessEnv(w http.ResponseWriter, r *http.Request) {
	s.patchEnv(w, r, s.cfg.Engine.PatchProcessEnv)
}

// getEnv serves GET …/{id}/env with the environment read reads.
func (s *Server) getEnv(w http.ResponseWriter, r *http.Request, read func(ctx context.Context, id string) (map[string]veena.Value, error)) {
	env, err := read(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEnv(w, env)
}

// patchEnv serves PATCH …/{id}/env: it merges the body's attributes with
// patch (null removes one) and answers the environment that results.
func (s *Server) patchEnv(w http.ResponseWriter, r *http.Request, patch func(ctx context.Context, id string, attrs map[string]any, idempotencyKey string) (map[string]veena.Value, error)) {
	var body attrs
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	values, err := body.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	env, err := patch(r.Context(), r.PathValue("id"), values, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEnv(w, env)
}

// writeEnv answers an environment, {} when it is empty.
func writeEnv(w http.ResponseWriter, env map[string]veena.Value) {
	if env == nil {
		env = map[string]veena.Value{}
	}
	writeJSON(w, http.StatusOK, env)
}

// ---- node tokens

func (s *Server) getNodeToken(w http.ResponseWriter, r *http.Request) {
	t, err := s.cfg.Engine.NodeToken(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// CompleteBody is the body of POST /api/v1/node-tokens/{id}/complete.
type CompleteBody struct {
	Arcs     *[]*string    `json:"arcs,omitempty"`
	Env      attrs         `json:"env,omitempty"`
	TokenSet *TokenSetBody `json:"tokenSet,omitempty"`
	// Async completes the token but leaves its new arc tokens pending
	// until POST /processes/{id}/execute-queued.
	Async bool `json:"async,omitempty"`
	// Transient attributes of the token, for this command only.
	Transient map[string]any `json:"transient,omitempty"`
}

// TokenSetBody asks for a new token set on completion.
type TokenSetBody struct {
	Name      string                       `json:"name"`
	Count     int                          `json:"count"`
	Env       attrs                        `json:"env,omitempty"`
	MemberEnv map[string][]json.RawMessage `json:"memberEnv,omitempty"`
}

func (s *Server) completeToken(w http.ResponseWriter, r *http.Request) {
	var body CompleteBody
	if !s.decodeJSON(w, r, &body, true) {
		return
	}
	req := veena.CompleteRequest{IdempotencyKey: r.Header.Get("Idempotency-Key"), Async: body.Async, Transient: body.Transient}
	if body.Arcs != nil {
		req.Arcs = *body.Arcs
		if req.Arcs == nil {
			req.Arcs = []*string{}
		}
	}
	var err error
	if req.Env, err = body.Env.values("env"); err != nil {
		badRequest(w, "%v", err)
		return
	}
	if ts := body.TokenSet; ts != nil {
		if ts.Name == "" {
			badRequest(w, "tokenSet.name is required")
			return
		}
		if ts.Count < 1 {
			badRequest(w, "tokenSet.count %d: a token set needs at least one member", ts.Count)
			return
		}
		tr := &veena.TokenSetRequest{Name: ts.Name, Count: ts.Count}
		if tr.Env, err = ts.Env.values("tokenSet.env"); err != nil {
			badRequest(w, "%v", err)
			return
		}
		if ts.MemberEnv != nil {
			tr.MemberEnv = make(map[string][]any, len(ts.MemberEnv))
			for k, list := range ts.MemberEnv {
				vals := make([]any, len(list))
				for i, raw := range list {
					if vals[i], err = attrValue(raw); err != nil {
						badRequest(w, "tokenSet.memberEnv attribute %q member %d: %v", k, i, err)
						return
					}
				}
				tr.MemberEnv[k] = vals
			}
		}
		req.TokenSet = tr
	}
	p, err := s.cfg.Engine.CompleteToken(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) backtrack(w http.ResponseWriter, r *http.Request) {
	s.command(w, r, s.cfg.Engine.Backtrack)
}

func (s *Server) getTokenEnv(w http.ResponseWriter, r *http.Request) {
	s.getEnv(w, r, s.cfg.Engine.TokenEnv)
}

func (s *Server) patchTokenEnv(w http.ResponseWriter, r *http.Request) {
	s.patchEnv(w, r, s.cfg.Engine.PatchTokenEnv)
}

// ---- incoming events

// EventBody is the body of POST /api/v1/events: an event for the one
// executing process whose context holds every pair of Match.
// With a name, it is an event for a schema instance, routed by its
// context (Context, or Match) with a payload (see Schemas).
type EventBody struct {
	Match pairs  `json:"match"`
	Node  string `json:"node,omitempty"`
	Env   attrs  `json:"env,omitempty"`
	// Transient attributes of the process environment, for this command
	// only.
	Transient map[string]any `json:"transient,omitempty"`

	Name    string          `json:"name,omitempty"`
	Context pairs           `json:"context,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	ID      string          `json:"id,omitempty"`
}

// sendEvent delivers an incoming event by context: the body's env is merged
// into the matching process's environment and its active token (on node,
// if given) is completed. It answers 200 with that process.
func (s *Server) sendEvent(w http.ResponseWriter, r *http.Request) {
	var body EventBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	if body.Name != "" {
		s.sendSchemaEvent(w, r, &body)
		return
	}
	if body.Context != nil || body.Payload != nil || body.ID != "" {
		badRequest(w, "context, payload and id are for named events: give the event a name")
		return
	}
	if len(body.Match) == 0 {
		badRequest(w, "match: at least one context pair (an object of strings) is required to find the process")
		return
	}
	for k := range body.Match {
		if k == "" {
			badRequest(w, "match: a context key must not be empty")
			return
		}
	}
	env, err := body.Env.values("env")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	p, err := s.cfg.Engine.SendEvent(r.Context(), veena.EventRequest{
		Match:          body.Match,
		Node:           body.Node,
		Env:            env,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Transient:      body.Transient,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// ListenerBody is the body of POST /api/v1/processes/{id}/listeners: a
// listener registered with the engine and the event types it hears (none:
// all).
type ListenerBody struct {
	Name   string   `json:"name"`
	Events []string `json:"events,omitempty"`
}

func (s *Server) addListener(w http.ResponseWriter, r *http.Request) {
	var body ListenerBody
	if !s.decodeJSON(w, r, &body, false) {
		return
	}
	if body.Name == "" {
		badRequest(w, "name: the registered listener to subscribe the process to is required")
		return
	}
	p, err := s.cfg.Engine.AddProcessListener(r.Context(), r.PathValue("id"), body.Name, body.Events, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// removeListener unsubscribes a process from a listener; ?events= (comma
// separated) for some event types only.
func (s *Server) removeListener(w http.ResponseWriter, r *http.Request) {
	var events []string
	for _, e := range strings.Split(r.URL.Query().Get("events"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			events = append(events, e)
		}
	}
	p, err := s.cfg.Engine.RemoveProcessListener(r.Context(), r.PathValue("id"), r.PathValue("name"), events, r.Header.Get("Idempotency-Key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
