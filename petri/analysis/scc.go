package analysis

// sccs are the strongly connected components of a reachability graph.
type sccs struct {
	comp    []uint32 // by state: its component
	count   int
	bottom  []bool // by component: no edge leaves it
	bottoms int
}

// components finds the strongly connected components of the explored
// graph with an iterative Tarjan's algorithm.
func (g *explorer) components() *sccs {
	n := g.states()
	const unvisited = ^uint32(0)
	index := make([]uint32, n) // discovery order, then (reused) the component
	low := make([]uint32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var stack []uint32
	type frame struct {
		v    uint32
		edge uint32
	}
	var calls []frame
	next := uint32(0)
	comp := make([]uint32, n)
	count := 0
	for root := 0; root < n; root++ {
		if index[root] != unvisited {
			continue
		}
		calls = append(calls, frame{v: uint32(root), edge: g.edgeAt[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, uint32(root))
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.edge < g.edgeAt[v+1] {
				w := g.edgeTo[f.edge]
				f.edge++
				if index[w] == unvisited {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w, edge: g.edgeAt[w]})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			// v is done: pop a component if v is its root, then return.
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = uint32(count)
					if w == v {
						break
					}
				}
				count++
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				if u := calls[len(calls)-1].v; low[v] < low[u] {
					low[u] = low[v]
				}
			}
		}
	}
	s := &sccs{comp: comp, count: count, bottom: make([]bool, count)}
	for i := range s.bottom {
		s.bottom[i] = true
	}
	for v := 0; v < n; v++ {
		for e := g.edgeAt[v]; e < g.edgeAt[v+1]; e++ {
			if comp[g.edgeTo[e]] != comp[v] {
				s.bottom[comp[v]] = false
			}
		}
	}
	for _, b := range s.bottom {
		if b {
			s.bottoms++
		}
	}
	return s
}

// bottomFirings numbers the bottom components densely (dense[c] = -1 for
// the others) and gives each a bit per transition that fires inside it.
func (g *explorer) bottomFirings(s *sccs) (dense []int32, words int, fired []uint64) {
	nt := len(g.trans)
	dense = make([]int32, s.count)
	nb := 0
	for c, b := range s.bottom {
		dense[c] = -1
		if b {
			dense[c] = int32(nb)
			nb++
		}
	}
	words = (nt + 63) / 64
	fired = make([]uint64, nb*words)
	for v := 0; v < g.states(); v++ {
		d := dense[s.comp[v]]
		if d < 0 {
			continue
		}
		for e := g.edgeAt[v]; e < g.edgeAt[v+1]; e++ {
			t := g.edgeBy[e]
			fired[int(d)*words+int(t/64)] |= 1 << (t % 64)
		}
	}
	return dense, words, fired
}

// live reports whether every transition is live: from every reachable
// marking it can fire again. Every marking reaches a bottom component,
// and inside one every marking reaches every other, so the net is live
// iff every bottom component holds an edge of every transition.
func (g *explorer) live(s *sccs) bool {
	nt := len(g.trans)
	if nt == 0 {
		return true
	}
	_, words, fired := g.bottomFirings(s)
	for b := 0; b < len(fired)/max(words, 1); b++ {
		for t := 0; t < nt; t++ {
			if fired[b*words+t/64]&(1<<(t%64)) == 0 {
				return false
			}
		}
	}
	return true
}

// stranded finds the places (other than sinks, which no transition takes
// from) where a token can be left for ever: a marking
// of a bottom component marks the place and no transition taking from it
// fires inside that component (tokens leave a place only through such a
// transition, so every marking that strands a token leads to one of
// these). For each it returns the first such state found, which the
// breadth-first numbering makes one at the end of a shortest firing
// sequence.
func (g *explorer) stranded(s *sccs, dead bool) map[int]int {
	out := map[int]int{}
	if len(g.trans) == 0 {
		return out
	}
	dense, words, fired := g.bottomFirings(s)
	// takes[p]: does some transition taking from p fire in bottom component b?
	m := make([]int32, g.places)
	for v := 0; v < g.states(); v++ {
		d := dense[s.comp[v]]
		if d < 0 || !dead && g.edgeAt[v] == g.edgeAt[v+1] {
			continue
		}
		g.unpack(v, m)
		for p, c := range m {
			if c == 0 || len(g.net.Places[p].Out) == 0 {
				continue // a sink keeps its tokens by design
			}
			if _, seen := out[p]; seen {
				continue
			}
			taken := false
			for _, t := range g.net.Places[p].Out {
				if fired[int(d)*words+t/64]&(1<<(t%64)) != 0 {
					taken = true
					break
				}
			}
			if !taken {
				out[p] = v
			}
		}
	}
	return out
}
