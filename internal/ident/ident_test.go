package ident

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns Veena uses, beside the regular expressions they stand for.
var cases = []struct {
	p  Pattern
	re *regexp.Regexp
}{
	{New("A-Za-z_", "A-Za-z0-9_.-", 127), regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$`)},
	{New("A-Za-z_", "A-Za-z0-9_", 127), regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)},
	{New("A-Za-z_", "A-Za-z0-9_.:/-", 127), regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:/\-]{0,127}$`)},
	{New("A-Za-z0-9", "A-Za-z0-9._:-", 127), regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)},
	{New("A-Za-z0-9", "A-Za-z0-9._@-", 63), regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)},
}

func TestMatchAsTheRegexp(t *testing.T) {
	inputs := []string{"", "a", "_", "9", "-", ".", "a.b-c_d", "a/b:c", "x@y", "a b", "a\n", "é", "aé",
		"Z" + strings.Repeat("z", 63), "Z" + strings.Repeat("z", 64), "Z" + strings.Repeat("z", 127), "Z" + strings.Repeat("z", 128)}
	for i, c := range cases {
		for _, s := range inputs {
			if got, want := c.p.Match(s), c.re.MatchString(s); got != want {
				t.Errorf("pattern %d (%s) on %q: %v, want %v", i, c.re, s, got, want)
			}
		}
	}
}

func FuzzMatchAsTheRegexp(f *testing.F) {
	for _, s := range []string{"a", "a.b", "x@y:z/w", "-a", "a\x00", strings.Repeat("q", 130)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, c := range cases {
			if got, want := c.p.Match(s), c.re.MatchString(s); got != want {
				t.Fatalf("pattern %d (%s) on %q: %v, want %v", i, c.re, s, got, want)
			}
		}
	})
}
