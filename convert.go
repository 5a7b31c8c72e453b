package veena

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/snapshot"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// Token ids are the process id plus the token's number in the TestProcess
// notation (creation order from 1): "<process>.n3" is node token [3 …],
// "<process>.a2" arc token 2. Kernel messages number tokens the same way.
func nodeTokenID(process string, i int) string { return process + ".n" + strconv.Itoa(i+1) }
func arcTokenID(process string, i int) string  { return process + ".a" + strconv.Itoa(i+1) }

// parseNodeTokenID splits a node token id into its process id and the
// token's index.
func parseNodeTokenID(id string) (string, int, error) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || i+2 > len(id) || id[i+1] != 'n' {
		return "", 0, notFound("node token %q", id)
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 1 || strconv.Itoa(n) != id[i+2:] {
		return "", 0, notFound("node token %q", id)
	}
	return id[:i], n - 1, nil
}

func notFound(format string, args ...any) error {
	return &kernel.Error{Code: ErrNotFound.Code, Msg: fmt.Sprintf(format, args...) + " not found"}
}

func invalid(format string, args ...any) error {
	return &kernel.Error{Code: ErrInvalidArgument.Code, Msg: fmt.Sprintf(format, args...)}
}

func definitionOf(g *graph.Graph) *Definition {
	d := &Definition{Name: g.Name, Version: g.Version, Format: g.Format, Hash: g.Hash, CreatedAt: g.CreatedAt,
		Nodes: make([]Node, len(g.Nodes)), Arcs: make([]Arc, len(g.Arcs)), Label: g.Label, Warnings: g.Warnings}
	for i, n := range g.Nodes {
		kind := n.Kind
		if kind == "" {
			kind = n.Type // a Sarasvati node's kind is its type
		}
		d.Nodes[i] = Node{Name: n.Name, External: n.ExternalName(), Type: n.Type, Start: n.IsStart && n.External == nil,
			Join: string(n.Join), JoinParam: n.JoinParam, Guard: n.Guard, Label: n.Label, Kind: kind}
		if x, ok := n.Props.(detailer); ok {
			d.Nodes[i].Detail = x.Detail()
		}
	}
	if x, ok := g.Props.(detailer); ok {
		d.Detail = x.Detail()
	}
	for i, a := range g.Arcs {
		d.Arcs[i] = arcOf(a)
	}
	d.Net = netViewOf(g)
	return d
}

// detailer is implemented by a format's properties of a node or graph
// that the API shows (Node.Detail, Definition.Detail).
type detailer interface{ Detail() any }

func arcOf(a *graph.Arc) Arc {
	x := Arc{From: a.From.Name, To: a.To.Name, FromExternal: a.From.ExternalName(), ToExternal: a.To.ExternalName()}
	if a.Name != "" {
		name := a.Name
		x.Name = &name
	}
	return x
}

// process renders a kernel process for the API; fresh may hold its waits,
// as the command's prepare found them.
func (e *Engine) process(p *kernel.Process, t *tree, fresh []freshFacts) *Process {
	if p == nil {
		return nil
	}
	out := &Process{ID: p.ID, Definition: p.Graph.Name, Version: p.Graph.Version, State: p.State.String(),
		Env: p.Env.Map(), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if p.ParentToken != nil {
		id := nodeTokenID(p.ParentToken.Process.ID, p.ParentToken.ID)
		out.ParentToken = &id
	}
	if len(p.Context) > 0 {
		out.Context = maps.Clone(p.Context)
	}
	if p.Parent != nil && p.ParentToken == nil {
		out.Parent = p.Parent.ID
	}
	for _, f := range fresh {
		if f.p == p {
			setWaits(out, p, f.waits, f.stalled)
			return out
		}
	}
	ws, _, stalled := waitsOf(p)
	setWaits(out, p, ws, stalled)
	return out
}

// processRow renders a stored process row for the API.
func processRow(r *store.Process) (*Process, error) {
	env, err := snapshot.DecodeEnv(r.Env)
	if err != nil {
		return nil, err
	}
	out := &Process{ID: r.ID, Definition: r.Definition, Version: r.Version, State: r.State, Env: env,
		Context: r.Context, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if len(out.Context) == 0 {
		out.Context = nil
	}
	if r.Parent != "" && r.ParentToken < 0 {
		out.Parent = r.Parent
	}
	if r.Parent != "" && r.ParentToken >= 0 {
		id := nodeTokenID(r.Parent, r.ParentToken)
		out.ParentToken = &id
	}
	setRowWaits(out, r)
	return out, nil
}

func setRefs(p *kernel.Process, ms []kernel.Membership) []TokenSetRef {
	out := make([]TokenSetRef, len(ms))
	for i, m := range ms {
		out[i] = TokenSetRef{Set: p.ID + ".s" + strconv.Itoa(m.Set.ID), Name: m.Set.Name, Member: m.Member}
	}
	return out
}

func nodeTokenOf(t *kernel.NodeToken) NodeToken {
	p := t.Process
	x := NodeToken{ID: nodeTokenID(p.ID, t.ID), Process: p.ID, Node: t.Node.Name, External: t.Node.ExternalName(),
		Complete: t.Complete, ExecutionType: t.ExecType.String(), TokenSets: setRefs(p, t.Sets),
		Env: t.Env.Map(), CreatedAt: t.CreatedAt(), Parents: []string{}, Children: []string{}}
	if t.GuardAction != kernel.GuardNone {
		s := t.GuardAction.String()
		x.GuardAction = &s
	}
	for _, a := range t.Parents {
		x.Parents = append(x.Parents, arcTokenID(p.ID, a.ID))
	}
	for _, a := range t.Children {
		x.Children = append(x.Children, arcTokenID(p.ID, a.ID))
	}
	if c := t.CompletedAt(); t.Complete && !c.IsZero() {
		x.CompletedAt = &c
	}
	if d := t.DelayUntil(); t.GuardAction == kernel.Delay && !t.Complete && !d.IsZero() {
		x.DelayUntil = &d
	}
	return x
}

func arcTokenOf(a *kernel.ArcToken) ArcToken {
	p := a.Process
	x := ArcToken{ID: arcTokenID(p.ID, a.ID), Process: p.ID, Arc: arcOf(a.Arc), Parent: nodeTokenID(p.ID, a.Parent.ID),
		Pending: a.Pending, Complete: a.Complete, ExecutionType: a.ExecType.String(), TokenSets: setRefs(p, a.Sets)}
	if a.Child != nil {
		c := nodeTokenID(p.ID, a.Child.ID)
		x.Child = &c
	}
	return x
}

func historyOf(p *kernel.Process) *TokenHistory {
	h := &TokenHistory{NodeTokens: make([]NodeToken, len(p.NodeTokens)), ArcTokens: make([]ArcToken, len(p.ArcTokens))}
	for i, t := range p.NodeTokens {
		h.NodeTokens[i] = nodeTokenOf(t)
	}
	for i, a := range p.ArcTokens {
		h.ArcTokens[i] = arcTokenOf(a)
	}
	return h
}

// eventTypeCodes are the numbers of the kernel's event types in the
// compact record, by kernel.EventType.Index.
var eventTypeCodes = func() []uint64 {
	codes := make([]uint64, len(kernel.EventTypes))
	for i, t := range kernel.EventTypes {
		codes[i] = store.TypeCode(t.String())
	}
	return codes
}()

// eventRecord encodes the events q fired in this command as the one
// record the store keeps of them.
func eventRecord(q *kernel.Process) store.EventRecord {
	var enc store.EventEncoder
	enc.Begin(make([]byte, 0, 8+12*len(q.Events)), q.ID, len(q.Events))
	for i := range q.Events {
		ev := q.Event(i)
		node, arc := ev.NodeTokenID(), ev.ArcTokenID()
		var code uint64
		if i := ev.Type.Index(); i >= 0 {
			code = eventTypeCodes[i]
		}
		enc.AddCoded(ev.Seq, ev.Type.String(), code, node, arc, ev.ArcNames(), ev.At().UnixNano())
	}
	return enc.Record()
}

func apiEvent(ev store.Event) Event {
	x := Event{Seq: ev.Seq, Process: ev.Process, Type: ev.Type, At: ev.At.UTC()}
	if ev.NodeToken >= 0 {
		id := nodeTokenID(ev.Process, ev.NodeToken)
		x.NodeToken = &id
	}
	if ev.ArcToken >= 0 {
		id := arcTokenID(ev.Process, ev.ArcToken)
		x.ArcToken = &id
	}
	if ev.ArcNames != nil {
		x.ArcNames = make([]*string, len(ev.ArcNames))
		for i, n := range ev.ArcNames {
			if n != "" {
				x.ArcNames[i] = &n
			}
		}
	}
	return x
}

// valuesOf converts API attribute values; nil entries are kept as removals.
func valuesOf(m map[string]any) (map[string]*Value, error) {
	out := make(map[string]*Value, len(m))
	for k, x := range m {
		if x == nil {
			out[k] = nil
			continue
		}
		v, err := kernel.ValueOf(x)
		if err != nil {
			return nil, invalid("attribute %q: %v", k, err)
		}
		out[k] = &v
	}
	return out, nil
}

func envOf(m map[string]any) (*kernel.Env, error) {
	vals, err := valuesOf(m)
	if err != nil {
		return nil, err
	}
	env := kernel.NewEnv()
	for k, v := range vals {
		if v != nil {
			env.Set(k, *v)
		}
	}
	return env, nil
}

// NodeTokenID is the API id of a process's node token at index i (as
// node types number them), for formats that show their own node state.
func NodeTokenID(process string, i int) string { return nodeTokenID(process, i) }
