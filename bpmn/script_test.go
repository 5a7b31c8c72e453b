package bpmn_test

import (
	"strings"
	"testing"
	"time"
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
			r.k.ScriptMemory = 16 << 20
			began := time.Now()
			r.start(nil)
			took := time.Since(began)
			r.state("executing")
			got := strings.Join(r.opened(), "\n")
			if !strings.Contains(got, "incident js condition_failed") || !strings.Contains(got, c.want) {
				t.Fatalf("effects %q, want a condition_failed incident at js mentioning %q", got, c.want)
			}
			if took > 5*time.Second {
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
