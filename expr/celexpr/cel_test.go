package celexpr

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/expr"
)

func TestCEL(t *testing.T) {
	vars := expr.Map{"amount": int64(150), "name": "ann", "items": []any{int64(1), int64(2)}, "order": map[string]any{"total": 2.5}}
	for src, want := range map[string]any{
		`amount > 100`:                   true,
		`name + "!"`:                     "ann!",
		`size(items) == 2`:               true,
		`items.map(x, x * 2)`:            []any{int64(2), int64(4)},
		`order.total * 2.0`:              5.0,
		`{"a": amount}`:                  map[string]any{"a": int64(150)},
		`has(order.total)`:               true,
		`amount > 100 ? "big" : "small"`: "big",
	} {
		p, err := Compile(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := p.Eval(expr.Env{Vars: vars})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s = %#v, want %#v", src, got, want)
		}
	}
	if _, err := Compile(`amount >`); err == nil {
		t.Error("a syntax error compiles")
	}
	p, _ := Compile(`nobody > 1`)
	if _, err := p.Eval(expr.Env{Vars: vars}); err == nil {
		t.Error("an unknown variable evaluates")
	}
	// A comprehension that would run for long is stopped by the cost limit.
	vars["big"] = make([]any, 5000)
	for i := range 5000 {
		vars["big"].([]any)[i] = int64(i)
	}
	p, _ = Compile(`big.all(x, big.all(y, x + y >= 0))`)
	_, err := p.Eval(expr.Env{Vars: vars})
	if !errors.Is(err, expr.ErrCost) && !errors.Is(err, expr.ErrTimeout) {
		t.Errorf("a quadratic comprehension: %v", err)
	}
}
