package joinlang

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// stripPos returns a copy of p with every position zeroed, so that programs
// can be compared by structure.
func stripPos(p *Program) *Program {
	if p == nil {
		return nil
	}
	out := &Program{}
	for _, set := range p.Alternatives {
		ns := &RequireSet{}
		for _, r := range set.Requires {
			nr := *r
			nr.Pos = Pos{}
			nr.When = stripExpr(r.When)
			ns.Requires = append(ns.Requires, &nr)
		}
		out.Alternatives = append(out.Alternatives, ns)
	}
	return out
}

func stripExpr(e Expr) Expr {
	switch x := e.(type) {
	case Ident:
		return Ident{Name: x.Name}
	case Or:
		return Or{stripExpr(x.Left), stripExpr(x.Right)}
	case And:
		return And{stripExpr(x.Left), stripExpr(x.Right)}
	case Not:
		return Not{stripExpr(x.X)}
	}
	return e
}

func equalPrograms(a, b *Program) bool { return reflect.DeepEqual(stripPos(a), stripPos(b)) }

// Constructors for expected trees.
func id(n string) Expr                  { return Ident{Name: n} }
func or(l, r Expr) Expr                 { return Or{l, r} }
func and(l, r Expr) Expr                { return And{l, r} }
func not(x Expr) Expr                   { return Not{x} }
func prog(sets ...*RequireSet) *Program { return &Program{Alternatives: sets} }
func set(rs ...*Require) *RequireSet    { return &RequireSet{Requires: rs} }
func node(n string, w Expr) *Require    { return &Require{Kind: RequireNode, Name: n, When: w} }
func tset(n string, w Expr) *Require    { return &Require{Kind: RequireTokenSet, Name: n, When: w} }
func all(w Expr) *Require               { return &Require{Kind: RequireAllArcs, When: w} }
func allL(l string, w Expr) *Require {
	return &Require{Kind: RequireAllArcs, Labelled: true, Label: l, When: w}
}
func least(n int, w Expr) *Require { return &Require{Kind: RequireAtLeastArcs, Count: n, When: w} }
func leastL(n int, l string, w Expr) *Require {
	return &Require{Kind: RequireAtLeastArcs, Count: n, Labelled: true, Label: l, When: w}
}

func dump(p *Program) string {
	if p == nil {
		return "<nil>"
	}
	var b strings.Builder
	for i, s := range p.Alternatives {
		fmt.Fprintf(&b, "alt %d:\n", i)
		for _, r := range s.Requires {
			fmt.Fprintf(&b, "  %+v when=%v\n", *r, r.When)
		}
	}
	return b.String()
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Program
	}{
		{"node", `require node "A"`, prog(set(node("A", nil)))},
		{"node when", `require node "A" when x`, prog(set(node("A", id("x"))))},
		{"tokenset", `require tokenset "ts"`, prog(set(tset("ts", nil)))},
		{"tokenset when", `require tokenset "ts" when first`, prog(set(tset("ts", id("first"))))},
		{"all arcs", `require all arcs`, prog(set(all(nil)))},
		{"all arcs when", `require all arcs when a.b_c1`, prog(set(all(id("a.b_c1"))))},
		{"all arcs labelled", `require all arcs labelled "foo"`, prog(set(allL("foo", nil)))},
		{"all arcs labelled when", `require all arcs labelled "foo" when p`, prog(set(allL("foo", id("p"))))},
		{"all arcs labelled default", `require all arcs labelled default`, prog(set(allL("", nil)))},
		{"all arcs labelled default when", `require all arcs labelled default when p`, prog(set(allL("", id("p"))))},
		{"all arcs labelled string default", `require all arcs labelled "default"`, prog(set(allL("default", nil)))},
		{"all arcs labelled empty string", `require all arcs labelled ""`, prog(set(allL("", nil)))},
		{"at least", `require at least 2 arcs`, prog(set(least(2, nil)))},
		{"at least when", `require at least 1 arcs when p`, prog(set(least(1, id("p"))))},
		{"at least labelled", `require at least 3 arcs labelled "x y"`, prog(set(leastL(3, "x y", nil)))},
		{"at least labelled when", `require at least 3 arcs labelled "x" when p`, prog(set(leastL(3, "x", id("p"))))},
		{"at least labelled default", `require at least 10 arcs labelled default`, prog(set(leastL(10, "", nil)))},
		{"at least labelled default when", `require at least 10 arcs labelled default when p`, prog(set(leastL(10, "", id("p"))))},
		{"at least large", `require at least 2147483647 arcs`, prog(set(least(2147483647, nil)))},
		{"multiple requires", "require node \"A\"\nrequire node \"B\" when p\nrequire all arcs labelled \"c\"",
			prog(set(node("A", nil), node("B", id("p")), allL("c", nil)))},
		{"alternatives", `require node "A" or require node "B" or require tokenset "C"`,
			prog(set(node("A", nil)), set(node("B", nil)), set(tset("C", nil)))},
		{"alternatives with sets", "require node \"A\" require node \"B\"\nor\nrequire all arcs\nrequire at least 1 arcs labelled default",
			prog(set(node("A", nil), node("B", nil)), set(all(nil), leastL(1, "", nil)))},
		{"ambiguous or", "require node \"A\" when x or y\nor\nrequire node \"B\"",
			prog(set(node("A", or(id("x"), id("y")))), set(node("B", nil)))},
		{"ambiguous or one line", `require node "A" when x or y or require node "B" when z or w`,
			prog(set(node("A", or(id("x"), id("y")))), set(node("B", or(id("z"), id("w")))))},
		{"when then next require", `require node "A" when x require node "B" when not y`,
			prog(set(node("A", id("x")), node("B", not(id("y")))))},
		{"precedence", `require all arcs when a or b and c`, prog(set(all(or(id("a"), and(id("b"), id("c"))))))},
		{"precedence not", `require all arcs when not a and b or not c`,
			prog(set(all(or(and(not(id("a")), id("b")), not(id("c"))))))},
		{"left assoc", `require all arcs when a or b or c and d and e`,
			prog(set(all(or(or(id("a"), id("b")), and(and(id("c"), id("d")), id("e"))))))},
		{"parens", `require all arcs when (a or b) and not (c or d)`,
			prog(set(all(and(or(id("a"), id("b")), not(or(id("c"), id("d")))))))},
		{"paren or require", `require all arcs when (((a)))`, prog(set(all(id("a"))))},
		{"comments", "// leading comment\nrequire /* inline */ node \"A\" // trailing\n/* multi\nline */ or require all arcs /**/",
			prog(set(node("A", nil)), set(all(nil)))},
		{"comment-like text in string", `require node "a // b /* c */"`, prog(set(node("a // b /* c */", nil)))},
		{"case-insensitive keywords", `REQUIRE Node "A" When X Or Y AND NOT z OR Require TOKENSET "t" require ALL Arcs LABELLED Default require At LEAST 2 ARCS Labelled "l"`,
			prog(set(node("A", or(id("X"), and(id("Y"), not(id("z")))))),
				set(tset("t", nil), allL("", nil), leastL(2, "l", nil)))},
		{"identifiers are case-sensitive", `require all arcs when IsOK or isok`, prog(set(all(or(id("IsOK"), id("isok")))))},
		{"keyword prefix identifiers", `require all arcs when order or android or nothing or node.x or requires`,
			prog(set(all(or(or(or(or(id("order"), id("android")), id("nothing")), id("node.x")), id("requires")))))},
		{"escaped quote", `require node "say \"hi\""`, prog(set(node(`say "hi"`, nil)))},
		{"other backslashes kept", `require node "a\nb\\c"`, prog(set(node(`a\nb\\c`, nil)))},
		{"backslash before escaped quote", `require node "a\\"b"`, prog(set(node(`a\"b`, nil)))},
		{"newline in string", "require node \"a\nb\"", prog(set(node("a\nb", nil)))},
		{"empty name", `require node ""`, prog(set(node("", nil)))},
		{"unicode in string", `require node "Prüfung ✓"`, prog(set(node("Prüfung ✓", nil)))},
		{"no spaces needed", `require node"A"when(x)or(y)require at least 2arcs labelled"l"`,
			prog(set(node("A", or(id("x"), id("y"))), leastL(2, "l", nil)))},
		{"whitespace kinds", "\t\r\n require\f\tall\r\narcs \n", prog(set(all(nil)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.src, err)
			}
			if !equalPrograms(got, tt.want) {
				t.Fatalf("Compile(%q)\ngot:\n%s\nwant:\n%s", tt.src, dump(got), dump(tt.want))
			}
			// The canonical form compiles to the same program and is a
			// fixed point of the printer.
			s := got.String()
			again, err := Compile(s)
			if err != nil {
				t.Fatalf("Compile(String()) = %v\nsource:\n%s", err, s)
			}
			if !equalPrograms(again, got) {
				t.Fatalf("round trip changed the program\nsource:\n%s\ngot:\n%s\nwant:\n%s", s, dump(again), dump(got))
			}
			if s2 := again.String(); s2 != s {
				t.Fatalf("String not stable:\n%s\n---\n%s", s, s2)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string // substring of the message
	}{
		{"empty", ``, 1, 1, "empty program"},
		{"only comments", "// nothing\n/* at all */  ", 2, 15, "empty program"},
		{"at least 0", `require at least 0 arcs`, 1, 18, "positive integer"},
		{"at least -1", `require at least -1 arcs`, 1, 18, "found -1"},
		{"at least leading zero", `require at least 01 arcs`, 1, 18, "leading zeros"},
		{"at least too large", `require at least 99999999999 arcs`, 1, 18, "too large"},
		{"at least no number", `require at least arcs`, 1, 18, `expected arc count after "at least", found keyword "arcs"`},
		{"at least missing arcs", `require at least 2`, 1, 19, `expected "arcs" after the arc count, found end of input`},
		{"at least missing arcs labelled", `require at least 2 labelled "a"`, 1, 20, `found keyword "labelled"`},
		{"all missing arcs", `require all labelled "a"`, 1, 13, `expected "arcs" after "all", found keyword "labelled"`},
		{"at missing least", `require at 2 arcs`, 1, 12, `expected "least" after "at", found number 2`},
		{"unterminated string", "require node \"A\"\nrequire node \"abc", 2, 14, "unterminated string"},
		{"string ending in escaped quote", `require node "abc\"`, 1, 14, "unterminated string"},
		{"unterminated comment", "require node \"A\" /* never\nclosed", 1, 18, "unterminated comment"},
		{"keyword as identifier", `require node "A" when node`, 1, 23, `keyword "node" cannot be used`},
		{"keyword as identifier any case", "require node \"A\"\n  when x and Default", 2, 14, `keyword "Default" cannot be used`},
		{"require as identifier", `require node "A" when require`, 1, 23, `keyword "require" cannot be used`},
		{"trailing garbage ident", `require node "A" foo`, 1, 18, `expected "require", "or" or end of input, found identifier "foo"`},
		{"trailing garbage paren", `require all arcs when x)`, 1, 24, `found ")"`},
		{"trailing garbage char", `require all arcs ;`, 1, 18, `unexpected character ';'`},
		{"trailing string", `require node "A" "B"`, 1, 18, `found string "B"`},
		{"dangling or", `require node "A" or`, 1, 20, `expected "require" after "or", found end of input`},
		{"or without require", `require all arcs or all arcs`, 1, 21, `expected "require" after "or", found keyword "all"`},
		{"no require", `node "A"`, 1, 1, `expected "require", found keyword "node"`},
		{"unknown form", `require arcs`, 1, 9, `"node", "tokenset", "all" or "at"`},
		{"node without string", `require node A`, 1, 14, `expected node name as a quoted string`},
		{"tokenset without string", `require tokenset`, 1, 17, `expected token set name as a quoted string`},
		{"labelled nothing", `require all arcs labelled`, 1, 26, `"default" after "labelled", found end of input`},
		{"labelled ident", `require all arcs labelled foo`, 1, 27, `found identifier "foo"`},
		{"labelled on node", `require node "A" labelled "x"`, 1, 18, `found keyword "labelled"`},
		{"when nothing", `require all arcs when`, 1, 22, `expected predicate name or "(", found end of input`},
		{"when dangling and", `require all arcs when a and`, 1, 28, `expected predicate name`},
		{"when dangling or", `require all arcs when a or`, 1, 27, `expected predicate name`},
		{"when or or require", `require all arcs when a or or require all arcs`, 1, 28, `keyword "or"`},
		{"double not", `require all arcs when not not a`, 1, 27, `keyword "not"`},
		{"unclosed paren", `require all arcs when (a or b`, 1, 30, `expected ")" to close the "(" at line 1, column 23, found end of input`},
		{"paren or require", `require all arcs when (a or require all arcs)`, 1, 26, `expected ")"`},
		{"empty parens", `require all arcs when ()`, 1, 24, `expected predicate name or "(", found ")"`},
		{"number as predicate", `require all arcs when 1`, 1, 23, `found number 1`},
		{"identifier with dash", `require all arcs when a-b`, 1, 24, `unexpected character '-'`},
		{"identifier starting with underscore", `require all arcs when _a`, 1, 23, `unexpected character '_'`},
		{"column counts characters", "require node \"äöü\" ✓", 1, 20, `unexpected character '✓'`},
		{"invalid utf8", "require all arcs \xff", 1, 18, `invalid UTF-8 byte 0xff`},
		{"single slash", `require all arcs / x`, 1, 18, `unexpected character '/'`},
		{"lex error after syntax error reports syntax error", `require foo "unterminated`, 1, 9, `found identifier "foo"`},
		{"too deep", "require all arcs when " + strings.Repeat("(", MaxNesting+1) + "a" + strings.Repeat(")", MaxNesting+1),
			1, 23 + MaxNesting, "nested too deeply"},
		{"too large", "require all arcs" + strings.Repeat(" ", MaxSourceSize), 1, 1, "program too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.src)
			if err == nil {
				t.Fatalf("Compile(%q) = %s, want an error", tt.src, p)
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v, want *CompileError", err, err)
			}
			if ce.Pos.Line != tt.line || ce.Pos.Column != tt.col {
				t.Errorf("position = line %d, column %d; want line %d, column %d (%v)",
					ce.Pos.Line, ce.Pos.Column, tt.line, tt.col, err)
			}
			prefix := fmt.Sprintf("line %d, column %d: ", tt.line, tt.col)
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) {
				t.Errorf("error = %q, want prefix %q and %q", msg, prefix, tt.msg)
			}
		})
	}
}

func TestCompileErrorOffset(t *testing.T) {
	src := "require node \"A\"\r\n\trequire node \"é\" x"
	_, err := Compile(src)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	want := Pos{Offset: strings.LastIndex(src, "x"), Line: 2, Column: 19}
	if ce.Pos != want {
		t.Fatalf("Pos = %+v, want %+v (%v)", ce.Pos, want, err)
	}
}

func TestMaxNestingAccepted(t *testing.T) {
	src := "require all arcs when " + strings.Repeat("(", MaxNesting) + "not a" + strings.Repeat(")", MaxNesting)
	p, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Alternatives[0].Requires[0].When.String(); got != "not a" {
		t.Fatalf("When = %q", got)
	}
}

func TestPositions(t *testing.T) {
	p := MustCompile("require node \"A\"\n  or  REQUIRE all arcs when\n x and (y)")
	r0 := p.Alternatives[0].Requires[0]
	r1 := p.Alternatives[1].Requires[0]
	if r0.Pos != (Pos{0, 1, 1}) {
		t.Errorf("r0.Pos = %+v", r0.Pos)
	}
	if r1.Pos != (Pos{23, 2, 7}) {
		t.Errorf("r1.Pos = %+v", r1.Pos)
	}
	a := r1.When.(And)
	if x := a.Left.(Ident); x.Pos != (Pos{46, 3, 2}) {
		t.Errorf("x.Pos = %+v", x.Pos)
	}
	if y := a.Right.(Ident); y.Pos != (Pos{53, 3, 9}) {
		t.Errorf("y.Pos = %+v", y.Pos)
	}
}

func TestMustCompile(t *testing.T) {
	if p := MustCompile(`require all arcs`); len(p.Alternatives) != 1 {
		t.Fatalf("MustCompile = %v", p)
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "line 1, column 1") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	MustCompile(`oops`)
}

func TestString(t *testing.T) {
	tests := []struct{ src, want string }{
		{`REQUIRE NODE "A"`, `require node "A"`},
		{`require  tokenset  "t"  when  X`, `require tokenset "t" when X`},
		{`require all arcs labelled DEFAULT`, `require all arcs labelled default`},
		{`require all arcs labelled ""`, `require all arcs labelled default`},
		{`require all arcs labelled "default"`, `require all arcs labelled "default"`},
		{`require at least 2 arcs labelled "x\"y" when (a)`, `require at least 2 arcs labelled "x\"y" when a`},
		{`require node "a\\"b"`, `require node "a\\"b"`},
		{"require node \"A\" require node \"B\" or require all arcs",
			"require node \"A\"\nrequire node \"B\"\nor\nrequire all arcs"},
		{`require all arcs when ((a or b)) or (c and d)`, `require all arcs when a or b or c and d`},
		{`require all arcs when a or (b or c)`, `require all arcs when a or (b or c)`},
		{`require all arcs when a and (b and c)`, `require all arcs when a and (b and c)`},
		{`require all arcs when (a or b) and c`, `require all arcs when (a or b) and c`},
		{`require all arcs when not (a and b) or not c`, `require all arcs when not (a and b) or not c`},
		{`require node "A" when x or y or require node "B"`, "require node \"A\" when x or y\nor\nrequire node \"B\""},
	}
	for _, tt := range tests {
		got := MustCompile(tt.src).String()
		if got != tt.want {
			t.Errorf("String of %q =\n%s\nwant\n%s", tt.src, got, tt.want)
		}
	}
}

func TestStringHandBuilt(t *testing.T) {
	// Trees the parser never builds still print so that they compile back
	// to the same structure.
	p := prog(set(all(not(not(or(id("a"), or(id("b"), and(id("c"), and(id("d"), id("e"))))))))))
	want := `require all arcs when not (not (a or (b or c and (d and e))))`
	if got := p.String(); got != want {
		t.Fatalf("String = %s\nwant     %s", got, want)
	}
	if again := MustCompile(want); !equalPrograms(again, p) {
		t.Fatalf("round trip:\n%s", dump(again))
	}
	var nilProg *Program
	if nilProg.String() != "" {
		t.Fatal("nil program String")
	}
	if s := (&Require{Kind: 99}).String(); s != "require RequireKind(99)" {
		t.Fatalf("bad kind String = %q", s)
	}
	if s := (Or{Left: id("a")}).String(); s != "a or <nil>" {
		t.Fatalf("incomplete Or String = %q", s)
	}
}

func TestPredicates(t *testing.T) {
	p := MustCompile(`require node "A" when b or a and not b
		require all arcs
		or require tokenset "t" when (c or a) and first`)
	got := Predicates(p)
	want := []string{"b", "a", "c", "first"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Predicates = %q, want %q", got, want)
	}
	if got := Predicates(MustCompile(`require all arcs`)); got != nil {
		t.Fatalf("Predicates without when = %q", got)
	}
	if got := Predicates(nil); got != nil {
		t.Fatalf("Predicates(nil) = %q", got)
	}
}

// recorder is a predicate function over fixed values that records calls.
type recorder struct {
	vals  map[string]bool
	calls []string
}

func (r *recorder) pred(name string) (bool, error) {
	r.calls = append(r.calls, name)
	v, ok := r.vals[name]
	if !ok {
		return false, fmt.Errorf("unknown predicate %q", name)
	}
	return v, nil
}

func whenOf(t *testing.T, expr string) Expr {
	t.Helper()
	p, err := Compile("require all arcs when " + expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return p.Alternatives[0].Requires[0].When
}

func TestEval(t *testing.T) {
	vals := map[string]bool{"T": true, "F": false, "T2": true, "F2": false}
	tests := []struct {
		expr  string
		want  bool
		calls string
	}{
		{"T", true, "T"},
		{"F", false, "F"},
		{"not T", false, "T"},
		{"not F", true, "F"},
		{"T or F", true, "T"},        // short-circuit
		{"F or T", true, "F T"},      //
		{"F or F2", false, "F F2"},   //
		{"F and T", false, "F"},      // short-circuit
		{"T and F", false, "T F"},    //
		{"T and T2", true, "T T2"},   //
		{"T or F and F2", true, "T"}, // and binds tighter: T or (F and F2)
		{"(T or F) and F2", false, "T F2"},
		{"F and T or T2", true, "F T2"}, // (F and T) or T2
		{"not F and F2", false, "F F2"}, // (not F) and F2
		{"not (F and F2)", true, "F"},   //
		{"not T or T2", true, "T T2"},   // (not T) or T2
		{"F or F2 or T or F", true, "F F2 T"},
		{"T and T2 and F and T", false, "T T2 F"},
		{"T or Unknown", true, "T"},   // the unknown predicate is never asked
		{"F and Unknown", false, "F"}, //
	}
	for _, tt := range tests {
		rec := &recorder{vals: vals}
		got, err := whenOf(t, tt.expr).Eval(rec.pred)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s = %v, want %v", tt.expr, got, tt.want)
		}
		if calls := strings.Join(rec.calls, " "); calls != tt.calls {
			t.Errorf("%s: calls %q, want %q", tt.expr, calls, tt.calls)
		}
	}
}

func TestEvalError(t *testing.T) {
	boom := errors.New("boom")
	for _, expr := range []string{"x", "not x", "x or T", "T and x", "F or x", "x and T", "T and (F or x)"} {
		var calls []string
		pred := func(name string) (bool, error) {
			calls = append(calls, name)
			switch name {
			case "T":
				return true, nil
			case "F":
				return false, nil
			}
			return true, boom
		}
		got, err := whenOf(t, expr).Eval(pred)
		if !errors.Is(err, boom) || got {
			t.Errorf("%s = %v, %v; want false, boom", expr, got, err)
		}
		if calls[len(calls)-1] != "x" {
			t.Errorf("%s: evaluation went on after the error: %q", expr, calls)
		}
	}
	if _, err := (Ident{Name: "a"}).Eval(nil); err == nil {
		t.Error("Eval(nil) gave no error")
	}
	for _, e := range []Expr{Or{Left: id("a")}, And{Right: id("a")}, Not{}} {
		if _, err := e.Eval(func(string) (bool, error) { return true, nil }); err == nil {
			t.Errorf("%#v: no error for a nil operand", e)
		}
	}
}

func TestKeywordsAllCases(t *testing.T) {
	// Every keyword, in lower, upper and mixed case, is a keyword: it
	// cannot be a predicate name.
	for kw := range keywords {
		for _, spelling := range []string{kw, strings.ToUpper(kw), strings.ToUpper(kw[:1]) + kw[1:]} {
			_, err := Compile("require all arcs when " + spelling + " and a")
			if err == nil || !strings.Contains(err.Error(), "keyword") {
				t.Errorf("%s as a predicate: err = %v", spelling, err)
			}
		}
	}
}

func TestRequireKindString(t *testing.T) {
	for k, want := range map[RequireKind]string{
		RequireNode: "node", RequireTokenSet: "tokenset", RequireAllArcs: "all arcs",
		RequireAtLeastArcs: "at least arcs", 0: "RequireKind(0)",
	} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}

func ExampleCompile() {
	p, err := Compile(`
		// Review needed: wait for the reviewer and all approvals.
		require node "Review" when needsReview
		require all arcs labelled "approve"
		or
		require at least 2 arcs labelled default`)
	if err != nil {
		panic(err)
	}
	fmt.Println(p)
	fmt.Println(Predicates(p))
	ok, _ := p.Alternatives[0].Requires[0].When.Eval(func(name string) (bool, error) {
		return name == "needsReview", nil
	})
	fmt.Println(ok)
	_, err = Compile(`require at least 0 arcs`)
	fmt.Println(err)
	// Output:
	// require node "Review" when needsReview
	// require all arcs labelled "approve"
	// or
	// require at least 2 arcs labelled default
	// [needsReview]
	// true
	// line 1, column 18: arc count must be a positive integer without sign or leading zeros, found 0
}

// randomProgram builds a program the parser could have produced.
func randomProgram(r *rand.Rand) *Program {
	names := []string{"", "A", "default", `say "hi"`, `a\b`, `\"`, "x\ny", "Prüfung", "or require", `\\"\"x`}
	preds := []string{"a", "B", "first", "x.y_1", "nodes", "ORx"}
	var expr func(depth int) Expr
	expr = func(depth int) Expr {
		if depth <= 0 {
			return id(preds[r.Intn(len(preds))])
		}
		switch r.Intn(4) {
		case 0:
			return or(expr(depth-1), expr(depth-1))
		case 1:
			return and(expr(depth-1), expr(depth-1))
		case 2:
			return not(expr(depth - 1))
		}
		return id(preds[r.Intn(len(preds))])
	}
	p := &Program{}
	for range 1 + r.Intn(3) {
		s := &RequireSet{}
		for range 1 + r.Intn(3) {
			req := &Require{Kind: RequireKind(1 + r.Intn(4))}
			switch req.Kind {
			case RequireNode, RequireTokenSet:
				req.Name = names[r.Intn(len(names))]
			case RequireAtLeastArcs:
				req.Count = 1 + r.Intn(5)
				fallthrough
			case RequireAllArcs:
				if r.Intn(2) == 0 {
					req.Labelled = true
					req.Label = names[r.Intn(len(names))]
				}
			}
			if r.Intn(3) > 0 {
				req.When = expr(r.Intn(6))
			}
			s.Requires = append(s.Requires, req)
		}
		p.Alternatives = append(p.Alternatives, s)
	}
	return p
}

func TestRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := range 5000 {
		p := randomProgram(r)
		s := p.String()
		got, err := Compile(s)
		if err != nil {
			t.Fatalf("#%d: %v\n%s", i, err, s)
		}
		if !equalPrograms(got, p) {
			t.Fatalf("#%d: round trip changed the program\n%s\ngot:\n%s\nwant:\n%s", i, s, dump(got), dump(p))
		}
	}
}

func TestLargePrograms(t *testing.T) {
	// Programs near the size limit compile quickly and evaluate without
	// trouble.
	long := "require all arcs when a" + strings.Repeat(" or a", (MaxSourceSize-30)/5)
	p, err := Compile(long)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	v, err := p.Alternatives[0].Requires[0].When.Eval(func(string) (bool, error) { calls++; return false, nil })
	if v || err != nil || calls != (MaxSourceSize-30)/5+1 {
		t.Fatalf("Eval = %v, %v after %d calls", v, err, calls)
	}
	if again := MustCompile(p.String()); !equalPrograms(again, p) {
		t.Fatal("round trip of a long program")
	}
	many := strings.Repeat("require node \"n\" ", (MaxSourceSize-1)/17)
	if p := MustCompile(many); len(p.Alternatives[0].Requires) != (MaxSourceSize-1)/17 {
		t.Fatal("wrong number of requirements")
	}
	alts := "require all arcs" + strings.Repeat(" or require all arcs", (MaxSourceSize-20)/20)
	if p := MustCompile(alts); len(p.Alternatives) != (MaxSourceSize-20)/20+1 {
		t.Fatal("wrong number of alternatives")
	}
}
