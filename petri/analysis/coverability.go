package analysis

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/veena-wf/veena/petri"
)

// omega stands for "arbitrarily many tokens" in a coverability graph.
const omega = int32(math.MaxInt32)

// coverability builds the Karp–Miller coverability graph of a net without
// inhibitor arcs or capacities (for which it is sound) and fills r with
// what it decides: which places are unbounded, which transitions can fire
// (quasi-liveness is decided exactly by coverability), and deadlocks that
// are certainly reachable (dead nodes without ω, reached by real
// firings). Deadlock-freedom, liveness and reversibility of an unbounded
// net are not decided from it and stay unknown unless a deadlock settles
// them.
func coverability(n *petri.Net, m0 petri.Marking, limit int, r *Result) {
	r.States, r.Edges, r.Bound, r.MaxTokensPerMarking, r.StableMarking = nil, nil, nil, nil, nil
	if n.Inhibitors || n.Capacities {
		r.Complete = false
		r.Bounded, r.Safe = ptr(false), ptr(false)
		r.Reason = fmt.Sprintf("some place holds more than %d tokens; the rest is undecidable for a net with inhibitor arcs or capacities", petri.MaxTokens)
		return
	}
	np := len(n.Places)
	type node struct {
		m      []int32
		parent int32
		by     int32
	}
	nodes := []node{{m: toInt32(m0), parent: -1, by: -1}}
	buf := make([]byte, 4*np)
	key := func(m []int32) string {
		for p, v := range m {
			binary.LittleEndian.PutUint32(buf[4*p:], uint32(v))
		}
		return string(buf)
	}
	index := map[string]int{key(nodes[0].m): 0}
	fired := make([]bool, len(n.Transitions))
	unbounded := make([]bool, np)
	var dead []int
	complete := true
	for i := 0; i < len(nodes); i++ {
		m := nodes[i].m
		succ := 0
		for t, tr := range n.Transitions {
			ok := true
			for _, a := range tr.In {
				if m[a.Place] != omega && int(m[a.Place]) < a.Weight {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			succ++
			fired[t] = true
			next := make([]int32, np)
			copy(next, m)
			for _, a := range tr.In {
				if next[a.Place] != omega {
					next[a.Place] -= int32(a.Weight)
				}
			}
			for _, a := range tr.Out {
				if next[a.Place] != omega {
					if v := int64(next[a.Place]) + int64(a.Weight); v >= int64(petri.MaxTokens) {
						next[a.Place] = omega
					} else {
						next[a.Place] = int32(v)
					}
				}
			}
			// Accelerate: a strictly covered ancestor makes the grown places ω.
			for anc := i; anc >= 0; anc = int(nodes[anc].parent) {
				a := nodes[anc].m
				covers, strict := true, false
				for p := range next {
					if next[p] < a[p] {
						covers = false
						break
					}
					if next[p] > a[p] {
						strict = true
					}
				}
				if covers && strict {
					for p := range next {
						if next[p] > a[p] {
							next[p] = omega
						}
					}
				}
			}
			k := key(next)
			if _, ok := index[k]; ok {
				continue
			}
			if len(nodes) >= limit {
				complete = false
				break
			}
			index[k] = len(nodes)
			nodes = append(nodes, node{m: next, parent: int32(i), by: int32(t)})
			for p, v := range next {
				if v == omega {
					unbounded[p] = true
				}
			}
		}
		if !complete {
			break
		}
		if succ == 0 {
			finite := true
			for _, v := range m {
				finite = finite && v != omega
			}
			if finite && len(dead) < maxDeadlocks {
				dead = append(dead, i)
			}
		}
	}
	var names []string
	for p, u := range unbounded {
		if u {
			names = append(names, n.Places[p].ID)
		}
	}
	r.UnboundedPlaces = names
	if len(names) > 0 {
		r.Bounded, r.Safe = ptr(false), ptr(false)
	}
	for _, id := range dead {
		var seq []string
		for v := id; nodes[v].parent >= 0; v = int(nodes[v].parent) {
			seq = append([]string{n.Transitions[nodes[v].by].ID}, seq...)
		}
		if seq == nil {
			seq = []string{}
		}
		r.Deadlocks = append(r.Deadlocks, seq)
		mm := map[string]int{}
		for p, v := range nodes[id].m {
			if v != 0 {
				mm[n.Places[p].ID] = int(v)
			}
		}
		r.DeadlockMarkings = append(r.DeadlockMarkings, mm)
	}
	if len(dead) > 0 {
		r.DeadlockFree = ptr(false)
		r.Live = ptr(len(n.Transitions) == 0)
	}
	if !complete {
		r.Complete = false
		if len(names) > 0 {
			r.Reason = fmt.Sprintf("the net is unbounded (%s grow without limit); its coverability graph has more than %d nodes", strings.Join(names, ", "), limit)
		} else {
			r.Reason = fmt.Sprintf("the coverability graph has more than %d nodes", limit)
		}
		return
	}
	r.Complete = true
	if len(names) == 0 {
		// Not reached: a net whose reachability exploration stopped as
		// unbounded has an ω somewhere.
		r.Bounded = ptr(true)
		return
	}
	r.Reason = fmt.Sprintf("the net is unbounded: %s grow without limit (coverability graph of %d nodes); deadlock-freedom, liveness and reversibility of an unbounded net are not decided", strings.Join(names, ", "), len(nodes))
	r.DeadTransitions = []string{}
	for t, f := range fired {
		if !f {
			r.DeadTransitions = append(r.DeadTransitions, n.Transitions[t].ID)
		}
	}
	r.QuasiLive = ptr(len(r.DeadTransitions) == 0)
	if !*r.QuasiLive {
		r.Live = ptr(false)
	}
}
