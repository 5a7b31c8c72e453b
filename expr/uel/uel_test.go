package uel

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/expr"
)

var vars = expr.Map{"approved": true, "amount": int64(1500), "name": "Ann", "rush": false,
	"order": map[string]any{"total": 12.5, "lines": []any{"a", "b"}}, "comment": ""}

func TestEval(t *testing.T) {
	for src, want := range map[string]any{
		`${approved}`:                        true,
		`${amount > 1000}`:                   true,
		`${amount gt 1000 and !rush}`:        true,
		`${order.total >= 10 && !rush}`:      true,
		`${order['total'] * 2}`:              25.0,
		`${order.lines[1]}`:                  "b",
		`${empty comment}`:                   true,
		`${not empty name}`:                  true,
		`${name == 'Ann'}`:                   true,
		`${name eq "Bob"}`:                   false,
		`${amount / 100}`:                    int64(15),
		`${amount % 7}`:                      int64(2),
		`${rush ? 'fast' : 'slow'}`:          "slow",
		`Dear ${name}, you owe ${amount}.`:   "Dear Ann, you owe 1500.",
		`#{approved}`:                        true,
		`${execution.getVariable("name")}`:   "Ann",
		`${execution.getVariable("nobody")}`: nil,
		`${amount == 1500.0}`:                true,
		`plain text`:                         "plain text",
	} {
		p, err := Compile(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
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
}

func TestErrors(t *testing.T) {
	for src, want := range map[string]string{
		`${bean.doSomething()}`: "method calls",
		`${x > }`:               "unexpected end",
		`${approved`:            "unterminated",
		`${'abc}`:               "unterminated",
		`${a # b}`:              "unexpected character",
	} {
		_, err := Compile(src)
		var ee *expr.Error
		if err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	for src, want := range map[string]string{
		`${nobody}`:        `unknown property "nobody"`,
		`${name > 3}`:      "cannot compare",
		`${!amount}`:       "needs a boolean",
		`${amount / 0}`:    "division by zero",
		`${order.total.x}`: "cannot read property",
	} {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Eval(expr.Env{Vars: vars})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	p, _ := Compile(`${` + strings.Repeat("amount + ", 300) + `1}`)
	if _, err := p.Eval(expr.Env{Vars: vars, Cost: 100}); !errors.Is(err, expr.ErrCost) {
		t.Errorf("cost limit: %v", err)
	}
}

func FuzzUEL(f *testing.F) {
	for _, s := range []string{`${approved}`, `${a.b[1] > 2 ? 'x' : "y"}`, `Hi ${name}!`, `${empty x or not y}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			return
		}
		_, _ = p.Eval(expr.Env{Vars: vars, Cost: 1000})
	})
}
