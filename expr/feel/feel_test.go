package feel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/expr"
)

var now = time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)

func vars() expr.Map {
	return expr.Map{
		"amount":   int64(150),
		"price":    2.5,
		"approved": true,
		"name":     "bob",
		"nothing":  nil,
		"items":    []any{int64(1), int64(2), int64(3), int64(4)},
		"order": map[string]any{"total": 12.5, "id": "A1", "lines": []any{
			map[string]any{"sku": "x", "qty": int64(2)},
			map[string]any{"sku": "y", "qty": int64(5)},
		}},
		"due":                      time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"i":                        int64(2),
		"customer":                 map[string]any{"name": "Ann", "age": int64(41)},
		"Vacation Approval Status": map[string]any{"Approval": "yes"},
	}
}

func TestEval(t *testing.T) {
	cases := []struct {
		src  string
		want any
	}{
		{`amount > 100`, true},
		{`approved`, true},
		{`not(approved)`, false},
		{`name = "bob"`, true},
		{`name != "bob"`, false},
		{`order.total > 10`, true},
		{`order.lines.sku`, []any{"x", "y"}},
		{`order.lines[qty > 3].sku`, []any{"y"}},
		{`count(items) > 3`, true},
		{`"a" + name`, "abob"},
		{`for x in 1..3 return x * 2`, []any{int64(2), int64(4), int64(6)}},
		{`for x in items return x + 1`, []any{int64(2), int64(3), int64(4), int64(5)}},
		{`if approved then "a" else "b"`, "a"},
		{`if nothing then "a" else "b"`, "b"},
		{`{a: 1, b: a + 1}.b`, int64(2)},
		{`items[1]`, int64(1)},
		{`items[-1]`, int64(4)},
		{`items[i]`, int64(2)},
		{`items[item > 2]`, []any{int64(3), int64(4)}},
		{`items[9]`, nil},
		{`nothing = null`, true},
		{`missing`, nil},
		{`missing > 1`, nil},
		{`missing = null`, true},
		{`10 / 4`, 2.5},
		{`10 / 5`, int64(2)},
		{`1 / 0`, nil},
		{`2 ** 10`, int64(1024)},
		{`-amount`, int64(-150)},
		{`price * 2`, int64(5)},
		{`price + 1`, 3.5},
		{`price + 2.5`, int64(5)},
		{`amount > "x"`, nil},
		{`upper case(name)`, "BOB"},
		{`string length("héllo")`, int64(5)},
		{`substring("foobar", 3)`, "obar"},
		{`substring("foobar", 3, 2)`, "ob"},
		{`starts with(name, "b")`, true},
		{`contains(name, "o")`, true},
		{`sum(items)`, int64(10)},
		{`sum(1, 2.5)`, 3.5},
		{`mean(items)`, 2.5},
		{`min(items)`, int64(1)},
		{`max([3, 9, 2])`, int64(9)},
		{`amount in [100..200]`, true},
		{`amount in (150..200]`, false},
		{`amount in (> 100, < 10)`, true},
		{`name in ["ann", "bob"]`, true},
		{`5 between 1 and 10`, true},
		{`some x in items satisfies x > 3`, true},
		{`every x in items satisfies x > 3`, false},
		{`true and nothing`, nil},
		{`false and nothing`, false},
		{`true or nothing`, true},
		{`is defined(missing)`, false},
		{`is defined(amount)`, true},
		{`get or else(missing, 7)`, int64(7)},
		{`string(amount)`, "150"},
		{`number("12.5")`, 12.5},
		{`number("x")`, nil},
		{`list contains(items, 3)`, true},
		{`append(items, 5)`, []any{int64(1), int64(2), int64(3), int64(4), int64(5)}},
		{`concatenate([1], [2, 3])`, []any{int64(1), int64(2), int64(3)}},
		{`index of([1, 2, 1], 1)`, []any{int64(1), int64(3)}},
		{`distinct values([1, 2, 1])`, []any{int64(1), int64(2)}},
		{`reverse([1, 2])`, []any{int64(2), int64(1)}},
		{`sort([3, 1, 2])`, []any{int64(1), int64(2), int64(3)}},
		{`string join(["a", "b"], "-")`, "a-b"},
		{`matches("abc", "^a.c$")`, true},
		{`replace("banana", "a", "o")`, "bonono"},
		{`split("a,b", ",")`, []any{"a", "b"}},
		{`floor(2.7)`, int64(2)},
		{`abs(-3)`, int64(3)},
		{`decimal(2.456, 2)`, 2.46},
		{`modulo(-5, 3)`, int64(1)},
		{`date and time("2026-01-01T10:00:00Z") < due`, true},
		{`due - date and time("2026-11-30T00:00:00Z")`, expr.Duration{D: 24 * time.Hour}},
		{`due + duration("P1D")`, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		{`due + @"P1M"`, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{`now()`, now},
		{`today()`, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
		{`now() + duration("PT1H")`, now.Add(time.Hour)},
		{`duration("PT1H") * 2`, expr.Duration{D: 2 * time.Hour}},
		{`due.month`, int64(12)},
		{`customer.name + " (" + string(customer.age) + ")"`, "Ann (41)"},
		{`{"a b": 1}`, map[string]any{"a b": int64(1)}},
		{`get value({x: 1}, "x")`, int64(1)},
		{`context put({x: 1}, "y", 2)`, map[string]any{"x": int64(1), "y": int64(2)}},
		{`[] = []`, true},
		{`[1, "a"] = [1, "a"]`, true},
		{`// a comment
		 1 + 1`, int64(2)},
		{`9223372036854775807 + 1`, 9.223372036854775808e18},
		{`order.missing.deeper`, nil},
		{`Vacation Approval Status.Approval`, "yes"},
		{`Vacation Approval Status.Approval = "yes" and amount > 1`, true},
	}
	for _, c := range cases {
		p, err := Compile(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := p.Eval(expr.Env{Vars: vars(), Now: now})
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s = %#v, want %#v", c.src, got, c.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for src, want := range map[string]string{
		``:                                     "empty expression",
		`1 +`:                                  "unexpected the end",
		`"abc`:                                 "unterminated string",
		`(function(f) f(f))(function(f) f(f))`: "function definitions are not allowed",
		`frobnicate(1)`:                        `unknown function "frobnicate"`,
		`a # b`:                                "unexpected character",
		`if a then b`:                          `expected "else"`,
		`[1, 2`:                                `expected "]"`,
		strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200): "nested deeper",
	} {
		_, err := Compile(src)
		var ee *expr.Error
		if err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an *expr.Error with %q", src, err, want)
		}
	}
	_, err := Compile(`1 + + `)
	var ee *expr.Error
	if !errors.As(err, &ee) || ee.Offset != 4 {
		t.Errorf("offset of the problem in \"1 + + \": %v", err)
	}
}

func TestEvalErrorsAndLimits(t *testing.T) {
	for src, want := range map[string]error{
		`for x in 1..1000000000 return x`:                          expr.ErrCost,
		`count(for x in 1..1000 return for y in 1..1000 return x)`: expr.ErrCost,
		`some x in 1..100000000 satisfies false`:                   expr.ErrCost,
	} {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Eval(expr.Env{Vars: vars(), Now: now})
		// On a busy machine the time limit may be reached first.
		if !errors.Is(err, want) && !errors.Is(err, expr.ErrTimeout) {
			t.Errorf("%s: %v, want %v", src, err, want)
		}
	}
	p, _ := Compile(`amount + "x"`)
	if _, err := p.Eval(expr.Env{Vars: vars()}); err == nil || !strings.Contains(err.Error(), "cannot apply +") {
		t.Errorf("adding a number and a string: %v", err)
	}
	p, _ = Compile(`date and time("tomorrow")`)
	if _, err := p.Eval(expr.Env{Vars: vars()}); err == nil || !strings.Contains(err.Error(), "not an ISO 8601") {
		t.Errorf("a bad date: %v", err)
	}
	// A small budget runs out on a small loop.
	p, _ = Compile(`for x in 1..50 return x`)
	if _, err := p.Eval(expr.Env{Vars: vars(), Cost: 20}); !errors.Is(err, expr.ErrCost) {
		t.Errorf("cost 20: %v", err)
	}
}

// Evaluating never changes the variables it reads.
func TestNoSideEffects(t *testing.T) {
	v := vars()
	before := cmp.Diff(vars(), v)
	for _, src := range []string{`append(items, 5)`, `context put(order, "x", 1)`, `reverse(items)`, `sort(items)`, `remove(items, 1)`} {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Eval(expr.Env{Vars: v}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(vars(), v); diff != before {
		t.Errorf("variables changed:\n%s", diff)
	}
}

func FuzzFEEL(f *testing.F) {
	for _, s := range []string{`amount > 100`, `for x in 1..3 return x`, `items[item > 2]`, `if a then b else c`,
		`{a: [1, 2], "b": @"P1D"}`, `date and time("2026-01-01T00:00:00Z") + duration("PT1H")`, `x in (> 1, [2..3))`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var ee *expr.Error
			if !errors.As(err, &ee) {
				t.Fatalf("%q: error %T", src, err)
			}
			return
		}
		_, err = p.Eval(expr.Env{Vars: vars(), Now: now, Cost: 5000})
		if err != nil {
			var ee *expr.Error
			if !errors.As(err, &ee) {
				t.Fatalf("%q: error %T", src, err)
			}
		}
	})
}

// The table of built-in functions is made at the first parse; expressions
// compiled and evaluated at once from many goroutines see it whole (run
// alone with -race for a first use under contention).
func TestBuiltinsFirstUseConcurrent(t *testing.T) {
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			p, err := Compile(`string length("abc") + count([1, 2]) + (if list contains([1, 2], 2) then 10 else 0)`)
			if err != nil {
				errs <- err
				return
			}
			v, err := p.Eval(expr.Env{Vars: vars(), Now: now})
			if err == nil && v != int64(15) {
				err = fmt.Errorf("got %v (%T), want 15", v, v)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
