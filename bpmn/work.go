package bpmn

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

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

// runJavaScript runs a script task's JavaScript in a fresh QuickJS realm
// bounded as script nodes are (Kernel.ScriptMemory, Kernel.ScriptTimeout,
// the command's time budget): the variables are readable as globals and
// through execution.getVariable(name); a script sets variables with
// execution.setVariable(name, value); its last value goes to the result
// variable, if the task names one. Values cross as JSON (a date as its
// ISO 8601 text). A script that fails or goes beyond a limit opens an
// incident on its token.
func runJavaScript(e *kernel.Engine, t *kernel.NodeToken, el *bpmn.Element) {
	v := vars{t: t}
	all, globals := map[string]any{}, map[string]any{}
	for _, name := range v.Names() {
		x, _ := v.Get(name)
		all[name] = expr.ToJSON(x)
		if isJSName(name) {
			globals[name] = all[name]
		}
	}
	allJSON, err1 := json.Marshal(all)
	globalsJSON, err2 := json.Marshal(globals)
	src, err3 := json.Marshal(el.Script)
	if err := errors.Join(err1, err2, err3); err != nil {
		fail(e, t, CodeConditionFailed, "script: the variables cannot be given to JavaScript: %v", err)
	}
	out, err := e.EvalJavaScript(
		`var __vars = JSON.parse(`+jsString(allJSON)+`);
Object.assign(globalThis, JSON.parse(`+jsString(globalsJSON)+`));
var __sets = Object.create(null), __order = [];
var execution = Object.freeze({
  getVariable: function (n) {
    n = String(n);
    if (Object.prototype.hasOwnProperty.call(__sets, n)) return __sets[n];
    return Object.prototype.hasOwnProperty.call(__vars, n) ? __vars[n] : null;
  },
  setVariable: function (n, v) {
    n = String(n);
    if (!Object.prototype.hasOwnProperty.call(__sets, n)) __order.push(n);
    __sets[n] = v;
  }
});`,
		`var __result = (0, eval)(`+string(src)+`);`,
		`JSON.stringify({order: __order, sets: __sets, result: __result === undefined ? null : __result})`)
	if err != nil {
		fail(e, t, CodeConditionFailed, "%v", err)
	}
	text, _ := out.(string)
	var got struct {
		Order  []string
		Sets   map[string]json.RawMessage
		Result json.RawMessage
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		fail(e, t, CodeConditionFailed, "script: its variables cannot be read back: %v", err)
	}
	for _, name := range got.Order {
		setVar(e, t, name, expr.Normalize(fromJS(got.Sets[name])))
	}
	if el.ResultVariable != "" {
		setVar(e, t, el.ResultVariable, expr.Normalize(fromJS(got.Result)))
	}
}

// jsString is JSON text as a JavaScript string literal (JSON.parse reads
// it back).
func jsString(b []byte) string {
	s, _ := json.Marshal(string(b))
	return string(s)
}

// fromJS decodes a value a script gave: a whole number is an int64 (as
// JavaScript does not tell them apart), other numbers float64.
func fromJS(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil
	}
	return numbers(x)
}

func numbers(x any) any {
	switch v := x.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		if f == float64(int64(f)) && f >= -1<<63 && f < 1<<63 {
			return int64(f)
		}
		return f
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
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
