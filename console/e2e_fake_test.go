package console

// A small in-memory stand-in for `veena serve`, used by the browser test until
// it is pointed at the real binary. It answers the API.md calls the console
// makes, with API.md-shaped JSON and a live event stream, and plays a reduced
// token game: node-type nodes complete on their default arcs at once, wait
// nodes wait, or-joins pass every arc token, and-joins wait for a token on
// every incoming arc. It knows nothing else of Veena's semantics.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type fakeNode struct {
	Name      string `json:"name"`
	External  string `json:"external"`
	Type      string `json:"type"`
	Start     bool   `json:"start"`
	Join      string `json:"join"`
	JoinParam string `json:"joinParam"`
	Guard     string `json:"guard"`
}

type fakeArc struct {
	From         string  `json:"from"`
	To           string  `json:"to"`
	Name         *string `json:"name"`
	FromExternal string  `json:"fromExternal"`
	ToExternal   string  `json:"toExternal"`
}

type fakeDefinition struct {
	Name      string     `json:"name"`
	Version   int        `json:"version"`
	Format    string     `json:"format"`
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"createdAt"`
	Nodes     []fakeNode `json:"nodes"`
	Arcs      []fakeArc  `json:"arcs"`
	source    []byte
}

type fakeProcess struct {
	ID          string         `json:"id"`
	Definition  string         `json:"definition"`
	Version     int            `json:"version"`
	State       string         `json:"state"`
	Env         map[string]any `json:"env"`
	ParentToken *string        `json:"parentToken"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`

	def    *fakeDefinition
	nodes  []*fakeNodeToken
	arcs   []*fakeArcToken
	events []fakeEvent
	subs   map[chan fakeEvent]struct{}
}

type fakeNodeToken struct {
	ID            string         `json:"id"`
	Process       string         `json:"process"`
	Node          string         `json:"node"`
	External      string         `json:"external"`
	Complete      bool           `json:"complete"`
	ExecutionType string         `json:"executionType"`
	GuardAction   *string        `json:"guardAction"`
	Parents       []string       `json:"parents"`
	Children      []string       `json:"children"`
	TokenSets     []any          `json:"tokenSets"`
	Env           map[string]any `json:"env"`
	CreatedAt     time.Time      `json:"createdAt"`
	CompletedAt   *time.Time     `json:"completedAt"`
}

type fakeArcToken struct {
	ID            string  `json:"id"`
	Process       string  `json:"process"`
	Arc           fakeArc `json:"arc"`
	Parent        string  `json:"parent"`
	Child         *string `json:"child"`
	Pending       bool    `json:"pending"`
	Complete      bool    `json:"complete"`
	ExecutionType string  `json:"executionType"`
	TokenSets     []any   `json:"tokenSets"`
}

type fakeEvent struct {
	Seq       int       `json:"seq"`
	Type      string    `json:"type"`
	NodeToken *string   `json:"nodeToken"`
	ArcToken  *string   `json:"arcToken"`
	ArcNames  []*string `json:"arcNames"`
	At        time.Time `json:"at"`
}

// fakeServer is the stand-in. tokens maps access tokens to roles; with none,
// it runs open.
type fakeServer struct {
	mu       sync.Mutex
	tokens   map[string]string
	defs     map[string][]*fakeDefinition
	procs    map[string]*fakeProcess
	order    []string
	nodeToks map[string]*fakeNodeToken
	seq      int
	closed   chan struct{}
}

func newFakeServer(tokens map[string]string) *fakeServer {
	return &fakeServer{
		tokens:   tokens,
		defs:     map[string][]*fakeDefinition{},
		procs:    map[string]*fakeProcess{},
		nodeToks: map[string]*fakeNodeToken{},
		closed:   make(chan struct{}),
	}
}

func (s *fakeServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
}

func (s *fakeServer) newID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%04d-%08x", prefix, s.seq, uint32(s.seq)*2654435761)
}

func problem(w http.ResponseWriter, status int, code, title, detail string, extra map[string]any) {
	body := map[string]any{"type": "https://veena.dev/problems/" + code, "title": title, "status": status, "detail": detail, "code": code}
	for k, v := range extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// role answers the caller's role, or "" after answering 401.
func (s *fakeServer) role(w http.ResponseWriter, r *http.Request) string {
	if len(s.tokens) == 0 {
		return "open"
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.URL.Query().Get("access_token")
	}
	if role, ok := s.tokens[tok]; ok {
		return role
	}
	problem(w, http.StatusUnauthorized, "unauthorized", "Unauthorized", "an access token is required", nil)
	return ""
}

func (s *fakeServer) handler() http.Handler {
	mux := http.NewServeMux()
	read := func(f func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if s.role(w, r) == "" {
				return
			}
			f(w, r)
		}
	}
	write := func(f func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			role := s.role(w, r)
			if role == "" {
				return
			}
			if role == "viewer" {
				problem(w, http.StatusForbidden, "forbidden", "Forbidden", "the viewer role cannot change anything", nil)
				return
			}
			f(w, r)
		}
	}
	mux.HandleFunc("GET /api/v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		role := s.role(w, r)
		if role == "" {
			return
		}
		writeJSON(w, 200, map[string]any{"role": role, "authRequired": len(s.tokens) > 0})
	})
	mux.HandleFunc("GET /api/v1/definitions", read(s.listDefinitions))
	mux.HandleFunc("POST /api/v1/definitions", write(s.loadDefinition))
	mux.HandleFunc("GET /api/v1/definitions/{name}", read(s.getDefinition))
	mux.HandleFunc("GET /api/v1/definitions/{name}/versions/{version}", read(s.getDefinition))
	mux.HandleFunc("GET /api/v1/definitions/{name}/versions/{version}/source", read(s.getSource))
	mux.HandleFunc("GET /api/v1/processes", read(s.listProcesses))
	mux.HandleFunc("POST /api/v1/processes", write(s.startProcess))
	mux.HandleFunc("GET /api/v1/processes/{id}", read(s.getProcess))
	mux.HandleFunc("POST /api/v1/processes/{id}/cancel", write(s.cancelProcess))
	mux.HandleFunc("GET /api/v1/processes/{id}/tokens", read(s.getTokens))
	mux.HandleFunc("GET /api/v1/processes/{id}/events", read(s.getEvents))
	mux.HandleFunc("GET /api/v1/processes/{id}/env", read(s.getEnv))
	mux.HandleFunc("GET /api/v1/node-tokens/{id}", read(s.getNodeToken))
	mux.HandleFunc("POST /api/v1/node-tokens/{id}/complete", write(s.completeToken))
	mux.HandleFunc("POST /api/v1/node-tokens/{id}/backtrack", write(s.backtrackToken))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, 404, "not_found", "Not Found", "no such API path "+r.URL.Path, nil)
	})
	return mux
}

// ---- definitions

type xmlDefinition struct {
	XMLName   xml.Name      `xml:"process-definition"`
	Name      string        `xml:"name,attr"`
	Nodes     []xmlNode     `xml:"node"`
	Externals []xmlExternal `xml:"external"`
}

type xmlNode struct {
	Name     string   `xml:"name,attr"`
	Type     string   `xml:"type,attr"`
	IsStart  bool     `xml:"isStart,attr"`
	JoinType string   `xml:"joinType,attr"`
	Join     string   `xml:"join"`
	Guard    string   `xml:"guard"`
	Arcs     []xmlArc `xml:"arc"`
}

type xmlArc struct {
	From     string `xml:"from,attr"`
	To       string `xml:"to,attr"`
	Name     string `xml:"name,attr"`
	External string `xml:"external,attr"`
}

type xmlExternal struct {
	Name              string   `xml:"name,attr"`
	ProcessDefinition string   `xml:"processDefinition,attr"`
	Arcs              []xmlArc `xml:"arc"`
}

func arcName(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

type loadError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

func (s *fakeServer) compile(src []byte) (*fakeDefinition, []loadError) {
	var x xmlDefinition
	if err := xml.Unmarshal(src, &x); err != nil {
		line := 1
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			line = se.Line
		}
		return nil, []loadError{{Line: line, Column: 1, Message: err.Error()}}
	}
	if x.Name == "" {
		return nil, []loadError{{Line: 1, Column: 1, Message: "process-definition has no name"}}
	}
	d := &fakeDefinition{Name: x.Name, Format: "sarasvati", source: src}
	own := map[string]bool{}
	for _, n := range x.Nodes {
		t := n.Type
		if t == "" {
			t = "node"
		}
		j := n.JoinType
		if j == "" {
			j = "or"
		}
		d.Nodes = append(d.Nodes, fakeNode{Name: n.Name, Type: t, Start: n.IsStart, Join: j, JoinParam: strings.TrimSpace(n.Join), Guard: strings.TrimSpace(n.Guard)})
		own[n.Name] = true
	}
	imported := map[string]map[string]bool{}
	for _, e := range x.Externals {
		vs := s.defs[e.ProcessDefinition]
		if len(vs) == 0 {
			return nil, []loadError{{Line: 1, Column: 1, Message: fmt.Sprintf("external %s: definition %q is not loaded", e.Name, e.ProcessDefinition)}}
		}
		inner := vs[len(vs)-1]
		imported[e.Name] = map[string]bool{}
		for _, n := range inner.Nodes {
			if n.External != "" {
				continue
			}
			n.External = e.Name
			n.Start = false
			d.Nodes = append(d.Nodes, n)
			imported[e.Name][n.Name] = true
		}
		for _, a := range inner.Arcs {
			if a.FromExternal != "" || a.ToExternal != "" {
				continue
			}
			a.FromExternal, a.ToExternal = e.Name, e.Name
			d.Arcs = append(d.Arcs, a)
		}
	}
	exists := func(name, ext string) bool {
		if ext == "" {
			return own[name]
		}
		return imported[ext][name]
	}
	var errs []loadError
	for _, n := range x.Nodes {
		for _, a := range n.Arcs {
			if !exists(a.To, a.External) {
				errs = append(errs, loadError{Line: 1, Column: 1, Message: fmt.Sprintf("arc from %s goes to unknown node %q", n.Name, a.To)})
				continue
			}
			d.Arcs = append(d.Arcs, fakeArc{From: n.Name, To: a.To, Name: arcName(a.Name), ToExternal: a.External})
		}
	}
	for _, e := range x.Externals {
		for _, a := range e.Arcs {
			if !exists(a.From, e.Name) || !exists(a.To, a.External) {
				errs = append(errs, loadError{Line: 1, Column: 1, Message: fmt.Sprintf("external %s: arc %s -> %s names an unknown node", e.Name, a.From, a.To)})
				continue
			}
			d.Arcs = append(d.Arcs, fakeArc{From: a.From, FromExternal: e.Name, To: a.To, ToExternal: a.External, Name: arcName(a.Name)})
		}
	}
	return d, errs
}

func (s *fakeServer) listDefinitions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []*fakeDefinition{}
	for _, vs := range s.defs {
		items = append(items, vs[len(vs)-1])
	}
	slices.SortFunc(items, func(a, b *fakeDefinition) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, 200, map[string]any{"items": items, "next": ""})
}

func (s *fakeServer) loadDefinition(w http.ResponseWriter, r *http.Request) {
	src, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	d, errs := s.compile(src)
	if len(errs) > 0 {
		problem(w, 422, "definition_invalid", "Definition invalid", errs[0].Message, map[string]any{"errors": errs})
		return
	}
	sum := sha256.Sum256(src)
	d.Hash = hex.EncodeToString(sum[:])
	vs := s.defs[d.Name]
	if len(vs) > 0 && vs[len(vs)-1].Hash == d.Hash {
		writeJSON(w, 200, vs[len(vs)-1])
		return
	}
	d.Version = len(vs) + 1
	d.CreatedAt = time.Now().UTC()
	s.defs[d.Name] = append(vs, d)
	writeJSON(w, 201, d)
}

func (s *fakeServer) findDefinition(w http.ResponseWriter, r *http.Request) *fakeDefinition {
	vs := s.defs[r.PathValue("name")]
	if len(vs) == 0 {
		problem(w, 404, "not_found", "Not Found", fmt.Sprintf("no definition named %q", r.PathValue("name")), nil)
		return nil
	}
	if v := r.PathValue("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(vs) {
			problem(w, 404, "not_found", "Not Found", fmt.Sprintf("definition %q has no version %s", r.PathValue("name"), v), nil)
			return nil
		}
		return vs[n-1]
	}
	return vs[len(vs)-1]
}

func (s *fakeServer) getDefinition(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.findDefinition(w, r); d != nil {
		writeJSON(w, 200, d)
	}
}

func (s *fakeServer) getSource(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.findDefinition(w, r); d != nil {
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(d.source)
	}
}

// ---- processes and the reduced token game

func (s *fakeServer) emit(p *fakeProcess, typ string, nt *fakeNodeToken, at *fakeArcToken, names []*string) {
	ev := fakeEvent{Seq: len(p.events) + 1, Type: typ, ArcNames: names, At: time.Now().UTC()}
	if nt != nil {
		ev.NodeToken = &nt.ID
	}
	if at != nil {
		ev.ArcToken = &at.ID
	}
	p.events = append(p.events, ev)
	for ch := range p.subs {
		select {
		case ch <- ev:
		default: // a stuck reader catches up with ?after= on reconnect
		}
	}
}

func (s *fakeServer) findNode(d *fakeDefinition, name, ext string) *fakeNode {
	for i := range d.Nodes {
		if d.Nodes[i].Name == name && d.Nodes[i].External == ext {
			return &d.Nodes[i]
		}
	}
	return nil
}

func (s *fakeServer) newNodeToken(p *fakeProcess, n *fakeNode, parents []*fakeArcToken) {
	accept := "accept"
	nt := &fakeNodeToken{
		ID: s.newID("nt"), Process: p.ID, Node: n.Name, External: n.External, ExecutionType: "forward",
		GuardAction: &accept, Parents: []string{}, Children: []string{}, TokenSets: []any{}, Env: map[string]any{},
		CreatedAt: time.Now().UTC(),
	}
	for _, a := range parents {
		nt.Parents = append(nt.Parents, a.ID)
		id := nt.ID
		a.Child = &id
	}
	p.nodes = append(p.nodes, nt)
	s.nodeToks[nt.ID] = nt
	s.emit(p, "NODE_TOKEN_CREATED", nt, nil, nil)
	s.emit(p, "NODE_TOKEN_ACCEPTED", nt, nil, nil)
	s.emit(p, "NODE_TOKEN_EXECUTED", nt, nil, nil)
	if n.Type != "wait" {
		s.complete(p, nt, []*string{nil})
	}
}

func sameName(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func (s *fakeServer) complete(p *fakeProcess, nt *fakeNodeToken, names []*string) {
	now := time.Now().UTC()
	nt.Complete = true
	nt.CompletedAt = &now
	s.emit(p, "NODE_TOKEN_COMPLETED", nt, nil, names)
	for _, arc := range p.def.Arcs {
		if arc.From != nt.Node || arc.FromExternal != nt.External {
			continue
		}
		if !slices.ContainsFunc(names, func(n *string) bool { return sameName(n, arc.Name) }) {
			continue
		}
		at := &fakeArcToken{ID: s.newID("at"), Process: p.ID, Arc: arc, Parent: nt.ID, ExecutionType: "forward", TokenSets: []any{}}
		p.arcs = append(p.arcs, at)
		nt.Children = append(nt.Children, at.ID)
		s.emit(p, "ARC_TOKEN_CREATED", nil, at, nil)
		s.arrive(p, at)
	}
}

func (s *fakeServer) arrive(p *fakeProcess, at *fakeArcToken) {
	target := s.findNode(p.def, at.Arc.To, at.Arc.ToExternal)
	s.emit(p, "ARC_TOKEN_PROCESSED", nil, at, nil)
	if target.Join != "and" {
		at.Complete = true
		s.emit(p, "ARC_TOKEN_COMPLETED", nil, at, nil)
		s.newNodeToken(p, target, []*fakeArcToken{at})
		return
	}
	at.Pending = true
	// The join fires when every incoming arc has a waiting arc token.
	var waiting []*fakeArcToken
	for _, arc := range p.def.Arcs {
		if arc.To != target.Name || arc.ToExternal != target.External {
			continue
		}
		i := slices.IndexFunc(p.arcs, func(a *fakeArcToken) bool {
			return a.Pending && !a.Complete && a.ExecutionType == "forward" && a.Arc == arc
		})
		if i < 0 {
			s.emit(p, "ARC_TOKEN_INCOMPLETE_JOIN", nil, at, nil)
			return
		}
		waiting = append(waiting, p.arcs[i])
	}
	for _, a := range waiting {
		a.Pending, a.Complete = false, true
		s.emit(p, "ARC_TOKEN_MERGED", nil, a, nil)
		s.emit(p, "ARC_TOKEN_COMPLETED", nil, a, nil)
	}
	s.newNodeToken(p, target, waiting)
}

func (s *fakeServer) settle(p *fakeProcess) {
	p.UpdatedAt = time.Now().UTC()
	for _, nt := range p.nodes {
		if !nt.Complete {
			return
		}
	}
	for _, a := range p.arcs {
		if a.Pending && !a.Complete {
			return
		}
	}
	p.State = "completed"
	s.emit(p, "PROCESS_PENDING_COMPLETE", nil, nil, nil)
	s.emit(p, "PROCESS_COMPLETED", nil, nil, nil)
}

func (s *fakeServer) startProcess(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Definition string         `json:"definition"`
		Version    int            `json:"version"`
		Env        map[string]any `json:"env"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		problem(w, 400, "bad_request", "Bad Request", "the body is not JSON: "+err.Error(), nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.defs[req.Definition]
	if len(vs) == 0 || req.Version > len(vs) {
		problem(w, 404, "not_found", "Not Found", fmt.Sprintf("no definition %q version %d", req.Definition, req.Version), nil)
		return
	}
	d := vs[len(vs)-1]
	if req.Version > 0 {
		d = vs[req.Version-1]
	}
	if req.Env == nil {
		req.Env = map[string]any{}
	}
	now := time.Now().UTC()
	p := &fakeProcess{ID: s.newID("p"), Definition: d.Name, Version: d.Version, State: "executing", Env: req.Env,
		CreatedAt: now, UpdatedAt: now, def: d, subs: map[chan fakeEvent]struct{}{}}
	s.procs[p.ID] = p
	s.order = append(s.order, p.ID)
	s.emit(p, "PROCESS_CREATED", nil, nil, nil)
	s.emit(p, "PROCESS_STARTED", nil, nil, nil)
	for i := range d.Nodes {
		if d.Nodes[i].Start && d.Nodes[i].External == "" {
			s.newNodeToken(p, &d.Nodes[i], nil)
		}
	}
	s.settle(p)
	writeJSON(w, 201, p)
}

func (s *fakeServer) findProcess(w http.ResponseWriter, id string) *fakeProcess {
	p := s.procs[id]
	if p == nil {
		problem(w, 404, "not_found", "Not Found", fmt.Sprintf("no process %q", id), nil)
	}
	return p
}

func (s *fakeServer) listProcesses(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	after := q.Get("after")
	items := []*fakeProcess{}
	started := after == ""
	next := ""
	for i := len(s.order) - 1; i >= 0; i-- { // newest first
		p := s.procs[s.order[i]]
		if !started {
			started = p.ID == after
			continue
		}
		if d := q.Get("definition"); d != "" && p.Definition != d {
			continue
		}
		if st := q.Get("state"); st != "" && p.State != st {
			continue
		}
		if pt := q.Get("parentToken"); pt != "" && (p.ParentToken == nil || *p.ParentToken != pt) {
			continue
		}
		if len(items) == limit {
			next = items[len(items)-1].ID
			break
		}
		items = append(items, p)
	}
	writeJSON(w, 200, map[string]any{"items": items, "next": next})
}

func (s *fakeServer) getProcess(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.findProcess(w, r.PathValue("id")); p != nil {
		writeJSON(w, 200, p)
	}
}

func (s *fakeServer) getEnv(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.findProcess(w, r.PathValue("id")); p != nil {
		writeJSON(w, 200, p.Env)
	}
}

func (s *fakeServer) cancelProcess(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.findProcess(w, r.PathValue("id"))
	if p == nil {
		return
	}
	if p.State != "executing" {
		problem(w, 409, "process_not_executing", "Process not executing", "the process is "+p.State, nil)
		return
	}
	p.State = "canceled"
	p.UpdatedAt = time.Now().UTC()
	s.emit(p, "PROCESS_PENDING_CANCEL", nil, nil, nil)
	s.emit(p, "PROCESS_CANCELED", nil, nil, nil)
	writeJSON(w, 200, p)
}

func (s *fakeServer) getTokens(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.findProcess(w, r.PathValue("id")); p != nil {
		nodes, arcs := p.nodes, p.arcs
		if nodes == nil {
			nodes = []*fakeNodeToken{}
		}
		if arcs == nil {
			arcs = []*fakeArcToken{}
		}
		writeJSON(w, 200, map[string]any{"nodeTokens": nodes, "arcTokens": arcs})
	}
}

func (s *fakeServer) getEvents(w http.ResponseWriter, r *http.Request) {
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	if after == 0 {
		after, _ = strconv.Atoi(r.Header.Get("Last-Event-ID"))
	}
	s.mu.Lock()
	p := s.findProcess(w, r.PathValue("id"))
	if p == nil {
		s.mu.Unlock()
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		evs := p.events
		if after > 0 && after <= len(evs) {
			evs = evs[after:]
		}
		writeJSON(w, 200, evs)
		s.mu.Unlock()
		return
	}
	backlog := []fakeEvent{}
	if after < len(p.events) {
		backlog = append(backlog, p.events[after:]...)
	}
	ch := make(chan fakeEvent, 256)
	p.subs[ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(p.subs, ch)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	flusher, _ := w.(http.Flusher)
	send := func(ev fakeEvent) bool {
		var b bytes.Buffer
		data, _ := json.Marshal(ev)
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", ev.Seq, data)
		if _, err := w.Write(b.Bytes()); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	for _, ev := range backlog {
		if !send(ev) {
			return
		}
	}
	if flusher != nil {
		flusher.Flush()
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		case <-ping.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		case ev := <-ch:
			if !send(ev) {
				return
			}
		}
	}
}

func (s *fakeServer) getNodeToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nt := s.nodeToks[r.PathValue("id")]
	if nt == nil {
		problem(w, 404, "not_found", "Not Found", "no node token "+r.PathValue("id"), nil)
		return
	}
	writeJSON(w, 200, nt)
}

func (s *fakeServer) completeToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Arcs []*string      `json:"arcs"`
		Env  map[string]any `json:"env"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		problem(w, 400, "bad_request", "Bad Request", "the body is not JSON: "+err.Error(), nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nt := s.nodeToks[r.PathValue("id")]
	if nt == nil {
		problem(w, 404, "not_found", "Not Found", "no node token "+r.PathValue("id"), nil)
		return
	}
	p := s.procs[nt.Process]
	if nt.Complete {
		problem(w, 409, "token_complete", "Token complete", fmt.Sprintf("node token %s at %s is already complete", nt.ID, nt.Node), nil)
		return
	}
	if p.State != "executing" {
		problem(w, 409, "process_not_executing", "Process not executing", "the process is "+p.State, nil)
		return
	}
	for k, v := range req.Env {
		nt.Env[k] = v
	}
	names := req.Arcs
	if len(names) == 0 {
		names = []*string{nil}
	}
	s.complete(p, nt, names)
	s.settle(p)
	writeJSON(w, 200, p)
}

// backtrackToken undoes what followed a completed token: its descendants are
// marked backtracked and a new token waits at its node again.
func (s *fakeServer) backtrackToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nt := s.nodeToks[r.PathValue("id")]
	if nt == nil {
		problem(w, 404, "not_found", "Not Found", "no node token "+r.PathValue("id"), nil)
		return
	}
	p := s.procs[nt.Process]
	if !nt.Complete || nt.ExecutionType != "forward" || p.State != "executing" {
		problem(w, 409, "backtrack_not_allowed", "Backtrack not allowed", "only a completed forward token of an executing process can be backtracked to", nil)
		return
	}
	arcsByID := map[string]*fakeArcToken{}
	for _, a := range p.arcs {
		arcsByID[a.ID] = a
	}
	var undo func(t *fakeNodeToken)
	undo = func(t *fakeNodeToken) {
		for _, id := range t.Children {
			a := arcsByID[id]
			if a.ExecutionType != "forward" {
				continue
			}
			a.ExecutionType, a.Pending, a.Complete = "forward_backtracked", false, true
			s.emit(p, "ARC_TOKEN_BACKTRACKED", nil, a, nil)
			if a.Child != nil {
				c := s.nodeToks[*a.Child]
				undo(c)
				c.ExecutionType, c.Complete = "forward_backtracked", true
				s.emit(p, "NODE_TOKEN_BACKTRACKED", c, nil, nil)
			}
		}
	}
	undo(nt)
	nt.ExecutionType = "forward_backtracked"
	s.emit(p, "NODE_TOKEN_BACKTRACKED", nt, nil, nil)
	n := s.findNode(p.def, nt.Node, nt.External)
	accept := "accept"
	again := &fakeNodeToken{
		ID: s.newID("nt"), Process: p.ID, Node: n.Name, External: n.External, ExecutionType: "uturn",
		GuardAction: &accept, Parents: []string{}, Children: []string{}, TokenSets: []any{}, Env: map[string]any{},
		CreatedAt: time.Now().UTC(),
	}
	p.nodes = append(p.nodes, again)
	s.nodeToks[again.ID] = again
	s.emit(p, "NODE_TOKEN_CREATED", again, nil, nil)
	s.settle(p)
	writeJSON(w, 200, p)
}
