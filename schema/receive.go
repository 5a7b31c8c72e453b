package schema

import (
	"fmt"

	"github.com/veena-wf/veena/kernel"
)

// receiver takes the events sent to schema instances.
type receiver struct{ rt *Runtime }

// ErrQueueFull: an instance's queue of waiting events is full.
var ErrQueueFull = &kernel.Error{Code: "event_queue_full", Msg: "the instance's event queue is full"}

// Receive hands an event to the instance's current node if that node is
// an event node waiting for it; otherwise the event waits in the
// instance's queue, in arrival order, for an event node that takes it. An
// instance that has ended drops events; a full queue refuses an event from
// outside (and drops one from another instance, counting it).
func (rc receiver) Receive(e *kernel.Engine, p *kernel.Process, m *kernel.Message) error {
	st := mustState(e, p)
	if p.State != kernel.Executing {
		st.Dropped++
		p.Dirty = true
		return nil
	}
	var tok *kernel.NodeToken
	for i := len(p.NodeTokens) - 1; i >= 0; i-- {
		if t := p.NodeTokens[i]; t.Active() && !t.Complete {
			tok = t
			break
		}
	}
	if tok != nil {
		if nt, ok := rc.nodeTypeOf(e, tok); ok {
			if ni := st.node(tok.ID); ni != nil && ni.State == NodeWaiting && nt.n.Event != nil {
				ok, err := nt.accepts(e, p, m)
				if err != nil {
					return err
				}
				if ok {
					ni.Event = m
					ni.State = NodeRunning
					p.Dirty = true
					nt.advance(e, tok, ni)
					return nil
				}
			}
		}
	}
	limit := schemaOf(p).QueueLimit
	if len(st.Queue) >= limit {
		if m.From != "" {
			st.Dropped++
			p.Dirty = true
			return nil
		}
		return &kernel.Error{Code: ErrQueueFull.Code, Msg: fmt.Sprintf("instance %s already queues %d events (its schema's events.queue); event %s refused", p.ID, limit, m.Name)}
	}
	st.Queue = append(st.Queue, m)
	p.Dirty = true
	return nil
}

func (rc receiver) nodeTypeOf(e *kernel.Engine, t *kernel.NodeToken) (*nodeType, bool) {
	typ, err := rc.rt.nodeType(t.Node)
	if err != nil {
		return nil, false
	}
	nt, ok := typ.(*nodeType)
	return nt, ok
}
