package annotation

import (
	"strings"
	"testing"
)

func TestParseTransition(t *testing.T) {
	cases := []struct {
		in       string
		want     string // canonical form
		bindings string
	}{
		{"", "", ""},
		{"dawn", "dawn()", ""},
		{"dawn()", "dawn()", ""},
		{" dawn ( ) ", "dawn()", ""},
		{"got_SRV(&srv)", "got_SRV(&srv)", "srv"},
		{"ev#2(x, &y)", "ev#2(x, &y)", "y"},
		{"ev # 2 ( x ,& y )", "ev#2(x, &y)", "y"},
		{"/send(x)", "/send(x)", ""},
		{"  / send", "/send()", ""},
		{"req(&id)/store(id, &rec)", "req(&id)/store(id, &rec)", "id,rec"},
		{"req(&id)/store(&id)", "req(&id)/store(&id)", "id"},
		{"ünïcode_1(é)", "ünïcode_1(é)", ""},
		{"_x#0", "_x#0()", ""},
	}
	for _, c := range cases {
		tr, err := ParseTransition(c.in)
		if err != nil {
			t.Errorf("ParseTransition(%q): %v", c.in, err)
			continue
		}
		if got := tr.String(); got != c.want {
			t.Errorf("ParseTransition(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := strings.Join(tr.Bindings(), ","); got != c.bindings {
			t.Errorf("ParseTransition(%q) binds %q, want %q", c.in, got, c.bindings)
		}
	}
}

func TestParseTransitionErrors(t *testing.T) {
	cases := []struct {
		in     string
		column int
		msg    string
	}{
		{"dawn(", 6, `expected an argument (x or &x), found end of annotation`},
		{"dawn(x", 7, `expected "," or ")", found end of annotation`},
		{"dawn(x y)", 8, `expected "," or ")", found 'y'`},
		{"dawn(,)", 6, `expected an argument`},
		{"dawn(&)", 7, `expected an argument`},
		{"dawn(x,)", 8, `expected an argument`},
		{"dawn#", 6, `expected a number after "#"`},
		{"dawn#x", 6, `expected a number after "#"`},
		{"dawn#99999999999999999999", 6, `too large`},
		{"dawn/", 6, `an action must follow "/"`},
		{"dawn()x", 7, `unexpected 'x' after the event`},
		{"a/b/c", 4, `unexpected '/' after the action`},
		{"1abc", 1, `expected a name`},
		{"(x)", 1, `expected a name`},
		{"f(x, x)", 6, `argument x is given twice`},
		{"f(&x, x)", 7, `argument x is given twice`},
		{"f(x)/g(1)", 8, `expected an argument`},
		{"é(", 3, `expected an argument`},
		{"a\xffb(", 2, `invalid UTF-8`},
	}
	for _, c := range cases {
		_, err := ParseTransition(c.in)
		if err == nil {
			t.Errorf("ParseTransition(%q) succeeded, want an error", c.in)
			continue
		}
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("ParseTransition(%q) error %T, want *Error", c.in, err)
			continue
		}
		if e.Column != c.column || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("ParseTransition(%q) = column %d %q, want column %d %q", c.in, e.Column, e.Msg, c.column, c.msg)
		}
	}
	long := "f(" + strings.Repeat("x", MaxLength) + ")"
	if _, err := ParseTransition(long); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("ParseTransition of %d bytes: %v, want the length limit", len(long), err)
	}
}

func TestParsePlace(t *testing.T) {
	for in, want := range map[string]string{
		"ldap_query(&result)":  "ldap_query(&result)",
		"keygen()":             "keygen()",
		" run#3 ( cmd , &out)": "run#3(cmd, &out)",
	} {
		c, err := ParsePlace(in)
		if err != nil {
			t.Errorf("ParsePlace(%q): %v", in, err)
			continue
		}
		if c.String() != want {
			t.Errorf("ParsePlace(%q) = %q, want %q", in, c, want)
		}
	}
	for in, msg := range map[string]string{
		"keygen":        `expected "(" after keygen`,
		"":              "an activity needs a name",
		"a(x)/b(y)":     `unexpected '/' after the activity`,
		"a(x) extra":    `unexpected 'e' after the activity`,
		"a(&x, &x)":     "given twice",
		"a#(x)":         "expected a number",
		"a(x":           `expected "," or ")"`,
		"  (x)":         "expected a name",
		"some place(x)": `expected "(" after some`,
	} {
		_, err := ParsePlace(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParsePlace(%q) = %v, want %q", in, err, msg)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		kind Kind
		text string
		err  bool
	}{
		{"dawn", Annotation, "dawn()", false},
		{"t10.2", Label, "", false},
		{"Making Water", Label, "", false},
		{"VAR:x", Label, "", false},
		{"", Label, "", false},
		{"decision_s00003022_fire_s00001073", Annotation, "decision_s00003022_fire_s00001073()", false},
		{"send(x", Label, "", true},
		{"go/", Label, "", true},
		{"recv(&msg)/ack(msg)", Annotation, "recv(&msg)/ack(msg)", false},
	} {
		k, tr, err := ClassifyTransition(c.name)
		if (err != nil) != c.err || k != c.kind || tr.String() != c.text {
			t.Errorf("ClassifyTransition(%q) = %v %q %v, want %v %q error %v", c.name, k, tr, err, c.kind, c.text, c.err)
		}
	}
	for _, c := range []struct {
		name string
		kind Kind
		err  bool
	}{
		{"lookup_kdc", Label, false},
		{"Failed", Label, false},
		{"VAR:x", Label, false},
		{"ldap(&r)", Annotation, false},
		{"p 1", Label, false},
		{"ldap(", Label, true},
	} {
		k, _, err := ClassifyPlace(c.name)
		if (err != nil) != c.err || k != c.kind {
			t.Errorf("ClassifyPlace(%q) = %v %v, want %v error %v", c.name, k, err, c.kind, c.err)
		}
	}
}
