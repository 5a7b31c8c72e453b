package kernel

import (
	"container/heap"
	"sort"
)

// Backtrack returns the process to a completed node token: every token
// created since, downstream of it, is marked backtracked (with mirror
// tokens for nodes in between and u-turn arc tokens for branches that joined
// in), and a new token on the destination's node executes again. It
// returns that new token.
//
// It is refused (ErrBacktrackNotAllowed, nothing changed) if the process is
// not executing, the destination is not complete or was itself backtracked,
// or a node on the way is not backtrackable.
func (e *Engine) Backtrack(dest *NodeToken) (result *NodeToken, err error) {
	p := dest.Process
	switch {
	case p.State != Executing:
		return nil, refuse(ErrBacktrackNotAllowed, "can only backtrack an executing process; process %s is %s", p.ID, p.State)
	case !dest.Complete:
		return nil, refuse(ErrBacktrackNotAllowed, "cannot backtrack to node token %d (%s): it is not complete", dest.ID, dest.Node.QualifiedName())
	case dest.ExecType.IsBacktracked():
		return nil, refuse(ErrBacktrackNotAllowed, "cannot backtrack to node token %d (%s): it has been backtracked", dest.ID, dest.Node.QualifiedName())
	}
	b := &backtracker{
		e:        e,
		dest:     dest,
		visited:  map[*NodeToken]bool{},
		arcMap:   map[*ArcToken]*ArcToken{},
		mirrors:  mirrors{},
		parentOf: map[*NodeToken]*NodeToken{},
	}
	if len(dest.Children) > 0 {
		// The traversal only reads; a refusal leaves everything as it was.
		if err := b.traverse(); err != nil {
			return nil, err
		}
	}
	err = e.run(func() {
		if len(dest.Children) == 0 {
			result = b.deadEnd()
		} else {
			result = b.backtrack()
		}
		e.executeNode(result)
		if !p.inLoop {
			e.executeQueuedArcTokens(p)
		}
	})
	return result, err
}

// backtracker carries one backtrack's bookkeeping.
type backtracker struct {
	e        *Engine
	dest     *NodeToken
	queue    []*NodeToken // node tokens to backtrack; processed newest first
	leaves   []*ArcToken  // incomplete arc tokens reached (except u-turns)
	visited  map[*NodeToken]bool
	arcMap   map[*ArcToken]*ArcToken // an old arc token to the one that replaces it
	mirrors  mirrors
	parentOf map[*NodeToken]*NodeToken // a token reached through a backtracked arc to the token whose parents stand for its own
}

// traverse visits the history downstream of the destination in creation
// order: node tokens by creation, arc tokens by their parent's completion.
func (b *backtracker) traverse() error {
	q := &traversal{}
	seen := map[*NodeToken]bool{b.dest: true}
	heap.Push(q, item{node: b.dest})
	for q.Len() > 0 {
		it := heap.Pop(q).(item)
		if t := it.node; t != nil {
			if err := b.visitNode(t); err != nil {
				return err
			}
			for _, a := range t.Children {
				heap.Push(q, item{arc: a})
			}
			continue
		}
		a := it.arc
		if !b.follow(a) {
			continue
		}
		b.visitArc(a)
		if c := a.Child; c != nil && !seen[c] {
			seen[c] = true
			heap.Push(q, item{node: c})
		}
	}
	return nil
}

func (b *backtracker) visitNode(t *NodeToken) error {
	if bt, ok := b.e.runtime(t.Node).typ.(Backtracker); ok && !bt.IsBacktrackable(b.e, t) {
		return refuse(ErrBacktrackNotAllowed, "node %s (token %d) cannot be backtracked", t.Node.QualifiedName(), t.ID)
	}
	if len(t.Children) == 0 {
		b.push(t)
	}
	b.visited[t] = true
	return nil
}

func (b *backtracker) follow(a *ArcToken) bool {
	if a.ExecType != Forward {
		b.mirrors.find(a)
	}
	switch a.ExecType {
	case Backtracked, UTurn, UTurnBacktracked:
		return b.mirrors.has(a)
	}
	return true
}

func (b *backtracker) visitArc(a *ArcToken) {
	if a.ExecType != Forward {
		b.mirrors.addVisited(a)
	}
	if a.Child == nil {
		if a.ExecType == UTurn {
			m := b.mirrors.get(a)
			b.arcMap[m] = a
			b.push(m.Parent)
		} else {
			b.leaves = append(b.leaves, a)
		}
	}
	if a.ExecType == Backtracked {
		b.parentOf[a.Child] = b.mirrors.get(a).Parent
	}
}

// push adds a node token to the backtrack queue once.
func (b *backtracker) push(t *NodeToken) {
	for _, x := range b.queue {
		if x == t {
			return
		}
	}
	b.queue = append(b.queue, t)
}

// pop takes the newest node token from the backtrack queue.
func (b *backtracker) pop() *NodeToken {
	sort.Slice(b.queue, func(i, j int) bool { return b.queue[i].ID < b.queue[j].ID })
	t := b.queue[len(b.queue)-1]
	b.queue = b.queue[:len(b.queue)-1]
	return t
}

func (b *backtracker) backtrack() *NodeToken {
	e := b.e
	for _, a := range b.leaves {
		b.arcMap[a] = a
		b.markArcBacktracked(a)
		b.push(a.Parent)
		e.removeActiveArc(a)
	}
	var result *NodeToken
	for len(b.queue) > 0 {
		t := b.pop()
		if t.ExecType.IsBacktracked() {
			continue
		}
		if bt, ok := e.runtime(t.Node).typ.(Backtracker); ok {
			if err := bt.Backtrack(e, t); err != nil {
				e.Fail(failed(err, "backtracking node %s", t.Node.QualifiedName()))
			}
		}
		if t == b.dest {
			result = b.recreate(t, Forward)
			continue
		}
		if bt := b.backtrackToken(t); bt != t {
			b.markNodeBacktracked(bt)
			e.markComplete(bt)
			e.fire(bt.Process, NodeTokenCompleted, bt, nil, nil, 0)
		}
	}
	return result
}

// recreate marks a completed token backtracked and creates its replacement
// (of type x) whose parents are the arc tokens that replaced its children.
func (b *backtracker) recreate(t *NodeToken, x ExecutionType) *NodeToken {
	e := b.e
	b.markNodeBacktracked(t)
	parents := make([]*ArcToken, 0, len(t.Children))
	for _, c := range t.Children {
		pa := b.arcMap[c]
		if pa == nil {
			e.Fail(refuse(ErrExecutionFailed, "backtracking: no replacement for arc token %d (%s)", c.ID, c.Arc))
		}
		parents = append(parents, pa)
	}
	nt := b.newToken(t, x, parents)
	for _, pa := range parents {
		e.removeActiveArc(pa)
		b.markArcBacktracked(pa)
		e.completeArcInto(pa, nt)
	}
	return nt
}

// newToken creates the replacement of t: same node, the given parents, the
// environment of t's parents and t's token-set memberships.
func (b *backtracker) newToken(t *NodeToken, x ExecutionType, parents []*ArcToken) *NodeToken {
	e, p := b.e, t.Process
	p.Seq++
	nt := &NodeToken{
		ID:        len(p.NodeTokens),
		Seq:       p.Seq,
		Process:   p,
		Node:      t.Node,
		Parents:   parents,
		ExecType:  x,
		CreatedAt: e.now,
		Env:       inheritEnv(t.Parents),
	}
	if len(t.Sets) > 0 {
		nt.Sets = append([]Membership(nil), t.Sets...)
	}
	p.NodeTokens = append(p.NodeTokens, nt)
	p.Dirty = true
	e.fire(p, NodeTokenCreated, nt, nil, nil, 0)
	return nt
}

// backtrackToken backtracks a token downstream of the destination and gives
// back the token that stands for it (t itself, or its mirror).
func (b *backtracker) backtrackToken(t *NodeToken) *NodeToken {
	e, p := b.e, t.Process
	bt := t
	switch {
	case !t.Complete:
		e.removeActive(t)
		e.markComplete(t)
		e.fire(p, NodeTokenCompleted, t, nil, nil, 0)
		b.markNodeBacktracked(t)
	case !t.ExecType.IsBacktracked():
		if len(t.Children) == 0 {
			b.markNodeBacktracked(t)
		} else {
			bt = b.recreate(t, Backtracked)
			bt.GuardAction = Skip
			e.fire(p, NodeTokenSkipped, bt, nil, []string{""}, 0)
		}
	}
	parents := t.Parents
	if via := b.parentOf[t]; via != nil {
		parents = via.Parents
	}
	for _, pa := range parents {
		fromVisited := b.visited[pa.Parent]
		e.removeActiveArc(pa)
		b.markArcBacktracked(pa)
		x := UTurn
		if fromVisited {
			x = Backtracked
		}
		na := e.newArcToken(p, pa.Arc, bt, x, pa.Sets)
		e.fire(p, ArcTokenCreated, nil, na, nil, 0)
		if fromVisited && pa.ExecType != Forward {
			m := b.mirrors.get(pa)
			b.arcMap[m] = na
			b.finishArc(na, m)
		} else {
			b.finishArc(na, pa)
		}
	}
	return bt
}

// finishArc records na as the replacement of old. If old came from a token
// being backtracked, that token is queued and na counts as processed;
// otherwise na is a u-turn and is queued to run to its join.
func (b *backtracker) finishArc(na, old *ArcToken) {
	b.arcMap[old] = na
	if b.visited[old.Parent] {
		b.push(old.Parent)
		na.Pending = false
		b.e.fire(na.Process, ArcTokenProcessed, nil, na, nil, 0)
	} else {
		na.Process.queue = append(na.Process.queue, na)
	}
}

// deadEnd backtracks to a token that has no children: u-turn arc tokens on
// its parents' arcs lead into a new token on the same node.
func (b *backtracker) deadEnd() *NodeToken {
	e, t := b.e, b.dest
	p := t.Process
	b.markNodeBacktracked(t)
	uturns := make([]*ArcToken, 0, len(t.Parents))
	for _, pa := range t.Parents {
		b.markArcBacktracked(pa)
		na := e.newArcToken(p, pa.Arc, t, UTurn, pa.Sets)
		e.fire(p, ArcTokenCreated, nil, na, nil, 0)
		uturns = append(uturns, na)
	}
	nt := b.newToken(t, Forward, uturns)
	for _, na := range uturns {
		na.Pending = false
		e.fire(p, ArcTokenProcessed, nil, na, nil, 0)
		e.completeArcInto(na, nt)
	}
	return nt
}

func (b *backtracker) markNodeBacktracked(t *NodeToken) {
	t.ExecType = t.ExecType.backtracked(t.Complete)
	t.Process.Dirty = true
	b.e.fire(t.Process, NodeTokenBacktracked, t, nil, nil, 0)
}

func (b *backtracker) markArcBacktracked(a *ArcToken) {
	a.ExecType = a.ExecType.backtracked(a.Complete)
	a.Process.Dirty = true
	b.e.fire(a.Process, ArcTokenBacktracked, nil, a, nil, 0)
}

// completeArcInto completes an arc token into child without touching the
// active lists.
func (e *Engine) completeArcInto(a *ArcToken, child *NodeToken) {
	a.Pending = false
	a.Complete = true
	a.CompletedAt = e.now
	a.Child = child
	child.Process.Dirty = true
	e.fire(a.Process, ArcTokenCompleted, nil, a, nil, 0)
}

// mirrors maps each non-forward arc token met during a backtrack to the
// earlier arc token on the same arc that it reverses (nil when none is
// known yet).
type mirrors map[*ArcToken]*ArcToken

func (m mirrors) addVisited(a *ArcToken) {
	if _, ok := m[a]; !ok {
		m[a] = nil
	}
}

func (m mirrors) has(a *ArcToken) bool {
	_, ok := m[a]
	return ok
}

func (m mirrors) get(a *ArcToken) *ArcToken {
	if r := m[a]; r != nil {
		return r
	}
	return a
}

func (m mirrors) find(a *ArcToken) {
	if a.ExecType == ForwardBacktracked {
		if a.Parent.ExecType != ForwardBacktracked {
			return
		}
		for _, pa := range a.Parent.Parents {
			if pa.ExecType == Backtracked && pa.Arc == a.Arc {
				m[a] = pa
				m.tie(a)
				return
			}
		}
		return
	}
	for _, pa := range a.Parent.Parents {
		if m.isMirror(a, pa) {
			m[a] = pa
			m.tie(a)
			return
		}
		if pa.ExecType == Backtracked {
			if mm := m[pa]; mm != nil {
				for _, mp := range mm.Parent.Parents {
					if m.isMirror(a, mp) {
						m[a] = mp
						m.tie(a)
						return
					}
				}
			}
		}
	}
}

func (m mirrors) isMirror(a, candidate *ArcToken) bool {
	return (candidate.ExecType == ForwardBacktracked || candidate.ExecType == UTurnBacktracked) &&
		candidate.Arc == a.Arc && m.has(candidate)
}

// tie points a at the end of its chain of mirrors.
func (m mirrors) tie(a *ArcToken) {
	look := m[a]
	result := look
	for look != nil {
		look = m[look]
		if look != nil {
			result = look
		}
	}
	m[a] = result
}

// item is a token in the creation-order traversal.
type item struct {
	node *NodeToken
	arc  *ArcToken
}

// key orders the traversal: a node token by its creation, an arc token by
// its parent's completion (then its own creation).
func (it item) key() (int64, int64) {
	if it.node != nil {
		return it.node.Seq, 0
	}
	return it.arc.Parent.CompleteSeq, it.arc.Seq
}

type traversal []item

func (q traversal) Len() int { return len(q) }
func (q traversal) Less(i, j int) bool {
	a1, a2 := q[i].key()
	b1, b2 := q[j].key()
	return a1 < b1 || (a1 == b1 && a2 < b2)
}
func (q traversal) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *traversal) Push(x any)   { *q = append(*q, x.(item)) }
func (q *traversal) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
