package veena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	bpmnrun "github.com/veena-wf/veena/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// Messages and signals (API.md "Messages and signals").
//
// A token waits for a message or a signal through its notes: "await" is
// "message" or "signal", "name" the message or signal name, "key" a
// message's correlation key. The engine keeps these as correlation rows
// beside the process, in the transaction of every command that changes
// them, so that any engine finds the waiting token. A message is
// delivered to one waiting token (a command on its process, in that
// process's order), or starts a process at a message start event, or is
// buffered for its time to live and taken by the first token that comes
// to wait for it. A signal reaches every waiting token and starts a
// process at every signal start event. A token that throws a signal notes
// its name ("signal"); the engine broadcasts it once the step has
// committed.

// PublishRequest is a message to publish.
type PublishRequest struct {
	Name           string
	CorrelationKey string
	Env            map[string]any
	// TTL is how long the message waits for a token, when none waits now
	// and no process starts by it (0: it is dropped).
	TTL time.Duration
	// MessageID makes publishing idempotent while the message is buffered.
	MessageID string
}

// PublishResult says what became of a message.
type PublishResult struct {
	// Process is the process that received the message or that it
	// started; nil if it was buffered or dropped.
	Process  *string `json:"process"`
	Buffered bool    `json:"buffered"`
}

// SignalRequest is a signal to broadcast.
type SignalRequest struct {
	Name string
	Env  map[string]any
}

// SignalResult says whom a signal reached.
type SignalResult struct {
	Delivered int      `json:"delivered"`
	Started   []string `json:"started"`
}

// deliver completes the waiting token an op is for, if it still waits for
// that message or signal; else nothing changes.
func (o *op) deliver(ke *kernel.Engine, p *kernel.Process) error {
	if o.Token < 0 || o.Token >= len(p.NodeTokens) || p.State != kernel.Executing {
		return errNoChange
	}
	t := p.NodeTokens[o.Token]
	if !t.Active() || t.Complete || t.Note("await") != o.Await || t.Note("name") != o.Name ||
		(o.Await == "message" && t.Note("key") != o.Key) {
		return errNoChange
	}
	env := kernel.NewEnv()
	for k, v := range o.Env {
		if v != nil {
			env.Set(k, *v)
		}
	}
	return ke.CompleteWith(t, env)
}

// correlationsOf lists the tokens of a process that wait for a message or
// a signal.
func correlationsOf(p *kernel.Process, root string) []store.Correlation {
	if p.State != kernel.Executing {
		return nil
	}
	var out []store.Correlation
	for _, t := range p.NodeTokens {
		if !t.Active() || t.Complete {
			continue
		}
		switch kind := t.Note("await"); kind {
		case "message", "signal":
			c := store.Correlation{Process: p.ID, Root: root, Token: t.ID, Kind: kind, Name: t.Note("name")}
			if kind == "message" {
				c.Key = t.Note("key")
			}
			out = append(out, c)
		}
	}
	return out
}

// correlationKey is a process's correlations as one comparable string.
func correlationKey(cs []store.Correlation) string {
	if len(cs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d\x00%s\x00%s\x00%s\x01", c.Token, c.Kind, c.Name, c.Key)
	}
	return b.String()
}

// thrownSignals lists the signals the tokens that completed in a
// command's events threw.
func thrownSignals(q *kernel.Process) []string {
	var out []string
	for _, ev := range q.Events {
		if ev.Type != kernel.NodeTokenCompleted {
			continue
		}
		if t := ev.NodeToken(); t != nil {
			if name := t.Note("signal"); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// timerStart is a timer start event that fired.
type timerStart struct {
	graph *graph.Graph
	node  string
}

// firedTimerStarts lists the timer start events whose holding tokens fired
// in a command's events (bpmn.NoteStartProcess).
func firedTimerStarts(q *kernel.Process) []timerStart {
	var out []timerStart
	for _, ev := range q.Events {
		if ev.Type != kernel.NodeTokenCompleted {
			continue
		}
		if t := ev.NodeToken(); t != nil {
			if node := t.Note(bpmnrun.NoteStartProcess); node != "" {
				out = append(out, timerStart{graph: q.Graph, node: node})
			}
		}
	}
	return out
}

// scheduleTimerStarts starts, for a BPMN definition version just loaded,
// one process per timer start event that holds it (its token waits for
// each due time; bpmn.ScheduleVar names the event), after cancelling those
// that held the timer start events of its earlier versions: as in Camunda,
// a new version's timers replace the old ones.
func (e *Engine) scheduleTimerStarts(ctx context.Context, g *graph.Graph) error {
	if g.Format != "bpmn" {
		return nil
	}
	var nodes []string
	for _, s := range bpmnrun.StartEvents(g) {
		if s.Kind == "timer" {
			nodes = append(nodes, s.Node)
		}
	}
	after := ""
	for {
		page, err := e.Processes(ctx, ProcessFilter{Definition: g.Name, State: "executing", NoTotal: true, Limit: 500, After: after})
		if err != nil {
			return err
		}
		for _, p := range page.Items {
			if _, ok := p.Env[bpmnrun.ScheduleVar]; ok && p.Version < g.Version {
				if _, err := e.CancelProcess(ctx, p.ID, ""); err != nil && Code(err) != ErrNotFound.Code {
					return fmt.Errorf("cancel the timer start process %s of %s version %d: %w", p.ID, p.Definition, p.Version, err)
				}
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	for _, n := range nodes {
		v := kernel.String(n)
		if _, err := e.startAt(ctx, g, n, map[string]*Value{bpmnrun.ScheduleVar: &v}); err != nil {
			return fmt.Errorf("arm the timer start event %s of %s: %w", n, g.Name, err)
		}
	}
	return nil
}

// PublishMessage publishes a message: it is delivered to one token waiting
// for its name and correlation key, or else starts a process at a message
// start event of that name (the latest version of each definition that has
// one; the first found), or else is buffered for its TTL.
func (e *Engine) PublishMessage(ctx context.Context, req PublishRequest) (*PublishResult, error) {
	if strings.TrimSpace(req.Name) == "" {
		return nil, invalid("a message needs a name")
	}
	if req.TTL < 0 {
		return nil, invalid("ttl %s is negative", req.TTL)
	}
	vals, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	id, err := e.deliverMessage(ctx, req.Name, req.CorrelationKey, vals)
	if err != nil {
		return nil, err
	}
	if id != "" {
		return &PublishResult{Process: &id}, nil
	}
	for _, g := range e.repo.Latests() {
		for _, s := range bpmnrun.StartEvents(g) {
			if s.Kind == "message" && s.Name == req.Name {
				p, err := e.startAt(ctx, g, s.Node, vals)
				if err != nil {
					return nil, err
				}
				return &PublishResult{Process: &p.ID}, nil
			}
		}
	}
	if req.TTL == 0 {
		return &PublishResult{}, nil
	}
	body, err := json.Marshal(vals)
	if err != nil {
		return nil, err
	}
	now := e.clock().UTC()
	m := &store.Message{Name: req.Name, Key: req.CorrelationKey, ID: req.MessageID, Env: body, CreatedAt: now, ExpiresAt: now.Add(req.TTL)}
	err = e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error { return tx.BufferMessage(ctx, m) })
	if errors.Is(err, store.ErrConflict) {
		return nil, &kernel.Error{Code: ErrConflict.Code, Msg: fmt.Sprintf("message %q with id %q is already buffered", req.Name, req.MessageID)}
	}
	if err != nil {
		return nil, storeError("buffer the message", err)
	}
	return &PublishResult{Buffered: true}, nil
}

// deliverMessage hands a message to one waiting token; it returns the
// receiving process's id, "" if no token took it.
func (e *Engine) deliverMessage(ctx context.Context, name, key string, vals map[string]*Value) (string, error) {
	cs, err := e.store.Correlations(ctx, "message", name, key, 20)
	if err != nil {
		return "", storeError("find waiting tokens", err)
	}
	for _, c := range cs {
		out, err := e.submit(ctx, &op{Kind: opDeliver, Process: c.Process, Token: c.Token, Env: vals, Await: "message", Name: name, Key: key}, "")
		if err != nil {
			if Code(err) == ErrNotFound.Code {
				continue // the process is gone
			}
			return "", err
		}
		if out.None {
			continue // it no longer waits
		}
		if err := out.err(); err != nil {
			return "", err
		}
		return c.Process, nil
	}
	return "", nil
}

// BroadcastSignal delivers a signal to every token waiting for it and
// starts a process at every signal start event of that name (latest
// versions).
func (e *Engine) BroadcastSignal(ctx context.Context, req SignalRequest) (*SignalResult, error) {
	if strings.TrimSpace(req.Name) == "" {
		return nil, invalid("a signal needs a name")
	}
	vals, err := valuesOf(req.Env)
	if err != nil {
		return nil, err
	}
	res := &SignalResult{Started: []string{}}
	cs, err := e.store.Correlations(ctx, "signal", req.Name, "", 0)
	if err != nil {
		return nil, storeError("find waiting tokens", err)
	}
	for _, c := range cs {
		out, err := e.submit(ctx, &op{Kind: opDeliver, Process: c.Process, Token: c.Token, Env: vals, Await: "signal", Name: req.Name}, "")
		if err != nil {
			if Code(err) == ErrNotFound.Code {
				continue
			}
			return nil, err
		}
		if out.None {
			continue
		}
		if err := out.err(); err != nil {
			e.log.Warn("veena: signal delivery failed", "signal", req.Name, "process", c.Process, "err", err)
			continue
		}
		res.Delivered++
	}
	for _, g := range e.repo.Latests() {
		for _, s := range bpmnrun.StartEvents(g) {
			if s.Kind == "signal" && s.Name == req.Name {
				p, err := e.startAt(ctx, g, s.Node, vals)
				if err != nil {
					return nil, err
				}
				res.Started = append(res.Started, p.ID)
			}
		}
	}
	sort.Strings(res.Started)
	return res, nil
}

// startAt starts a process of g at one of its nodes (a start event that a
// message, a signal or a timer triggers), with vals as its environment.
func (e *Engine) startAt(ctx context.Context, g *graph.Graph, node string, vals map[string]*Value) (*Process, error) {
	n := g.Node(node)
	if n == nil {
		return nil, fmt.Errorf("definition %s has no node %s", g, node)
	}
	if err := e.prepare(g); err != nil {
		return nil, err
	}
	env := kernel.NewEnv()
	for k, v := range vals {
		if v != nil {
			env.Set(k, *v)
		}
	}
	out, err := e.command(ctx, "", "", func(ke *kernel.Engine, t *tree, c *cmd) (*kernel.Process, error) {
		p, err := ke.StartAt(g, env, n)
		if err != nil {
			return nil, err
		}
		t.root = p
		return p, nil
	}, &outcome{}, nil)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	return out.Process, nil
}

// afterCommit does what a committed command asks of other processes: it
// broadcasts the signals the command's tokens threw and hands buffered
// messages to the tokens that started to wait for them. It runs on its
// own, after the command's caller has its answer.
func (e *Engine) afterCommit(p *plan) {
	if len(p.signals) == 0 && len(p.waiting) == 0 && len(p.timerStarts) == 0 {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		ctx := context.Background()
		for _, name := range p.signals {
			if _, err := e.BroadcastSignal(ctx, SignalRequest{Name: name}); err != nil {
				e.log.Warn("veena: broadcast a thrown signal", "signal", name, "err", err)
			}
		}
		for _, ts := range p.timerStarts {
			if _, err := e.startAt(ctx, ts.graph, ts.node, nil); err != nil {
				e.log.Warn("veena: start a process at a timer start event", "definition", ts.graph.Name, "event", ts.node, "err", err)
			}
		}
		for _, c := range p.waiting {
			if err := e.takeBuffered(ctx, c); err != nil {
				e.log.Warn("veena: deliver a buffered message", "message", c.Name, "process", c.Process, "err", err)
			}
		}
	}()
}

// takeBuffered delivers the oldest buffered message a token that just
// started to wait can take. If the token has stopped waiting meanwhile,
// the message is buffered again.
func (e *Engine) takeBuffered(ctx context.Context, c store.Correlation) error {
	var m *store.Message
	err := e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		m, err = tx.TakeMessage(ctx, c.Name, c.Key, e.clock())
		return err
	})
	if err != nil || m == nil {
		return err
	}
	var vals map[string]*Value
	if len(m.Env) > 0 {
		if err := json.Unmarshal(m.Env, &vals); err != nil {
			return fmt.Errorf("buffered message %d: %w", m.Seq, err)
		}
	}
	out, err := e.submit(ctx, &op{Kind: opDeliver, Process: c.Process, Token: c.Token, Env: vals, Await: "message", Name: c.Name, Key: c.Key}, "")
	if err == nil && !out.None {
		return out.err()
	}
	// Not taken: keep it for another token.
	return e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error { return tx.BufferMessage(ctx, m) })
}
