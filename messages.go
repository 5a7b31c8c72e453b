package veena

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// them, so that any engine finds the waiting token.
//
// A published message is delivered to one waiting token (a command on its
// process, in that process's order), or starts a process at a message
// start event, or is buffered for its time to live. Nothing is lost
// between these steps: a buffered message is taken by the command in which
// a token comes to wait for it, in that command's transaction; a message
// start takes a buffered message in the transaction of the start. The
// store serialises, per message name and key, the transactions that buffer
// messages and those that open correlations, so that a message published
// while a token comes to wait always meets it (store.MessageTx).
//
// A message id is remembered for the message's time to live, in the
// transaction that delivers, starts or buffers it: the same name, key and
// id published again meanwhile is refused (409 conflict), on any engine.
//
// A message start with a correlation key starts one process of its
// definition per key at a time (as Camunda 8 does): while a process it
// started with that key executes, the key is held in the process's
// context under "@message:<definition>" (a unique context entry), and
// another message with that key does not start a second one; with a time
// to live it waits in the buffer, and starts a process once the first has
// ended (just after, on the engine that ended it, or at the latest by the
// background loop's next look at the buffer).
//
// A signal reaches every waiting token and starts a process at every
// signal start event. A token that throws a signal notes its name
// ("signal"); the engine broadcasts it once the step has committed.

// PublishRequest is a message to publish.
type PublishRequest struct {
	Name           string
	CorrelationKey string
	Env            map[string]any
	// TTL is how long the message waits for a token, when none waits now
	// and no process starts by it (0: it is dropped).
	TTL time.Duration
	// MessageID makes publishing idempotent within the TTL: the same name,
	// key and id published again before it ends is refused (conflict).
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

// MessageKeyContext begins the context key under which a process started
// by a message with a correlation key holds that key (followed by the
// definition's name): one executing process of a definition per key.
const MessageKeyContext = UniqueContextPrefix + "message:"

// deliver completes the waiting token an op is for, if it still waits for
// that message or signal; else nothing changes. A message's id is
// remembered in the same transaction.
func (o *op) deliver(ke *kernel.Engine, p *kernel.Process, c *cmd) error {
	if o.Token < 0 || o.Token >= len(p.NodeTokens) || p.State != kernel.Executing {
		return errNoChange
	}
	t := p.NodeTokens[o.Token]
	if !t.Active() || t.Complete || t.Note("await") != o.Await || t.Note("name") != o.Name ||
		(o.Await == "message" && t.Note("key") != o.Key) {
		return errNoChange
	}
	if o.MessageID != "" && o.IDUntil > 0 {
		name, key, id, until := o.Name, o.Key, o.MessageID, time.Unix(0, o.IDUntil).UTC()
		now := c.now
		c.write(func(ctx context.Context, tx store.Tx) error {
			return tx.RememberMessageID(ctx, name, key, id, now, until)
		})
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

// messageWaits lists the tokens among cs that wait for a message.
func messageWaits(cs []store.Correlation) []int {
	var out []int
	for _, c := range cs {
		if c.Kind == "message" {
			out = append(out, c.Token)
		}
	}
	return out
}

// thrownSignals lists the signals the tokens that completed in a
// command's events threw.
func thrownSignals(q *kernel.Process) []string {
	var out []string
	for _, ev := range q.Events {
		if ev.EventType() != kernel.NodeTokenCompleted {
			continue
		}
		if id := ev.NodeTokenID(); id >= 0 {
			t := q.NodeTokens[id]
			if name := t.Note("signal"); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// messageRows are where a command reads buffered messages: the store
// before the transaction, the transaction in it.
type messageRows interface {
	OldestMessage(ctx context.Context, name, key string, now time.Time, after int64) (*store.Message, error)
}

// messageKey is a message name and correlation key.
type messageKey struct{ name, key string }

// takeBuffered hands buffered messages to the tokens that came to wait for
// them in a command, in the command itself: each takes the oldest message
// of its name and key, which the command's transaction deletes (if another
// command took it meanwhile, the transaction fails as stale and the
// command runs again). The tokens the messages move on may come to wait
// for more.
func (e *Engine) takeBuffered(ke *kernel.Engine, t *tree, p *plan) error {
	rows, ok := p.cmd.rows.(messageRows)
	if !ok {
		return nil
	}
	var tried map[*kernel.NodeToken]bool
	for round := 0; ; round++ {
		var waiting []*kernel.NodeToken
		t.root.Walk(func(q *kernel.Process) {
			if q.State != kernel.Executing || (!q.Dirty && len(q.Events) == 0) {
				return
			}
			b, _ := t.before.get(q.ID)
			before := b.msgWaits
			for _, tok := range q.NodeTokens {
				if tok.Active() && !tok.Complete && tok.Note("await") == "message" && !tried[tok] && !slices.Contains(before, tok.ID) {
					waiting = append(waiting, tok)
				}
			}
		})
		if len(waiting) == 0 {
			return nil
		}
		if round >= 1000 {
			return &kernel.Error{Code: kernel.ErrExecutionFailed.Code, Msg: "buffered messages keep tokens coming to wait for more: more than 1000 rounds in one command"}
		}
		if tried == nil {
			tried = map[*kernel.NodeToken]bool{}
		}
		for _, tok := range waiting {
			tried[tok] = true
			if tok.Complete || !tok.Active() {
				continue // a message delivered earlier in this round ended it
			}
			k := messageKey{tok.Note("name"), tok.Note("key")}
			m, err := rows.OldestMessage(p.cmd.ctx, k.name, k.key, p.cmd.now, p.taken[k])
			if err != nil {
				return storeError("read buffered messages", err)
			}
			if m == nil {
				continue
			}
			if p.taken == nil {
				p.taken = map[messageKey]int64{}
			}
			p.taken[k] = m.Seq
			env := kernel.NewEnv()
			if len(m.Env) > 0 {
				var vals map[string]*Value
				if err := json.Unmarshal(m.Env, &vals); err != nil {
					return fmt.Errorf("buffered message %q (%d): %w", m.Name, m.Seq, err)
				}
				for n, v := range vals {
					if v != nil {
						env.Set(n, *v)
					}
				}
			}
			if err := ke.CompleteWith(tok, env); err != nil {
				return fmt.Errorf("deliver the buffered message %q with key %q to node token %s: %w", m.Name, m.Key, nodeTokenID(tok.Process.ID, tok.ID), err)
			}
			seq := m.Seq
			p.cmd.write(func(ctx context.Context, tx store.Tx) error { return tx.DeleteMessage(ctx, k.name, k.key, seq) })
		}
	}
}

// checkBuffered fails a command that ran before its transaction as stale
// if a message was buffered meanwhile for a token it made wait: the
// command then runs again in its transaction, where it takes the message.
func (p *plan) checkBuffered(ctx context.Context, tx store.Tx) error {
	if p.inTx {
		return nil
	}
	for _, c := range p.waiting {
		k := messageKey{c.Name, c.Key}
		m, err := tx.OldestMessage(ctx, c.Name, c.Key, p.cmd.now, p.taken[k])
		if err != nil {
			return err
		}
		if m != nil {
			return fmt.Errorf("message %q with key %q was buffered for node token %s meanwhile: %w", c.Name, c.Key, nodeTokenID(c.Process, c.Token), store.ErrStale)
		}
	}
	return nil
}

// publication is a message on its way.
type publication struct {
	name, key string
	vals      map[string]*Value
	id        string
	until     int64 // the id is remembered until then (Unix ns; 0: not at all)
}

// errTokenWaits ends a transaction that was to buffer a message for which
// a token waits.
var errTokenWaits = errors.New("a token waits for the message")

// PublishMessage publishes a message: it is delivered to one token waiting
// for its name and correlation key, or else starts a process at a message
// start event of that name (the latest version of the first definition,
// by name, that has one), or else is buffered for its TTL.
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
	now := e.clock().UTC()
	pub := &publication{name: req.Name, key: req.CorrelationKey, vals: vals, id: req.MessageID}
	if req.MessageID != "" && req.TTL > 0 {
		pub.until = now.Add(req.TTL).UnixNano()
	}
	for attempt := 0; attempt < 10; attempt++ {
		id, err := e.deliverMessage(ctx, pub)
		if err != nil {
			return nil, messageConflict(err, pub)
		}
		if id != "" {
			return &PublishResult{Process: &id}, nil
		}
		started, _, err := e.startByMessage(ctx, pub, nil)
		if err != nil {
			return nil, messageConflict(err, pub)
		}
		if started != "" {
			return &PublishResult{Process: &started}, nil
		}
		if req.TTL == 0 {
			return &PublishResult{}, nil
		}
		body, err := json.Marshal(vals)
		if err != nil {
			return nil, err
		}
		m := &store.Message{Name: req.Name, Key: req.CorrelationKey, ID: req.MessageID, Env: body, CreatedAt: now, ExpiresAt: now.Add(req.TTL)}
		err = e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			waits, err := tx.Waiting(ctx, m.Name, m.Key)
			if err != nil {
				return err
			}
			if waits {
				return errTokenWaits // it came to wait meanwhile: deliver it
			}
			if pub.until > 0 {
				if err := tx.RememberMessageID(ctx, m.Name, m.Key, m.ID, now, time.Unix(0, pub.until)); err != nil {
					return err
				}
			}
			return tx.BufferMessage(ctx, m)
		})
		if errors.Is(err, errTokenWaits) {
			continue
		}
		if err != nil {
			return nil, messageConflict(storeError("buffer the message", err), pub)
		}
		return &PublishResult{Buffered: true}, nil
	}
	return nil, &kernel.Error{Code: ErrUnavailable.Code, Msg: fmt.Sprintf("message %q with key %q: a token waits for it, but it could not be delivered to one", req.Name, req.CorrelationKey)}
}

// messageConflict says which message a conflict refused.
func messageConflict(err error, pub *publication) error {
	if Code(err) == ErrConflict.Code && pub.id != "" {
		return &kernel.Error{Code: ErrConflict.Code, Msg: fmt.Sprintf("message %q with key %q and id %q was published already (its id is kept for its ttl)", pub.name, pub.key, pub.id), Err: err}
	}
	return err
}

// deliverMessage hands a message to one waiting token; it returns the
// receiving process's id, "" if no token took it.
func (e *Engine) deliverMessage(ctx context.Context, pub *publication) (string, error) {
	cs, err := e.store.Correlations(ctx, "message", pub.name, pub.key, 20)
	if err != nil {
		return "", storeError("find waiting tokens", err)
	}
	for _, c := range cs {
		out, err := e.submit(ctx, &op{Kind: opDeliver, Process: c.Process, Token: c.Token, Env: pub.vals, Await: "message",
			Name: pub.name, Key: pub.key, MessageID: pub.id, IDUntil: pub.until}, "")
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

// startByMessage starts a process at the message start event of the
// message's name, if a definition has one and no process it started with
// the message's key still executes (blocked). m, if set, is the buffered
// message being delivered: the start takes it from the buffer.
func (e *Engine) startByMessage(ctx context.Context, pub *publication, m *store.Message) (process string, blocked bool, err error) {
	for _, g := range e.repo.Latests() {
		for _, s := range bpmnrun.StartEvents(g) {
			if s.Kind == "message" && s.Name == pub.name {
				return e.startAtMessage(ctx, g, s.Node, pub, m)
			}
		}
	}
	return "", false, nil
}

func (e *Engine) startAtMessage(ctx context.Context, g *graph.Graph, node string, pub *publication, m *store.Message) (string, bool, error) {
	var pctx map[string]string
	if pub.key != "" {
		pctx = map[string]string{MessageKeyContext + g.Name: pub.key}
		held, err := e.store.FindByContext(ctx, pctx, 1)
		if err != nil {
			return "", false, storeError("find the process of the key", err)
		}
		if len(held) > 0 {
			return "", true, nil
		}
	}
	p, err := e.startAt(ctx, startSpec{g: g, node: node, vals: pub.vals, context: pctx, writes: func(c *cmd) {
		now := c.now
		if pub.until > 0 {
			c.write(func(ctx context.Context, tx store.Tx) error {
				return tx.RememberMessageID(ctx, pub.name, pub.key, pub.id, now, time.Unix(0, pub.until))
			})
		}
		if m != nil {
			name, key, seq := m.Name, m.Key, m.Seq
			c.write(func(ctx context.Context, tx store.Tx) error { return tx.DeleteMessage(ctx, name, key, seq) })
		}
	}})
	if err != nil {
		if pub.key != "" && Code(err) == ErrConflict.Code {
			// Another process took the key meanwhile?
			if held, ferr := e.store.FindByContext(ctx, pctx, 1); ferr == nil && len(held) > 0 {
				return "", true, nil
			}
		}
		return "", false, err
	}
	return p.ID, false, nil
}

// startBuffered starts processes for the messages that wait in the buffer
// for a message start event: those whose key a process held until now (a
// process started by a message just ended), and those that came before
// their definition. It looks at up to limit messages per start event name.
func (e *Engine) startBuffered(ctx context.Context, def, key string, limit int) {
	now := e.clock()
	for _, g := range e.repo.Latests() {
		if def != "" && g.Name != def {
			continue
		}
		for _, s := range bpmnrun.StartEvents(g) {
			if s.Kind != "message" {
				continue
			}
			var ms []store.Message
			if def != "" {
				m, err := e.store.OldestMessage(ctx, s.Name, key, now, 0)
				if err == nil && m != nil {
					ms = append(ms, *m)
				}
			} else {
				var err error
				if ms, err = e.store.BufferedMessages(ctx, s.Name, now, limit); err != nil {
					if ctx.Err() == nil {
						e.log.Warn("veena: read buffered messages", "message", s.Name, "err", err)
					}
					continue
				}
			}
			blocked := map[string]bool{}
			for _, m := range ms {
				if blocked[m.Key] {
					continue
				}
				var vals map[string]*Value
				if len(m.Env) > 0 {
					if err := json.Unmarshal(m.Env, &vals); err != nil {
						e.log.Warn("veena: a buffered message cannot be read", "message", m.Name, "seq", m.Seq, "err", err)
						continue
					}
				}
				pub := &publication{name: m.Name, key: m.Key, vals: vals}
				_, b, err := e.startAtMessage(ctx, g, s.Node, pub, &m)
				if err != nil && !errors.Is(err, store.ErrStale) && ctx.Err() == nil {
					e.log.Warn("veena: start a process for a buffered message", "definition", g.Name, "message", m.Name, "key", m.Key, "err", err)
				}
				if b && m.Key != "" {
					blocked[m.Key] = true
				}
			}
		}
	}
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
				p, err := e.startAt(ctx, startSpec{g: g, node: s.Node, vals: vals})
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

// startSpec is a process to start at one of its nodes (a start event that
// a message, a signal or a timer triggers).
type startSpec struct {
	g       *graph.Graph
	node    string
	vals    map[string]*Value // its environment
	context map[string]string
	// writes adds what the start's transaction writes besides the process.
	writes func(c *cmd)
}

// startAt starts a process of s.g at s.node, in one transaction with what
// s.writes adds.
func (e *Engine) startAt(ctx context.Context, s startSpec) (*Process, error) {
	g := s.g
	n := g.Node(s.node)
	if n == nil {
		return nil, fmt.Errorf("definition %s has no node %s", g, s.node)
	}
	if err := e.prepare(g); err != nil {
		return nil, err
	}
	env := kernel.NewEnv()
	for k, v := range s.vals {
		if v != nil {
			env.Set(k, *v)
		}
	}
	out, err := e.command(ctx, "", "", func(ke *kernel.Engine, t *tree, c *cmd) (*kernel.Process, error) {
		p, err := ke.StartAt(g, env, n)
		if err != nil {
			return nil, err
		}
		if len(s.context) > 0 && p.State == kernel.Executing {
			p.Context = s.context
		}
		if s.writes != nil {
			s.writes(c)
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

// heldMessageKeys lists the message start keys a process held (its
// context entries under MessageKeyContext) when it stopped executing.
func heldMessageKeys(c map[string]string) []messageKey {
	var out []messageKey
	for k, v := range c {
		if def, ok := strings.CutPrefix(k, MessageKeyContext); ok {
			out = append(out, messageKey{name: def, key: v})
		}
	}
	return out
}

// afterCommit does what a committed command asks of other processes: it
// broadcasts the signals the command's tokens threw, and starts a process
// for a message that waited while a process held its key. It runs on its
// own, after the command's caller has its answer.
func (e *Engine) afterCommit(p *plan) {
	if len(p.signals) == 0 && len(p.freed) == 0 {
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
		for _, k := range p.freed {
			e.startBuffered(ctx, k.name, k.key, 1)
		}
	}()
}
