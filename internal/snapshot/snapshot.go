// Package snapshot encodes a kernel process into the row a store keeps, and
// decodes a tree of rows back into kernel processes. The snapshot holds the
// token history (node and arc tokens with their links, guard actions,
// execution types, times, delays and token-set memberships), the token sets
// with their set and member environments, the persistent attributes of
// every environment and the process's listeners by name. Transient
// attributes are never encoded. Token environments shared between tokens
// are written once.
package snapshot

import (
	"encoding/json"
	"fmt"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

type attrs = map[string]kernel.Value

type snapshot struct {
	Seq       int64             `json:"q"`
	Envs      []json.RawMessage `json:"e,omitempty"` // distinct token environments
	Nodes     []node            `json:"n,omitempty"`
	Arcs      []arc             `json:"a,omitempty"`
	Sets      []tokenSet        `json:"s,omitempty"`
	Listeners []listener        `json:"l,omitempty"`
	Ext       []byte            `json:"x,omitempty"` // the format's own state (kernel.Extension)
}

type node struct {
	Node        int               `json:"n"`
	Seq         int64             `json:"q"`
	CompleteSeq int64             `json:"cq,omitempty"` // orders backtracking's traversal
	Parents     []int             `json:"p,omitempty"`
	Children    []int             `json:"c,omitempty"`
	Guard       uint8             `json:"g,omitempty"`
	Exec        uint8             `json:"x,omitempty"`
	Complete    bool              `json:"d,omitempty"`
	Created     int64             `json:"t,omitempty"` // nanoseconds after the process was created
	Completed   int64             `json:"f,omitempty"` // the same, plus one; 0: not completed
	Env         int               `json:"e,omitempty"` // 1-based index into Envs; 0: none
	Sets        [][2]int          `json:"s,omitempty"` // (set id, member)
	DelayUntil  int64             `json:"du,omitempty"`
	DelayCount  int               `json:"dc,omitempty"`
	Work        uint8             `json:"w,omitempty"` // kernel.WorkFlags
	Notes       map[string]string `json:"o,omitempty"`
}

type arc struct {
	Arc       int      `json:"a"`
	Seq       int64    `json:"q"`
	Parent    int      `json:"p"`
	Child     int      `json:"c"` // node token index + 1; 0 while waiting
	Pending   bool     `json:"w,omitempty"`
	Complete  bool     `json:"d,omitempty"`
	Exec      uint8    `json:"x,omitempty"`
	Sets      [][2]int `json:"s,omitempty"`
	Created   int64    `json:"t,omitempty"` // as for node tokens
	Completed int64    `json:"f,omitempty"`
}

type tokenSet struct {
	Name    string  `json:"n"`
	Max     int     `json:"m"`
	Level   int     `json:"v"`
	Env     attrs   `json:"e,omitempty"`
	Members []attrs `json:"em,omitempty"`
}

type listener struct {
	Name string `json:"n"`
	Mask uint64 `json:"m"`
}

// Token times are written relative to the process's creation, which keeps
// them short (a command's tokens share one time): created times as the
// offset, completion times as the offset plus one, so that 0 means unset.
func offset(base, ns int64) int64 { return ns - base }

func atOffset(base, n int64) int64 { return base + n }

func optOffset(base, ns int64) int64 {
	if ns == 0 {
		return 0
	}
	return ns - base + 1
}

func atOptOffset(base, n int64) int64 {
	if n == 0 {
		return 0
	}
	return base + n - 1
}

func envMap(e *kernel.Env) attrs {
	if e.Len() == 0 {
		return nil
	}
	return e.Map()
}

func envOf(m attrs) *kernel.Env {
	e := kernel.NewEnv()
	e.SetPersistent(m)
	return e
}

func memberships(ms []kernel.Membership) [][2]int {
	if len(ms) == 0 {
		return nil
	}
	out := make([][2]int, len(ms))
	for i, m := range ms {
		out[i] = [2]int{m.Set.ID, m.Member}
	}
	return out
}

// Encode writes the snapshot of one process (not of its nested processes).
func Encode(p *kernel.Process) ([]byte, error) {
	if writeBinary {
		return appendBinary(make([]byte, 0, 32+12*(len(p.NodeTokens)+len(p.ArcTokens))), p)
	}
	return appendSnapshot(make([]byte, 0, 64+48*(len(p.NodeTokens)+len(p.ArcTokens))), p)
}

// writeBinary makes Encode write binary snapshots (binary.go), a
// fraction of the size of JSON ones. Decode reads both; a Veena from before
// the binary snapshot reads JSON only (false writes JSON again).
const writeBinary = true

// encodeJSON is Encode through encoding/json, which appendSnapshot
// reproduces byte for byte (the tests compare them).
func encodeJSON(p *kernel.Process) ([]byte, error) {
	s := snapshot{Seq: p.Seq}
	base := p.CreatedAt.UnixNano()
	// Token environments are written once per distinct content: tokens that
	// share one (copy-on-write) point to the same entry.
	envIndex := map[string]int{}
	// A shared environment is encoded once, not once per token holding it.
	envOfToken := map[kernel.EnvKey]int{}
	s.Nodes = make([]node, len(p.NodeTokens))
	for i, t := range p.NodeTokens {
		n := node{
			Node: t.Node.Index, Seq: t.Seq, CompleteSeq: t.CompleteSeq,
			Guard: uint8(t.GuardAction), Exec: uint8(t.ExecType), Complete: t.Complete,
			Created: offset(base, t.CreatedNs), Completed: optOffset(base, t.CompletedNs),
			Sets: memberships(t.Sets), DelayUntil: t.DelayUntilNs, DelayCount: t.DelayCount,
			Work:  uint8(t.Work),
			Notes: t.Notes,
		}
		for _, a := range t.Parents {
			n.Parents = append(n.Parents, a.ID)
		}
		for _, a := range t.Children {
			n.Children = append(n.Children, a.ID)
		}
		if t.Env.Len() > 0 {
			idx, ok := envOfToken[t.Env.Key()]
			if !ok {
				b, err := json.Marshal(t.Env.Map())
				if err != nil {
					return nil, fmt.Errorf("node token %d: %w", i, err)
				}
				if idx, ok = envIndex[string(b)]; !ok {
					s.Envs = append(s.Envs, b)
					idx = len(s.Envs)
					envIndex[string(b)] = idx
				}
				envOfToken[t.Env.Key()] = idx
			}
			n.Env = idx
		}
		s.Nodes[i] = n
	}
	s.Arcs = make([]arc, len(p.ArcTokens))
	for i, a := range p.ArcTokens {
		x := arc{
			Arc: a.Arc.Index, Seq: a.Seq, Parent: a.Parent.ID,
			Pending: a.Pending, Complete: a.Complete, Exec: uint8(a.ExecType),
			Sets: memberships(a.Sets), Created: offset(base, a.CreatedNs), Completed: optOffset(base, a.CompletedNs),
		}
		if a.Child != nil {
			x.Child = a.Child.ID + 1
		}
		s.Arcs[i] = x
	}
	for _, ts := range p.TokenSets {
		x := tokenSet{Name: ts.Name, Max: ts.MaxMemberIndex, Level: ts.Level, Env: envMap(ts.Env)}
		members := ts.MemberEnv()
		x.Members = make([]attrs, members.Members())
		for i := range x.Members {
			x.Members[i] = envMap(members.Env(i))
		}
		s.Sets = append(s.Sets, x)
	}
	for _, l := range p.Listeners {
		s.Listeners = append(s.Listeners, listener{Name: l.Name, Mask: uint64(l.Mask)})
	}
	ext, err := p.EncodedExt()
	if err != nil {
		return nil, err
	}
	s.Ext = ext
	return json.Marshal(&s)
}

// EncodeEnv writes the persistent attributes of an environment as a JSON object.
func EncodeEnv(e *kernel.Env) ([]byte, error) {
	if e.Len() == 0 {
		return []byte("{}"), nil
	}
	return appendEnvMap(make([]byte, 0, 16*e.Len()+2), e)
}

// DecodeEnv reads what EncodeEnv writes.
func DecodeEnv(b []byte) (map[string]kernel.Value, error) {
	m := map[string]kernel.Value{}
	if len(b) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode environment: %w", err)
	}
	return m, nil
}

// Record builds the store row of a process: its columns (its context
// among them) and snapshot.
func Record(p *kernel.Process) (*store.Process, error) {
	snap, err := Encode(p)
	if err != nil {
		return nil, fmt.Errorf("encode process %s: %w", p.ID, err)
	}
	env, err := EncodeEnv(p.Env)
	if err != nil {
		return nil, fmt.Errorf("encode process %s: %w", p.ID, err)
	}
	r := &store.Process{
		ID: p.ID, Root: p.Root().ID, ParentToken: -1,
		Definition: p.Graph.Name, Version: p.Graph.Version, State: p.State.String(),
		Context: p.Context, Env: env, Snapshot: snap, EventSeq: p.EventSeq,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
	if p.Parent != nil {
		r.Parent = p.Parent.ID
		for i, q := range p.Parent.Nested {
			if q == p {
				r.Position = i
			}
		}
	}
	if p.ParentToken != nil {
		r.ParentToken = p.ParentToken.ID
	}
	return r, nil
}

// Graphs finds the graph of a definition version.
type Graphs func(name string, version int) (*graph.Graph, error)

// DecodeTree rebuilds a process tree from its rows (root first, parents
// before their nested processes) and reindexes it for the kernel.
func DecodeTree(rows []*store.Process, graphs Graphs) (*kernel.Process, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("decode process tree: no rows")
	}
	byID := make(map[string]*kernel.Process, len(rows))
	var root *kernel.Process
	for _, r := range rows {
		p, err := Decode(r, graphs)
		if err != nil {
			return nil, err
		}
		byID[r.ID] = p
		if r.Parent == "" {
			if root != nil {
				return nil, fmt.Errorf("decode process tree %s: two roots", r.Root)
			}
			root = p
			continue
		}
		parent := byID[r.Parent]
		if parent == nil {
			return nil, fmt.Errorf("decode process %s: parent %s comes later or is missing", r.ID, r.Parent)
		}
		p.Parent = parent
		if r.ParentToken >= 0 {
			if r.ParentToken >= len(parent.NodeTokens) {
				return nil, fmt.Errorf("decode process %s: parent token %d out of range", r.ID, r.ParentToken)
			}
			p.ParentToken = parent.NodeTokens[r.ParentToken]
		}
		for len(parent.Nested) <= r.Position {
			parent.Nested = append(parent.Nested, nil)
		}
		parent.Nested[r.Position] = p
	}
	if root == nil {
		return nil, fmt.Errorf("decode process tree: no root")
	}
	var bad error
	root.Walk(func(p *kernel.Process) {
		for _, c := range p.Nested {
			if c == nil && bad == nil {
				bad = fmt.Errorf("decode process tree %s: nested process of %s missing", root.ID, p.ID)
			}
		}
	})
	if bad != nil {
		return nil, bad
	}
	kernel.Reindex(root)
	return root, nil
}

// Decode rebuilds one process from its row, without links to its parent or
// nested processes and without reindexing.
func Decode(r *store.Process, graphs Graphs) (*kernel.Process, error) {
	g, err := graphs(r.Definition, r.Version)
	if err != nil {
		return nil, fmt.Errorf("decode process %s: %w", r.ID, err)
	}
	var s snapshot
	if len(r.Snapshot) > 0 && r.Snapshot[0] == binaryTag {
		if s, err = decodeBinary(r.Snapshot); err != nil {
			return nil, fmt.Errorf("decode process %s: %w", r.ID, err)
		}
	} else if err := json.Unmarshal(r.Snapshot, &s); err != nil {
		return nil, fmt.Errorf("decode process %s: %w", r.ID, err)
	}
	state, ok := kernel.ParseState(r.State)
	if !ok {
		return nil, fmt.Errorf("decode process %s: unknown state %q", r.ID, r.State)
	}
	env, err := DecodeEnv(r.Env)
	if err != nil {
		return nil, fmt.Errorf("decode process %s: %w", r.ID, err)
	}
	p := &kernel.Process{
		ID: r.ID, Graph: g, State: state, Env: envOf(env),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Seq: s.Seq, EventSeq: r.EventSeq,
	}
	base := p.CreatedAt.UnixNano()
	fail := func(format string, args ...any) (*kernel.Process, error) {
		return nil, fmt.Errorf("decode process %s: %s", r.ID, fmt.Sprintf(format, args...))
	}
	for i, x := range s.Sets {
		ts := kernel.NewTokenSet(i, x.Name, len(x.Members), x.Level, envOf(x.Env))
		ts.MaxMemberIndex = x.Max
		for j, m := range x.Members {
			ts.MemberEnv().Env(j).SetPersistent(m)
		}
		p.TokenSets = append(p.TokenSets, ts)
	}
	sets := func(ms [][2]int) ([]kernel.Membership, bool) {
		if len(ms) == 0 {
			return nil, true
		}
		out := make([]kernel.Membership, len(ms))
		for i, m := range ms {
			if m[0] < 0 || m[0] >= len(p.TokenSets) {
				return nil, false
			}
			out[i] = kernel.Membership{Set: p.TokenSets[m[0]], Member: m[1]}
		}
		return out, true
	}
	p.NodeTokens = make([]*kernel.NodeToken, len(s.Nodes))
	envs := make([]attrs, len(s.Envs))
	for i, raw := range s.Envs {
		if err := json.Unmarshal(raw, &envs[i]); err != nil {
			return fail("environment %d: %v", i, err)
		}
	}
	decoded := make([]*kernel.Env, len(envs))
	for i, x := range s.Nodes {
		if x.Node < 0 || x.Node >= len(g.Nodes) {
			return fail("node token %d: node %d out of range", i, x.Node)
		}
		t := &kernel.NodeToken{
			ID: i, Seq: x.Seq, CompleteSeq: x.CompleteSeq, Process: p, Node: g.Nodes[x.Node],
			GuardAction: kernel.GuardAction(x.Guard), ExecType: kernel.ExecutionType(x.Exec),
			Complete: x.Complete, CreatedNs: atOffset(base, x.Created), CompletedNs: atOptOffset(base, x.Completed),
			DelayUntilNs: x.DelayUntil, DelayCount: x.DelayCount, Work: kernel.WorkFlags(x.Work),
		}
		if len(x.Notes) > 0 {
			t.Notes = x.Notes
		}
		if x.Env > 0 {
			if x.Env > len(envs) {
				return fail("node token %d: environment %d out of range", i, x.Env)
			}
			// Tokens with the same environment share it copy-on-write, as
			// they did before they were stored.
			if decoded[x.Env-1] == nil {
				decoded[x.Env-1] = envOf(envs[x.Env-1])
			}
			t.Env = decoded[x.Env-1].Share()
		}
		var ok bool
		if t.Sets, ok = sets(x.Sets); !ok {
			return fail("node token %d: token set out of range", i)
		}
		p.NodeTokens[i] = t
	}
	p.ArcTokens = make([]*kernel.ArcToken, len(s.Arcs))
	for i, x := range s.Arcs {
		if x.Arc < 0 || x.Arc >= len(g.Arcs) || x.Parent < 0 || x.Parent >= len(p.NodeTokens) || x.Child < 0 || x.Child > len(p.NodeTokens) {
			return fail("arc token %d out of range", i)
		}
		a := &kernel.ArcToken{
			ID: i, Seq: x.Seq, Process: p, Arc: g.Arcs[x.Arc], Parent: p.NodeTokens[x.Parent],
			Pending: x.Pending, Complete: x.Complete, ExecType: kernel.ExecutionType(x.Exec),
			CreatedNs: atOffset(base, x.Created), CompletedNs: atOptOffset(base, x.Completed),
		}
		if x.Child > 0 {
			a.Child = p.NodeTokens[x.Child-1]
		}
		var ok bool
		if a.Sets, ok = sets(x.Sets); !ok {
			return fail("arc token %d: token set out of range", i)
		}
		p.ArcTokens[i] = a
	}
	for i, x := range s.Nodes {
		t := p.NodeTokens[i]
		for _, id := range x.Parents {
			if id < 0 || id >= len(p.ArcTokens) {
				return fail("node token %d: parent arc token %d out of range", i, id)
			}
			t.Parents = append(t.Parents, p.ArcTokens[id])
		}
		for _, id := range x.Children {
			if id < 0 || id >= len(p.ArcTokens) {
				return fail("node token %d: child arc token %d out of range", i, id)
			}
			t.Children = append(t.Children, p.ArcTokens[id])
		}
	}
	for _, l := range s.Listeners {
		p.Listeners = append(p.Listeners, kernel.ListenerRef{Name: l.Name, Mask: kernel.MaskFromStored(l.Mask)})
	}
	p.ExtData = s.Ext
	if len(r.Context) > 0 {
		p.Context = r.Context
	}
	return p, nil
}
