package veena

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/internal/snapshot"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// StartProcess starts a process of a definition version (0: the latest)
// and runs it until every token waits or it ends.
func (e *Engine) StartProcess(ctx context.Context, req StartRequest) (*Process, error) {
	g, err := e.definitionGraph(ctx, req.Definition, req.Version)
	if err != nil {
		return nil, err
	}
	env, err := envOf(req.Env)
	if err != nil {
		return nil, err
	}
	for k := range req.Context {
		if k == "" {
			return nil, invalid("a context key must not be empty")
		}
	}
	var pctx map[string]string
	if len(req.Context) > 0 {
		pctx = maps.Clone(req.Context)
	}
	atts, err := checkAttachments(req.Attachments)
	if err != nil {
		return nil, err
	}
	setTransients(env, req.Transient)
	res := &outcome{}
	if req.IdempotencyKey != "" {
		// The request a recorded outcome answers (without a key, nothing
		// is recorded and nothing asks).
		res.Request = requestID("start", req.Definition, req.Version, env.Map(), req.Context)
	}
	out, err := e.command(ctx, "", req.IdempotencyKey, func(ke *kernel.Engine, t *tree, c *cmd) (*kernel.Process, error) {
		p, err := ke.StartWith(g, env, pctx, req.Setup)
		if err != nil {
			return nil, err
		}
		t.root = p
		c.startRecord(p, req.User, atts)
		return p, nil
	}, res, nil)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, fmt.Errorf("start of %s had no result", req.Definition)
	}
	return out.Process, nil
}

// onProcess submits an op addressed to a process and returns the process
// afterwards.
func (e *Engine) onProcess(ctx context.Context, o *op, key string) (*Process, error) {
	out, err := e.submit(ctx, o, key)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	if out.Process == nil {
		return nil, fmt.Errorf("command %s on process %s had no result", o.Kind, o.Process)
	}
	return out.Process, nil
}

// tokenOp addresses an op to a node token.
func tokenOp(kind opKind, id string) (*op, error) {
	pid, idx, err := parseNodeTokenID(id)
	if err != nil {
		return nil, err
	}
	return &op{Kind: kind, Process: pid, Token: idx}, nil
}

// Process returns a process; a stalled one says why, and the failures of
// its timers are listed.
func (e *Engine) Process(ctx context.Context, id string) (*Process, error) {
	row, err := e.store.Process(ctx, id)
	if err != nil {
		return nil, storeError("read process", err)
	}
	out, err := processRow(row)
	if err != nil {
		return nil, err
	}
	failures, err := e.store.TimerFailures(ctx, id, 0)
	if err != nil {
		return nil, storeError("read timer failures", err)
	}
	var incidents []*Incident
	if out.State == kernel.Executing.String() && slices.ContainsFunc(out.WaitingAt, func(w Wait) bool { return w.Kind == WaitIncident }) {
		page, err := e.Incidents(ctx, IncidentFilter{Process: id, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			if page.Items[i].Kind == IncidentTimerFailed {
				incidents = append(incidents, &page.Items[i])
			}
		}
	}
	joins := slices.ContainsFunc(out.WaitingAt, func(w Wait) bool { return w.Kind == WaitJoin })
	if !out.Stalled && !joins && len(failures) == 0 && len(incidents) == 0 {
		return out, nil
	}
	p, err := snapshot.Decode(row, e.graphs(ctx))
	if err != nil {
		return nil, err
	}
	kernel.Reindex(p)
	if out.Stalled {
		out.Stall = stallOf(p)
	}
	if joins {
		setJoinProgress(out.WaitingAt, p)
	}
	for _, f := range failures {
		tf := TimerFailure{Token: nodeTokenID(id, f.Token), Message: f.Message, At: f.At.UTC(), Attempts: f.Attempts, DueAt: f.DueAt.UTC()}
		if f.Token >= 0 && f.Token < len(p.NodeTokens) {
			tf.Node = p.NodeTokens[f.Token].Node.QualifiedName()
		}
		out.TimerFailures = append(out.TimerFailures, tf)
	}
	for _, inc := range incidents {
		if slices.ContainsFunc(out.TimerFailures, func(f TimerFailure) bool { return f.Token == inc.NodeToken }) {
			continue
		}
		tf := TimerFailure{Token: inc.NodeToken, Incident: inc.ID, Message: inc.Message, At: inc.CreatedAt.UTC(), Attempts: 1}
		if _, idx, err := parseNodeTokenID(inc.NodeToken); err == nil && idx < len(p.NodeTokens) {
			t := p.NodeTokens[idx]
			tf.Node, tf.DueAt = t.Node.QualifiedName(), t.DelayUntil()
		}
		out.TimerFailures = append(out.TimerFailures, tf)
	}
	return out, nil
}

// TotalCap is where a listing stops counting: a total of TotalCap with
// TotalCapped set means "at least".
const TotalCap = 10000

// Processes lists processes, newest first (oldest first with f.Oldest),
// filtered, with the total count of those that match (up to TotalCap).
func (e *Engine) Processes(ctx context.Context, f ProcessFilter) (*ProcessPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	sf := store.Filter{Definition: f.Definition, Version: f.Version, IDPrefix: f.ID, Node: f.Node, Stalled: f.Stalled,
		Context: f.Context, Search: f.Search, CreatedFrom: f.CreatedAfter, CreatedTo: f.CreatedBefore, Oldest: f.Oldest}
	if f.Version > 0 && f.Definition == "" {
		return nil, invalid("a version filter needs the definition it is a version of")
	}
	if f.State != "" {
		for _, st := range strings.Split(f.State, ",") {
			st = strings.TrimSpace(st)
			if _, ok := kernel.ParseState(st); !ok {
				return nil, invalid("unknown process state %q", st)
			}
			sf.States = append(sf.States, st)
		}
	}
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedBefore.After(f.CreatedAfter) {
		return &ProcessPage{Items: []Process{}}, nil
	}
	if e.timeOrderedIDs {
		sf.MinID, sf.MaxID = idBounds(f.CreatedAfter, f.CreatedBefore)
	}
	if f.ParentToken != "" {
		pid, idx, err := parseNodeTokenID(f.ParentToken)
		if err != nil {
			return &ProcessPage{Items: []Process{}}, nil
		}
		sf.Parent, sf.ParentToken = pid, idx
	}
	page := &ProcessPage{}
	if !f.NoTotal {
		n, err := e.store.CountProcesses(ctx, sf, TotalCap)
		if err != nil {
			return nil, storeError("count processes", err)
		}
		page.Total, page.TotalCapped = n, n >= TotalCap
	}
	sf.After, sf.Limit = f.After, limit+1
	rows, err := e.store.Processes(ctx, sf)
	if err != nil {
		return nil, storeError("list processes", err)
	}
	page.Items = make([]Process, 0, min(len(rows), limit))
	for i, r := range rows {
		if i == limit {
			page.Next = rows[i-1].ID
			break
		}
		p, err := processRow(r)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, *p)
	}
	return page, nil
}

// idMargin widens the IDs a time range looks in: an ID is made a moment
// before or after the creation time the engine's clock gives.
const idMargin = time.Minute

// idBounds turns a creation time range into bounds on time-ordered
// (UUIDv7) IDs, "" where it does not bound.
func idBounds(from, to time.Time) (lo, hi string) {
	stamp := func(t time.Time) string {
		ms := t.UnixMilli()
		if ms < 0 {
			ms = 0
		}
		h := fmt.Sprintf("%012x", ms)
		return h[:8] + "-" + h[8:]
	}
	if !from.IsZero() {
		lo = stamp(from.Add(-idMargin))
	}
	if !to.IsZero() {
		hi = stamp(to.Add(idMargin)) + "-~"
	}
	return lo, hi
}

// CancelProcess cancels an executing process and the nested processes its
// active tokens started.
func (e *Engine) CancelProcess(ctx context.Context, id string, idempotencyKey string) (*Process, error) {
	return e.onProcess(ctx, &op{Kind: opCancel, Process: id}, idempotencyKey)
}

// decodeOne reads one committed process with its tokens (without its
// nested processes).
func (e *Engine) decodeOne(ctx context.Context, id string) (*kernel.Process, error) {
	row, err := e.store.Process(ctx, id)
	if err != nil {
		return nil, storeError("read process", err)
	}
	return snapshot.Decode(row, e.graphs(ctx))
}

// Tokens returns a process's whole token history.
func (e *Engine) Tokens(ctx context.Context, processID string) (*TokenHistory, error) {
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	return historyOf(p), nil
}

// TokenPage returns a page of a process's token history: the node and arc
// tokens created after the cursor after ("" from the first), at most
// limit of them together (limit <= 0: all the rest), each list in creation
// order. Next is the cursor of the next page, "" after the last.
func (e *Engine) TokenPage(ctx context.Context, processID, after string, limit int) (*TokenHistory, error) {
	var from int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return nil, invalid("after %q: want the cursor (next) of the previous page", after)
		}
		from = n
	}
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	h := &TokenHistory{NodeTokens: []NodeToken{}, ArcTokens: []ArcToken{}}
	nodes, arcs := p.NodeTokens, p.ArcTokens
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i].Seq > from })
	j := sort.Search(len(arcs), func(j int) bool { return arcs[j].Seq > from })
	var last int64
	for n := 0; i < len(nodes) || j < len(arcs); n++ {
		if limit > 0 && n == limit {
			h.Next = strconv.FormatInt(last, 10)
			break
		}
		if j == len(arcs) || i < len(nodes) && nodes[i].Seq < arcs[j].Seq {
			h.NodeTokens = append(h.NodeTokens, nodeTokenOf(nodes[i]))
			last = nodes[i].Seq
			i++
		} else {
			h.ArcTokens = append(h.ArcTokens, arcTokenOf(arcs[j]))
			last = arcs[j].Seq
			j++
		}
	}
	return h, nil
}

// EachToken calls node for every node token of a process and then arc for
// every arc token, in creation order, one at a time (to write a large
// history without holding all of it converted).
func (e *Engine) EachToken(ctx context.Context, processID string, node func(*NodeToken) error, arc func(*ArcToken) error) error {
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return err
	}
	for _, t := range p.NodeTokens {
		nt := nodeTokenOf(t)
		if err := node(&nt); err != nil {
			return err
		}
	}
	for _, a := range p.ArcTokens {
		at := arcTokenOf(a)
		if err := arc(&at); err != nil {
			return err
		}
	}
	return nil
}

// Events returns up to limit events of a process after seq afterSeq, in
// the order they fired (limit <= 0: all).
func (e *Engine) Events(ctx context.Context, processID string, afterSeq int64, limit int) ([]Event, error) {
	if _, err := e.store.Process(ctx, processID); err != nil {
		return nil, storeError("read process", err)
	}
	evs, err := e.store.Events(ctx, processID, afterSeq, limit)
	if err != nil {
		return nil, storeError("read events", err)
	}
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = apiEvent(ev)
	}
	return out, nil
}

// ProcessEnv returns the persistent attributes of a process.
func (e *Engine) ProcessEnv(ctx context.Context, id string) (map[string]Value, error) {
	p, err := e.Process(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.Env, nil
}

// PatchProcessEnv merges attributes into a process's environment (a nil
// value removes one) and returns the result. A retry with the same
// idempotency key returns the first result.
func (e *Engine) PatchProcessEnv(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]Value, error) {
	vals, err := valuesOf(patch)
	if err != nil {
		return nil, err
	}
	p, err := e.onProcess(ctx, &op{Kind: opProcessEnv, Process: id, Env: vals}, idempotencyKey)
	if err != nil {
		return nil, err
	}
	return p.Env, nil
}

// applyPatch merges attributes into a process environment (a nil value
// removes one).
func applyPatch(env *kernel.Env, vals map[string]*Value) {
	for k, v := range vals {
		if v == nil {
			env.Remove(k)
		} else {
			env.Set(k, *v)
		}
	}
}

// applyTokenPatch merges attributes into a node token's environment (a nil
// value removes one).
func applyTokenPatch(t *kernel.NodeToken, vals map[string]*Value) {
	for k, v := range vals {
		if v == nil {
			t.FullEnv().Remove(k)
		} else {
			t.SetAttr(k, *v)
		}
	}
}

// NodeToken returns a node token.
func (e *Engine) NodeToken(ctx context.Context, id string) (*NodeToken, error) {
	pid, idx, err := parseNodeTokenID(id)
	if err != nil {
		return nil, err
	}
	p, err := e.decodeOne(ctx, pid)
	if err != nil {
		if Code(err) == ErrNotFound.Code {
			return nil, notFound("node token %q", id)
		}
		return nil, err
	}
	if idx >= len(p.NodeTokens) {
		return nil, notFound("node token %q", id)
	}
	t := nodeTokenOf(p.NodeTokens[idx])
	return &t, nil
}

// CompleteToken completes an active node token and runs its process on;
// it returns the token's process afterwards.
func (e *Engine) CompleteToken(ctx context.Context, id string, req CompleteRequest) (*Process, error) {
	vals, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	var names []string
	if req.Arcs != nil {
		names = make([]string, len(req.Arcs))
		for i, a := range req.Arcs {
			if a != nil {
				names[i] = *a
			}
		}
	}
	var setEnv *kernel.Env
	var memberEnv map[string][]Value
	if ts := req.TokenSet; ts != nil {
		if len(names) > 1 {
			return nil, invalid("a completion with a token set takes one arc name, not %d", len(names))
		}
		if setEnv, err = envOf(ts.Env); err != nil {
			return nil, err
		}
		memberEnv = map[string][]Value{}
		for k, xs := range ts.MemberEnv {
			for i, x := range xs {
				v, err := kernel.ValueOf(x)
				if x != nil && err != nil {
					return nil, invalid("member attribute %q[%d]: %v", k, i, err)
				}
				memberEnv[k] = append(memberEnv[k], v)
			}
		}
	}
	o, err := tokenOp(opComplete, id)
	if err != nil {
		return nil, err
	}
	o.Arcs, o.Env, o.Async, o.Transient = names, vals, req.Async, req.Transient
	if ts := req.TokenSet; ts != nil {
		o.TokenSet = &opTokenSet{Name: ts.Name, Count: ts.Count, Env: setEnv.Map(), MemberEnv: memberEnv}
		if len(names) == 1 {
			o.TokenSet.Arc = names[0]
		}
	}
	return e.onProcess(ctx, o, req.IdempotencyKey)
}

// Backtrack returns a process to one of its completed node tokens.
func (e *Engine) Backtrack(ctx context.Context, tokenID string, idempotencyKey string) (*Process, error) {
	o, err := tokenOp(opBacktrack, tokenID)
	if err != nil {
		return nil, err
	}
	return e.onProcess(ctx, o, idempotencyKey)
}

// TokenEnv returns the persistent attributes of a node token's own environment.
func (e *Engine) TokenEnv(ctx context.Context, id string) (map[string]Value, error) {
	t, err := e.NodeToken(ctx, id)
	if err != nil {
		return nil, err
	}
	return t.Env, nil
}

// PatchTokenEnv merges attributes into a node token's own environment (a
// nil value removes one) and returns the result. A retry with the same
// idempotency key returns the first result.
func (e *Engine) PatchTokenEnv(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]Value, error) {
	vals, err := valuesOf(patch)
	if err != nil {
		return nil, err
	}
	o, err := tokenOp(opTokenEnv, id)
	if err != nil {
		return nil, err
	}
	o.Env = vals
	out, err := e.submit(ctx, o, idempotencyKey)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	if out.Env == nil {
		return map[string]Value{}, nil
	}
	return out.Env, nil
}

// SendEvent delivers an event to the one executing process whose context
// holds every pair of req.Match: req.Env is merged into the process
// environment and its active token on the node req.Node (or, with no node,
// its only active token) is completed. No matching process is not_found,
// several are conflict; no or several matching tokens likewise. A retry
// with the same idempotency key returns the first result.
func (e *Engine) SendEvent(ctx context.Context, req EventRequest) (*Process, error) {
	if len(req.Match) == 0 {
		return nil, invalid("an event needs at least one context pair to match")
	}
	vals, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	// The event is the same request whichever process it finds.
	request := requestID("event", req.Match, req.Node, vals)
	// A retry finds its first result even once no process matches any more
	// (the event may have completed the one it went to).
	if req.IdempotencyKey != "" {
		prev, err := e.recorded(ctx, req.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			if err := prev.checkRequest(req.IdempotencyKey, request); err != nil {
				return nil, err
			}
			if err := prev.err(); err != nil {
				return nil, err
			}
			return prev.Process, nil
		}
	}
	ids, err := e.store.FindByContext(ctx, req.Match, 2)
	if err != nil {
		return nil, storeError("find process by context", err)
	}
	switch len(ids) {
	case 0:
		return nil, notFound("executing process with context %v", sortedPairs(req.Match))
	case 1:
	default:
		return nil, &kernel.Error{Code: ErrConflict.Code, Msg: fmt.Sprintf("more than one executing process has context %v", sortedPairs(req.Match))}
	}
	return e.onProcess(ctx, &op{Kind: opEvent, Process: ids[0], Match: req.Match, Node: req.Node, Env: vals, Request: request, Transient: req.Transient}, req.IdempotencyKey)
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Deliver sends a named event to a process: its format's receiver takes
// it (a schema instance runs the event node waiting for it, or queues it),
// in one command queued behind the process's earlier ones. A retry with
// the same idempotency key returns the first result.
func (e *Engine) Deliver(ctx context.Context, processID string, m kernel.Message, idempotencyKey string) (*Process, error) {
	if m.Name == "" {
		return nil, invalid("an event needs a name")
	}
	return e.onProcess(ctx, &op{Kind: opMessage, Process: processID, Message: &m}, idempotencyKey)
}

// FindByContext returns up to limit executing processes whose context
// holds every pair of match, in id order.
func (e *Engine) FindByContext(ctx context.Context, match map[string]string, limit int) ([]string, error) {
	if len(match) == 0 {
		return nil, invalid("a context look-up needs at least one pair")
	}
	ids, err := e.store.FindByContext(ctx, match, limit)
	if err != nil {
		return nil, storeError("find process by context", err)
	}
	return ids, nil
}

// Recorded returns the process an earlier command with this idempotency
// key answered with (nil, nil if none did, or it failed without one).
func (e *Engine) Recorded(ctx context.Context, key string) (*Process, error) {
	prev, err := e.recorded(ctx, key)
	if err != nil || prev == nil {
		return nil, err
	}
	if err := prev.err(); err != nil {
		return nil, err
	}
	return prev.Process, nil
}

// Inspect reads a process with the tree it belongs to, as stored, and
// calls fn with it (read only: changes are not kept). Formats use it to
// show their own state of a process.
func (e *Engine) Inspect(ctx context.Context, id string, fn func(p *kernel.Process) error) error {
	root, err := e.rootOf(ctx, id)
	if err != nil {
		return err
	}
	rows, err := e.store.Tree(ctx, root)
	if err != nil {
		return storeError("read process", err)
	}
	if len(rows) == 0 {
		return notFound("process %s", id)
	}
	t, err := e.decodeTree(ctx, rows, 0)
	if err != nil {
		return err
	}
	p := t.root.Find(id)
	if p == nil {
		return notFound("process %s", id)
	}
	return fn(p)
}

// NextTimer returns the earliest due time of any durable timer (delayed
// tokens and tokens' work), zero if there is none.
func (e *Engine) NextTimer(ctx context.Context) (time.Time, error) {
	t, err := e.store.NextTimer(ctx)
	if err != nil {
		return time.Time{}, storeError("read timers", err)
	}
	return t, nil
}
