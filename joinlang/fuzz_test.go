package joinlang

import (
	"errors"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzCompile(f *testing.F) {
	seeds := []string{
		``,
		`require node "A"`,
		`require tokenset "ts" when first`,
		`require all arcs labelled default when not x`,
		`require all arcs labelled "default"`,
		`require at least 2 arcs labelled "a\"b" when (a or b) and not c`,
		"require node \"A\" when x or y\nor\nrequire node \"B\"",
		"// c\nREQUIRE Node \"A\" /* x */ When X Or Y AND NOT z OR Require TOKENSET \"t\"",
		`require at least 0 arcs`,
		`require at least -1 arcs`,
		`require all arcs when node`,
		`require node "unterminated`,
		`require node "a\\"b\"c"`,
		`require node"A"when(x)or(y)require at least 2arcs`,
		`require all arcs when ((((a))))`,
		"require all arcs /* open",
		"require node \"\xff\"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	// Canonical forms of random valid programs give the fuzzer material
	// that gets past the first keywords.
	r := rand.New(rand.NewSource(7))
	for range 20 {
		f.Add(randomProgram(r).String())
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			pos := ce.Pos
			if pos.Line < 1 || pos.Column < 1 || pos.Offset < 0 || pos.Offset > len(src) {
				t.Fatalf("bad error position %+v for %q: %v", pos, src, err)
			}
			if pos.Line != strings.Count(src[:pos.Offset], "\n")+1 {
				t.Fatalf("error line %d does not match offset %d: %v", pos.Line, pos.Offset, err)
			}
			lineStart := strings.LastIndexByte(src[:pos.Offset], '\n') + 1
			if col := utf8.RuneCountInString(src[lineStart:pos.Offset]) + 1; pos.Column != col {
				t.Fatalf("error column %d, want %d: %v", pos.Column, col, err)
			}
			if ce.Msg == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(p.Alternatives) == 0 {
			t.Fatal("compiled program has no alternatives")
		}
		for _, set := range p.Alternatives {
			if len(set.Requires) == 0 {
				t.Fatal("compiled alternative has no requirements")
			}
			for _, r := range set.Requires {
				if r.Kind < RequireNode || r.Kind > RequireAtLeastArcs {
					t.Fatalf("bad kind %d", r.Kind)
				}
				if r.Kind == RequireAtLeastArcs && r.Count < 1 {
					t.Fatalf("count %d", r.Count)
				}
				if r.When != nil {
					// Evaluation terminates and never asks for a name
					// that is not in the program.
					names := map[string]bool{}
					for _, n := range Predicates(p) {
						names[n] = true
					}
					_, err := r.When.Eval(func(name string) (bool, error) {
						if !names[name] {
							t.Fatalf("Eval asked for %q, not a predicate of the program", name)
						}
						return len(name)%2 == 0, nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		s := p.String()
		again, err := Compile(s)
		if err != nil {
			t.Fatalf("canonical form does not compile: %v\nsource: %q\ncanonical: %q", err, src, s)
		}
		if !equalPrograms(p, again) {
			t.Fatalf("round trip changed the program\nsource: %q\ncanonical: %q\nfirst:\n%s\nagain:\n%s",
				src, s, dump(p), dump(again))
		}
		if s2 := again.String(); s2 != s {
			t.Fatalf("canonical form not stable: %q vs %q", s, s2)
		}
	})
}
