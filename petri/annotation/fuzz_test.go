package annotation

import (
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"", "dawn", "dawn()", "got_SRV(&srv)", "ev#2(x, &y)", "/send(x)", "req(&id)/store(id, &rec)",
	"dawn(", "a/b/c", "f(x, x)", "ldap_query(&result)", "t10.2", "é(", "#", "&", "(,)", "a # 1 ( & b , c )",
}

// FuzzParseTransition checks that parsing never panics, that errors carry a
// position inside the text, and that the canonical form of an annotation
// parses back to the same canonical form.
func FuzzParseTransition(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTransition(s)
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("ParseTransition(%q): error %T", s, err)
			}
			if e.Offset < 0 || e.Offset > len(s) || e.Column < 1 || e.Column > utf8.RuneCountInString(s)+1 {
				t.Fatalf("ParseTransition(%q): position %d (column %d) outside the text", s, e.Offset, e.Column)
			}
			return
		}
		out := tr.String()
		if len(out) > MaxLength {
			return // the canonical form adds the parentheses a bare event leaves out
		}
		again, err := ParseTransition(out)
		if err != nil {
			t.Fatalf("ParseTransition(%q) = %q, which does not parse: %v", s, out, err)
		}
		if again.String() != out {
			t.Fatalf("canonical form %q parses to %q", out, again.String())
		}
		if k, _, err := ClassifyTransition(out); err != nil || (out != "" && k != Annotation) {
			t.Fatalf("ClassifyTransition(%q) = %v %v", out, k, err)
		}
	})
}

// FuzzParsePlace checks the place grammar the same way.
func FuzzParsePlace(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParsePlace(s)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("ParsePlace(%q): error %T", s, err)
			}
			return
		}
		if len(c.String()) > MaxLength {
			return
		}
		again, err := ParsePlace(c.String())
		if err != nil || again.String() != c.String() {
			t.Fatalf("ParsePlace(%q) = %q, which parses to %v %v", s, c, again, err)
		}
	})
}
