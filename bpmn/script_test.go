package bpmn_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/kernel"
)

// scriptModel is a process with one JavaScript script task.
func scriptModel(script, result string) string {
	attr := ""
	if result != "" {
		attr = ` camunda:resultVariable="` + result + `"`
	}
	return strings.Replace(model("", proc("p", `
<startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="js"/>
<scriptTask id="js" scriptFormat="javascript"`+attr+`><script><![CDATA[`+script+`]]></script></scriptTask>
<sequenceFlow id="f1" sourceRef="js" targetRef="e"/><endEvent id="e"/>`)),
		`targetNamespace="t"`, `targetNamespace="t" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`, 1)
}

// TestScriptTask: a JavaScript script task reads variables as globals and
// through execution, sets them through execution, and its last value is
// its result variable; numbers keep their kind.
func TestScriptTask(t *testing.T) {
	r := load(t, scriptModel(`
var total = 0;
for (var i = 0; i < items.length; i++) total += items[i].price;
execution.setVariable("total", total);
execution.setVariable("half", execution.getVariable("total") / 4);
execution.setVariable("who", execution.getVariable("customer") + "!");
execution.setVariable("missing", execution.getVariable("nothing"));
({count: items.length, first: items[0].name})`, "summary")).
		start(map[string]any{"customer": "ada", "items": []any{map[string]any{"name": "pen", "price": 3}, map[string]any{"name": "ink", "price": 7}}})
	r.state("completed")
	got := map[string]any{}
	for k, v := range r.p.Env.Map() {
		got[k] = v.Any()
	}
	if got["total"] != int64(10) || got["half"] != 2.5 || got["who"] != "ada!" {
		t.Errorf("variables: %v", got)
	}
	if _, ok := got["missing"]; ok && got["missing"] != nil {
		t.Errorf("missing = %v, want null", got["missing"])
	}
	if s, ok := r.p.Env.Get("summary"); !ok || !strings.Contains(s.String(), `"count":2`) || !strings.Contains(s.String(), `"first":"pen"`) {
		t.Errorf("summary = %v", s)
	}
}

// TestHostileScriptTask: a script task that allocates without bound or
// runs for ever is stopped at the kernel's script limits (not after
// seconds and gigabytes) and opens an incident on its token, which stays
// where it was; nothing it set is kept.
func TestHostileScriptTask(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"string doubling", `execution.setVariable("x", 1); var s = "x"; for (;;) s += s;`, "memory"},
		{"array bomb", `var a = []; for (;;) a.push([1, 2, 3, 4, 5, 6, 7, 8]);`, "memory"},
		{"infinite loop", `execution.setVariable("x", 1); for (;;) {}`, "longer than 1s"},
		{"deep recursion", `function f(n) { return f(n + 1) + 1; } f(0);`, "stack"},
		{"thrown error", `throw new Error("no customer")`, "no customer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := load(t, scriptModel(c.src, "r"))
			r.k.ScriptTimeout = time.Second
			if !strings.Contains(c.want, "longer") {
				r.k.ScriptTimeout = 20 * time.Second // the memory or stack limit must stop it, not the time limit
			}
			r.k.ScriptMemory = 16 << 20
			began := time.Now()
			r.start(nil)
			took := time.Since(began)
			r.state("executing")
			got := strings.Join(r.opened(), "\n")
			if !strings.Contains(got, "incident js condition_failed") || !strings.Contains(got, c.want) {
				t.Fatalf("effects %q, want a condition_failed incident at js mentioning %q", got, c.want)
			}
			if took > 10*time.Second {
				t.Errorf("the script ran %s", took)
			}
			if _, ok := r.p.Env.Get("x"); ok {
				t.Error("the failed script's variable was kept")
			}
			if r.active("js") == nil {
				t.Error("no active token at the script task")
			}
		})
	}
}

// TestInterruptStopsScriptTask: the command's time budget (Engine.Interrupt,
// which the engine calls when Limits.CommandTime is up) stops a running
// script task at once and fails the command with the budget's code.
func TestInterruptStopsScriptTask(t *testing.T) {
	r := load(t, scriptModel(`for (;;) {}`, ""))
	r.k.ScriptTimeout = 20 * time.Second
	e := r.engine()
	time.AfterFunc(300*time.Millisecond, func() { e.Interrupt(nil) })
	began := time.Now()
	_, err := e.Start(r.g, nil)
	var ke *kernel.Error
	if !errors.As(err, &ke) || ke.Code != kernel.ErrBudgetExceeded.Code {
		t.Fatalf("err = %v, want %s", err, kernel.ErrBudgetExceeded.Code)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the interrupted script ran %s", took)
	}
}
