package rubric

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York for the calendar-day test
)

var due = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

func testEnv() MapEnv {
	return MapEnv{
		Predicates: map[string]bool{
			"isTrue": true, "isFalse": false,
			"a": true, "b": false,
			"Order.isExpedite": true,
			"accept":           true, // another spelling of a keyword, a valid name
			"Not":              false,
			"And":              true,
		},
		Dates: map[string]time.Time{
			"DueDate": due,
			"Day":     due.Add(time.Hour),
		},
		Strings: map[string]string{"name": "Ada", "accept": "yes"},
	}
}

func guardV(a GuardAction, arc string) Value {
	return Value{Kind: KindGuard, Guard: GuardResult{Action: a, ArcName: arc}}
}
func delayV(t time.Time) Value {
	return Value{Kind: KindGuard, Guard: GuardResult{Action: Delay, Until: t}}
}
func intV(n int64) Value      { return Value{Kind: KindInt, Int: n} }
func strV(s string) Value     { return Value{Kind: KindString, Str: s} }
func dateV(t time.Time) Value { return Value{Kind: KindDate, Date: t} }

func sameValue(a, b Value) bool {
	if a.Kind != b.Kind || a.Int != b.Int || a.Str != b.Str || !a.Date.Equal(b.Date) {
		return false
	}
	return a.Guard.Action == b.Guard.Action && a.Guard.ArcName == b.Guard.ArcName && a.Guard.Until.Equal(b.Guard.Until)
}

func TestEval(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Value
	}{
		// Guard results.
		{"accept", "Accept", guardV(Accept, "")},
		{"discard", "Discard", guardV(Discard, "")},
		{"skip default", "Skip", guardV(Skip, "")},
		{"skip id", "Skip foo", guardV(Skip, "foo")},
		{"skip dotted id", "Skip foo.bar_2", guardV(Skip, "foo.bar_2")},
		{"skip string", `Skip "x y"`, guardV(Skip, "x y")},
		{"skip empty string is default", `Skip ""`, guardV(Skip, "")},
		{"blank", "", guardV(Accept, "")},
		{"whitespace", " \t\r\n\f ", guardV(Accept, "")},
		{"only comments", "// nothing\n/* at all */", guardV(Accept, "")},

		// Precedence and if.
		{"and binds tighter than or", "if isTrue or isFalse and isFalse then Accept else Discard", guardV(Accept, "")},
		{"parentheses", "if (isTrue or isFalse) and isFalse then Accept else Discard", guardV(Discard, "")},
		{"nested if", "if isTrue then if isFalse then Skip a else Skip b else Discard", guardV(Skip, "b")},
		{"nested if in else", "if isFalse then Accept else if isTrue then Skip c else Discard", guardV(Skip, "c")},
		{"not", "if not isFalse then Accept else Discard", guardV(Accept, "")},
		{"not binds tighter than and", "if not isTrue and isFalse then Accept else Discard", guardV(Discard, "")},
		{"not binds tighter than or", "if not isTrue or isTrue then Accept else Discard", guardV(Accept, "")},
		{"not of group", "if not (isTrue and isFalse) then Accept else Discard", guardV(Accept, "")},
		{"not of nested not", "if not (not isTrue) then Accept else Discard", guardV(Accept, "")},
		{"chain of and", "if isTrue and a and isFalse then Accept else Discard", guardV(Discard, "")},
		{"chain of or", "if isFalse or b or a then Accept else Discard", guardV(Accept, "")},
		{"dotted predicate", "if Order.isExpedite then Accept else Discard", guardV(Accept, "")},
		{"no spaces around parens", "if(isTrue)then(DueDate)else(DueDate)", dateV(due)},

		// Integers.
		{"integer", "42", intV(42)},
		{"negative", "-7", intV(-7)},
		{"zero", "0", intV(0)},
		{"negative zero", "-0", intV(0)},
		{"leading zeros", "007", intV(7)},
		{"max int64", "9223372036854775807", intV(9223372036854775807)},
		{"min int64", "-9223372036854775808", intV(-9223372036854775808)},
		{"integer from if", "if isFalse then 1 else -1", intV(-1)},

		// Strings.
		{"string", `"str"`, strV("str")},
		{"escaped quotes", `"foo\"bar\""`, strV(`foo"bar"`)},
		{"empty string", `""`, strV("")},
		{"backslash stands for itself", `"a\b\\c"`, strV(`a\b\\c`)},
		{"newline in string", "\"two\nlines\"", strV("two\nlines")},
		{"comment markers in string", `"// not /* a comment"`, strV("// not /* a comment")},
		{"unicode in string", `"héllo"`, strV("héllo")},
		{"string function", "@name", strV("Ada")},

		// Dates.
		{"date function", "(DueDate)", dateV(due)},
		{"1 day before", "(1 day before DueDate)", dateV(due.AddDate(0, 0, -1))},
		{"2 days after", "(2 days after DueDate)", dateV(due.AddDate(0, 0, 2))},
		{"negative offset before", "(-1 day before DueDate)", dateV(due.AddDate(0, 0, 1))},
		{"business is ignored", "(3 business days after DueDate)", dateV(due.AddDate(0, 0, 3))},
		{"spaces in date parens", "( 1 hour after DueDate )", dateV(due.Add(time.Hour))},
		{"number glued to unit", "(1day after DueDate)", dateV(due.AddDate(0, 0, 1))},

		// delay until, every unit, both directions.
		{"delay until date function", "delay until DueDate", delayV(due)},
		{"delay 1 second after", "delay until 1 second after DueDate", delayV(due.Add(time.Second))},
		{"delay 30 seconds before", "delay until 30 seconds before DueDate", delayV(due.Add(-30 * time.Second))},
		{"delay 1 minute after", "delay until 1 minute after DueDate", delayV(due.Add(time.Minute))},
		{"delay 5 minutes before", "delay until 5 minutes before DueDate", delayV(due.Add(-5 * time.Minute))},
		{"delay 1 hour before", "delay until 1 hour before DueDate", delayV(due.Add(-time.Hour))},
		{"delay 2 hours after", "delay until 2 hours after DueDate", delayV(due.Add(2 * time.Hour))},
		{"delay 1 day after", "delay until 1 day after DueDate", delayV(due.AddDate(0, 0, 1))},
		{"delay 3 days before", "delay until 3 days before DueDate", delayV(due.AddDate(0, 0, -3))},
		{"delay 1 week after", "delay until 1 week after DueDate", delayV(due.AddDate(0, 0, 7))},
		{"delay 2 weeks before", "delay until 2 weeks before DueDate", delayV(due.AddDate(0, 0, -14))},
		{"delay 0 days after", "delay until 0 days after DueDate", delayV(due)},
		{"delay business days", "delay until 2 business days after DueDate", delayV(due.AddDate(0, 0, 2))},
		{"delay business hours", "delay until 4 business hours before DueDate", delayV(due.Add(-4 * time.Hour))},
		{"large hour offset", "delay until 2147483647 hours after DueDate", delayV(time.Unix(due.Unix()+2147483647*3600, 0).UTC())},
		{"delay in if", "if isTrue then delay until 1 week after DueDate else Accept", delayV(due.AddDate(0, 0, 7))},

		// Case-insensitive keywords (decision 12).
		{"accept lower", "accept", guardV(Accept, "")},
		{"accept upper", "ACCEPT", guardV(Accept, "")},
		{"discard upper", "DISCARD", guardV(Discard, "")},
		{"skip lower with id", "skip foo", guardV(Skip, "foo")},
		{"skip upper with string", `SKIP "x"`, guardV(Skip, "x")},
		{"if then else mixed", "If isTrue Then Accept Else Discard", guardV(Accept, "")},
		{"operators upper", "IF isFalse AND isTrue OR isTrue THEN accept ELSE discard", guardV(Accept, "")},
		{"operators mixed", "if isTrue And isFalse Or isFalse then Accept else Discard", guardV(Discard, "")},
		{"not capitalised before name", "if Not isFalse then Accept else Discard", guardV(Accept, "")},
		{"not capitalised before group", "if Not (isTrue) then Accept else Discard", guardV(Discard, "")},
		{"delay until upper", "DELAY UNTIL 1 Day BEFORE DueDate", delayV(due.AddDate(0, 0, -1))},
		{"delay until mixed", "Delay Until 1 BUSINESS WEEKS After DueDate", delayV(due.AddDate(0, 0, 7))},
		{"units any case", "(2 HOURS before DueDate)", dateV(due.Add(-2 * time.Hour))},
		{"seconds any case", "(10 Seconds After DueDate)", dateV(due.Add(10 * time.Second))},
		{"minute any case", "(1 MINUTE after DueDate)", dateV(due.Add(time.Minute))},

		// Spellings the original grammar read as identifiers keep that meaning.
		{"lower-case accept as predicate", "if accept then Discard else Accept", guardV(Discard, "")},
		{"lower-case accept as arc", "Skip accept", guardV(Skip, "accept")},
		{"lower-case accept as string function", "@accept", strV("yes")},
		{"capitalised day as date function", "(Day)", dateV(due.Add(time.Hour))},
		{"capitalised day as relative base", "(1 day after Day)", dateV(due.Add(time.Hour).AddDate(0, 0, 1))},
		{"capitalised not as predicate", "if Not then Accept else Discard", guardV(Discard, "")},
		{"capitalised not as predicate before and", "if Not and isTrue then Accept else Discard", guardV(Discard, "")},
		{"capitalised not as predicate in group", "if (isFalse or Not) then Accept else Discard", guardV(Discard, "")},
		{"not then capitalised not", "if not Not then Accept else Discard", guardV(Accept, "")},
		{"capitalised and as predicate", "if And and isTrue then Accept else Discard", guardV(Accept, "")},

		// Comments.
		{"line comment", "// the guard\nAccept", guardV(Accept, "")},
		{"trailing line comment", "Discard // done", guardV(Discard, "")},
		{"block comments", "/* a */ if /* b */ isTrue /* c\n d */ then Skip x else Discard", guardV(Skip, "x")},
		{"comment between tokens without spaces", "if/**/isTrue/**/then/**/Accept/**/else/**/Discard", guardV(Accept, "")},
		{"block comment with stars", "/*** x **/Accept", guardV(Accept, "")},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.src, err)
			}
			got, err := p.Eval(env)
			if err != nil {
				t.Fatalf("Eval(%q): %v", tt.src, err)
			}
			if !sameValue(got, tt.want) {
				t.Errorf("Eval(%q) = %v, want %v", tt.src, got, tt.want)
			}
			// The canonical form means the same.
			q, err := Compile(p.String())
			if err != nil {
				t.Fatalf("Compile(String() = %q): %v", p.String(), err)
			}
			if got2, err := q.Eval(env); err != nil || !sameValue(got2, tt.want) {
				t.Errorf("canonical %q evaluates to %v, %v; want %v", p.String(), got2, err, tt.want)
			}
		})
	}
}

func TestCalendarDays(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// Daylight saving time starts in New York on 2024-03-10 at 02:00.
	noon := time.Date(2024, 3, 9, 12, 0, 0, 0, ny)
	env := MapEnv{Dates: map[string]time.Time{"D": noon}}
	tests := []struct {
		src  string
		want time.Time
	}{
		{"(1 day after D)", time.Date(2024, 3, 10, 12, 0, 0, 0, ny)},    // 23 hours later
		{"(24 hours after D)", time.Date(2024, 3, 10, 13, 0, 0, 0, ny)}, // exactly 24 hours
		{"(1 week after D)", time.Date(2024, 3, 16, 12, 0, 0, 0, ny)},
		{"(1440 minutes after D)", time.Date(2024, 3, 10, 13, 0, 0, 0, ny)},
	}
	for _, tt := range tests {
		v, err := MustCompile(tt.src).Eval(env)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if !v.Date.Equal(tt.want) || v.Date.Location() != ny {
			t.Errorf("%s = %v, want %v", tt.src, v.Date, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // the whole Error()
	}{
		{"no amount", "(day before DueDate)", `line 1, column 2: expected a date function name or a number, found keyword "day"`},
		{"float amount", "(1f day before DueDate)", `line 1, column 3: expected "business" or a time unit (second, minute, hour, day or week), found "f"`},
		{"plus sign", "(+1 day before DueDate)", `line 1, column 2: unexpected character '+'`},
		{"missing else", "if x then Accept", `line 1, column 17: expected "else", found end of input`},
		{"unterminated string", `"abc`, `line 1, column 1: unterminated string`},
		{"string ending in escaped quote", `Skip "abc\"`, `line 1, column 6: unterminated string`},
		{"string ending in two backslashes", `"x\\"`, `line 1, column 1: unterminated string`},
		{"unterminated comment", "Accept /* x", `line 1, column 8: unterminated comment`},
		{"empty parentheses", "()", `line 1, column 2: expected a date function name or a number, found ")"`},
		{"missing then", "if x Accept else Discard", `line 1, column 6: expected "then", found keyword "Accept"`},
		{"missing condition", "if then Accept else Discard", `line 1, column 4: expected a predicate name, "not" or "(", found keyword "then"`},
		{"missing else branch", "if x then Accept else", `line 1, column 22: expected ` + wantResult + `, found end of input`},
		{"bare identifier", "foo", `line 1, column 1: expected ` + wantResult + `, found "foo"`},
		{"two results", "Accept Discard", `line 1, column 8: expected end of input, found keyword "Discard"`},
		{"skip then junk", `Skip "a" b`, `line 1, column 10: expected end of input, found "b"`},
		{"skip reserved word", "Skip Accept", `line 1, column 6: expected end of input, found keyword "Accept"`},
		{"unclosed date", "(DueDate", `line 1, column 9: expected ")", found end of input`},
		{"missing direction", "(1 day DueDate)", `line 1, column 8: expected "before" or "after", found "DueDate"`},
		{"missing base", "(1 day before)", `line 1, column 14: expected a date function name, found ")"`},
		{"reserved base", "(1 day before after)", `line 1, column 15: expected a date function name, found keyword "after"`},
		{"business without unit", "(1 business before D)", `line 1, column 13: expected a time unit (second, minute, hour, day or week), found keyword "before"`},
		{"bad unit", "(1 month after D)", `line 1, column 4: expected "business" or a time unit (second, minute, hour, day or week), found "month"`},
		{"delay without until", "delay DueDate", `line 1, column 7: expected "until", found "DueDate"`},
		{"delay until parenthesised", "delay until (DueDate)", `line 1, column 13: expected a date function name or a number, found "("`},
		{"at without name", "@", `line 1, column 2: expected a string function name, found end of input`},
		{"at with reserved word", "@Accept", `line 1, column 2: expected a string function name, found keyword "Accept"`},
		{"lone minus", "- 7", `line 1, column 1: "-" must be followed by a digit`},
		{"too big", "9223372036854775808", `line 1, column 1: number 9223372036854775808 does not fit in 64 bits`},
		{"too small", "-9223372036854775809", `line 1, column 1: number -9223372036854775809 does not fit in 64 bits`},
		{"huge", "123456789012345678901234567890", `line 1, column 1: number 123456789012345678901234567890 does not fit in 64 bits`},
		{"offset too big", "(2147483648 days after D)", `line 1, column 2: date offset 2147483648 does not fit in 32 bits`},
		{"unclosed group", "if (x then Accept else Discard", `line 1, column 7: expected ")", found keyword "then"`},
		{"not not", "if not not x then Accept else Discard", `line 1, column 8: expected a predicate name, "not" or "(", found keyword "not"`},
		{"dangling and", "if x and then Accept else Discard", `line 1, column 10: expected a predicate name, "not" or "(", found keyword "then"`},
		{"reserved predicate", "if day then Accept else Discard", `line 1, column 4: expected a predicate name, "not" or "(", found keyword "day"`},
		{"parenthesised result", "if x then (Accept) else Discard", `line 1, column 12: expected a date function name or a number, found keyword "Accept"`},
		{"decimal", "1.5", `line 1, column 2: unexpected character '.'`},
		{"identifier starting with underscore", "if _x then Accept else Discard", `line 1, column 4: unexpected character '_'`},
		{"non-ASCII identifier", "if é then Accept else Discard", `line 1, column 4: unexpected character 'é'`},
		{"invalid UTF-8", "if \xff then", `line 1, column 4: invalid UTF-8`},
		{"column counts characters", `"é" x`, `line 1, column 5: expected end of input, found "x"`},
		{"later line", "if x\nthen Accept\nelse", `line 3, column 5: expected ` + wantResult + `, found end of input`},
		{"after comment lines", "// one\n/* two\n three */ if x then", `line 3, column 20: expected ` + wantResult + `, found end of input`},
		{"number after result", "Accept 5", `line 1, column 8: expected end of input, found number 5`},
		{"string after result", `Discard "x"`, `line 1, column 9: expected end of input, found a string`},
		{"at after result", "Accept @x", `line 1, column 8: expected end of input, found "@"`},
		{"paren after result", "Accept (D)", `line 1, column 8: expected end of input, found "("`},
		{"invalid UTF-8 in string", "\"a\xffb\"", `line 1, column 1: invalid UTF-8 in string`},
		{"single slash", "Accept / x", `line 1, column 8: unexpected character '/'`},
		{"if as result only", "if", `line 1, column 3: expected a predicate name, "not" or "(", found end of input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.src)
			if err == nil {
				t.Fatalf("Compile(%q) = %q, want error %q", tt.src, p, tt.want)
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile(%q) error %T, want *CompileError", tt.src, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Compile(%q) error\n got: %s\nwant: %s", tt.src, err, tt.want)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	deepParens := "if " + strings.Repeat("(", MaxDepth+1) + "x" + strings.Repeat(")", MaxDepth+1) + " then Accept else Discard"
	deepIf := strings.Repeat("if x then ", MaxDepth+1) + "Accept" + strings.Repeat(" else Discard", MaxDepth+1)
	deepNot := "if " + strings.Repeat("not (", MaxDepth) + "x" + strings.Repeat(")", MaxDepth) + " then Accept else Discard"
	for _, src := range []string{deepParens, deepIf, deepNot} {
		_, err := Compile(src)
		if err == nil || !strings.Contains(err.Error(), "program is nested deeper than 200 levels") {
			t.Errorf("Compile(%.30q...) error %v, want too deep", src, err)
		}
	}
	okIf := strings.Repeat("if x then ", MaxDepth) + "Accept" + strings.Repeat(" else Discard", MaxDepth)
	okParens := "if " + strings.Repeat("(", MaxDepth-1) + "x" + strings.Repeat(")", MaxDepth-1) + " then Accept else Discard"
	for _, src := range []string{okIf, okParens} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%.30q...) = %v, want success at the depth limit", src, err)
		}
	}

	// Long flat chains are fine: they are not nesting.
	long := "if x" + strings.Repeat(" or x", 5000) + " then Accept else Discard"
	if _, err := Compile(long); err != nil {
		t.Errorf("long chain: %v", err)
	}

	tooLong := strings.Repeat(" ", MaxSourceLen) + "x"
	_, err := Compile(tooLong)
	if err == nil || err.Error() != "line 1, column 65537: program is longer than 65536 bytes" {
		t.Errorf("too long: %v", err)
	}
	if _, err := Compile(strings.Repeat(" ", MaxSourceLen-6) + "Accept"); err != nil {
		t.Errorf("source of exactly the limit: %v", err)
	}
}

// errEnv fails every lookup with its own error.
type errEnv struct{}

var errBoom = errors.New("boom")

func (errEnv) Predicate(string) (bool, error)         { return false, errBoom }
func (errEnv) DateFunction(string) (time.Time, error) { return time.Time{}, errBoom }
func (errEnv) StringFunction(string) (string, error)  { return "", errBoom }

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		env     Env
		want    string
		wantErr error
	}{
		{"unknown predicate", "if isUrgent then Accept else Discard", testEnv(), `predicate "isUrgent": unknown name`, ErrUnknownName},
		{"unknown predicate after and", "if isTrue and isUrgent then Accept else Discard", testEnv(), `predicate "isUrgent": unknown name`, ErrUnknownName},
		{"unknown predicate under not", "if not (isFalse or isUrgent) then Accept else Discard", testEnv(), `predicate "isUrgent": unknown name`, ErrUnknownName},
		{"unknown date function", "(Missing)", testEnv(), `date function "Missing": unknown name`, ErrUnknownName},
		{"unknown base of relative date", "(1 day after Missing)", testEnv(), `date function "Missing": unknown name`, ErrUnknownName},
		{"unknown delay date", "delay until 2 hours before Missing", testEnv(), `date function "Missing": unknown name`, ErrUnknownName},
		{"unknown string function", "@missing", testEnv(), `string function "missing": unknown name`, ErrUnknownName},
		{"unknown in chosen branch", "if isTrue then @missing else Accept", testEnv(), `string function "missing": unknown name`, ErrUnknownName},
		{"env error wrapped", "if x then Accept else Discard", errEnv{}, `predicate "x": boom`, errBoom},
		{"env date error wrapped", "(D)", errEnv{}, `date function "D": boom`, errBoom},
		{"env string error wrapped", "@s", errEnv{}, `string function "s": boom`, errBoom},
		{"nil env", "if x then Accept else Discard", nil, `predicate "x": unknown name`, ErrUnknownName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := MustCompile(tt.src).Eval(tt.env)
			if err == nil {
				t.Fatalf("Eval(%q) = %v, want error", tt.src, v)
			}
			if err.Error() != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("Eval(%q) error %q, want %q wrapping %v", tt.src, err, tt.want, tt.wantErr)
			}
			if _, gerr := MustCompile(tt.src).EvalGuard(tt.env); gerr == nil || gerr.Error() != tt.want {
				t.Errorf("EvalGuard(%q) error %v, want %q", tt.src, gerr, tt.want)
			}
		})
	}
}

func TestEvalGuard(t *testing.T) {
	env := testEnv()
	ok := []struct {
		src  string
		want GuardResult
	}{
		{"", GuardResult{Action: Accept}},
		{"   ", GuardResult{Action: Accept}},
		{"if a and not b then Skip x else Accept", GuardResult{Action: Skip, ArcName: "x"}},
		{"Discard", GuardResult{Action: Discard}},
		{"delay until 1 day after DueDate", GuardResult{Action: Delay, Until: due.AddDate(0, 0, 1)}},
	}
	for _, tt := range ok {
		g, err := MustCompile(tt.src).EvalGuard(env)
		if err != nil || g.Action != tt.want.Action || g.ArcName != tt.want.ArcName || !g.Until.Equal(tt.want.Until) {
			t.Errorf("EvalGuard(%q) = %v, %v; want %v", tt.src, g, err, tt.want)
		}
	}
	bad := []struct{ src, want string }{
		{"42", "guard produced integer 42: not a guard result"},
		{`"s"`, `guard produced string "s": not a guard result`},
		{"@name", `guard produced string "Ada": not a guard result`},
		{"(DueDate)", "guard produced date 2024-01-15T10:00:00Z: not a guard result"},
		{"if a then 7 else Accept", "guard produced integer 7: not a guard result"},
	}
	for _, tt := range bad {
		_, err := MustCompile(tt.src).EvalGuard(env)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotGuard) {
			t.Errorf("EvalGuard(%q) error %v, want %q", tt.src, err, tt.want)
		}
	}
}

// countingEnv records the predicates it is asked for. "boom" fails.
type countingEnv struct{ calls *[]string }

func (e countingEnv) Predicate(name string) (bool, error) {
	*e.calls = append(*e.calls, name)
	switch name {
	case "T":
		return true, nil
	case "F":
		return false, nil
	}
	return false, errBoom
}

func (countingEnv) DateFunction(string) (time.Time, error) { return due, nil }

func (e countingEnv) StringFunction(name string) (string, error) {
	*e.calls = append(*e.calls, "@"+name)
	return "", errBoom
}

func TestShortCircuit(t *testing.T) {
	tests := []struct {
		src     string
		want    GuardAction
		wantErr bool
		calls   []string
	}{
		{"if T or boom then Accept else Discard", Accept, false, []string{"T"}},
		{"if F and boom then Accept else Discard", Discard, false, []string{"F"}},
		{"if F or T or boom then Accept else Discard", Accept, false, []string{"F", "T"}},
		{"if T and T and F and boom then Accept else Discard", Discard, false, []string{"T", "T", "F"}},
		{"if not T and boom then Accept else Discard", Discard, false, []string{"T"}},
		{"if F and boom or T then Accept else Discard", Accept, false, []string{"F", "T"}},
		{"if (T or boom) and (F or T) then Accept else Discard", Accept, false, []string{"T", "F", "T"}},
		{"if T then Accept else @boom", Accept, false, []string{"T"}},
		{"if F then if boom then Accept else Discard else Skip", Skip, false, []string{"F"}},
		{"if boom or T then Accept else Discard", 0, true, []string{"boom"}},
		{"if T and boom and T then Accept else Discard", 0, true, []string{"T", "boom"}},
	}
	for _, tt := range tests {
		var calls []string
		g, err := MustCompile(tt.src).EvalGuard(countingEnv{&calls})
		if (err != nil) != tt.wantErr || g.Action != tt.want {
			t.Errorf("EvalGuard(%q) = %v, %v; want %v (error %v)", tt.src, g, err, tt.want, tt.wantErr)
		}
		if !reflect.DeepEqual(calls, tt.calls) {
			t.Errorf("EvalGuard(%q) read %q, want %q", tt.src, calls, tt.calls)
		}
	}
}

func TestResultKind(t *testing.T) {
	tests := []struct {
		src     string
		want    ValueKind
		wantErr string
	}{
		{"", KindGuard, ""},
		{"Accept", KindGuard, ""},
		{"if a then Skip x else if b then Discard else delay until 1 day after D", KindGuard, ""},
		{"42", KindInt, ""},
		{"if a then 1 else -1", KindInt, ""},
		{`if a then "x" else @f`, KindString, ""},
		{"(D)", KindDate, ""},
		{"if a then (D) else (1 week before D)", KindDate, ""},
		{"if a then Accept else 42", 0, "line 1, column 23: results mix kinds: integer here, guard result at line 1, column 11"},
		{"if a then if b then (D) else Accept else Discard", 0, "line 1, column 30: results mix kinds: guard result here, date at line 1, column 21"},
		{"if a then \"s\"\nelse 1", 0, "line 2, column 6: results mix kinds: integer here, string at line 1, column 11"},
	}
	for _, tt := range tests {
		k, err := MustCompile(tt.src).ResultKind()
		if tt.wantErr != "" {
			var ce *CompileError
			if err == nil || err.Error() != tt.wantErr || !errors.As(err, &ce) {
				t.Errorf("ResultKind(%q) = %v, %v; want error %q", tt.src, k, err, tt.wantErr)
			}
			continue
		}
		if err != nil || k != tt.want {
			t.Errorf("ResultKind(%q) = %v, %v; want %v", tt.src, k, err, tt.want)
		}
	}
}

func TestCompileGuard(t *testing.T) {
	if _, err := CompileGuard("if a then Skip x else Accept"); err != nil {
		t.Errorf("CompileGuard: %v", err)
	}
	if _, err := CompileGuard("  "); err != nil {
		t.Errorf("CompileGuard(blank): %v", err)
	}
	tests := []struct{ src, want string }{
		{"if a then 1 else 2", "line 1, column 11: a guard must produce a guard result (Accept, Discard, Skip or delay until), but this program produces a result of kind integer"},
		{"if a then Accept else 2", "line 1, column 23: results mix kinds: integer here, guard result at line 1, column 11"},
		{"if a then", `line 1, column 10: expected ` + wantResult + `, found end of input`},
	}
	for _, tt := range tests {
		if _, err := CompileGuard(tt.src); err == nil || err.Error() != tt.want {
			t.Errorf("CompileGuard(%q) error %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestSkipArcNames(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"Accept", nil},
		{"Skip", nil},
		{`Skip ""`, nil},
		{"Skip x", []string{"x"}},
		{`if a then Skip x else if b then Skip "y z" else if c then Skip x else if d then Skip else Skip foo.bar`,
			[]string{"x", "y z", "foo.bar"}},
		{`if a then Skip "x" else Skip x`, []string{"x"}},
		{"if a then Skip accept else Discard", []string{"accept"}},
	}
	for _, tt := range tests {
		if got := MustCompile(tt.src).SkipArcNames(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SkipArcNames(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestSymbols(t *testing.T) {
	src := `if a and not (b or a) then delay until 1 day after D
	        else if c or Order.ok then (E) else if b then (2 weeks before D) else if d then @s else @t`
	preds, dates, strs := MustCompile(src).Symbols()
	if want := []string{"a", "b", "c", "Order.ok", "d"}; !reflect.DeepEqual(preds, want) {
		t.Errorf("predicates = %q, want %q", preds, want)
	}
	if want := []string{"D", "E"}; !reflect.DeepEqual(dates, want) {
		t.Errorf("date functions = %q, want %q", dates, want)
	}
	if want := []string{"s", "t"}; !reflect.DeepEqual(strs, want) {
		t.Errorf("string functions = %q, want %q", strs, want)
	}
	p, d, s := MustCompile("Accept").Symbols()
	if p != nil || d != nil || s != nil {
		t.Errorf("Symbols(Accept) = %q %q %q, want none", p, d, s)
	}
}

func TestString(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "Accept"},
		{"/* only */ // comments", "Accept"},
		{"IF a AND b OR NOT c THEN accept ELSE skip", "if a and b or not c then Accept else Skip"},
		{"if (a or b) and c then Accept else Discard", "if (a or b) and c then Accept else Discard"},
		{"if a or (b or c) then Accept else Discard", "if a or b or c then Accept else Discard"},
		{"if (a or b) or c then Accept else Discard", "if a or b or c then Accept else Discard"},
		{"if (a and b) or c then Accept else Discard", "if a and b or c then Accept else Discard"},
		{"if a and (b and c) then Accept else Discard", "if a and b and c then Accept else Discard"},
		{"if (a and (b or c)) and d then Accept else Discard", "if a and (b or c) and d then Accept else Discard"},
		{"if not (not a) then Accept else Discard", "if not (not a) then Accept else Discard"},
		{"if not (a) then Accept else Discard", "if not a then Accept else Discard"},
		{"if ((a)) then Accept else Discard", "if a then Accept else Discard"},
		{"if (not a) and b then Accept else Discard", "if not a and b then Accept else Discard"},
		{"if a then if b then Skip x else Skip \"y\" else Discard", `if a then if b then Skip x else Skip "y" else Discard`},
		{"delay until 1 Day BEFORE D", "delay until 1 day before D"},
		{"DELAY UNTIL D", "delay until D"},
		{"(2 business WEEK after D)", "(2 business weeks after D)"},
		{"(-1 days after D)", "(-1 day after D)"},
		{"(1day after D)", "(1 day after D)"},
		{"(0 seconds before D)", "(0 seconds before D)"},
		{"(3 MINUTE after D)", "(3 minutes after D)"},
		{"( D )", "(D)"},
		{`Skip "a\"b"`, `Skip "a\"b"`},
		{`"a\b"`, `"a\b"`},
		{`"\\""`, `"\\""`},
		{`Skip ""`, `Skip ""`},
		{"// c\n 007", "7"},
		{"-0", "0"},
		{"@ f", "@f"},
		{"skip accept", "Skip accept"},
		{"if Not then Accept else Discard", "if Not then Accept else Discard"},
		{"if Not x then Accept else Discard", "if not x then Accept else Discard"},
		{"if not Not then Accept else Discard", "if not Not then Accept else Discard"},
		{"if (x or Not) and And then Accept else Discard", "if (x or Not) and And then Accept else Discard"},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.src, err)
			continue
		}
		got := p.String()
		if got != tt.want {
			t.Errorf("Compile(%q).String() = %q, want %q", tt.src, got, tt.want)
			continue
		}
		q, err := Compile(got)
		if err != nil {
			t.Errorf("Compile(%q): %v", got, err)
			continue
		}
		if !reflect.DeepEqual(stripPos(p.root), stripPos(q.root)) {
			t.Errorf("Compile(%q) and Compile(%q) differ", tt.src, got)
		}
	}
}

// stripPos returns a copy of s without source positions, for comparing
// programs compiled from different text.
func stripPos(s *stmt) *stmt {
	c := *s
	c.pos = pos{}
	if s.kind == sIf {
		c.then, c.els = stripPos(s.then), stripPos(s.els)
	}
	return &c
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{Accept.String(), "accept"},
		{Discard.String(), "discard"},
		{Skip.String(), "skip"},
		{Delay.String(), "delay"},
		{GuardAction(9).String(), "GuardAction(9)"},
		{GuardResult{Action: Skip}.String(), "skip"},
		{GuardResult{Action: Skip, ArcName: "x y"}.String(), `skip "x y"`},
		{GuardResult{Action: Delay, Until: due}.String(), "delay until 2024-01-15T10:00:00Z"},
		{KindGuard.String(), "guard result"},
		{KindInt.String(), "integer"},
		{KindString.String(), "string"},
		{KindDate.String(), "date"},
		{intV(3).String(), "integer 3"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestMustCompilePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || r != `rubric: line 1, column 17: expected "else", found end of input` {
			t.Errorf("MustCompile panic = %v", r)
		}
	}()
	MustCompile("if x then Accept")
}

func TestConcurrentEval(t *testing.T) {
	p := MustCompile("if a and not b then delay until 1 day after DueDate else Accept")
	env := testEnv()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				g, err := p.EvalGuard(env)
				if err != nil || g.Action != Delay {
					t.Errorf("EvalGuard = %v, %v", g, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkEvalGuard(b *testing.B) {
	p := MustCompile("if a and not b then Skip x else Accept")
	var env Env = MapEnv{Predicates: map[string]bool{"a": true, "b": false}}
	b.ReportAllocs()
	for b.Loop() {
		g, err := p.EvalGuard(env)
		if err != nil || g.Action != Skip {
			b.Fatal(g, err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("if a and not b then Skip x else Accept"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestZeroProgram(t *testing.T) {
	var p Program
	g, err := p.EvalGuard(nil)
	if err != nil || g.Action != Accept {
		t.Errorf("zero Program EvalGuard = %v, %v; want accept", g, err)
	}
	if k, err := p.ResultKind(); err != nil || k != KindGuard || p.String() != "Accept" || p.SkipArcNames() != nil {
		t.Errorf("zero Program: kind %v, %v; String %q", k, err, p.String())
	}
}
