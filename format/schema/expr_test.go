package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
)

func TestExprEval(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	vars := &schema.Vars{
		Almanac: map[string]any{"attempts": int64(1), "orderNo": "A-1", "price": 2.5, "tags": []any{"a", "b"}},
		Context: map[string]string{"userId": "u42"},
		Event:   map[string]any{"name": "chat.message", "payload": map[string]any{"text": "/order A-1234"}},
		Now:     now,
	}
	cases := []struct {
		src  string
		want any
	}{
		{"almanac.attempts + 1", int64(2)},
		{"almanac.attempts < 2", true},
		{"almanac.price * 2.0", 5.0},
		{"almanac.price > 2", true}, // numbers of both kinds compare
		{"event.payload.text.startsWith('/order')", true},
		{"event.payload.text.split(' ')[1]", "A-1234"},
		{"context.userId + ':' + almanac.orderNo", "u42:A-1"},
		{"size(almanac.tags)", int64(2)},
		{"{'a': 1, 'b': [true, null]}", map[string]any{"a": int64(1), "b": []any{true, nil}}},
		{"now + duration('15m')", "2025-03-01T12:15:00Z"},
		{"'orderNo' in almanac && !('x' in almanac)", true},
	}
	for _, c := range cases {
		x, err := schema.CompileExpr(c.src, graph.Pos{})
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := x.Eval(vars)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if !equal(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.src, got, c.want)
		}
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equal(x[k], y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestExprSandbox: expressions that would run long or build huge values
// stop with an error; errors name the expression.
func TestExprSandbox(t *testing.T) {
	vars := &schema.Vars{Almanac: map[string]any{"n": int64(1)}}
	for _, src := range []string{
		// quadratic work over a large list
		"range(0, 2000).map(i, range(0, 2000).filter(j, j == i)).size() > 0",
		// a string grown by repetition
		"range(0, 40).map(i, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx').join('').size() > 0 && [1].map(x, 'y'.repeat(2000000)).size() > 0",
		"almanac.missing + 1",
		"1 / (almanac.n - 1)",
	} {
		x, err := schema.CompileExpr(src, graph.Pos{})
		if err != nil {
			// A function the sandbox does not offer is refused at load.
			t.Logf("%s: refused at compile: %v", src, err)
			continue
		}
		start := time.Now()
		_, err = x.Eval(vars)
		if err == nil {
			t.Errorf("%s: evaluated without error", src)
			continue
		}
		if !strings.Contains(err.Error(), "expression") {
			t.Errorf("%s: error %v does not name the expression", src, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", src, d)
		}
	}
	if _, err := schema.CompileExpr(strings.Repeat("1 + ", 5000)+"1", graph.Pos{}); err == nil {
		t.Error("an expression longer than the limit compiled")
	}
	if _, err := schema.CompileExpr(strings.Repeat("(", 500)+"1"+strings.Repeat(")", 500), graph.Pos{}); err == nil {
		t.Error("an expression nested 500 deep compiled")
	}
}

func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"PT15M": 15 * time.Minute, "P1DT2H": 26 * time.Hour, "P2W": 14 * 24 * time.Hour,
		"PT0.5S": 500 * time.Millisecond, "15m": 15 * time.Minute, "1h30m": 90 * time.Minute, "pt10s": 10 * time.Second,
	} {
		got, err := schema.ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "P", "PT", "P1M", "P1Y", "PT1D", "soon", "P1H", "PT1M2", "P999999999999D"} {
		if _, err := schema.ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", s)
		}
	}
}
