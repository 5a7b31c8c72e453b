package veena

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// Wait is one place where an executing process waits: an active node token
// (kind "token"; "nested" when its node runs a nested process, "delayed"
// when its guard delays it, "incident" when it holds an open incident), or
// arc tokens waiting at a join (kind "join").
type Wait struct {
	Node     string `json:"node"`
	External string `json:"external,omitempty"`
	Kind     string `json:"kind"`
	// Token is the node token (kinds token, nested, delayed).
	Token string `json:"token,omitempty"`
	// Since is when the token was created, or when the first arc token
	// began to wait at the join.
	Since time.Time `json:"since"`
	// Until is when a delayed token's guard runs again.
	Until *time.Time `json:"until,omitempty"`
	// Arcs counts the arc tokens waiting at a join.
	Arcs int `json:"arcs,omitempty"`
	// Progress says how far a join has come (see JoinProgress), on a
	// process read (Engine.Process) only.
	Progress []JoinProgress `json:"progress,omitempty"`
}

// The kinds of Wait.
const (
	WaitToken    = "token"
	WaitNested   = "nested"
	WaitDelayed  = "delayed"
	WaitIncident = "incident"
	WaitJoin     = "join"
)

// StalledJoin is a join where arc tokens wait in a stalled process: the
// arcs whose tokens have arrived and the input arcs the join still lacks.
type StalledJoin struct {
	Node     string `json:"node"`
	External string `json:"external,omitempty"`
	Join     string `json:"join"`
	Waiting  []Arc  `json:"waiting"`
	Missing  []Arc  `json:"missing"`
}

// TimerFailure is a delayed token whose guard failed when its time came
// (it is tried again later; the process shows the last failure).
type TimerFailure struct {
	Token    string    `json:"token"`
	Incident string    `json:"incident,omitempty"` // the timer_failed incident open on the token
	Node     string    `json:"node,omitempty"`
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
	Attempts int       `json:"attempts"`
	DueAt    time.Time `json:"dueAt"`
}

// maxWaitsKept bounds the waits a process row keeps for listings; the
// count of them all is kept beside.
const maxWaitsKept = 20

// waitRecord is how a process row keeps one wait (Process.WaitingAt).
type waitRecord struct {
	Node     string `json:"n"`
	External string `json:"x,omitempty"`
	Kind     string `json:"k"`
	Token    int    `json:"t"` // node token index, -1 for a join
	Since    int64  `json:"s"`
	Until    int64  `json:"u,omitempty"`
	Arcs     int    `json:"a,omitempty"`
}

// waitsRecord is the waits column of a process row as rows written before
// the binary form hold it (JSON), which setRowWaits still reads.
type waitsRecord struct {
	Waits []waitRecord `json:"w"`
	Count int          `json:"c,omitempty"` // all waits, when more than kept
}

// The waits column is rewritten at nearly every step, so it is kept small:
// a format byte (waitsBinary; JSON begins with '{'), the count of all
// waits and of those kept, then each kept wait: its kind (an index into
// waitKinds), node, external, token, since (the first as is, each other as
// the difference from the one before), until and arcs, as varints (strings
// by their length). Nine waiting tokens and a join on nodes of two
// letters take 104 bytes, where JSON took some 500.
const waitsBinary = 1

var waitKinds = []string{WaitToken, WaitJoin, WaitDelayed, WaitNested, WaitIncident}

// encodeWaits writes the waits column for the kept waits of count in all.
func encodeWaits(ws []waitRecord, count int) []byte {
	b := make([]byte, 0, 4+16*len(ws))
	b = append(b, waitsBinary)
	b = binary.AppendUvarint(b, uint64(count))
	b = binary.AppendUvarint(b, uint64(len(ws)))
	var prev int64
	for _, w := range ws {
		b = append(b, byte(max(slices.Index(waitKinds, w.Kind), 0)))
		b = binary.AppendUvarint(b, uint64(len(w.Node)))
		b = append(b, w.Node...)
		b = binary.AppendUvarint(b, uint64(len(w.External)))
		b = append(b, w.External...)
		b = binary.AppendVarint(b, int64(w.Token))
		b = binary.AppendVarint(b, w.Since-prev)
		prev = w.Since
		b = binary.AppendVarint(b, w.Until)
		b = binary.AppendUvarint(b, uint64(w.Arcs))
	}
	return b
}

// decodeWaits reads the waits column, in either form: the kept waits and
// the count of all.
func decodeWaits(b []byte) ([]waitRecord, int, error) {
	if len(b) > 0 && b[0] == '{' {
		var rec waitsRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, 0, err
		}
		return rec.Waits, max(rec.Count, len(rec.Waits)), nil
	}
	errBad := errors.New("veena: malformed waits column")
	if len(b) == 0 || b[0] != waitsBinary {
		return nil, 0, errBad
	}
	b = b[1:]
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		n := uv()
		if n > uint64(len(b)) {
			b = nil
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	count, kept := uv(), uv()
	if b == nil || kept > uint64(len(b)) {
		return nil, 0, errBad
	}
	ws := make([]waitRecord, 0, kept)
	var since int64
	for range kept {
		if len(b) == 0 || int(b[0]) >= len(waitKinds) {
			return nil, 0, errBad
		}
		w := waitRecord{Kind: waitKinds[b[0]]}
		b = b[1:]
		w.Node, w.External = str(), str()
		w.Token = int(sv())
		since += sv()
		w.Since = since
		w.Until = sv()
		w.Arcs = int(uv())
		if b == nil {
			return nil, 0, errBad
		}
		ws = append(ws, w)
	}
	return ws, int(count), nil
}

// waitsOf finds where an executing process waits, in token creation order
// (joins after tokens), whether it is stalled, and the nodes (sorted,
// distinct) it waits at.
func waitsOf(p *kernel.Process) (ws []waitRecord, nodes []string, stalled bool) {
	if p.State != kernel.Executing {
		return nil, nil, false
	}
	for _, t := range p.NodeTokens {
		if !t.Active() || t.Complete {
			continue
		}
		w := waitRecord{Node: t.Node.Name, External: t.Node.ExternalName(), Kind: WaitToken, Token: t.ID, Since: t.CreatedNs}
		switch {
		case t.Holds(kernel.HoldsIncident):
			w.Kind = WaitIncident
		case t.GuardAction == kernel.Delay:
			w.Kind = WaitDelayed
			w.Until = t.DelayUntilNs
		case t.Node.Type == graph.TypeNested:
			w.Kind = WaitNested
		}
		ws = append(ws, w)
		nodes = append(nodes, t.Node.QualifiedName())
	}
	tokens := len(ws)
	joins := map[*graph.Node]int{}
	for _, a := range p.ArcTokens {
		if !a.Active() {
			continue
		}
		to := a.Arc.To
		if i, ok := joins[to]; ok {
			ws[i].Arcs++
			continue
		}
		joins[to] = len(ws)
		ws = append(ws, waitRecord{Node: to.Name, External: to.ExternalName(), Kind: WaitJoin, Token: -1, Since: a.CreatedNs, Arcs: 1})
		nodes = append(nodes, to.QualifiedName())
	}
	slices.Sort(nodes)
	return ws, slices.Compact(nodes), tokens == 0 && len(ws) > 0
}

// recordWaits fills the wait columns of a process row, and returns the
// waits (all of them) for the API.
func recordWaits(rec *store.Process, p *kernel.Process) []waitRecord {
	ws, nodes, stalled := waitsOf(p)
	rec.Waits = encodeWaits(ws[:min(len(ws), maxWaitsKept)], len(ws))
	rec.WaitNodes, rec.Stalled = nodes, stalled
	return ws
}

// waitNodesOf is the sorted, distinct nodes p waits at.
func waitNodesOf(p *kernel.Process) []string {
	_, nodes, _ := waitsOf(p)
	return nodes
}

// apiWaits renders kept waits for the API.
func apiWaits(process string, ws []waitRecord) []Wait {
	out := make([]Wait, len(ws))
	for i, w := range ws {
		x := Wait{Node: w.Node, External: w.External, Kind: w.Kind, Since: time.Unix(0, w.Since).UTC(), Arcs: w.Arcs}
		if w.Token >= 0 && w.Kind != WaitJoin {
			x.Token = nodeTokenID(process, w.Token)
		}
		if w.Until != 0 {
			u := time.Unix(0, w.Until).UTC()
			x.Until = &u
		}
		out[i] = x
	}
	return out
}

// setWaits fills the wait fields of an API process from a kernel process
// and its waits (found by waitsOf, or by recordWaits for its row).
func setWaits(out *Process, p *kernel.Process, ws []waitRecord, stalled bool) {
	out.WaitingAt, out.Stalled = apiWaits(p.ID, ws), stalled
	if stalled {
		out.Stall = stallOf(p)
	}
}

// setRowWaits fills the wait fields of an API process from its row.
func setRowWaits(out *Process, r *store.Process) {
	out.WaitingAt, out.Stalled = []Wait{}, r.Stalled
	if len(r.Waits) == 0 {
		return
	}
	ws, count, err := decodeWaits(r.Waits)
	if err != nil {
		return
	}
	out.WaitingAt = apiWaits(r.ID, ws)
	if count > len(ws) {
		out.WaitingMore = count - len(ws)
	}
}

// stallOf explains a stalled process: for each join with arc tokens waiting
// (in the order they began to wait), the arcs that arrived and the input
// arcs it still lacks (for a labelAnd join, those with the names of the
// arcs that arrived).
func stallOf(p *kernel.Process) []StalledJoin {
	var out []StalledJoin
	index := map[*graph.Node]int{}
	arrived := map[*graph.Node][]*graph.Arc{}
	for _, a := range p.ArcTokens {
		if !a.Active() {
			continue
		}
		to := a.Arc.To
		if _, ok := index[to]; !ok {
			index[to] = len(out)
			out = append(out, StalledJoin{Node: to.Name, External: to.ExternalName(), Join: string(to.Join), Waiting: []Arc{}, Missing: []Arc{}})
		}
		if !slices.Contains(arrived[to], a.Arc) {
			arrived[to] = append(arrived[to], a.Arc)
		}
	}
	for node, i := range index {
		got := arrived[node]
		names := map[string]bool{}
		for _, a := range got {
			out[i].Waiting = append(out[i].Waiting, arcOf(a))
			names[a.Name] = true
		}
		for _, a := range node.InArcs() {
			if slices.Contains(got, a) || node.Join == graph.JoinLabelAnd && !names[a.Name] {
				continue
			}
			out[i].Missing = append(out[i].Missing, arcOf(a))
		}
	}
	return out
}

// Attention counts what needs an operator, across every engine sharing
// the store.
type Attention struct {
	// Stalled counts stalled processes.
	Stalled int `json:"stalled"`
	// FailingTimers counts delayed tokens whose guard failed when their
	// time came: those tried again later, and those with an open
	// timer_failed incident.
	FailingTimers int `json:"failingTimers"`
}

// Attention counts stalled processes and failing timers.
func (e *Engine) Attention(ctx context.Context) (*Attention, error) {
	n, err := e.store.CountProcesses(ctx, store.Filter{Stalled: true}, 0)
	if err != nil {
		return nil, storeError("count stalled processes", err)
	}
	fs, err := e.store.TimerFailures(ctx, "", 0)
	if err != nil {
		return nil, storeError("count failing timers", err)
	}
	a := &Attention{Stalled: n, FailingTimers: len(fs)}
	if ws, ok := e.store.(store.WorkStore); ok {
		c, err := ws.WorkCounts(ctx)
		if err != nil {
			return nil, storeError("count incidents", err)
		}
		a.FailingTimers += c.Incidents[IncidentTimerFailed]
	}
	return a, nil
}

// WaitingItem is one piece of waiting work: a place where an executing
// process waits (see Wait), with the process it belongs to.
type WaitingItem struct {
	Process    string            `json:"process"`
	Definition string            `json:"definition"`
	Version    int               `json:"version"`
	Context    map[string]string `json:"context,omitempty"`
	Stalled    bool              `json:"stalled"`
	Node       string            `json:"node"`
	External   string            `json:"external,omitempty"`
	Kind       string            `json:"kind"`
	Token      string            `json:"token,omitempty"`
	Since      time.Time         `json:"since"`
	Until      *time.Time        `json:"until,omitempty"`
	Arcs       int               `json:"arcs,omitempty"`
}

// WaitingPage is a page of waiting work: the waits of up to Limit
// processes. Next is the cursor of the next page; Total counts the
// processes (up to TotalCap), as ProcessPage does.
type WaitingPage struct {
	Items       []WaitingItem `json:"items"`
	Next        string        `json:"next"`
	Total       int           `json:"total"`
	TotalCapped bool          `json:"totalCapped,omitempty"`
}

// Waiting lists the waiting work of executing processes: every active node
// token and every join where arc tokens wait, with where and since when.
// The filter selects the processes as for Processes (its State is
// ignored: only executing processes wait); with a Node, only the waits at
// that node are listed. Processes come in the filter's order.
func (e *Engine) Waiting(ctx context.Context, f ProcessFilter) (*WaitingPage, error) {
	f.State = kernel.Executing.String()
	page, err := e.Processes(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &WaitingPage{Items: []WaitingItem{}, Next: page.Next, Total: page.Total, TotalCapped: page.TotalCapped}
	for _, p := range page.Items {
		for _, w := range p.WaitingAt {
			if f.Node != "" && qualifiedName(w.External, w.Node) != f.Node {
				continue
			}
			out.Items = append(out.Items, WaitingItem{Process: p.ID, Definition: p.Definition, Version: p.Version,
				Context: p.Context, Stalled: p.Stalled, Node: w.Node, External: w.External, Kind: w.Kind,
				Token: w.Token, Since: w.Since, Until: w.Until, Arcs: w.Arcs})
		}
	}
	return out, nil
}

// qualifiedName names a node as the API's node filter does: "external:name"
// for an imported node.
func qualifiedName(external, name string) string {
	if external == "" {
		return name
	}
	return external + ":" + name
}
