package kernel

import "sort"

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
		return nil, refuse(ErrBacktrackNotAllowed, "cannot backtrack to node token %s: it is not complete", dest.Label())
	case dest.ExecType.IsBacktracked():
		return nil, refuse(ErrBacktrackNotAllowed, "cannot backtrack to node token %s: it has been backtracked", dest.Label())
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
	err = e.run(p, func() {
		e.backtracking = true
		func() {
			defer func() { e.backtracking = false }()
			if len(dest.Children) == 0 {
				result = b.deadEnd()
			} else {
				result = b.backtrack()
			}
		}()
		if result == nil {
			e.Fail(refuse(ErrExecutionFailed, "backtracking to node token %s: the destination was not reached", dest.Label()))
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
// It stops at the first node token that refuses to be backtracked.
func (b *backtracker) traverse() error {
	var err error
	traverseCreateOrder(b.dest,
		func(t *NodeToken) { err = b.visitNode(t) },
		b.follow, b.visitArc,
		func() bool { return err != nil })
	return err
}

func (b *backtracker) visitNode(t *NodeToken) error {
	if bt, ok := b.e.runtime(t.Node).typ.(Backtracker); ok && !bt.IsBacktrackable(b.e, t) {
		return refuse(ErrBacktrackNotAllowed, "node token %s cannot be backtracked: its node does not allow it", t.Label())
	}
	if len(t.Children) == 0 {
		b.push(t)
	}
	b.visited[t] = true
	return nil
}

func (b *backtracker) follow(a *ArcToken) bool {
	if a.ExecType != Forward {
		b.mirrors.find(a, b.parentOf)
	}
	switch a.ExecType {
	case Backtracked, UTurn, UTurnBacktracked:
		return b.mirrors.has(a) || (redoUTurn(a) && b.reachedAlong(a))
	}
	return true
}

// reachedAlong reports whether a's parent was reached, in this backtrack,
// through an arc token on a's arc (with a's memberships) that has no mirror
// of its own kind, such as a backtracked arc token into a replacement.
func (b *backtracker) reachedAlong(a *ArcToken) bool {
	for _, pa := range a.Parent.Parents {
		if pa.Arc == a.Arc && sameSets(pa.Sets, a.Sets) && pa.ExecType != Forward && b.mirrors.has(pa) {
			return true
		}
	}
	return false
}

// redoUTurn reports whether a is one of the u-turn arc tokens a backtrack
// to a dead end (§11.2) made: they lead from the dead end into its redo, a
// token on the same node created right after them. (A u-turn that waited at
// a join and fired it alone looks the same but for the sequence numbers:
// the rest of its backtrack came in between.)
func redoUTurn(a *ArcToken) bool {
	if (a.ExecType != UTurn && a.ExecType != UTurnBacktracked) || a.Child == nil || a.Child.Node != a.Parent.Node {
		return false
	}
	var last int64
	for _, pa := range a.Child.Parents {
		if (pa.ExecType != UTurn && pa.ExecType != UTurnBacktracked) || pa.Parent != a.Parent {
			return false
		}
		last = max(last, pa.Seq)
	}
	return a.Child.Seq == last+1
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
		b.parentOf[a.Child] = b.standsFor(b.mirrors.get(a).Parent)
	}
	if redoUTurn(a) && (b.mirrors[a] == nil || b.parentOf[a.Parent] != nil) {
		// A redo of a dead end that itself stands for an older token (it
		// came through a backtracked arc token, a turned leaf or another
		// such redo), or whose arrival cannot be mirrored: the redo stands
		// for what the dead end stood for.
		b.parentOf[a.Child] = b.standsFor(a.Parent)
	}
	if turnedLeaf(a) {
		// The replacement of a.Parent stands for it: it is undone through
		// the parents of a.Parent (or of the token a.Parent stood for).
		b.parentOf[a.Child] = b.standsFor(a.Parent)
	}
}

// standsFor follows parentOf from t to the token at the end of the chain:
// the one whose parents t's replacement is undone through.
func (b *backtracker) standsFor(t *NodeToken) *NodeToken {
	for {
		o := b.parentOf[t]
		if o == nil || o == t {
			return t
		}
		t = o
	}
}

// turnedLeaf reports whether a is a leaf arc token that a backtrack
// completed into the replacement of its own parent (§11.3: map[a] = a): it
// waited at a join when its parent was backtracked, and its child is on the
// node it starts from, not the one it ends at. (On an arc from a node to
// itself both are the same; there the arc token is taken as a turned leaf
// when its child has not been backtracked, since every other backtracked
// forward arc token leads to a backtracked token.)
func turnedLeaf(a *ArcToken) bool {
	if a.ExecType != ForwardBacktracked || a.Child == nil || a.Child.Node != a.Arc.From {
		return false
	}
	return a.Arc.From != a.Arc.To || !a.Child.ExecType.IsBacktracked()
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
			e.markComplete(bt, false)
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
			e.Fail(refuse(ErrExecutionFailed, "backtracking: no replacement for arc token %s", c.Label()))
		}
		parents = append(parents, pa)
	}
	nt := b.newToken(t, x, parents)
	for i, pa := range parents {
		e.removeActiveArc(pa)
		// A leaf arc token (one that waited at a join: it stands for
		// itself) was marked backtracked, with its event, when the leaves
		// were collected; it must not be backtracked twice.
		if pa != t.Children[i] {
			b.markArcBacktracked(pa)
		}
		e.completeArcInto(pa, nt)
	}
	return nt
}

// newToken creates the replacement of t: same node, the given parents, the
// environment of t's parents and t's token-set memberships.
func (b *backtracker) newToken(t *NodeToken, x ExecutionType, parents []*ArcToken) *NodeToken {
	e, p := b.e, t.Process
	e.mutP(p)
	e.created(p)
	p.Seq++
	nt := &NodeToken{
		ID:        len(p.NodeTokens),
		Seq:       p.Seq,
		Process:   p,
		Node:      t.Node,
		Parents:   parents,
		ExecType:  x,
		CreatedNs: e.at,
		Env:       inheritEnv(t.Parents).adopt(p, e.j.epoch),
		epoch:     e.j.epoch,
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
		e.endToken(t, false)
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
		// t's own parents are undone too: a u-turn becomes UB; a
		// backtracked arc token or a turned leaf stays as it is.
		for _, pa := range t.Parents {
			e.removeActiveArc(pa)
			b.markArcBacktrackedOnce(pa)
		}
	}
	for _, pa := range parents {
		fromVisited := b.visited[pa.Parent]
		o := pa // the arc token na replaces
		if fromVisited && pa.ExecType != Forward {
			o = b.mirrors.get(pa)
			if r := b.origin(pa); o == pa && r != nil {
				// No mirror: pa turned back (perhaps over several earlier
				// backtracks) an arc token r of a branch, and pa's own
				// parent was backtracked before and will not be queued
				// again. na replaces r: it goes back to r's parent if that
				// is undone now, otherwise it turns back again, as a
				// u-turn to the join.
				o, fromVisited = r, b.visited[r.Parent] && !r.Parent.ExecType.IsBacktracked()
			}
		}
		e.removeActiveArc(pa)
		b.markArcBacktrackedOnce(pa)
		x := UTurn
		if fromVisited {
			x = Backtracked
		}
		na := e.newArcToken(p, pa.Arc, bt, x, pa.Sets)
		e.fire(p, ArcTokenCreated, nil, na, nil, 0)
		b.finishArc(na, o)
	}
	return bt
}

// origin follows reversed from a to the forward arc token at the start of
// the chain of u-turns, or nil.
func (b *backtracker) origin(a *ArcToken) *ArcToken {
	r := b.reversed(a)
	for r != nil && (r.ExecType == UTurn || r.ExecType == UTurnBacktracked) {
		next := b.reversed(r)
		if next == nil {
			break
		}
		r = next
	}
	return r
}

// reversed returns the arc token a non-forward arc token a turns back: the
// backtracked forward (or u-turn) arc token on the same arc among the
// parents of a's parent, or of the tokens that parent stands for; or nil.
func (b *backtracker) reversed(a *ArcToken) *ArcToken {
	for t := a.Parent; t != nil; t = b.parentOf[t] {
		for _, pa := range t.Parents {
			if pa.Arc == a.Arc && sameSets(pa.Sets, a.Sets) && (pa.ExecType == ForwardBacktracked || pa.ExecType == UTurnBacktracked) {
				return pa
			}
		}
		if b.parentOf[t] == t {
			break
		}
	}
	return nil
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
		b.e.enqueue(na.Process, na)
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
		b.markArcBacktrackedOnce(pa)
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
	b.e.mutP(t.Process)
	b.e.mutN(t)
	t.ExecType = t.ExecType.backtracked(t.Complete)
	t.Process.Dirty = true
	b.e.fire(t.Process, NodeTokenBacktracked, t, nil, nil, 0)
}

// markArcBacktrackedOnce marks an arc token backtracked unless it already
// is. An arc token of a backtracked type (FB, B, UB) has had its
// ARC_TOKEN_BACKTRACKED event: an FB or UB one when it was marked, a B one
// when it was completed into the token its backtrack created. Marking it
// again would change nothing but fire the event a second time.
func (b *backtracker) markArcBacktrackedOnce(a *ArcToken) {
	if !a.ExecType.IsBacktracked() {
		b.markArcBacktracked(a)
	}
}

func (b *backtracker) markArcBacktracked(a *ArcToken) {
	b.e.mutP(a.Process)
	b.e.mutA(a)
	a.ExecType = a.ExecType.backtracked(a.Complete)
	a.Process.Dirty = true
	b.e.fire(a.Process, ArcTokenBacktracked, nil, a, nil, 0)
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

func (m mirrors) find(a *ArcToken, parentOf map[*NodeToken]*NodeToken) {
	if a.ExecType == ForwardBacktracked {
		if a.Parent.ExecType != ForwardBacktracked {
			return
		}
		for _, pa := range a.Parent.Parents {
			if pa.ExecType == Backtracked && pa.Arc == a.Arc && sameSets(pa.Sets, a.Sets) {
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
	// a.Parent may stand for an older token (it was reached through a
	// backtracked or turned-leaf arc token): look among that token's
	// parents, and so on up the chain.
	for o := parentOf[a.Parent]; o != nil; o = parentOf[o] {
		for _, op := range o.Parents {
			if m.isMirror(a, op) {
				m[a] = op
				m.tie(a)
				return
			}
		}
	}
}

func (m mirrors) isMirror(a, candidate *ArcToken) bool {
	return (candidate.ExecType == ForwardBacktracked || candidate.ExecType == UTurnBacktracked) &&
		candidate.Arc == a.Arc && sameSets(a.Sets, candidate.Sets) && m.has(candidate)
}

// sameSets reports whether two arc tokens have the same token-set
// memberships. An arc token made by a backtrack copies those of the arc
// token it reverses; among several arc tokens on one arc (the members of a
// token set meeting at a join) only the right one has the same.
func sameSets(x, y []Membership) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
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
