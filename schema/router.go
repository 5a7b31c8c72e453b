package schema

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	veena "github.com/veena-wf/veena"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/kernel"
)

// Event is an event sent to schema instances from outside: routed by its
// context to the one instance it is for.
type Event struct {
	Name    string
	Context map[string]string
	Payload any
	// ID makes sending idempotent: a retry with the same id returns the
	// first result and changes nothing.
	ID string
}

// SendResult is where an event went.
type SendResult struct {
	Process *veena.Process // the instance that received it (or was started by it)
	Started bool           // the instance was created by a trigger
}

// routeIndex knows, for each event name, the schemas whose instances can
// receive it or whose trigger it is; rebuilt when definitions change.
type routeIndex struct {
	mu       sync.Mutex
	checked  time.Time // when the definitions were last compared
	version  string    // the loaded definitions it was built from
	listens  map[string][]*schemaformat.Schema
	triggers map[string][]*schemaformat.Schema
}

// indexFresh is how long the index is used before the loaded definitions
// are compared again (an event name it does not know compares at once).
const indexFresh = time.Second

func (r *Runtime) index(ctx context.Context, e *veena.Engine, name string) (*routeIndex, error) {
	ix := &r.routes
	ix.mu.Lock()
	if ix.listens != nil && time.Since(ix.checked) < indexFresh && len(ix.listens[name]) > 0 {
		ix.mu.Unlock()
		return ix, nil
	}
	ix.mu.Unlock()
	defs, err := e.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	var sig strings.Builder
	for _, d := range defs {
		if d.Format == schemaformat.Format {
			fmt.Fprintf(&sig, "%s@%d;", d.Name, d.Version)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.checked = time.Now()
	if ix.version == sig.String() && ix.listens != nil {
		return ix, nil
	}
	ix.listens, ix.triggers = map[string][]*schemaformat.Schema{}, map[string][]*schemaformat.Schema{}
	k := e.Kernel()
	for _, d := range defs {
		if d.Format != schemaformat.Format || k.Definitions == nil {
			continue
		}
		g := k.Definitions(d.Name)
		s, ok := g.Props.(*schemaformat.Schema)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, n := range s.Nodes {
			if n.Event != nil && !seen[n.Event.Name] {
				seen[n.Event.Name] = true
				ix.listens[n.Event.Name] = append(ix.listens[n.Event.Name], s)
			}
		}
		if t := s.Trigger; t != nil && !t.FromParent {
			if !seen[t.Event] {
				ix.listens[t.Event] = append(ix.listens[t.Event], s)
			}
			ix.triggers[t.Event] = append(ix.triggers[t.Event], s)
		}
	}
	ix.version = sig.String()
	return ix, nil
}

// Send routes an event by its context: for each schema that waits for
// events of this name, the event's context restricted to the schema's
// routing keys identifies at most one executing instance. The one
// instance found gets the event (queued behind its earlier commands; it
// waits in the instance's queue if the instance is not waiting for it).
// No instance: the schemas whose trigger is this event (and whose
// condition holds) each start an instance with that context, the event
// being the start event. Several instances (of different schemas, not a
// parent and its child, where the child gets it) are a conflict, and an
// event that reaches none and triggers nothing is not_found.
func (r *Runtime) Send(ctx context.Context, ev Event) (*SendResult, error) {
	e, err := r.eng()
	if err != nil {
		return nil, err
	}
	if ev.Name == "" {
		return nil, &kernel.Error{Code: veena.ErrInvalidArgument.Code, Msg: "an event needs a name"}
	}
	if ev.ID != "" {
		if p, err := e.Recorded(ctx, ev.ID); err != nil || p != nil {
			if err != nil {
				return nil, err
			}
			return &SendResult{Process: p}, nil
		}
	}
	for attempt := 0; ; attempt++ {
		res, err := r.route(ctx, e, ev)
		// Another engine may have started the instance for this context
		// at the same moment: route again, to it.
		if err != nil && veena.Code(err) == veena.ErrConflict.Code && strings.Contains(err.Error(), "already used") && attempt < 2 {
			continue
		}
		return res, err
	}
}

func (r *Runtime) route(ctx context.Context, e *veena.Engine, ev Event) (*SendResult, error) {
	ix, err := r.index(ctx, e, ev.Name)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	listeners := ix.listens[ev.Name]
	triggers := ix.triggers[ev.Name]
	ix.mu.Unlock()
	var found []string
	for _, s := range listeners {
		v, ok := routingValue(s, ev.Context)
		if !ok {
			continue
		}
		ids, err := e.FindByContext(ctx, map[string]string{RoutingKeyPrefix + s.Name: v}, 2)
		if err != nil {
			return nil, err
		}
		found = append(found, ids...)
	}
	m := kernel.Message{Name: ev.Name, Context: ev.Context, Payload: ev.Payload}
	switch len(found) {
	case 0:
	case 1:
		p, err := e.Deliver(ctx, found[0], m, ev.ID)
		if err != nil {
			return nil, err
		}
		return &SendResult{Process: p}, nil
	default:
		target, err := innermost(ctx, e, found)
		if err != nil {
			return nil, err
		}
		p, err := e.Deliver(ctx, target, m, ev.ID)
		if err != nil {
			return nil, err
		}
		return &SendResult{Process: p}, nil
	}
	var started *veena.Process
	for _, s := range triggers {
		v, ok := routingValue(s, ev.Context)
		if !ok && len(s.RoutingKeys()) > 0 {
			continue
		}
		if t := s.Trigger; t.When != nil {
			ok, err := t.When.Bool(&schemaformat.Vars{Event: eventVar(&m), Context: ev.Context, Almanac: map[string]any{}})
			if err != nil {
				return nil, &kernel.Error{Code: kernel.ErrExecutionFailed.Code, Msg: fmt.Sprintf("trigger of %s: %v", s.Name, err)}
			}
			if !ok {
				continue
			}
		}
		if started != nil {
			return nil, &kernel.Error{Code: veena.ErrConflict.Code, Msg: fmt.Sprintf("event %s triggers both %s and %s", ev.Name, started.Definition, s.Name)}
		}
		pctx := map[string]string{}
		for _, k := range s.RoutingKeys() {
			pctx[k] = ev.Context[k]
		}
		if v != "" {
			pctx[RoutingKeyPrefix+s.Name] = v
		}
		start := m
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: s.Name, Context: pctx, IdempotencyKey: ev.ID,
			Setup: func(p *kernel.Process) error {
				p.Ext = &instance{Start: &start, byToken: map[int]*nodeInstance{}}
				return nil
			}})
		if err != nil {
			return nil, err
		}
		started = p
	}
	if started != nil {
		return &SendResult{Process: started, Started: true}, nil
	}
	return nil, &kernel.Error{Code: veena.ErrNotFound.Code, Msg: fmt.Sprintf("no executing schema instance has the context of event %s %v, and no schema's trigger takes it", ev.Name, pairs(ev.Context))}
}

// innermost picks, among instances that all match an event, the one nested
// deepest when they lie on one line of descent (a child before its
// parent); otherwise the event is ambiguous.
func innermost(ctx context.Context, e *veena.Engine, ids []string) (string, error) {
	parents := map[string]string{}
	for _, id := range ids {
		p, err := e.Process(ctx, id)
		if err != nil {
			return "", err
		}
		parents[id] = p.Parent
	}
	var best string
	depth := -1
	for _, id := range ids {
		d := 0
		for x := parents[id]; x != ""; d++ {
			q, err := e.Process(ctx, x)
			if err != nil {
				return "", err
			}
			x = q.Parent
		}
		if d > depth {
			best, depth = id, d
		}
	}
	// Every other match must be an ancestor of the deepest one.
	anc := map[string]bool{}
	for x := best; x != ""; {
		anc[x] = true
		q, err := e.Process(ctx, x)
		if err != nil {
			return "", err
		}
		x = q.Parent
	}
	for _, id := range ids {
		if !anc[id] {
			sort.Strings(ids)
			return "", &kernel.Error{Code: veena.ErrConflict.Code, Msg: fmt.Sprintf("the event's context matches several instances: %s", strings.Join(ids, ", "))}
		}
	}
	return best, nil
}

func pairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
