package graph

import (
	"strings"
	"testing"
	"time"
)

// el builds an element tree for tests: el("task", "text", child...).
func el(name, text string, children ...*Element) *Element {
	return &Element{Name: name, Text: text, Children: children}
}

func withAttrs(e *Element, kv ...string) *Element {
	for i := 0; i+1 < len(kv); i += 2 {
		e.Attrs = append(e.Attrs, Attr{Name: kv[i], Value: kv[i+1]})
	}
	return e
}

type taskProps struct {
	Name string
	User string
}

type nodeProps struct {
	GraphName string
	TaskName  string
	TaskDesc  string
	Count     int
	Small     int8
	Big       uint64
	Ratio     float64
	Ratio32   float32
	Enabled   bool
	Timeout   time.Duration
	Due       time.Time
	Task      taskProps
	Owner     *taskProps
	Tags      []string
	Limit     *int
	Renamed   string `veena:"display-name"`
	Hidden    string `veena:"-"`
	Graph     string
	hidden    string
}

func TestBind(t *testing.T) {
	custom := el("custom", "\n  ",
		el("graphName", "orders"),
		el("TaskName", " Enter order "),
		el("taskDesc", "\n        Enter order and billing info\n      "),
		el("count", " 42 "),
		el("small", "-8"),
		el("big", "18446744073709551615"),
		el("ratio", "0.25"),
		el("ratio32", "1.5"),
		el("enabled", "true"),
		el("timeout", "1h30m"),
		el("due", "2024-05-01T10:00:00+02:00"),
		withAttrs(el("task", "\n", el("name", "review")), "user", "pat"),
		el("owner", "", el("name", "ann")),
		el("tags", "a"),
		el("tags", "b"),
		el("limit", "7"),
		el("display-name", "Shown"),
		withAttrs(el("graph", ""), "name", "fromAttr"),
	)
	var p nodeProps
	if err := custom.Bind(&p); err != nil {
		t.Fatal(err)
	}
	due, _ := time.Parse(time.RFC3339, "2024-05-01T10:00:00+02:00")
	checks := []struct {
		name      string
		got, want any
	}{
		{"GraphName", p.GraphName, "fromAttr"}, // <graphName> then <graph name=...>, in document order
		{"TaskName", p.TaskName, "Enter order"},
		{"TaskDesc", p.TaskDesc, "Enter order and billing info"},
		{"Count", p.Count, 42},
		{"Small", p.Small, int8(-8)},
		{"Big", p.Big, uint64(18446744073709551615)},
		{"Ratio", p.Ratio, 0.25},
		{"Ratio32", p.Ratio32, float32(1.5)},
		{"Enabled", p.Enabled, true},
		{"Timeout", p.Timeout, 90 * time.Minute},
		{"Due", p.Due.Equal(due), true},
		{"Task", p.Task, taskProps{Name: "review", User: "pat"}},
		{"Owner", *p.Owner, taskProps{Name: "ann"}},
		{"Tags", strings.Join(p.Tags, ","), "a,b"},
		{"Limit", *p.Limit, 7},
		{"Renamed", p.Renamed, "Shown"},
		{"Graph", p.Graph, ""}, // a leaf with attributes and no text sets only the attribute fields
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestBindManual follows the reference manual's custom-attribute examples.
func TestBindManual(t *testing.T) {
	// <task user="pat"><name>test</name></task> sets task.name and task.user.
	var nested struct{ Task taskProps }
	if err := el("custom", "", withAttrs(el("task", "", el("name", "test")), "user", "pat")).Bind(&nested); err != nil {
		t.Fatal(err)
	}
	if nested.Task != (taskProps{Name: "test", User: "pat"}) {
		t.Errorf("nested = %+v", nested)
	}
	// <task user="pat">test</task> sets task and taskUser.
	var leaf struct{ Task, TaskUser string }
	if err := el("custom", "", withAttrs(el("task", "\n    test\n  "), "user", "pat")).Bind(&leaf); err != nil {
		t.Fatal(err)
	}
	if leaf.Task != "test" || leaf.TaskUser != "pat" {
		t.Errorf("leaf = %+v", leaf)
	}
	// <foo>test</foo> sets foo.
	var foo struct{ Foo string }
	if err := el("custom", "", el("foo", "test")).Bind(&foo); err != nil || foo.Foo != "test" {
		t.Errorf("foo = %+v, %v", foo, err)
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		name   string
		custom *Element
		target any
		want   string
	}{
		{"unknown property", el("custom", "", el("colour", "red")), &nodeProps{},
			`custom element <colour>: graph.nodeProps has no property "colour"`},
		{"unknown nested property", el("custom", "", el("task", "", el("prio", "1"))), &nodeProps{},
			`custom element <task.prio>: graph.taskProps has no property "prio"`},
		{"unknown attribute property", el("custom", "", withAttrs(el("count", "1"), "unit", "kg")), &nodeProps{},
			`custom attribute <count@unit>: graph.nodeProps has no property "countUnit"`},
		{"bad int", el("custom", "", el("count", "many")), &nodeProps{},
			`custom element <count>: "many" is not a valid int`},
		{"int overflow", el("custom", "", el("small", "300")), &nodeProps{},
			`custom element <small>: "300" is not a valid int8`},
		{"negative uint", el("custom", "", el("big", "-1")), &nodeProps{},
			`custom element <big>: "-1" is not a valid uint64`},
		{"bad bool", el("custom", "", el("enabled", "yes please")), &nodeProps{},
			`custom element <enabled>: "yes please" is not a boolean`},
		{"bad float", el("custom", "", el("ratio", "1/4")), &nodeProps{},
			`custom element <ratio>: "1/4" is not a valid float64`},
		{"bad duration", el("custom", "", el("timeout", "3 days")), &nodeProps{},
			`custom element <timeout>: "3 days" is not a duration`},
		{"bad time", el("custom", "", el("due", "tomorrow")), &nodeProps{},
			`custom element <due>: "tomorrow" is not an RFC 3339 time`},
		{"children for a scalar", el("custom", "", el("count", "", el("value", "1"))), &nodeProps{},
			`custom element <count> has child elements but property "count" of graph.nodeProps has type int, not a struct`},
		{"tag-only field by name", el("custom", "", el("renamed", "x")), &nodeProps{},
			`has no property "renamed"`},
		{"ignored field", el("custom", "", el("hidden", "x")), &nodeProps{},
			`has no property "hidden"`},
		{"not a pointer", el("custom", ""), nodeProps{},
			"target must be a non-nil pointer to a struct"},
		{"nil pointer", el("custom", ""), (*nodeProps)(nil),
			"target must be a non-nil pointer to a struct"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.custom.Bind(tc.target)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Bind error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// No custom element binds nothing.
	var p nodeProps
	if err := (*Element)(nil).Bind(&p); err != nil {
		t.Errorf("nil element: %v", err)
	}
}

type Embedded struct{ Level int }

type withEmbedded struct {
	*Embedded
	Name string
}

func TestBindEmbedded(t *testing.T) {
	var w withEmbedded
	if err := el("custom", "", el("level", "3"), el("name", "x")).Bind(&w); err != nil {
		t.Fatal(err)
	}
	if w.Embedded == nil || w.Level != 3 || w.Name != "x" {
		t.Errorf("bound %+v", w)
	}
}
