package rubric

import (
	"hash/fnv"
	"testing"
	"time"
)

// hashEnv answers every name, deterministically, from a hash of the name.
type hashEnv struct{}

func hashOf(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

func (hashEnv) Predicate(name string) (bool, error) { return hashOf(name)&1 == 1, nil }
func (hashEnv) DateFunction(name string) (time.Time, error) {
	return time.Unix(int64(hashOf(name)), 0).UTC(), nil
}
func (hashEnv) StringFunction(name string) (string, error) { return name + "!", nil }

var fuzzSeeds = []string{
	"",
	"Accept",
	"if isTrue or isFalse and isFalse then Accept else Discard",
	"if (isTrue or isFalse) and isFalse then Accept else Discard",
	"if isTrue then if isFalse then Skip a else Skip b else Discard",
	"if not (a and b) or not c then Skip \"x y\" else Skip foo.bar",
	"42", "-7", `"foo\"bar\""`, `"a\b"`, "@name",
	"(DueDate)", "(1 business day before DueDate)", "(-3 weeks after D)",
	"delay until 2 hours after DueDate", "DELAY UNTIL 1 Day BEFORE DueDate",
	"IF a AND b OR NOT c THEN accept ELSE skip",
	"if Not then Accept else Discard", "if Not (x) then Skip accept else @accept",
	"/* c */ if a // d\n then Accept else Discard",
	"(day before DueDate)", "(1f day before DueDate)", "(+1 day before DueDate)",
	"if x then Accept", `"unterminated`, "/* unterminated",
}

// FuzzCompile checks that Compile never panics, that the canonical form of
// any program compiles to the same canonical form, and that both mean the
// same thing.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			if _, ok := err.(*CompileError); !ok {
				t.Fatalf("Compile(%q) error %T %v, want *CompileError", src, err, err)
			}
			return
		}
		out := p.String()
		q, err := Compile(out)
		if err != nil {
			t.Fatalf("Compile(%q) = %q, which does not compile: %v", src, out, err)
		}
		if out2 := q.String(); out2 != out {
			t.Fatalf("Compile(%q) = %q, recompiled %q", src, out, out2)
		}

		// The static tools run on any program, and agree on both forms.
		k1, err1 := p.ResultKind()
		k2, err2 := q.ResultKind()
		if k1 != k2 || (err1 == nil) != (err2 == nil) {
			t.Fatalf("ResultKind(%q) = %v, %v; canonical %v, %v", src, k1, err1, k2, err2)
		}
		p.SkipArcNames()
		p.Symbols()

		v1, err1 := p.Eval(hashEnv{})
		v2, err2 := q.Eval(hashEnv{})
		if err1 != nil || err2 != nil {
			t.Fatalf("Eval(%q): %v / %v", src, err1, err2)
		}
		if !sameValue(v1, v2) {
			t.Fatalf("Eval(%q) = %v, canonical %q gives %v", src, v1, out, v2)
		}
	})
}
