package kernel

// Reindex rebuilds what the kernel derives from the token history — the
// active lists, the per-arc waiting lists and the queue of pending arc
// tokens — after a process tree was decoded from a store, and makes its
// environments belong to their processes (for rollback). Tokens must have
// their Process, Node/Arc, Parent/Child, Parents/Children and Sets set.
//
// At rest (between commands) a node token is active when it is incomplete
// and its guard has run; an arc token waits at its end node when it was
// processed but is incomplete; pending arc tokens are queued in creation
// order.
func Reindex(root *Process) {
	root.Walk(func(p *Process) {
		p.activeNodes, p.activeArcs = 0, 0
		p.waiting, p.readyArcs = nil, nil
		p.queue, p.queueHead, p.asyncQueue = nil, 0, nil
		p.inLoop = false
		p.Env.adopt(p, 0)
		for _, ts := range p.TokenSets {
			ts.Env.adopt(p, 0)
			for _, m := range ts.members {
				m.adopt(p, 0)
			}
		}
		for _, t := range p.NodeTokens {
			t.Env.adopt(p, 0)
			t.active = false
			if !t.Complete && t.GuardAction != GuardNone {
				t.active = true
				p.activeNodes++
			}
		}
		for _, a := range p.ArcTokens {
			a.active = false
			switch {
			case a.Complete:
			case a.Pending:
				p.enqueue(a)
			default:
				(&Engine{}).addActiveArc(a)
			}
		}
	})
}
