package kernel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/duration"
)

// A Sarasvati wait node waits for a command. Its <custom> element may
// declare the work its tokens wait for, one of:
//
//	<task>
//	  <label>Approve the order</label>
//	  <assignee env="reviewer"/>
//	  <candidateUsers>bob, carol</candidateUsers>
//	  <candidateGroups>sales, managers</candidateGroups>
//	  <queue>orders</queue>
//	  <priority>70</priority>
//	  <due>P2D</due>
//	  <followUp>PT4H</followUp>
//	</task>
//
//	<job type="charge-card" retries="5">
//	  <header name="currency">EUR</header>
//	</job>
//
// Every property of a task is optional and is either a literal (the
// element's text) or read from the environment the token sees when it
// arrives (env="attribute"). Lists are comma-separated. <due> and
// <followUp> are a date (RFC 3339) or a duration from the task's creation
// (Go "48h" or ISO 8601 "P2D"); from the environment, a date attribute or
// a string of either form. <priority> is 0 to 100 (default 50). A job has a
// type, optional retries (default 3) and static headers. Other children
// of <custom> are left alone for listeners and tools.
type waitNode struct {
	task *taskDecl
	job  *jobDecl
}

// source is one property of a task declaration: a literal or an attribute.
type source struct {
	literal string
	env     string
	set     bool
	pos     graph.Pos
}

type taskDecl struct {
	label, assignee, candidateUsers, candidateGroups, queue, priority, due, followUp source
}

type jobDecl struct {
	typ     string
	retries int
	headers map[string]string
}

// DefaultTaskPriority is a task's priority unless its declaration gives one.
const DefaultTaskPriority = 50

func newWaitNode(n *graph.Node) (NodeType, error) {
	w := &waitNode{}
	if n.Custom == nil {
		return w, nil
	}
	for _, c := range n.Custom.Children {
		if c.Name != "task" && c.Name != "job" {
			continue
		}
		if w.task != nil || w.job != nil {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<%s>: a wait node declares one task or one job", c.Name))
		}
		var err error
		if c.Name == "task" {
			w.task, err = parseTask(c)
		} else {
			w.job, err = parseJob(c)
		}
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *waitNode) Execute(e *Engine, t *NodeToken) error {
	switch {
	case w.task != nil:
		spec, err := w.task.spec(e, t)
		if err != nil {
			return err
		}
		return e.OpenTask(t, spec)
	case w.job != nil:
		return e.OfferJob(t, JobSpec{Type: w.job.typ, Retries: w.job.retries, Headers: w.job.headers})
	}
	return nil
}

func parseTask(el *graph.Element) (*taskDecl, error) {
	if len(el.Attrs) > 0 {
		return nil, graph.ErrorAt(el.Pos, fmt.Errorf("<task> takes no attribute %q: its properties are child elements", el.Attrs[0].Name))
	}
	d := &taskDecl{}
	fields := map[string]*source{
		"label": &d.label, "assignee": &d.assignee, "candidateUsers": &d.candidateUsers,
		"candidateGroups": &d.candidateGroups, "queue": &d.queue, "priority": &d.priority,
		"due": &d.due, "followUp": &d.followUp,
	}
	for _, c := range el.Children {
		f, ok := fields[c.Name]
		if !ok {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task> has no property <%s> (it has label, assignee, candidateUsers, candidateGroups, queue, priority, due, followUp)", c.Name))
		}
		if f.set {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s> is given twice", c.Name))
		}
		if len(c.Children) > 0 {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s> holds text or names an attribute (env=\"…\"), not elements", c.Name))
		}
		*f = source{literal: strings.TrimSpace(c.Text), set: true, pos: c.Pos}
		for _, a := range c.Attrs {
			if a.Name != "env" {
				return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s> takes no attribute %q (only env)", c.Name, a.Name))
			}
			f.env = strings.TrimSpace(a.Value)
			if f.env == "" {
				return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s env=\"\">: name an attribute", c.Name))
			}
		}
		if f.env != "" && f.literal != "" {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s> has both text and env=%q: give one", c.Name, f.env))
		}
		if f.env != "" {
			continue
		}
		// Literals are checked now, not when a token arrives.
		var err error
		switch c.Name {
		case "priority":
			_, err = parsePriority(f.literal)
		case "due", "followUp":
			_, err = parseWhen(f.literal, time.Time{})
		}
		if err != nil {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<task><%s>: %w", c.Name, err))
		}
	}
	return d, nil
}

func parseJob(el *graph.Element) (*jobDecl, error) {
	d := &jobDecl{}
	for _, a := range el.Attrs {
		switch a.Name {
		case "type":
			d.typ = strings.TrimSpace(a.Value)
		case "retries":
			n, err := strconv.Atoi(strings.TrimSpace(a.Value))
			if err != nil || n < 1 || n > 1000 {
				return nil, graph.ErrorAt(el.Pos, fmt.Errorf("<job retries=%q>: want a whole number from 1 to 1000", a.Value))
			}
			d.retries = n
		default:
			return nil, graph.ErrorAt(el.Pos, fmt.Errorf("<job> takes no attribute %q (it has type and retries)", a.Name))
		}
	}
	if d.typ == "" {
		return nil, graph.ErrorAt(el.Pos, errors.New(`<job> needs a type: <job type="…">`))
	}
	for _, c := range el.Children {
		if c.Name != "header" {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<job> has no element <%s> (only <header name=\"…\">)", c.Name))
		}
		name := ""
		for _, a := range c.Attrs {
			if a.Name != "name" {
				return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<header> takes no attribute %q (only name)", a.Name))
			}
			name = strings.TrimSpace(a.Value)
		}
		if name == "" {
			return nil, graph.ErrorAt(c.Pos, errors.New(`<header> needs a name: <header name="…">`))
		}
		if d.headers == nil {
			d.headers = map[string]string{}
		}
		if _, dup := d.headers[name]; dup {
			return nil, graph.ErrorAt(c.Pos, fmt.Errorf("<header name=%q> is given twice", name))
		}
		d.headers[name] = strings.TrimSpace(c.Text)
	}
	return d, nil
}

func parsePriority(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > 100 {
		return 0, fmt.Errorf("priority %q: want a whole number from 0 to 100", s)
	}
	return n, nil
}

// parseWhen reads a date (RFC 3339) or a duration after base.
func parseWhen(s string, base time.Time) (time.Time, error) {
	if d, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return d.UTC(), nil
	}
	d, err := duration.Parse(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (RFC 3339) nor a duration (48h, P2D)", s)
	}
	return d.AddTo(base).UTC(), nil
}

// value resolves a property for a token: its literal, or the attribute it
// names as a string ("" when the attribute is absent).
func (s source) value(t *NodeToken) (v Value, ok bool) {
	if !s.set {
		return Value{}, false
	}
	if s.env == "" {
		return String(s.literal), s.literal != ""
	}
	v, ok = t.FullEnv().Get(s.env)
	return v, ok && !v.IsNone()
}

func (s source) text(t *NodeToken, what string) (string, error) {
	v, ok := s.value(t)
	if !ok {
		return "", nil
	}
	if v.Kind() != KindString {
		return "", fmt.Errorf("task %s: attribute %q is a %s, not a string", what, s.env, v.Kind())
	}
	return strings.TrimSpace(v.Str()), nil
}

func (s source) list(t *NodeToken, what string) ([]string, error) {
	txt, err := s.text(t, what)
	if err != nil || txt == "" {
		return nil, err
	}
	var out []string
	for _, x := range strings.Split(txt, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out, nil
}

func (s source) when(t *NodeToken, now time.Time, what string) (time.Time, error) {
	v, ok := s.value(t)
	if !ok {
		return time.Time{}, nil
	}
	if d, isDate := v.DateValue(); isDate && v.Kind() == KindDate {
		return d.UTC(), nil
	}
	if v.Kind() != KindString {
		return time.Time{}, fmt.Errorf("task %s: attribute %q is a %s, not a date or a duration", what, s.env, v.Kind())
	}
	d, err := parseWhen(strings.TrimSpace(v.Str()), now)
	if err != nil {
		return time.Time{}, fmt.Errorf("task %s: %w", what, err)
	}
	return d, nil
}

// spec resolves the declaration for a token arriving now.
func (d *taskDecl) spec(e *Engine, t *NodeToken) (TaskSpec, error) {
	var spec TaskSpec
	var err error
	check := func(e error) {
		if err == nil {
			err = e
		}
	}
	var e1 error
	spec.Label, e1 = d.label.text(t, "label")
	check(e1)
	spec.Assignee, e1 = d.assignee.text(t, "assignee")
	check(e1)
	spec.CandidateUsers, e1 = d.candidateUsers.list(t, "candidateUsers")
	check(e1)
	spec.CandidateGroups, e1 = d.candidateGroups.list(t, "candidateGroups")
	check(e1)
	spec.Queue, e1 = d.queue.text(t, "queue")
	check(e1)
	spec.Priority = DefaultTaskPriority
	if v, ok := d.priority.value(t); ok {
		switch v.Kind() {
		case KindInt:
			if n := v.IntValue(); n < 0 || n > 100 {
				check(fmt.Errorf("task priority: attribute %q is %d, not from 0 to 100", d.priority.env, n))
			} else {
				spec.Priority = int(n)
			}
		case KindString:
			n, perr := parsePriority(v.Str())
			check(perr)
			spec.Priority = n
		default:
			check(fmt.Errorf("task priority: attribute %q is a %s, not a whole number", d.priority.env, v.Kind()))
		}
	}
	spec.DueAt, e1 = d.due.when(t, e.now, "due date")
	check(e1)
	spec.FollowUpAt, e1 = d.followUp.when(t, e.now, "follow-up date")
	check(e1)
	return spec, err
}
