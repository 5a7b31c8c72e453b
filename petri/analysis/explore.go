package analysis

import (
	"errors"
	"math/bits"

	"github.com/veena-wf/veena/petri"
)

// The reachability graph is explored breadth first. Markings are packed
// into 64-bit words, each place in a bit field just wide enough for the
// most tokens seen in it so far (a field that overflows is widened and
// every stored marking re-encoded). The visited set is an open-addressing
// hash table; when a marking fits one word the table holds the marking
// itself, so that a lookup touches one cache line. States are numbered in
// the order they are found, which is also the order they are expanded, so
// the packed markings double as the queue; their successors are kept as
// a compressed edge list (CSR), labelled with the transition, for the
// questions that need the whole graph (liveness, reversibility, soundness).

// errLimit ends an exploration that found more states than allowed.
var errLimit = errors.New("state limit reached")

// errUnbounded ends an exploration that found a marking strictly covering
// one of its ancestors (in a net without inhibitor arcs or capacities,
// proof that the net is unbounded).
var errUnbounded = errors.New("unbounded")

// errTokens ends an exploration whose token counts grew past MaxTokens.
var errTokens = errors.New("token count overflow")

type field struct {
	word  int32
	shift uint8
	mask  uint64
}

type delta struct {
	place int32
	d     int32
}

type ptrans struct {
	pre   []petri.Arc // merged per place (codes ignored)
	inh   []petri.Arc
	delta []delta // nonzero changes, by place
	caps  bool
}

type slot struct {
	key uint64 // the marking (one-word markings) or its hash
	id  uint32 // state number + 1; 0: empty
}

// explorer holds the reachability graph being built.
type explorer struct {
	net    *petri.Net
	places int
	trans  []ptrans
	cap    []int32 // capacities (0: none)

	width  []uint8
	fields []field
	stride int

	arena []uint64 // packed markings, stride words each
	slots []slot
	used  int

	// The graph: the successors of state i are edgeTo[edgeAt[i]:edgeAt[i+1]],
	// fired by edgeBy.
	keepEdges bool
	edgeAt    []uint32
	edgeTo    []uint32
	edgeBy    []uint32
	edges     int64

	parent   []uint32 // BFS tree: the state each state was found from
	parentBy []uint32 // and the transition fired

	maxStates int
	final     petri.Marking // the marking Completes asks about, if any
	coverable bool          // ancestors may be checked for strict covering
	growing   []int         // places that grow without limit, once coversAncestor found some

	// Per place: most and fewest tokens seen.
	most   []int32
	fewest []int32
	// Most tokens in one marking.
	mostTotal int64
	fired     []bool // by transition: fired somewhere
	dead      []uint32
	deadSeen  int

	cur  []int32
	next []uint64

	// guarded[p] are the transitions whose guard place is p: an input
	// place they cannot fire without (the one least marked at the start);
	// sources have no input place. cand collects a state's candidates.
	guarded [][]int32
	sources []int32
	cand    []int32

	narrow   []uint64 // by word: the bits of one-bit fields
	bitPlace []int32  // by bit: the place of a one-bit field
	wide     []int32  // the places of wider fields
	andAcc   []uint64 // AND of every state decoded since the layout
	marked   []int32  // one-bit places decode set in cur
	decoded  bool     // a state was decoded since the layout
}

func newExplorer(n *petri.Net, maxStates int, keepEdges bool) *explorer {
	e := &explorer{net: n, places: len(n.Places), maxStates: maxStates, keepEdges: keepEdges}
	e.coverable = !n.Capacities
	e.trans = make([]ptrans, len(n.Transitions))
	e.cap = make([]int32, e.places)
	for i, p := range n.Places {
		e.cap[i] = int32(p.Capacity)
	}
	for i, t := range n.Transitions {
		pt := ptrans{caps: n.Capacities}
		d := map[int]int{}
		for _, a := range t.In {
			merged := false
			for j := range pt.pre {
				if pt.pre[j].Place == a.Place {
					pt.pre[j].Weight += a.Weight
					merged = true
				}
			}
			if !merged {
				pt.pre = append(pt.pre, petri.Arc{Place: a.Place, Weight: a.Weight})
			}
			d[a.Place] -= a.Weight
		}
		for _, a := range t.Out {
			d[a.Place] += a.Weight
		}
		pt.inh = t.Inhibit
		for p := 0; p < e.places; p++ {
			if v := d[p]; v != 0 {
				pt.delta = append(pt.delta, delta{place: int32(p), d: int32(v)})
			}
		}
		e.trans[i] = pt
	}
	e.width = make([]uint8, e.places)
	for i, p := range n.Places {
		v := p.Initial
		for _, t := range p.In {
			for _, a := range n.Transitions[t].Out {
				if a.Place == i {
					v = max(v, a.Weight)
				}
			}
		}
		e.width[i] = uint8(max(1, bits.Len(uint(v))))
	}
	e.layout()
	e.most = make([]int32, e.places)
	e.fewest = make([]int32, e.places)
	for i := range e.fewest {
		e.fewest[i] = -1
	}
	e.fired = make([]bool, len(n.Transitions))
	e.cur = make([]int32, e.places)
	e.guarded = make([][]int32, e.places)
	for t, pt := range e.trans {
		if len(pt.pre) == 0 {
			e.sources = append(e.sources, int32(t))
			continue
		}
		g := pt.pre[0].Place
		for _, a := range pt.pre[1:] {
			if n.Places[a.Place].Initial < n.Places[g].Initial {
				g = a.Place
			}
		}
		e.guarded[g] = append(e.guarded[g], int32(t))
	}
	return e
}

// layout places the fields in words for the current widths.
func (e *explorer) layout() {
	e.foldNarrow()
	e.fields = make([]field, e.places)
	word, used := 0, 0
	for i, w := range e.width {
		if used+int(w) > 64 {
			word++
			used = 0
		}
		e.fields[i] = field{word: int32(word), shift: uint8(used), mask: 1<<w - 1}
		used += int(w)
	}
	e.stride = word + 1
	if e.places == 0 {
		e.stride = 1
	}
	// One-bit fields (places that never held two tokens so far) are read
	// by their set bits only; the others field by field.
	e.narrow = make([]uint64, e.stride)
	e.andAcc = make([]uint64, e.stride)
	e.bitPlace = make([]int32, e.stride*64)
	e.wide = e.wide[:0]
	for i := range e.andAcc {
		e.andAcc[i] = ^uint64(0)
	}
	for i, f := range e.fields {
		if f.mask == 1 {
			e.narrow[f.word] |= 1 << f.shift
			e.bitPlace[int(f.word)*64+int(f.shift)] = int32(i)
		} else {
			e.wide = append(e.wide, int32(i))
		}
	}
	e.next = make([]uint64, e.stride)
}

func (e *explorer) states() int { return len(e.arena) / e.stride }

func (e *explorer) marking(id int) []uint64 {
	return e.arena[id*e.stride : (id+1)*e.stride]
}

// decode unpacks state id into e.cur and records its token counts: the
// set bits of one-bit fields (e.marked lists them, to be cleared after),
// the wide fields one by one; it returns the state's marked places'
// guarded transitions as candidates in e.cand.
func (e *explorer) decode(id int) {
	for _, p := range e.marked {
		e.cur[p] = 0
	}
	e.marked = e.marked[:0]
	e.cand = append(e.cand[:0], e.sources...)
	m := e.marking(id)
	e.decoded = true
	var total int64
	for w, word := range m {
		e.andAcc[w] &= word
		bits := word & e.narrow[w]
		total += int64(popcount(bits))
		for bits != 0 {
			b := trailingZeros(bits)
			bits &= bits - 1
			p := e.bitPlace[w*64+b]
			e.cur[p] = 1
			e.marked = append(e.marked, p)
			e.cand = append(e.cand, e.guarded[p]...)
		}
	}
	for _, p := range e.wide {
		f := e.fields[p]
		v := int32(m[f.word] >> f.shift & f.mask)
		e.cur[p] = v
		total += int64(v)
		if v > e.most[p] {
			e.most[p] = v
		}
		if e.fewest[p] < 0 || v < e.fewest[p] {
			e.fewest[p] = v
		}
		if v > 0 {
			e.cand = append(e.cand, e.guarded[p]...)
		}
	}
	if total > e.mostTotal {
		e.mostTotal = total
	}
}

// foldNarrow folds what the one-bit fields' accumulator says (a place
// empty in some state) into fewest, before the layout changes and at the
// end. most of a one-bit place is kept by successor and the first state.
func (e *explorer) foldNarrow() {
	if !e.decoded {
		return
	}
	e.decoded = false
	for i, f := range e.fields {
		if f.mask != 1 || int(f.word) >= len(e.andAcc) {
			continue
		}
		v := int32(e.andAcc[f.word] >> f.shift & 1)
		if e.fewest[i] < 0 || v < e.fewest[i] {
			e.fewest[i] = v
		}
	}
}

func (e *explorer) encodeInto(dst []uint64, m []int32) {
	clear(dst)
	for i, f := range e.fields {
		dst[f.word] |= uint64(m[i]) << f.shift
	}
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (e *explorer) hash(m []uint64) uint64 {
	if len(m) == 1 {
		return mix(m[0])
	}
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range m {
		h = mix(h ^ w)
	}
	return h
}

// key is what a slot holds for marking m with hash h.
func (e *explorer) key(m []uint64, h uint64) uint64 {
	if e.stride == 1 {
		return m[0]
	}
	return h
}

// find returns the state of marking m, or -1.
func (e *explorer) find(m []uint64) int {
	h := e.hash(m)
	k := e.key(m, h)
	mask := uint64(len(e.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := e.slots[i]
		if s.id == 0 {
			return -1
		}
		if s.key == k && (e.stride == 1 || equal(e.marking(int(s.id-1)), m)) {
			return int(s.id - 1)
		}
	}
}

func equal(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// insert adds marking m (not yet stored) as a new state and returns its
// number.
func (e *explorer) insert(m []uint64) int {
	id := e.states()
	e.arena = append(e.arena, m...)
	if (e.used+1)*4 > len(e.slots)*3 {
		e.rehash(len(e.slots) * 2)
	}
	e.place(id, m)
	e.used++
	return id
}

func (e *explorer) place(id int, m []uint64) {
	h := e.hash(m)
	mask := uint64(len(e.slots) - 1)
	i := h & mask
	for e.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	e.slots[i] = slot{key: e.key(m, h), id: uint32(id + 1)}
}

func (e *explorer) rehash(size int) {
	if size < 1024 {
		size = 1024
	}
	e.slots = make([]slot, size)
	for id := 0; id < e.states(); id++ {
		e.place(id, e.marking(id))
	}
}

// grow widens the fields of every place whose count after firing pt
// (from e.cur) would not fit, re-encoding every stored marking once.
func (e *explorer) grow(pt *ptrans) error {
	old := e.fields
	oldStride := e.stride
	for _, d := range pt.delta {
		v := e.cur[d.place] + d.d
		if v < 0 || v > petri.MaxTokens {
			return errTokens
		}
		if uint64(v) > old[d.place].mask {
			e.width[d.place] = uint8(min(bits.Len32(uint32(v))+1, 32))
		}
	}
	e.layout()
	n := len(e.arena) / oldStride
	arena := make([]uint64, 0, n*e.stride+e.stride*1024)
	tmp := make([]int32, e.places)
	buf := make([]uint64, e.stride)
	for id := 0; id < n; id++ {
		m := e.arena[id*oldStride : (id+1)*oldStride]
		for i, f := range old {
			tmp[i] = int32(m[f.word] >> f.shift & f.mask)
		}
		e.encodeInto(buf, tmp)
		arena = append(arena, buf...)
	}
	e.arena = arena
	e.rehash(len(e.slots))
	return nil
}

// enabled reports whether transition t is enabled at e.cur.
func (e *explorer) enabled(t int) bool {
	pt := &e.trans[t]
	for _, a := range pt.pre {
		if int(e.cur[a.Place]) < a.Weight {
			return false
		}
	}
	for _, a := range pt.inh {
		if int(e.cur[a.Place]) >= a.Weight {
			return false
		}
	}
	if pt.caps {
		for _, d := range pt.delta {
			if c := e.cap[d.place]; c > 0 && d.d > 0 && e.cur[d.place]+d.d > c {
				return false
			}
		}
	}
	return true
}

// explore builds the reachability graph from the initial marking m0.
func (e *explorer) explore(m0 []int32) error {
	e.rehash(1024)
	for i, v := range m0 {
		if v > int32(e.fields[i].mask) {
			e.width[i] = uint8(bits.Len32(uint32(v)) + 1)
		}
	}
	e.layout()
	start := make([]uint64, e.stride)
	e.encodeInto(start, m0)
	for i, v := range m0 {
		e.most[i] = max(e.most[i], v)
	}
	e.insert(start)
	e.parent = append(e.parent, 0)
	e.parentBy = append(e.parentBy, ^uint32(0))
	if e.keepEdges {
		e.edgeAt = append(e.edgeAt, 0)
	}
	for id := 0; id < e.states(); id++ {
		// Only a transition whose guard place is marked can be enabled:
		// decode gives the candidates, those of the marked places and the
		// source transitions.
		e.decode(id)
		base := e.marking(id)
		succ := 0
		for _, t32 := range e.cand {
			t := int(t32)
			if !e.enabled(t) {
				continue
			}
			succ++
			e.fired[t] = true
			to, err := e.successor(id, base, t)
			if err != nil {
				return err
			}
			base = e.marking(id) // the arena may have moved
			e.edges++
			if e.keepEdges {
				e.edgeTo = append(e.edgeTo, uint32(to))
				e.edgeBy = append(e.edgeBy, uint32(t))
			}
		}
		if e.keepEdges {
			e.edgeAt = append(e.edgeAt, uint32(len(e.edgeTo)))
		}
		if succ == 0 {
			e.deadSeen++
			if len(e.dead) < maxDeadlocks {
				e.dead = append(e.dead, uint32(id))
			}
		}
	}
	return nil
}

// successor fires t at state id (whose marking e.cur holds, packed at
// base) and returns the state it leads to, adding it if new.
func (e *explorer) successor(id int, base []uint64, t int) (int, error) {
	pt := &e.trans[t]
	next := e.next
	copy(next, base)
	for _, d := range pt.delta {
		v := e.cur[d.place] + d.d
		f := e.fields[d.place]
		if uint64(v) > f.mask {
			if err := e.grow(pt); err != nil {
				return 0, err
			}
			next = e.next
			tmp := make([]int32, e.places)
			copy(tmp, e.cur)
			for _, dd := range pt.delta {
				tmp[dd.place] += dd.d
			}
			e.encodeInto(next, tmp)
			break
		}
		next[f.word] = next[f.word]&^(f.mask<<f.shift) | uint64(v)<<f.shift
	}
	if to := e.find(next); to >= 0 {
		return to, nil
	}
	if e.states() >= e.maxStates {
		return 0, errLimit
	}
	to := e.insert(next)
	e.parent = append(e.parent, uint32(id))
	e.parentBy = append(e.parentBy, uint32(t))
	// Checking every new marking for a covered ancestor would cost its
	// depth each time; checking those that hold more tokens in some place
	// than any marking before is cheap (in a bounded net it happens at most
	// once per token of each place's bound) and catches the usual ways of
	// growing without limit. The state limit and the coverability graph
	// decide the rest.
	grew := false
	for _, d := range pt.delta {
		if v := e.cur[d.place] + d.d; d.d > 0 && v > e.most[d.place] {
			e.most[d.place] = v
			// A place's first token is no sign of growth (a safe net's
			// places all get one); a second one may be.
			grew = grew || v > 1
		}
	}
	if grew && e.coverable && e.coversAncestor(to) {
		return 0, errUnbounded
	}
	return to, nil
}

// coversAncestor reports whether state id strictly covers a state on its
// path from the initial marking such that the firing sequence between
// them can be repeated for ever: every place holds at least as many
// tokens as at the ancestor, and no transition of the sequence has an
// inhibitor arc from a place that grew (without inhibitor arcs that is
// Karp and Miller's condition; with them, extra tokens could only stop
// the sequence through such an arc). It records the places that grow.
func (e *explorer) coversAncestor(id int) bool {
	m := make([]int32, e.places)
	a := make([]int32, e.places)
	e.unpack(id, m)
	inhibited := map[int]bool{} // places tested by inhibitor arcs of the sequence so far
	for v := id; v != 0; {
		for _, arc := range e.trans[e.parentBy[v]].inh {
			inhibited[arc.Place] = true
		}
		anc := int(e.parent[v])
		e.unpack(anc, a)
		covers, strict := true, false
		for i := range m {
			if m[i] < a[i] || m[i] > a[i] && inhibited[i] {
				covers = false
				break
			}
			if m[i] > a[i] {
				strict = true
			}
		}
		if covers && strict {
			e.growing = e.growing[:0]
			for i := range m {
				if m[i] > a[i] {
					e.growing = append(e.growing, i)
				}
			}
			return true
		}
		v = anc
	}
	return false
}

func (e *explorer) unpack(id int, dst []int32) {
	m := e.marking(id)
	for i, f := range e.fields {
		dst[i] = int32(m[f.word] >> f.shift & f.mask)
	}
}

// path is the firing sequence of the BFS tree from the initial marking to
// state id: a shortest one.
func (e *explorer) path(id int) []int {
	var out []int
	for id != 0 {
		out = append(out, int(e.parentBy[id]))
		id = int(e.parent[id])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// bytesPerState is the memory the visited set, the BFS tree and the edge
// list take, per state.
func (e *explorer) bytesPerState() float64 {
	n := e.states()
	if n == 0 {
		return 0
	}
	b := cap(e.arena)*8 + cap(e.slots)*16 + cap(e.parent)*4 + cap(e.parentBy)*4 +
		cap(e.edgeAt)*4 + cap(e.edgeTo)*4 + cap(e.edgeBy)*4
	return float64(b) / float64(n)
}

func popcount(x uint64) int      { return bits.OnesCount64(x) }
func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }
