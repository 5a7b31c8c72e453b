package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	veena "github.com/veena-wf/veena"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/kernel"
)

// RoutingKeyPrefix begins the context key that identifies instances of a
// schema: "@schema:<name>", whose value is the canonical form of the
// instance's routing pairs. The engine keeps such keys unique among
// executing processes, so one conversation has one instance.
const RoutingKeyPrefix = veena.UniqueContextPrefix + "schema:"

// routingValue is the canonical form of the routing pairs: a JSON array
// of [key, value] in the schema's key order. ok is false when ctx lacks a
// key (or the schema has none).
func routingValue(s *schemaformat.Schema, ctx map[string]string) (string, bool) {
	keys := s.RoutingKeys()
	if len(keys) == 0 {
		return "", false
	}
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		v, ok := ctx[k]
		if !ok {
			return "", false
		}
		pairs[i] = [2]string{k, v}
	}
	b, _ := json.Marshal(pairs)
	return string(b), true
}

// withRoutingKey returns ctx (a new map) with the routing key of s set
// from its pairs, or removed if they are incomplete.
func withRoutingKey(s *schemaformat.Schema, ctx map[string]string) map[string]string {
	out := maps.Clone(ctx)
	if out == nil {
		out = map[string]string{}
	}
	key := RoutingKeyPrefix + s.Name
	if v, ok := routingValue(s, ctx); ok {
		out[key] = v
	} else {
		delete(out, key)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// almanacValue converts a plain value into an attribute value.
func almanacValue(x any) (kernel.Value, error) {
	switch v := x.(type) {
	case nil:
		return kernel.Value{}, nil
	case map[string]any, []any:
		return jsonValue(v)
	case json.Number:
		return kernel.ValueOf(schemaformat.Number(v))
	}
	return kernel.ValueOf(x)
}

// jsonValue makes an attribute value of an object or list.
func jsonValue(x any) (kernel.Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return kernel.Value{}, err
	}
	return kernel.JSON(b)
}

// setAlmanac sets (nil: removes) one almanac key.
func setAlmanac(p *kernel.Process, key string, x any) error {
	v, err := almanacValue(x)
	if err != nil {
		return fmt.Errorf("almanac %s: %w", key, err)
	}
	if v.IsNone() {
		p.Env.Remove(key)
	} else {
		p.Env.Set(key, v)
	}
	p.Dirty = true
	return nil
}

// almanacOf returns the almanac as plain data.
func almanacOf(p *kernel.Process) map[string]any {
	m := p.Env.Map()
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = plainValue(v)
	}
	return out
}

func plainValue(v kernel.Value) any {
	if t, ok := v.Any().(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	if raw := v.JSONValue(); raw != nil { // a JSON array or object
		var x any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&x) == nil {
			return schemaformat.Normalize(x)
		}
	}
	return v.Any()
}

// builtin runs a built-in action inside the step and returns its result.
func (nt *nodeType) builtin(e *kernel.Engine, t *kernel.NodeToken, ni *nodeInstance, a *schemaformat.Action, args any) (any, error) {
	p := t.Process
	s := schemaOf(p)
	obj, _ := args.(map[string]any)
	switch a.Do {
	case schemaformat.ActAlmanacSet:
		for _, k := range sortedKeys(obj) {
			if err := setAlmanac(p, k, obj[k]); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case schemaformat.ActAlmanacUnset:
		keys, _ := obj["keys"].([]any)
		for _, k := range keys {
			name, _ := k.(string)
			p.Env.Remove(name)
		}
		p.Dirty = true
		return nil, nil
	case schemaformat.ActAlmanacSetParent:
		if p.Parent == nil {
			return nil, fmt.Errorf("instance %s has no parent instance", p.ID)
		}
		for _, k := range sortedKeys(obj) {
			if err := setAlmanac(p.Parent, k, obj[k]); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case schemaformat.ActAlmanacSetChild:
		name, _ := obj["child"].(string)
		cs := s.Child(name)
		if cs == nil {
			return nil, fmt.Errorf("%s has no child schema %q", s.Name, name)
		}
		n := 0
		for _, c := range p.Nested {
			if c.Graph.Name != cs.Name || c.State != kernel.Executing {
				continue
			}
			for _, k := range sortedKeys(obj) {
				if k == "child" {
					continue
				}
				if err := setAlmanac(c, k, obj[k]); err != nil {
					return nil, err
				}
			}
			n++
		}
		return int64(n), nil
	case schemaformat.ActContextSet:
		ctx := maps.Clone(p.Context)
		if ctx == nil {
			ctx = map[string]string{}
		}
		for k, v := range obj {
			str, err := contextString(v)
			if err != nil {
				return nil, fmt.Errorf("context %s: %w", k, err)
			}
			ctx[k] = str
		}
		e.SetContext(p, withRoutingKey(s, ctx))
		return nil, nil
	case schemaformat.ActEmit:
		m := &kernel.Message{Payload: obj["payload"], Context: p.Context, From: p.ID}
		m.Name, _ = obj["event"].(string)
		if m.Name == "" {
			return nil, errors.New("emit: the event has no name")
		}
		switch obj["to"] {
		case schemaformat.ToParent:
			if p.Parent == nil {
				return nil, fmt.Errorf("instance %s has no parent instance", p.ID)
			}
			e.Deliver(p.Parent, m)
			return nil, nil
		case schemaformat.ToChildren:
			child, _ := obj["child"].(string)
			return nt.emitToChildren(e, p, ni, m, child)
		}
		return nil, fmt.Errorf("emit: unknown destination %v", obj["to"])
	case schemaformat.ActChildStart:
		name, _ := obj["schema"].(string)
		cs := s.Child(name)
		if cs == nil {
			return nil, fmt.Errorf("%s has no child schema %q", s.Name, name)
		}
		extra, _ := obj["context"].(map[string]any)
		m := &kernel.Message{Name: "", Payload: obj["payload"], From: p.ID}
		c, err := startChild(e, p, cs, extra, m)
		if err != nil {
			return nil, err
		}
		ni.Children = append(ni.Children, c.ID)
		return c.ID, nil
	}
	return nil, fmt.Errorf("unknown built-in action %q", a.Do)
}

func contextString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("a context value is a string, number or boolean, not %T", v)
}

// emitToChildren delivers an event to the executing child instances (of
// one child schema, or of all) that wait for events of that name, and
// starts instances of the child schemas whose trigger it is, unless an
// executing instance of that schema has the same routing pairs (it gets
// the event instead). It returns the ids of the instances started.
func (nt *nodeType) emitToChildren(e *kernel.Engine, p *kernel.Process, ni *nodeInstance, m *kernel.Message, only string) (any, error) {
	s := schemaOf(p)
	var started []any
	for _, cs := range s.Children {
		if only != "" && cs.Local != only {
			continue
		}
		listens := listensTo(cs, m.Name)
		triggered := cs.Trigger != nil && cs.Trigger.FromParent && cs.Trigger.Event == m.Name
		if triggered && cs.Trigger.When != nil {
			v := vars(e, p, ni)
			v.Event = eventVar(m)
			ok, err := cs.Trigger.When.Bool(v)
			if err != nil {
				return nil, fmt.Errorf("trigger of %s: %w", cs.Name, err)
			}
			triggered = ok
		}
		// The routing pairs a new instance would have.
		newCtx := inheritContext(cs, p.Context, nil)
		rv, routable := routingValue(cs, newCtx)
		delivered := false
		for _, c := range p.Nested {
			if c.Graph.Name != cs.Name || c.State != kernel.Executing {
				continue
			}
			if listens {
				e.Deliver(c, m)
				delivered = true
			} else if triggered && routable && c.Context[RoutingKeyPrefix+cs.Name] == rv {
				e.Deliver(c, m)
				delivered = true
			}
		}
		if triggered && !delivered {
			c, err := startChild(e, p, cs, nil, m)
			if err != nil {
				return nil, err
			}
			ni.Children = append(ni.Children, c.ID)
			started = append(started, c.ID)
		}
	}
	return started, nil
}

// listensTo reports whether a schema has an event node for that name.
func listensTo(s *schemaformat.Schema, name string) bool {
	for _, n := range s.Nodes {
		if n.Event != nil && n.Event.Name == name {
			return true
		}
	}
	return false
}

// inheritContext is a child's context: the parent pairs it inherits, then
// extra pairs.
func inheritContext(cs *schemaformat.Schema, parent map[string]string, extra map[string]any) map[string]string {
	ctx := map[string]string{}
	for _, k := range cs.Inherit {
		if v, ok := parent[k]; ok {
			ctx[k] = v
		}
	}
	for k, v := range extra {
		if str, err := contextString(v); err == nil {
			ctx[k] = str
		}
	}
	return withRoutingKey(cs, ctx)
}

// startChild starts an instance of a child schema under p, with the event
// that started it.
func startChild(e *kernel.Engine, p *kernel.Process, cs *schemaformat.Schema, extra map[string]any, m *kernel.Message) (*kernel.Process, error) {
	defs := e.Kernel().Definitions
	if defs == nil {
		return nil, errors.New("no definitions are available to start a child schema")
	}
	g := defs(cs.Name)
	if g == nil {
		return nil, fmt.Errorf("child schema %s is not loaded", cs.Name)
	}
	gs, ok := g.Props.(*schemaformat.Schema)
	if !ok {
		return nil, fmt.Errorf("definition %s is not a schema", cs.Name)
	}
	ctx := inheritContext(gs, p.Context, extra)
	c := e.StartChild(p, g, kernel.NewEnv(), ctx, func(c *kernel.Process) error {
		c.Ext = &instance{Start: m, byToken: map[int]*nodeInstance{}}
		return nil
	})
	return c, nil
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
