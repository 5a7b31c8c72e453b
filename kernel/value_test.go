package kernel

import (
	"encoding/json"
	"testing"
	"time"
)

func TestValueJSONKeepsType(t *testing.T) {
	d := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	cases := []struct {
		v    Value
		json string
		kind Kind
	}{
		{String("x"), `"x"`, KindString},
		{Int(42), `42`, KindInt},
		{Int(-7), `-7`, KindInt},
		{Float(2), `2.0`, KindFloat},
		{Float(2.5), `2.5`, KindFloat},
		{Float(1e300), `1e+300`, KindFloat},
		{Bool(true), `true`, KindBool},
		{Date(d), `{"date":"2026-01-02T03:04:05.000000006Z"}`, KindDate},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.json {
			t.Errorf("%v: json %s, want %s", c.v, b, c.json)
		}
		var back Value
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != c.v || back.Kind() != c.kind {
			t.Errorf("%s read back as %v (%s), want %v (%s)", b, back, back.Kind(), c.v, c.kind)
		}
	}
	// Arrays and objects are JSON values, kept in canonical form (API.md,
	// second part: attribute values are widened for BPMN and schemas).
	for in, want := range map[string]string{
		`{"x":1, "a":[1,2.5,"<&>"]}`:            `{"a":[1,2.5,"\u003c\u0026\u003e"],"x":1}`,
		` [ ]`:                                  `[]`,
		`{"date":"not a time"}`:                 `{"date":"not a time"}`,
		`{"date":"2026-01-02T03:04:05Z","x":1}`: `{"date":"2026-01-02T03:04:05Z","x":1}`,
	} {
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if v.Kind() != KindJSON || v.String() != want {
			t.Errorf("%s read as %s %s, want json %s", in, v.Kind(), v, want)
		}
		b, _ := json.Marshal(v)
		if string(b) != want {
			t.Errorf("%s writes %s, want %s", in, b, want)
		}
	}
	var v Value
	if err := json.Unmarshal([]byte(`{"x":}`), &v); err == nil {
		t.Error("malformed JSON must not be a value")
	}
	if _, err := JSON([]byte(`12`)); err == nil {
		t.Error("a scalar is not a JSON value")
	}
	if x, ok := mustJSON(t, `{"n":[1,2]}`).Any().(map[string]any); !ok || len(x["n"].([]any)) != 2 {
		t.Errorf("Any of a JSON object: %#v", x)
	}
}

func mustJSON(t *testing.T, s string) Value {
	t.Helper()
	v, err := JSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValueOfAndDates(t *testing.T) {
	for _, x := range []any{"s", 1, int64(2), uint8(3), 1.5, true, time.Now(), json.Number("12"), json.Number("1.25")} {
		if _, err := ValueOf(x); err != nil {
			t.Errorf("ValueOf(%T): %v", x, err)
		}
	}
	if _, err := ValueOf([]int{1}); err == nil {
		t.Error("a slice is not a value")
	}
	if v, _ := ValueOf(json.Number("12")); v.Kind() != KindInt {
		t.Errorf("json 12 is %s, want integer", v.Kind())
	}
	// The HTTP API writes dates as RFC 3339 strings; guards read them as dates.
	if d, ok := String("2026-03-01T10:00:00Z").DateValue(); !ok || d.Day() != 1 {
		t.Errorf("RFC 3339 string as date: %v %v", d, ok)
	}
	if _, ok := String("tomorrow").DateValue(); ok {
		t.Error("a non-date string read as a date")
	}
}

func TestEnvCopyOnWrite(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "cow", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	a := token(t, p, "A")
	a.SetAttr("x", Int(1))
	complete(t, k, p, "A")
	b := token(t, p, "B")
	if v, _ := b.Attr("x"); v != Int(1) {
		t.Fatalf("B inherited x=%v", v)
	}
	b.SetAttr("x", Int(2))
	if v, _ := a.Attr("x"); v != Int(1) {
		t.Fatalf("writing B's env changed A's: %v", v)
	}
	a.SetAttr("y", Int(3))
	if _, ok := b.Attr("y"); ok {
		t.Fatal("writing A's env changed B's")
	}
	b.FullEnv().Set("procAttr", String("t"))
	if _, ok := p.Env.Get("procAttr"); ok {
		t.Fatal("a full-env write reached the process env")
	}
}

// TestIntegersBeyondInt64AreRefused: a JSON integer that does not fit in 64
// bits is an error, not a float that silently loses digits.
func TestIntegersBeyondInt64AreRefused(t *testing.T) {
	for _, s := range []string{"1180591620717411303425", "-9223372036854775809", "9223372036854775808"} {
		var v Value
		if err := json.Unmarshal([]byte(s), &v); err == nil {
			t.Errorf("%s read as %v (%s), want an error", s, v, v.Kind())
		}
		if v, err := ValueOf(json.Number(s)); err == nil {
			t.Errorf("ValueOf(json.Number(%s)) = %v, want an error", s, v)
		}
	}
	for s, want := range map[string]Value{
		"9223372036854775807":      Int(9223372036854775807),
		"-9223372036854775808":     Int(-9223372036854775808),
		"1e21":                     Float(1e21),
		"1180591620717411303425.0": Float(1180591620717411303425.0),
	} {
		var v Value
		if err := json.Unmarshal([]byte(s), &v); err != nil || v != want {
			t.Errorf("%s read as %v, %v; want %v", s, v, err, want)
		}
	}
}
