package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/ident"
)

// Limits on the shape of a schema.
const (
	maxNodes       = 10000
	maxActions     = 200
	maxNext        = 200
	maxChildDepth  = 8
	maxRetries     = 100
	maxQueueLimit  = 10000
	maxDurationLen = 64
)

// names of schemas, nodes, actions, almanac and context keys, and events.
var (
	nameForm  = ident.New("A-Za-z_", "A-Za-z0-9_.-", 127)
	keyForm   = ident.New("A-Za-z_", "A-Za-z0-9_", 127)
	eventForm = ident.New("A-Za-z_", "A-Za-z0-9_.:/-", 127)
)

// decoder turns a value tree into schemas, collecting every problem.
type decoder struct {
	lerr *graph.LoadError
	// exprBudget is what is left of MaxExprTotal.
	exprBudget int
}

func (d *decoder) add(pos graph.Pos, format string, args ...any) { d.lerr.Add(pos, format, args...) }

// object checks that v is an object whose keys are all in allowed (any
// keys when none are given).
func (d *decoder) object(v *value, what string, allowed ...string) bool {
	if v.kind != kObject {
		d.add(v.pos, "%s must be an object, not a %s", what, v.describe())
		return false
	}
	if len(allowed) == 0 {
		return true
	}
	for _, e := range v.keys {
		if !slices.Contains(allowed, e.key) {
			d.add(e.keyPos, "unknown key %q in %s (known: %s)", e.key, what, strings.Join(allowed, ", "))
		}
	}
	return true
}

// str reads an optional string member; required reports its absence.
func (d *decoder) str(obj *value, key, what string, required bool) (string, graph.Pos) {
	v := obj.get(key)
	if v == nil {
		if required {
			d.add(obj.pos, "%s needs %q", what, key)
		}
		return "", obj.pos
	}
	if v.kind != kString {
		d.add(v.pos, "%s: %q must be a string, not a %s", what, key, v.describe())
		return "", v.pos
	}
	return v.str, v.pos
}

func (d *decoder) strList(obj *value, key, what string, form *ident.Pattern) []string {
	v := obj.get(key)
	if v == nil {
		return nil
	}
	if v.kind != kList {
		d.add(v.pos, "%s: %q must be a list of strings, not a %s", what, key, v.describe())
		return nil
	}
	var out []string
	for _, x := range v.list {
		if x.kind != kString {
			d.add(x.pos, "%s: %q must hold strings, not a %s", what, key, x.describe())
			continue
		}
		if !form.Match(x.str) {
			d.add(x.pos, "%s: %q is not a valid name (letters, digits and _ , starting with a letter or _)", what, x.str)
			continue
		}
		if slices.Contains(out, x.str) {
			d.add(x.pos, "%s: %q is listed twice", what, x.str)
			continue
		}
		out = append(out, x.str)
	}
	return out
}

func (d *decoder) expr(v *value, what string) *Expr {
	if v == nil {
		return nil
	}
	if v.kind != kString {
		d.add(v.pos, "%s must be a CEL expression (a string), not a %s", what, v.describe())
		return nil
	}
	src := strings.TrimSpace(v.str)
	src = strings.TrimSpace(strings.TrimPrefix(src, "="))
	if d.exprBudget -= len(src); d.exprBudget < 0 {
		if d.exprBudget+len(src) >= 0 {
			d.add(v.pos, "the file's expressions hold more than %d bytes in all", MaxExprTotal)
		}
		return nil
	}
	x, err := CompileExpr(src, v.pos)
	if err != nil {
		d.add(v.pos, "%s %q: %v", what, v.str, err)
		return nil
	}
	return x
}

// schema decodes a schema object (the file's top level, or a child).
func (d *decoder) schema(v *value, parent *Schema, depth int) *Schema {
	s := &Schema{Pos: v.pos, Parent: parent, QueueLimit: DefaultQueueLimit}
	what := "the schema"
	if parent != nil {
		what = "a child schema"
	}
	if !d.object(v, what, "schema", "description", "context", "trigger", "almanac", "events", "nodes", "children") {
		return nil
	}
	name, npos := d.str(v, "schema", what, true)
	if name != "" && !nameForm.Match(name) {
		d.add(npos, "schema name %q: use letters, digits, '_', '-' and '.', starting with a letter or '_' (at most 128)", name)
	}
	if parent != nil && strings.Contains(name, ".") {
		d.add(npos, "child schema name %q must not contain '.': children are named <parent>.<child>", name)
	}
	s.Local = name
	s.Name = name
	if parent != nil {
		s.Name = parent.Name + "." + name
		what = fmt.Sprintf("child schema %q", name)
	} else if name != "" {
		what = fmt.Sprintf("schema %q", name)
	}
	s.Description, _ = d.str(v, "description", what, false)

	if c := v.get("context"); c != nil {
		if d.object(c, what+": context", "keys", "inherit") {
			s.ContextKeys = d.strList(c, "keys", what+": context.keys", &keyForm)
			s.Inherit = d.strList(c, "inherit", what+": context.inherit", &keyForm)
			if parent == nil && len(s.Inherit) > 0 {
				d.add(c.get("inherit").pos, "%s: context.inherit is for child schemas (a top-level schema has no parent)", what)
			}
			if parent != nil {
				for _, k := range s.Inherit {
					if !slices.Contains(parent.RoutingKeys(), k) {
						d.add(c.get("inherit").pos, "%s: context.inherit names %q, which is not a context key of %s", what, k, parent.Name)
					}
				}
			}
		}
	}
	if t := v.get("trigger"); t != nil {
		s.Trigger = d.trigger(t, what, parent != nil)
	}
	if a := v.get("almanac"); a != nil {
		if d.object(a, what+": almanac") {
			for _, e := range a.keys {
				if !keyForm.Match(e.key) {
					d.add(e.keyPos, "%s: almanac key %q: use letters, digits and '_', starting with a letter or '_'", what, e.key)
					continue
				}
				s.Almanac = append(s.Almanac, Entry{Key: e.key, Value: literal(e.val)})
			}
		}
	}
	if ev := v.get("events"); ev != nil {
		if d.object(ev, what+": events", "queue") {
			if q := ev.get("queue"); q != nil {
				n, ok := d.integer(q, what+": events.queue", 0, maxQueueLimit)
				if ok {
					s.QueueLimit = n
				}
			}
		}
	}
	nodes := v.get("nodes")
	switch {
	case nodes == nil:
		d.add(v.pos, "%s needs \"nodes\"", what)
	case nodes.kind != kList:
		d.add(nodes.pos, "%s: nodes must be a list, not a %s", what, nodes.describe())
	case len(nodes.list) > maxNodes:
		d.add(nodes.pos, "%s has %d nodes; at most %d", what, len(nodes.list), maxNodes)
	default:
		for _, n := range nodes.list {
			if node := d.node(n, what); node != nil {
				s.Nodes = append(s.Nodes, node)
			}
		}
	}
	if ch := v.get("children"); ch != nil {
		switch {
		case ch.kind != kList:
			d.add(ch.pos, "%s: children must be a list, not a %s", what, ch.describe())
		case depth+1 > maxChildDepth:
			d.add(ch.pos, "%s: children are nested more than %d deep", what, maxChildDepth)
		default:
			for _, c := range ch.list {
				if child := d.schema(c, s, depth+1); child != nil {
					if child.Local != "" && s.Child(child.Local) != nil {
						d.add(c.pos, "%s: two children are named %q", what, child.Local)
						continue
					}
					s.Children = append(s.Children, child)
				}
			}
		}
	}
	d.validate(s, what, nodes)
	return s
}

func (d *decoder) trigger(v *value, what string, child bool) *Trigger {
	if !d.object(v, what+": trigger", "event", "when", "from") {
		return nil
	}
	t := &Trigger{Pos: v.pos}
	var pos graph.Pos
	t.Event, pos = d.str(v, "event", what+": trigger", true)
	if t.Event != "" && !eventForm.Match(t.Event) {
		d.add(pos, "%s: trigger event %q is not a valid event name", what, t.Event)
	}
	t.When = d.expr(v.get("when"), what+": trigger condition")
	from, fpos := d.str(v, "from", what+": trigger", false)
	switch {
	case from == "":
		if child {
			d.add(v.pos, "%s: a child schema's trigger needs \"from\": \"parent\" (children are started by their parent's events)", what)
		}
	case from == ToParent:
		if !child {
			d.add(fpos, "%s: only a child schema can be triggered from its parent", what)
		}
		t.FromParent = true
	default:
		d.add(fpos, "%s: trigger.from must be \"parent\", not %q", what, from)
	}
	return t
}

func (d *decoder) integer(v *value, what string, lo, hi int) (int, bool) {
	if v.kind != kNumber {
		d.add(v.pos, "%s must be a whole number, not a %s", what, v.describe())
		return 0, false
	}
	n, err := strconv.ParseInt(v.str, 10, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		d.add(v.pos, "%s must be a whole number from %d to %d, not %s", what, lo, hi, v.str)
		return 0, false
	}
	return int(n), true
}

func (d *decoder) duration(v *value, what string) (time.Duration, bool) {
	if v.kind != kString {
		d.add(v.pos, "%s must be a duration string (ISO 8601 like \"PT15M\" or Go like \"15m\"), not a %s", what, v.describe())
		return 0, false
	}
	x, err := ParseDuration(v.str)
	if err != nil {
		d.add(v.pos, "%s: %v", what, err)
		return 0, false
	}
	return x, true
}

var nodeKinds = []string{KindRoot, KindExecution, KindEvent, KindTimer, KindTerminator}

func (d *decoder) node(v *value, schemaWhat string) *Node {
	if !d.object(v, "a node", "id", "type", "label", "description", "event", "timer", "actions", "next") {
		return nil
	}
	n := &Node{Pos: v.pos}
	var pos graph.Pos
	n.ID, pos = d.str(v, "id", "a node", true)
	if n.ID != "" && !nameForm.Match(n.ID) {
		d.add(pos, "node id %q: use letters, digits, '_', '-' and '.', starting with a letter or '_' (at most 128)", n.ID)
	}
	what := fmt.Sprintf("node %q", n.ID)
	n.Kind, pos = d.str(v, "type", what, true)
	if n.Kind != "" && !slices.Contains(nodeKinds, n.Kind) {
		d.add(pos, "%s: unknown type %q (known: %s)", what, n.Kind, strings.Join(nodeKinds, ", "))
	}
	n.Label, _ = d.str(v, "label", what, false)
	n.Description, _ = d.str(v, "description", what, false)

	ev := v.get("event")
	switch {
	case n.Kind == KindEvent && ev == nil:
		d.add(v.pos, "%s: an event node needs \"event\": {\"name\": …}", what)
	case n.Kind != KindEvent && ev != nil:
		d.add(ev.pos, "%s: only event nodes wait for an event (this is a %s node)", what, n.Kind)
	case ev != nil && d.object(ev, what+": event", "name", "when"):
		w := &EventWait{}
		w.Name, pos = d.str(ev, "name", what+": event", true)
		if w.Name != "" && !eventForm.Match(w.Name) {
			d.add(pos, "%s: event name %q is not a valid event name", what, w.Name)
		}
		w.When = d.expr(ev.get("when"), what+": event filter")
		n.Event = w
	}
	tm := v.get("timer")
	switch {
	case n.Kind == KindTimer && tm == nil:
		d.add(v.pos, "%s: a timer node needs \"timer\": {\"after\": \"PT15M\"} or {\"at\": expression}", what)
	case n.Kind != KindTimer && tm != nil:
		d.add(tm.pos, "%s: only timer nodes wait for a time (this is a %s node)", what, n.Kind)
	case tm != nil && d.object(tm, what+": timer", "after", "at"):
		w := &TimerWait{}
		after, at := tm.get("after"), tm.get("at")
		switch {
		case after != nil && at != nil:
			d.add(tm.pos, "%s: a timer waits either \"after\" a duration or until \"at\" a time, not both", what)
		case after == nil && at == nil:
			d.add(tm.pos, "%s: a timer needs \"after\" (a duration) or \"at\" (an expression giving a time)", what)
		case after != nil:
			if x, ok := d.duration(after, what+": timer.after"); ok {
				if x <= 0 {
					d.add(after.pos, "%s: timer.after must be longer than zero", what)
				}
				w.After = x
			}
		default:
			w.At = d.expr(at, what+": timer.at")
		}
		n.Timer = w
	}

	if acts := v.get("actions"); acts != nil {
		switch {
		case acts.kind != kList:
			d.add(acts.pos, "%s: actions must be a list, not a %s", what, acts.describe())
		case len(acts.list) > maxActions:
			d.add(acts.pos, "%s has %d actions; at most %d", what, len(acts.list), maxActions)
		default:
			for _, a := range acts.list {
				if act := d.action(a, what); act != nil {
					if act.ID != "" && slices.ContainsFunc(n.Actions, func(x *Action) bool { return x.ID == act.ID }) {
						d.add(a.pos, "%s: two actions have the id %q", what, act.ID)
						continue
					}
					n.Actions = append(n.Actions, act)
				}
			}
		}
	}
	if nx := v.get("next"); nx != nil {
		switch {
		case n.Kind == KindTerminator:
			d.add(nx.pos, "%s: a terminator ends the instance and has no \"next\"", what)
		case nx.kind != kList:
			d.add(nx.pos, "%s: next must be a list, not a %s", what, nx.describe())
		case len(nx.list) > maxNext:
			d.add(nx.pos, "%s has %d connections; at most %d", what, len(nx.list), maxNext)
		default:
			for _, c := range nx.list {
				if d.object(c, what+": a connection", "to", "when", "label") {
					x := &Next{Pos: c.pos}
					x.To, _ = d.str(c, "to", what+": a connection", true)
					x.Label, _ = d.str(c, "label", what+": a connection", false)
					x.When = d.expr(c.get("when"), what+": condition")
					if w := c.get("when"); w != nil && x.When == nil && w.kind == kString {
						// keep the connection conditional even though the condition failed to compile
						x.When = &Expr{Source: w.str, Pos: w.pos}
					}
					n.Next = append(n.Next, x)
				}
			}
		}
	} else if n.Kind != KindTerminator && n.Kind != "" {
		d.add(v.pos, "%s: every node but a terminator needs \"next\" (where the instance goes after it)", what)
	}
	return n
}

func (d *decoder) action(v *value, nodeWhat string) *Action {
	if !d.object(v, nodeWhat+": an action", "id", "do", "job", "with", "result", "retry", "timeout") {
		return nil
	}
	a := &Action{Pos: v.pos, Timeout: DefaultActionTimeout}
	var pos graph.Pos
	a.ID, pos = d.str(v, "id", nodeWhat+": an action", true)
	if a.ID != "" && !nameForm.Match(a.ID) {
		d.add(pos, "%s: action id %q: use letters, digits, '_', '-' and '.'", nodeWhat, a.ID)
	}
	what := fmt.Sprintf("%s, action %q", nodeWhat, a.ID)
	var dpos, jpos graph.Pos
	a.Do, dpos = d.str(v, "do", what, false)
	a.Job, jpos = d.str(v, "job", what, false)
	switch {
	case a.Do == "" && a.Job == "":
		d.add(v.pos, "%s needs \"do\" (a built-in or registered action) or \"job\" (a job type for outside programs)", what)
	case a.Do != "" && a.Job != "":
		d.add(jpos, "%s has both \"do\" and \"job\"; an action is one or the other", what)
	case a.Do != "" && !eventForm.Match(a.Do):
		d.add(dpos, "%s: %q is not a valid action name", what, a.Do)
	case a.Job != "" && !eventForm.Match(a.Job):
		d.add(jpos, "%s: %q is not a valid job type", what, a.Job)
	}
	if w := v.get("with"); w != nil {
		a.With = compileArg(w, d.lerr, &d.exprBudget)
	}
	var rpos graph.Pos
	a.Result, rpos = d.str(v, "result", what, false)
	if a.Result != "" && !keyForm.Match(a.Result) {
		d.add(rpos, "%s: result key %q: use letters, digits and '_', starting with a letter or '_'", what, a.Result)
	}
	if r := v.get("retry"); r != nil && d.object(r, what+": retry", "max", "delay") {
		if m := r.get("max"); m != nil {
			a.Retry.Max, _ = d.integer(m, what+": retry.max", 0, maxRetries)
		}
		if dl := r.get("delay"); dl != nil {
			a.Retry.Delay, _ = d.duration(dl, what+": retry.delay")
		}
	}
	if t := v.get("timeout"); t != nil {
		if x, ok := d.duration(t, what+": timeout"); ok {
			if x < time.Second {
				d.add(t.pos, "%s: timeout must be at least one second", what)
			} else {
				a.Timeout = x
			}
		}
	}
	if Builtin(a.Do) {
		d.builtinArgs(a, v, what)
	}
	return a
}

// builtinArgs checks the arguments of a built-in action.
func (d *decoder) builtinArgs(a *Action, v *value, what string) {
	pos := v.pos
	if w := v.get("with"); w != nil {
		pos = w.pos
	}
	needObject := func() bool {
		if !a.With.IsObject() {
			d.add(pos, "%s: %s needs \"with\": an object of the keys to set", what, a.Do)
			return false
		}
		return true
	}
	keysValid := func(skip ...string) {
		w := v.get("with")
		for _, e := range w.keys {
			if slices.Contains(skip, e.key) {
				continue
			}
			if !keyForm.Match(e.key) {
				d.add(e.keyPos, "%s: key %q: use letters, digits and '_', starting with a letter or '_'", what, e.key)
			}
		}
	}
	switch a.Do {
	case ActAlmanacSet, ActAlmanacSetParent, ActContextSet:
		if needObject() {
			keysValid()
			if len(a.With.Keys()) == 0 {
				d.add(pos, "%s: %s with nothing to set", what, a.Do)
			}
		}
	case ActAlmanacSetChild:
		if needObject() {
			keysValid("child")
			if a.With.Field("child") == nil {
				d.add(pos, "%s: almanac.setChild needs \"child\": the child schema's name", what)
			}
		}
	case ActAlmanacUnset:
		w := v.get("with")
		ok := a.With.IsObject() && a.With.Field("keys") != nil && len(a.With.Keys()) == 1
		if ok {
			ks := w.get("keys")
			ok = ks.kind == kList
			for _, k := range ks.list {
				if k.kind != kString || !keyForm.Match(k.str) {
					d.add(k.pos, "%s: almanac.unset keys must be almanac key names", what)
				}
			}
		}
		if !ok {
			d.add(pos, "%s: almanac.unset needs \"with\": {\"keys\": [names]}", what)
		}
	case ActEmit:
		if !a.With.IsObject() || a.With.Field("event") == nil {
			d.add(pos, "%s: emit needs \"with\": {\"event\": name, \"to\": \"parent\"|\"children\"|\"context\", \"payload\": …}", what)
			return
		}
		for _, k := range a.With.Keys() {
			if !slices.Contains([]string{"event", "to", "payload", "context", "child"}, k) {
				d.add(pos, "%s: emit does not take %q (it takes event, to, payload, context, child)", what, k)
			}
		}
		if to, ok := a.With.Field("to").Literal(); ok && to != nil {
			s, _ := to.(string)
			if s != ToParent && s != ToChildren && s != ToContext {
				d.add(pos, "%s: emit's \"to\" must be \"parent\", \"children\" or \"context\", not %v", what, to)
			}
		}
		if ev, ok := a.With.Field("event").Literal(); ok {
			s, _ := ev.(string)
			if !eventForm.Match(s) {
				d.add(pos, "%s: emit's event %v is not a valid event name", what, ev)
			}
		}
	case ActChildStart:
		if !a.With.IsObject() || a.With.Field("schema") == nil {
			d.add(pos, "%s: child.start needs \"with\": {\"schema\": child name, \"payload\": …, \"context\": {…}}", what)
			return
		}
		for _, k := range a.With.Keys() {
			if !slices.Contains([]string{"schema", "payload", "context"}, k) {
				d.add(pos, "%s: child.start does not take %q (it takes schema, payload, context)", what, k)
			}
		}
	}
}

// ParseDuration reads an ISO 8601 duration ("PT15M", "P1DT2H", "P2W") or
// a Go duration ("15m", "1h30m").
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > maxDurationLen {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if s[0] != 'P' && s[0] != 'p' {
		x, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("duration %q: want ISO 8601 (PT15M) or Go (15m)", s)
		}
		return x, nil
	}
	rest := strings.ToUpper(s[1:])
	var total float64
	inTime := false
	any := false
	for len(rest) > 0 {
		if rest[0] == 'T' {
			if inTime {
				return 0, fmt.Errorf("duration %q: two T", s)
			}
			inTime = true
			rest = rest[1:]
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.' || rest[i] == ',') {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, fmt.Errorf("duration %q: want ISO 8601 like PT15M or P1DT2H", s)
		}
		n, err := strconv.ParseFloat(strings.ReplaceAll(rest[:i], ",", "."), 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %v", s, err)
		}
		unit := rest[i]
		rest = rest[i+1:]
		var d float64
		switch {
		case !inTime && unit == 'W':
			d = 7 * 24 * float64(time.Hour)
		case !inTime && unit == 'D':
			d = 24 * float64(time.Hour)
		case !inTime && (unit == 'Y' || unit == 'M'):
			return 0, fmt.Errorf("duration %q: years and months have no fixed length; use days", s)
		case inTime && unit == 'H':
			d = float64(time.Hour)
		case inTime && unit == 'M':
			d = float64(time.Minute)
		case inTime && unit == 'S':
			d = float64(time.Second)
		default:
			return 0, fmt.Errorf("duration %q: unexpected %q", s, string(unit))
		}
		total += n * d
		any = true
	}
	if !any {
		return 0, fmt.Errorf("duration %q has no amount", s)
	}
	if total > float64(100*365*24*time.Hour) {
		return 0, fmt.Errorf("duration %q is longer than a hundred years", s)
	}
	return time.Duration(total), nil
}
