package kernel

import (
	"fmt"

	"github.com/veena-wf/veena/graph"
)

// This file holds the kernel's extension points for formats whose node
// types do more than wait and complete on their arcs: tokens created at a
// node without an arc (a scope's start, an event that listens beside an
// activity), token sets opened by a node type, tokens ended without taking
// an arc, node types that decide how their token completes, and a hook
// that runs whenever a process has nothing left to execute. None of it is
// used by Sarasvati definitions; all of it is recorded in the token
// history like any other step.

// CompleteHandler is implemented by node types that decide themselves how
// their token completes: Engine.Complete and CompleteWith (a command
// completing a waiting token, or a nested process ending) call
// HandleComplete instead of completing the token on the named arcs. names
// are the arc names asked for ("" the default arcs); vars, if not nil, the
// variables the completion brings (a task's data, a message's payload),
// which the handler places itself. The handler completes the token with
// CompleteDirect, or leaves it active.
type CompleteHandler interface {
	HandleComplete(e *Engine, t *NodeToken, names []string, vars *Env) error
}

// CompleteWith completes a token bringing variables: a node type with a
// CompleteHandler receives them; for any other, they are merged into the
// token's own environment first, as Complete's callers do.
func (e *Engine) CompleteWith(t *NodeToken, vars *Env, names ...string) error {
	if names == nil {
		names = defaultArcs
	}
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		if e.runtime(t.Node).completer == nil && !vars.IsEmpty() {
			for _, n := range vars.Names() {
				v, _ := vars.Get(n)
				t.SetAttr(n, v)
			}
		}
		e.completeVia(t, names, vars)
	})
}

// Settler is called with each executing process of a command whenever the
// process has no arc token left to execute, before the kernel checks
// whether the process is complete. It may create, complete or withdraw
// tokens; the kernel then runs what they queued and calls the settlers
// again, until a round queues nothing.
type Settler func(e *Engine, p *Process) error

// RegisterSettler adds a settler to the kernel.
func (k *Kernel) RegisterSettler(s Settler) { k.settlers = append(k.settlers, s) }

// settle runs the settlers on p and reports whether they queued arc tokens.
func (e *Engine) settle(p *Process) bool {
	if len(e.k.settlers) == 0 {
		return false
	}
	for _, s := range e.k.settlers {
		if p.State != Executing {
			return false
		}
		if err := s(e, p); err != nil {
			e.Fail(failed(err, "process %s", p.ID))
		}
	}
	return p.State == Executing && p.queued() > 0
}

// Run runs fn as a command on p's tree, or as part of the running one:
// a failure (Fail) inside it unwinds to here, and the whole command is
// undone.
func (e *Engine) Run(p *Process, fn func()) error { return e.run(p, fn) }

// CompleteDirect completes a node token on the named arcs ("" the
// default arcs; no names at all, the default arcs; an empty list, no arc)
// without consulting its node type's CompleteHandler, and runs the process
// on.
func (e *Engine) CompleteDirect(t *NodeToken, names ...string) error {
	if names == nil {
		names = defaultArcs
	}
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		e.complete(t, names, false)
	})
}

// completeVia completes t through its node type's CompleteHandler, if it
// has one.
func (e *Engine) completeVia(t *NodeToken, names []string, vars *Env) {
	if h := e.runtime(t.Node).completer; h != nil {
		// The handler's steps queue their arc tokens; they run (and the
		// settlers with them) once it is done.
		p := t.Process
		was := p.inLoop
		p.inLoop = true
		if err := h.HandleComplete(e, t, names, vars); err != nil {
			e.Fail(failed(err, "node %s", t.Node.QualifiedName()))
		}
		p.inLoop = was
		if p.State == Executing && !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
		return
	}
	e.complete(t, names, false)
}

// CreateToken creates a node token at node n of process p with no parent
// arc token (as a start token is created): it belongs to the token sets in
// sets, holds env as its own environment (shared copy-on-write with whoever
// else holds it) and notes as its notes. Its guard runs at once; what it
// starts runs within the current command.
func (e *Engine) CreateToken(p *Process, n *graph.Node, sets []Membership, env *Env, notes map[string]string) (t *NodeToken, err error) {
	err = e.run(p, func() {
		if p.State != Executing {
			e.Fail(refuse(ErrProcessNotExecuting, "process %s is %s, not executing", p.ID, p.State))
		}
		if n == nil || n.Index >= len(p.Graph.Nodes) || p.Graph.Nodes[n.Index] != n {
			e.Fail(refuse(ErrInvalidArgument, "node %v is not a node of %s", n, p.Graph))
		}
		t = e.newNodeToken(p, n, nil, Forward, nil)
		if len(sets) > 0 {
			t.Sets = append([]Membership(nil), sets...)
		}
		if !env.IsEmpty() {
			t.Env = env.Share().adopt(p, e.j.epoch)
		}
		if len(notes) > 0 {
			t.Notes = notes
		}
		e.fire(p, NodeTokenCreated, t, nil, nil, 0)
		was := p.inLoop
		p.inLoop = true
		e.executeNode(t)
		p.inLoop = was
		if !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
	return t, err
}

// SetNote sets one of the token's notes ("" removes it) within a command,
// so that a failed command undoes it.
func (e *Engine) SetNote(t *NodeToken, key, value string) {
	e.mutN(t)
	t.setNote(key, value)
}

// NewTokenSet opens a token set of count members in p, nested inside the
// sets of the memberships in parent (its level is one above theirs). env
// is the set's environment, memberEnvs (if given) one environment per
// member. Tokens join it through CreateToken.
func (e *Engine) NewTokenSet(p *Process, name string, count int, parent []Membership, env *Env, memberEnvs []*Env) (*TokenSet, error) {
	if count < 1 {
		return nil, refuse(ErrInvalidArgument, "a token set needs at least one member, not %d", count)
	}
	level := 0
	for _, m := range parent {
		level = max(level, m.Set.Level)
	}
	set := &TokenSet{ID: len(p.TokenSets), Name: name, MaxMemberIndex: count - 1, Level: level + 1, Env: env.Clone().adopt(p, e.j.epoch)}
	set.members = make([]*Env, count)
	for i := range set.members {
		if i < len(memberEnvs) && memberEnvs[i] != nil {
			set.members[i] = memberEnvs[i].Clone().adopt(p, e.j.epoch)
		} else {
			set.members[i] = NewEnv().adopt(p, e.j.epoch)
		}
	}
	e.mutP(p)
	p.TokenSets = append(p.TokenSets, set)
	p.Dirty = true
	return set, nil
}

// Withdraw ends an active node token without taking any arc (it completes
// on the empty arc list): the nested processes it started are canceled,
// a delay it waited for no longer counts. The process runs on.
func (e *Engine) Withdraw(t *NodeToken) error {
	return e.run(t.Process, func() {
		e.checkCompletable(t)
		e.withdraw(t)
	})
}

func (e *Engine) withdraw(t *NodeToken) {
	p := t.Process
	for _, c := range p.Nested {
		if c.ParentToken == t && (c.State == Created || c.State == Executing) {
			e.cancel(c)
		}
	}
	e.complete(t, []string{}, false)
}

// DiscardArcToken takes an arc token that waits at its end node (or is
// still queued) out of play: it is marked complete with no child node
// token, and no join will use it.
func (e *Engine) DiscardArcToken(a *ArcToken) error {
	return e.run(a.Process, func() {
		if a.Complete {
			e.Fail(refuse(ErrTokenComplete, "arc token %s is already complete", a.Label()))
		}
		e.removeActiveArc(a)
		e.mutA(a)
		e.mutP(a.Process)
		a.Pending = false
		a.Complete = true
		a.CompletedNs = e.at
		a.Process.Dirty = true
		e.fire(a.Process, ArcTokenCompleted, nil, a, nil, 0)
	})
}

// StartNested starts a process of g nested under token t (as a nested node
// does: t completes, through its node type, when the child completes) with
// env as its environment.
func (e *Engine) StartNested(t *NodeToken, g *graph.Graph, env *Env) (child *Process, err error) {
	if err := e.k.Prepare(g); err != nil {
		return nil, err
	}
	err = e.run(t.Process, func() {
		if len(g.StartNodes()) == 0 {
			e.Fail(refuse(ErrNoStartNodes, "definition %s has no start nodes", g))
		}
		child = e.newProcess(g, env, t.Process, t)
		e.startProcess(child)
	})
	return child, err
}

// StartAt creates a process of g with a copy of env and starts it with one
// token on each of nodes instead of on the graph's start nodes (a process
// started by an event at the node that catches it).
func (e *Engine) StartAt(g *graph.Graph, env *Env, nodes ...*graph.Node) (p *Process, err error) {
	if err := e.k.Prepare(g); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, refuse(ErrInvalidArgument, "StartAt needs at least one node")
	}
	for _, n := range nodes {
		if n == nil || n.Index >= len(g.Nodes) || g.Nodes[n.Index] != n {
			return nil, refuse(ErrInvalidArgument, "node %v is not a node of %s", n, g)
		}
	}
	err = e.run(nil, func() {
		p = e.newProcess(g, env, nil, nil)
		e.startProcessAt(p, nodes)
	})
	return p, err
}

// String names a token set in messages.
func (s *TokenSet) String() string { return fmt.Sprintf("%s#%d", s.Name, s.ID) }
