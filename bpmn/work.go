package bpmn

import (
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/kernel"
)

// date evaluates a date: a date and time, an ISO 8601 date, or a duration
// counted from now (Flowable's dueDate "PT2H").
func date(e *kernel.Engine, t *kernel.NodeToken, x *bpmn.Expr, what string) string {
	v := mustEval(e, t, x, what, nil)
	switch d := v.(type) {
	case time.Time:
		return d.UTC().Format(time.RFC3339Nano)
	case expr.Duration:
		return d.AddTo(e.Now()).UTC().Format(time.RFC3339Nano)
	case string:
		s := strings.TrimSpace(d)
		if strings.HasPrefix(s, "P") || strings.HasPrefix(s, "-P") {
			dur, err := expr.ParseDuration(s)
			if err != nil {
				fail(e, t, CodeConditionFailed, "%s %q: %v", what, s, err)
			}
			return dur.AddTo(e.Now()).UTC().Format(time.RFC3339Nano)
		}
		at, err := expr.ParseDateTime(s)
		if err != nil {
			fail(e, t, CodeConditionFailed, "%s %q: %v", what, s, err)
		}
		return at.UTC().Format(time.RFC3339Nano)
	case nil:
		return ""
	}
	fail(e, t, CodeConditionFailed, "%s gives a %s, not a date", what, expr.TypeName(v))
	return ""
}

// scriptTimeout bounds a JavaScript script task.
const scriptTimeout = 2 * time.Second

// runJavaScript runs a script task's JavaScript in goja: the variables are
// readable as globals and through execution.getVariable(name); a script
// sets variables with execution.setVariable(name, value); its last
// value goes to the result variable, if the task names one. It has no I/O
// and is interrupted after a time limit.
func runJavaScript(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	vm := goja.New()
	v := vars{t: t}
	for _, name := range v.Names() {
		if isJSName(name) {
			x, _ := v.Get(name)
			_ = vm.Set(name, expr.ToJSON(x))
		}
	}
	sets := map[string]any{}
	var order []string
	_ = vm.Set("execution", map[string]any{
		"getVariable": func(name string) any {
			if x, ok := sets[name]; ok {
				return x
			}
			x, _ := v.Get(name)
			return expr.ToJSON(x)
		},
		"setVariable": func(name string, value any) {
			if _, seen := sets[name]; !seen {
				order = append(order, name)
			}
			sets[name] = value
		},
	})
	timer := time.AfterFunc(scriptTimeout, func() { vm.Interrupt(fmt.Sprintf("script ran longer than %s", scriptTimeout)) })
	res, err := vm.RunString(el.Script)
	timer.Stop()
	if err != nil {
		fail(e, t, CodeConditionFailed, "script: %v", err)
	}
	for _, name := range order {
		setVar(e, t, name, expr.Normalize(exportJS(sets[name])))
	}
	if el.ResultVariable != "" {
		setVar(e, t, el.ResultVariable, expr.Normalize(exportJS(res.Export())))
	}
}

func exportJS(x any) any {
	switch v := x.(type) {
	case goja.Value:
		return exportJS(v.Export())
	case int:
		return int64(v)
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = exportJS(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = exportJS(e)
		}
		return out
	}
	return x
}

func isJSName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != "" && s != "execution"
}
