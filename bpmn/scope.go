package bpmn

import (
	"fmt"
	"strconv"

	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

// openScope starts an embedded sub-process: the token stays active as the
// scope's owner; a token set of one member holds what runs inside: the
// event sub-processes' listeners, and a token at the start event (or, with
// none, at every element no flow leads to).
func openScope(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	p := t.Process
	set, err := e.NewTokenSet(p, el.ID, 1, t.Sets, nil, nil)
	if err != nil {
		e.Fail(err)
	}
	setNotes(e, t, noteScope, strconv.Itoa(set.ID))
	sets := append(append([]kernel.Membership(nil), t.Sets...), kernel.Membership{Set: set})
	armListeners(e, p, el.ID, sets, t.Env)
	var starts []string
	for _, c := range el.Children {
		if c.Kind == "startEvent" {
			starts = append(starts, c.ID)
		}
	}
	if len(starts) == 0 {
		for _, c := range el.Children {
			n := p.Graph.Node(c.ID)
			if len(n.InArcs()) == 0 && c.Kind != "boundaryEvent" && !c.TriggeredByEvent && !c.ForCompensation && c.Kind != "intermediateCatchEvent" {
				starts = append(starts, c.ID)
			}
		}
	}
	for _, s := range starts {
		create(e, p, s, sets, t.Env, nil)
	}
}

// armListeners creates the listening tokens of a scope's event
// sub-processes ("" the process level).
func armListeners(e *kernel.Engine, p *kernel.Process, scope string, sets []kernel.Membership, env *kernel.Env) {
	for _, id := range propsOf(p.Graph).Listeners[scope] {
		create(e, p, id, sets, env, map[string]string{noteMode: "listen"})
	}
}

// armProcessListeners creates the process-level listeners once, when the
// process starts.
func armProcessListeners(e *kernel.Engine, p *kernel.Process) {
	ids := propsOf(p.Graph).Listeners[""]
	if len(ids) == 0 {
		return
	}
	for _, t := range p.NodeTokens {
		if t.Node.Name == ids[0] {
			return // armed already
		}
	}
	armListeners(e, p, "", nil, nil)
}

// scopeSet returns the token set a scope owner opened.
func scopeSet(t *kernel.NodeToken) *kernel.TokenSet {
	id, err := strconv.Atoi(t.Note(noteScope))
	if err != nil || id < 0 || id >= len(t.Process.TokenSets) {
		return nil
	}
	return t.Process.TokenSets[id]
}

// isListener reports whether a token listens for an event that has not
// happened: a boundary event, an event sub-process's start. Listeners do
// not keep their scope alive.
func isListener(t *kernel.NodeToken) bool {
	return t.Note(noteMode) == "listen"
}

// busy reports whether anything but listeners is active in a scope (nil:
// the process level).
func busy(p *kernel.Process, set *kernel.TokenSet) bool {
	for _, t := range p.NodeTokens {
		if !t.Active() || t.Complete || isListener(t) {
			continue
		}
		if set == nil || hasSet(t.Sets, set) {
			return true
		}
	}
	for _, a := range p.ArcTokens {
		if a.Complete {
			continue
		}
		if set == nil || hasSet(a.Sets, set) {
			return true
		}
	}
	return false
}

// settle is the BPMN settler: when a step has nothing left to run, it
// retries waiting inclusive joins, completes the scopes that have nothing
// active any more (sub-processes, multi-instance bodies, event
// sub-processes) and, when only listeners are left at the process level,
// withdraws them so that the process completes.
func settle(e *kernel.Engine, p *kernel.Process) error {
	props := propsOf(p.Graph)
	if props == nil || !props.HasScopes {
		return nil
	}
	return guard(e, func() { must(e, settleScopes(e, p)) })
}

func settleScopes(e *kernel.Engine, p *kernel.Process) error {
	for _, a := range p.ArcTokens {
		if a.Active() && !a.Complete && a.Arc.To.JoinParam == bpmn.JoinInclusive {
			if _, err := e.RetryIncompleteArcToken(a); err != nil {
				return err
			}
			if p.State != kernel.Executing {
				return nil
			}
		}
	}
	// Scopes, innermost first (owners created later are nested deeper or later).
	for i := len(p.NodeTokens) - 1; i >= 0; i-- {
		t := p.NodeTokens[i]
		if !t.Active() || t.Complete || t.Note(noteScope) == "" {
			continue
		}
		set := scopeSet(t)
		if set == nil || busy(p, set) {
			continue
		}
		// Nothing but listeners inside: withdraw them and end the scope.
		for _, u := range p.NodeTokens {
			if u.Active() && !u.Complete && hasSet(u.Sets, set) {
				withdraw(e, u)
			}
		}
		scopeDone(e, t)
		if p.State != kernel.Executing {
			return nil
		}
	}
	if !busy(p, nil) {
		for _, t := range p.NodeTokens {
			if t.Active() && !t.Complete && isListener(t) {
				withdraw(e, t)
			}
		}
	}
	return nil
}

// scopeDone completes the owner of a scope that ran to its end.
func scopeDone(e *kernel.Engine, t *kernel.NodeToken) {
	el := elementOf(t.Node)
	switch {
	case t.Note(noteMode) == "body":
		bodyDone(e, t, el)
	case el.TriggeredByEvent:
		complete(e, t) // an event sub-process has no outgoing flow
	default:
		a := &activity{el: el, kind: kindSubProcess}
		a.leave(e, t, nil, nil)
	}
}

// terminate ends every active token of a scope (nil: the whole process)
// and discards the arc tokens in it; nested processes of withdrawn tokens
// are canceled. except is left alone.
func terminate(e *kernel.Engine, p *kernel.Process, set *kernel.TokenSet, except *kernel.NodeToken) {
	for _, t := range p.NodeTokens {
		if t == except || !t.Active() || t.Complete {
			continue
		}
		if set == nil || hasSet(t.Sets, set) {
			withdraw(e, t)
		}
	}
	for _, a := range p.ArcTokens {
		if a.Complete {
			continue
		}
		if set == nil || hasSet(a.Sets, set) {
			if err := e.DiscardArcToken(a); err != nil {
				e.Fail(err)
			}
		}
	}
}

// interrupt ends an activity token with everything it runs: its scope,
// the instances of its body, its boundary events.
func interrupt(e *kernel.Engine, t *kernel.NodeToken) {
	set := scopeSet(t)
	withdraw(e, t)
	if set != nil {
		terminate(e, t.Process, set, nil)
	}
	disarmBoundaries(e, t)
}

// ownerOf returns the token that owns a scope set (nil for none).
func ownerOf(p *kernel.Process, set *kernel.TokenSet) *kernel.NodeToken {
	if set == nil {
		return nil
	}
	id := strconv.Itoa(set.ID)
	for i := len(p.NodeTokens) - 1; i >= 0; i-- {
		if t := p.NodeTokens[i]; t.Note(noteScope) == id {
			return t
		}
	}
	return nil
}

// ---- multi-instance

// startBody starts a multi-instance body: the collection (or cardinality)
// is read once; the instances are members of a token set named after the
// activity; parallel ones start together, sequential ones one after the
// other. An empty collection completes the body at once.
func startBody(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	l := el.Loop
	var items []any
	switch {
	case l.Collection != nil:
		v := mustEval(e, t, l.Collection, "input collection", nil)
		switch c := v.(type) {
		case []any:
			items = c
		case nil:
			fail(e, t, CodeConditionFailed, "input collection %q is null", l.Collection.Text)
		default:
			fail(e, t, CodeConditionFailed, "input collection %q is a %T, not a list", l.Collection.Text, v)
		}
	default:
		v := mustEval(e, t, l.Cardinality, "loop cardinality", nil)
		n, ok := v.(int64)
		if s, isStr := v.(string); isStr {
			x, err := strconv.ParseInt(s, 10, 64)
			n, ok = x, err == nil
		}
		if !ok || n < 0 || n > 10000 {
			fail(e, t, CodeConditionFailed, "loop cardinality %v is not a count (0 to 10000)", v)
		}
		items = make([]any, n)
	}
	if len(items) > 10000 {
		fail(e, t, CodeConditionFailed, "input collection of %d elements: at most 10000 instances", len(items))
	}
	setNotes(e, t, noteMode, "body", noteCount, strconv.Itoa(len(items)), noteDone, "0")
	if l.OutputCollection != "" {
		setLocal(e, t, l.OutputCollection, make([]any, len(items)))
	}
	if len(items) == 0 {
		bodyDone(e, t, el)
		return
	}
	set, err := e.NewTokenSet(t.Process, miPrefix+el.ID, len(items), t.Sets, nil, nil)
	if err != nil {
		e.Fail(err)
	}
	setNotes(e, t, noteScope, strconv.Itoa(set.ID))
	if err := setItems(e, t, items); err != nil {
		e.Fail(err)
	}
	n := len(items)
	if l.Sequential {
		n = 1
	}
	for i := 0; i < n; i++ {
		startInstance(e, t, el, set, i)
	}
	setNotes(e, t, noteStarted, strconv.Itoa(n))
}

// setItems keeps the collection on the body token (read once, when the body starts).
func setItems(e *kernel.Engine, t *kernel.NodeToken, items []any) error {
	v, err := toValue(items)
	if err != nil {
		return err
	}
	t.SetTransient("bpmn.items", items)
	if !v.IsNone() {
		setNotes(e, t, "items", v.String())
	}
	return nil
}

func bodyItems(t *kernel.NodeToken) []any {
	if x, ok := t.FullEnv().Transient("bpmn.items"); ok {
		if items, ok := x.([]any); ok {
			return items
		}
	}
	s := t.Note("items")
	if s == "" {
		return nil
	}
	v, err := kernel.JSON([]byte(s))
	if err != nil {
		return nil
	}
	items, _ := fromValue(v).([]any)
	return items
}

func startInstance(e *kernel.Engine, body *kernel.NodeToken, el *bpmn.Element, set *kernel.TokenSet, i int) {
	env := body.Env.Clone()
	l := el.Loop
	if l.ElementVariable != "" {
		items := bodyItems(body)
		var item any
		if i < len(items) {
			item = items[i]
		}
		v, err := toValue(item)
		if err != nil {
			fail(e, body, CodeConditionFailed, "input element %d: %v", i, err)
		}
		env.Set(l.ElementVariable, v)
	}
	env.Set("loopCounter", kernel.Int(int64(i+1)))
	sets := append(append([]kernel.Membership(nil), body.Sets...), kernel.Membership{Set: set, Member: i})
	create(e, body.Process, el.ID, sets, env, map[string]string{noteMode: "instance", noteIndex: strconv.Itoa(i)})
}

// bodyOf finds the body token of an instance.
func bodyOf(t *kernel.NodeToken) *kernel.NodeToken {
	for _, m := range t.Sets {
		if m.Set.Name == miPrefix+t.Node.Name {
			return ownerOf(t.Process, m.Set)
		}
	}
	return nil
}

// instanceDone ends one instance: its output element goes into the
// output collection at its index, the completion condition is checked
// (ending the other instances when it holds), and a sequential body
// starts its next instance.
func instanceDone(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	body := bodyOf(t)
	if body == nil {
		fail(e, t, CodeConditionFailed, "instance without its multi-instance body")
	}
	l := el.Loop
	idx, _ := strconv.Atoi(t.Note(noteIndex))
	if l.OutputCollection != "" {
		var out any
		if l.OutputElement != nil {
			out = mustEval(e, t, l.OutputElement, "output element", nil)
		}
		cur, _ := vars{t: body}.Get(l.OutputCollection)
		list, _ := cur.([]any)
		list = append([]any(nil), list...)
		for len(list) <= idx {
			list = append(list, nil)
		}
		list[idx] = out
		setLocal(e, body, l.OutputCollection, list)
	}
	total, _ := strconv.Atoi(body.Note(noteCount))
	done, _ := strconv.Atoi(body.Note(noteDone))
	started, _ := strconv.Atoi(body.Note(noteStarted))
	done++
	setNotes(e, body, noteDone, strconv.Itoa(done))
	complete(e, t)
	set := scopeSet(body)
	active := 0
	for _, u := range t.Process.NodeTokens {
		if u.Active() && !u.Complete && u.Note(noteMode) == "instance" && set != nil && hasSet(u.Sets, set) && u.Node == t.Node {
			active++
		}
	}
	if c := l.CompletionCondition; c != nil {
		extra := map[string]any{
			"numberOfInstances": int64(total), "nrOfInstances": int64(total),
			"numberOfActiveInstances": int64(active), "nrOfActiveInstances": int64(active),
			"numberOfCompletedInstances": int64(done), "nrOfCompletedInstances": int64(done),
			"numberOfTerminatedInstances": int64(0),
		}
		if condition(e, body, c, "completion condition", extra) {
			if set != nil {
				terminate(e, t.Process, set, nil)
			}
			setNotes(e, body, noteScope, "")
			bodyDone(e, body, el)
			return
		}
	}
	if l.Sequential && started < total {
		startInstance(e, body, el, set, started)
		setNotes(e, body, noteStarted, strconv.Itoa(started+1))
	}
}

// bodyDone completes a multi-instance body: its output collection goes to
// the enclosing scope, then it takes its outgoing flows.
func bodyDone(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	if t.Complete {
		return
	}
	l := el.Loop
	if l.OutputCollection != "" {
		out, _ := vars{t: t}.Get(l.OutputCollection)
		t.RemoveAttr(l.OutputCollection)
		setVar(e, t, l.OutputCollection, out)
	}
	disarmBoundaries(e, t)
	if t.Note(noteCompOf) != "" {
		compensationDone(e, t)
		complete(e, t)
		return
	}
	complete(e, t, outgoing(e, t, nil)...)
}

// ---- boundary events

// armBoundaries creates the listening tokens of an activity's boundary
// events, in the activity's scope.
func armBoundaries(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	for _, b := range el.Boundaries {
		bel := t.Process.Graph.Node(b)
		if bel == nil || elementOf(bel).Event.Kind == bpmn.EventCompensate {
			continue // a compensation handler link, not a trigger
		}
		create(e, t.Process, b, t.Sets, t.Env, map[string]string{noteMode: "listen", noteAttached: tokenID(t)})
	}
}

// disarmBoundaries withdraws the boundary listeners of an activity token.
func disarmBoundaries(e *kernel.Engine, t *kernel.NodeToken) {
	if el := elementOf(t.Node); el == nil || len(el.Boundaries) == 0 {
		return
	}
	id := tokenID(t)
	for _, u := range t.Process.NodeTokens {
		if u.Active() && !u.Complete && u.Note(noteAttached) == id && u.Note(noteMode) == "listen" {
			withdraw(e, u)
		}
	}
}

func describe(t *kernel.NodeToken) string { return fmt.Sprintf("%s %s", t.Node.Kind, t.Node.Name) }
