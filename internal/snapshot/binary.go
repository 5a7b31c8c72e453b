package snapshot

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/veena-wf/veena/kernel"

	"github.com/veena-wf/veena/internal/varint"
)

// The binary snapshot holds what the JSON snapshot holds (the snapshot
// struct) in a fraction of the bytes: a command rewrites the row of every
// process it changes, and smaller rows mean fewer database pages written
// per command (on SQLite, rows small enough to stay clear of overflow
// pages). Encode writes it; Decode reads it and the JSON snapshots written
// before it, which start with '{'.
//
// After binaryTag: the sequence number; the token environments (a count,
// then each as the length and bytes of its JSON object); the node tokens
// (a count, then each as a uvarint of flags saying which optional fields
// follow, the node and sequence numbers, then the fields flagged, in the
// order of nodeFlag's constants); the arc tokens likewise; the token sets
// (a count, then each as its name, maximum member index, level, set
// environment and member environments, an environment being the length
// and bytes of its JSON object, length 0 for none); the listeners (a
// count, then each as its name and mask). Integers are signed varints,
// counts, flags, lengths and masks uvarints, names a length and bytes.
const binaryTag = 0x01

// Which optional fields of a node token follow.
const (
	nodeCompleteSeq = 1 << iota
	nodeParents
	nodeChildren
	nodeGuard
	nodeExec
	nodeComplete
	nodeCreated
	nodeCompleted
	nodeEnv
	nodeSets
	nodeDelayUntil
	nodeDelayCount
	nodeWork
	nodeNotes
)

// Which optional fields of an arc token follow.
const (
	arcPending = 1 << iota
	arcComplete
	arcExec
	arcSets
	arcCreated
	arcCompleted
)

func flag(on bool, f uint64) uint64 {
	if on {
		return f
	}
	return 0
}

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendBytes(b []byte, x []byte) []byte {
	b = appendUvarint(b, uint64(len(x)))
	return append(b, x...)
}

func appendName(b []byte, s string) []byte {
	b = appendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendArcIDs(b []byte, as []*kernel.ArcToken) []byte {
	b = appendUvarint(b, uint64(len(as)))
	for _, a := range as {
		b = appendVarint(b, int64(a.ID))
	}
	return b
}

func appendMemberships(b []byte, ms []kernel.Membership) []byte {
	b = appendUvarint(b, uint64(len(ms)))
	for _, m := range ms {
		b = appendVarint(b, int64(m.Set.ID))
		b = appendVarint(b, int64(m.Member))
	}
	return b
}

// appendEnvJSON appends an environment as the length and bytes of its
// JSON object, length 0 if it has no attributes.
func appendEnvJSON(b []byte, e *kernel.Env) ([]byte, error) {
	if e.Len() == 0 {
		return append(b, 0), nil
	}
	j, err := appendEnvMap(nil, e)
	if err != nil {
		return nil, err
	}
	return appendBytes(b, j), nil
}

// appendBinary appends the binary snapshot of p to b.
func appendBinary(b []byte, p *kernel.Process) ([]byte, error) {
	base := p.CreatedAt.UnixNano()
	envs, envJSON, err := tokenEnvs(p)
	if err != nil {
		return nil, err
	}
	b = append(b, binaryTag)
	b = appendVarint(b, p.Seq)
	b = appendUvarint(b, uint64(len(envJSON)))
	for _, e := range envJSON {
		b = appendBytes(b, e)
	}
	b = appendUvarint(b, uint64(len(p.NodeTokens)))
	for i, t := range p.NodeTokens {
		created, completed := offset(base, t.CreatedNs), optOffset(base, t.CompletedNs)
		du := t.DelayUntilNs
		env := 0
		if envs != nil {
			env = envs[i]
		}
		f := flag(t.CompleteSeq != 0, nodeCompleteSeq) | flag(len(t.Parents) > 0, nodeParents) |
			flag(len(t.Children) > 0, nodeChildren) | flag(t.GuardAction != 0, nodeGuard) |
			flag(t.ExecType != 0, nodeExec) | flag(t.Complete, nodeComplete) | flag(created != 0, nodeCreated) |
			flag(completed != 0, nodeCompleted) | flag(env != 0, nodeEnv) | flag(len(t.Sets) > 0, nodeSets) |
			flag(du != 0, nodeDelayUntil) | flag(t.DelayCount != 0, nodeDelayCount) | flag(t.Work != 0, nodeWork) | flag(len(t.Notes) > 0, nodeNotes)
		b = appendUvarint(b, f)
		b = appendVarint(b, int64(t.Node.Index))
		b = appendVarint(b, t.Seq)
		if f&nodeCompleteSeq != 0 {
			b = appendVarint(b, t.CompleteSeq)
		}
		if f&nodeParents != 0 {
			b = appendArcIDs(b, t.Parents)
		}
		if f&nodeChildren != 0 {
			b = appendArcIDs(b, t.Children)
		}
		if f&nodeGuard != 0 {
			b = appendVarint(b, int64(uint8(t.GuardAction)))
		}
		if f&nodeExec != 0 {
			b = appendVarint(b, int64(uint8(t.ExecType)))
		}
		if f&nodeCreated != 0 {
			b = appendVarint(b, created)
		}
		if f&nodeCompleted != 0 {
			b = appendVarint(b, completed)
		}
		if f&nodeEnv != 0 {
			b = appendVarint(b, int64(env))
		}
		if f&nodeSets != 0 {
			b = appendMemberships(b, t.Sets)
		}
		if f&nodeDelayUntil != 0 {
			b = appendVarint(b, du)
		}
		if f&nodeDelayCount != 0 {
			b = appendVarint(b, int64(t.DelayCount))
		}
		if f&nodeWork != 0 {
			b = appendUvarint(b, uint64(t.Work))
		}
		if f&nodeNotes != 0 {
			notes, err := json.Marshal(t.Notes)
			if err != nil {
				return nil, fmt.Errorf("node token %d: notes: %w", i, err)
			}
			b = appendBytes(b, notes)
		}
	}
	b = appendUvarint(b, uint64(len(p.ArcTokens)))
	for _, a := range p.ArcTokens {
		created, completed := offset(base, a.CreatedNs), optOffset(base, a.CompletedNs)
		f := flag(a.Pending, arcPending) | flag(a.Complete, arcComplete) | flag(a.ExecType != 0, arcExec) |
			flag(len(a.Sets) > 0, arcSets) | flag(created != 0, arcCreated) | flag(completed != 0, arcCompleted)
		child := int64(0)
		if a.Child != nil {
			child = int64(a.Child.ID) + 1
		}
		b = appendUvarint(b, f)
		b = appendVarint(b, int64(a.Arc.Index))
		b = appendVarint(b, a.Seq)
		b = appendVarint(b, int64(a.Parent.ID))
		b = appendVarint(b, child)
		if f&arcExec != 0 {
			b = appendVarint(b, int64(uint8(a.ExecType)))
		}
		if f&arcSets != 0 {
			b = appendMemberships(b, a.Sets)
		}
		if f&arcCreated != 0 {
			b = appendVarint(b, created)
		}
		if f&arcCompleted != 0 {
			b = appendVarint(b, completed)
		}
	}
	b = appendUvarint(b, uint64(len(p.TokenSets)))
	for _, ts := range p.TokenSets {
		b = appendName(b, ts.Name)
		b = appendVarint(b, int64(ts.MaxMemberIndex))
		b = appendVarint(b, int64(ts.Level))
		if b, err = appendEnvJSON(b, ts.Env); err != nil {
			return nil, err
		}
		members := ts.MemberEnv()
		b = appendUvarint(b, uint64(members.Members()))
		for j := 0; j < members.Members(); j++ {
			if b, err = appendEnvJSON(b, members.Env(j)); err != nil {
				return nil, err
			}
		}
	}
	b = appendUvarint(b, uint64(len(p.Listeners)))
	for _, l := range p.Listeners {
		b = appendName(b, l.Name)
		b = appendUvarint(b, uint64(l.Mask))
	}
	// The format's own state, if any, ends the snapshot (older snapshots
	// end after the listeners).
	ext, err := p.EncodedExt()
	if err != nil {
		return nil, err
	}
	if len(ext) > 0 {
		b = appendBytes(b, ext)
	}
	return b, nil
}

// tokenEnvs lists the distinct non-empty environments of p's node tokens
// as JSON objects, and the 1-based entry of each node token (nil if no
// token has one). Tokens sharing an environment (copy-on-write) point to
// one entry, and so do environments with the same content.
func tokenEnvs(p *kernel.Process) ([]int, [][]byte, error) {
	var envs []int
	var envJSON [][]byte
	var envIndex map[string]int
	var envOfToken map[kernel.EnvKey]int
	for i, t := range p.NodeTokens {
		if t.Env.Len() == 0 {
			continue
		}
		if envs == nil {
			envs = make([]int, len(p.NodeTokens))
			envIndex = map[string]int{}
			envOfToken = map[kernel.EnvKey]int{}
		}
		idx, ok := envOfToken[t.Env.Key()]
		if !ok {
			e, err := appendEnvMap(nil, t.Env)
			if err != nil {
				return nil, nil, fmt.Errorf("node token %d: %w", i, err)
			}
			if idx, ok = envIndex[string(e)]; !ok {
				envJSON = append(envJSON, e)
				idx = len(envJSON)
				envIndex[string(e)] = idx
			}
			envOfToken[t.Env.Key()] = idx
		}
		envs[i] = idx
	}
	return envs, envJSON, nil
}

var errBinary = errors.New("malformed binary snapshot")

// binaryReader reads a binary snapshot; the first error sticks.
type binaryReader struct{ varint.Reader }

func (r *binaryReader) int() int { return int(r.Varint()) }

// attrs reads an environment: nil if it has none.
func (r *binaryReader) attrs() attrs {
	j := r.Bytes()
	if r.Err != nil || len(j) == 0 {
		return nil
	}
	var m attrs
	if err := json.Unmarshal(j, &m); err != nil {
		r.Err = fmt.Errorf("%w: environment: %w", errBinary, err)
	}
	return m
}

func (r *binaryReader) ints() []int {
	n := r.Count()
	if n == 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = r.int()
	}
	return out
}

func (r *binaryReader) sets() [][2]int {
	n := r.Count()
	if n == 0 {
		return nil
	}
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{r.int(), r.int()}
	}
	return out
}

// decodeBinary reads a binary snapshot into the struct the JSON snapshot
// decodes into.
func decodeBinary(b []byte) (snapshot, error) {
	var s snapshot
	if len(b) == 0 || b[0] != binaryTag {
		return s, errBinary
	}
	r := &binaryReader{varint.Reader{B: b[1:], Malformed: errBinary}}
	s.Seq = r.Varint()
	if n := r.Count(); n > 0 {
		s.Envs = make([]json.RawMessage, n)
		for i := range s.Envs {
			s.Envs[i] = json.RawMessage(r.Bytes())
		}
	}
	if n := r.Count(); n > 0 {
		s.Nodes = make([]node, n)
		for i := range s.Nodes {
			x := &s.Nodes[i]
			f := r.Uvarint()
			x.Node, x.Seq = r.int(), r.Varint()
			if f&nodeCompleteSeq != 0 {
				x.CompleteSeq = r.Varint()
			}
			if f&nodeParents != 0 {
				x.Parents = r.ints()
			}
			if f&nodeChildren != 0 {
				x.Children = r.ints()
			}
			if f&nodeGuard != 0 {
				x.Guard = uint8(r.Varint())
			}
			if f&nodeExec != 0 {
				x.Exec = uint8(r.Varint())
			}
			x.Complete = f&nodeComplete != 0
			if f&nodeCreated != 0 {
				x.Created = r.Varint()
			}
			if f&nodeCompleted != 0 {
				x.Completed = r.Varint()
			}
			if f&nodeEnv != 0 {
				x.Env = r.int()
			}
			if f&nodeSets != 0 {
				x.Sets = r.sets()
			}
			if f&nodeDelayUntil != 0 {
				x.DelayUntil = r.Varint()
			}
			if f&nodeDelayCount != 0 {
				x.DelayCount = r.int()
			}
			if f&nodeWork != 0 {
				x.Work = uint8(r.Uvarint())
			}
			if f&nodeNotes != 0 {
				if j := r.Bytes(); r.Err == nil {
					if err := json.Unmarshal(j, &x.Notes); err != nil {
						r.Err = fmt.Errorf("%w: notes: %w", errBinary, err)
					}
				}
			}
		}
	}
	if n := r.Count(); n > 0 {
		s.Arcs = make([]arc, n)
		for i := range s.Arcs {
			x := &s.Arcs[i]
			f := r.Uvarint()
			x.Arc, x.Seq, x.Parent, x.Child = r.int(), r.Varint(), r.int(), r.int()
			x.Pending, x.Complete = f&arcPending != 0, f&arcComplete != 0
			if f&arcExec != 0 {
				x.Exec = uint8(r.Varint())
			}
			if f&arcSets != 0 {
				x.Sets = r.sets()
			}
			if f&arcCreated != 0 {
				x.Created = r.Varint()
			}
			if f&arcCompleted != 0 {
				x.Completed = r.Varint()
			}
		}
	}
	if n := r.Count(); n > 0 {
		s.Sets = make([]tokenSet, n)
		for i := range s.Sets {
			x := &s.Sets[i]
			x.Name, x.Max, x.Level = r.String(), r.int(), r.int()
			x.Env = r.attrs()
			if m := r.Count(); m > 0 {
				x.Members = make([]attrs, m)
				for j := range x.Members {
					x.Members[j] = r.attrs()
				}
			}
		}
	}
	if n := r.Count(); n > 0 {
		s.Listeners = make([]listener, n)
		for i := range s.Listeners {
			s.Listeners[i] = listener{Name: r.String(), Mask: r.Uvarint()}
		}
	}
	if r.Err == nil && len(r.B) > 0 {
		// An extension is never written empty.
		if s.Ext = append([]byte(nil), r.Bytes()...); r.Err == nil && len(s.Ext) == 0 {
			r.Err = fmt.Errorf("%w: an empty extension", errBinary)
		}
	}
	if r.Err == nil && len(r.B) > 0 {
		r.Err = fmt.Errorf("%w: %d bytes after the end", errBinary, len(r.B))
	}
	return s, r.Err
}
