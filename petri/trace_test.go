package petri_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/petri"
)

const corpus = "../../shared/corpus/pnml"

// TraceStep is one pair of a Perpetuum trace: a marking (non-empty places)
// and the transitions enabled there; the first is fired to reach the next.
type TraceStep struct {
	Marking map[string]int
	Enabled []string
}

// parseTrace reads a Perpetuum .test file: an Erlang list alternating
// maps #{ place=>count } and lists [ transition, … ], with % comments.
func parseTrace(src string) ([]TraceStep, error) {
	var toks []string
	for _, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '%'); i >= 0 {
			line = line[:i]
		}
		cur := ""
		flush := func() {
			if cur != "" {
				toks = append(toks, cur)
				cur = ""
			}
		}
		for i := 0; i < len(line); i++ {
			c := rune(line[i])
			switch {
			case c == '#' || c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == '.':
				flush()
				toks = append(toks, string(c))
			case c == '=' && i+1 < len(line) && line[i+1] == '>':
				flush()
				toks = append(toks, "=>")
				i++
			case unicode.IsSpace(c):
				flush()
			default:
				cur += string(c)
			}
		}
		flush()
	}
	pos := 0
	next := func() string {
		if pos >= len(toks) {
			return ""
		}
		pos++
		return toks[pos-1]
	}
	expect := func(s string) error {
		if got := next(); got != s {
			return fmt.Errorf("token %d: %q, want %q", pos, got, s)
		}
		return nil
	}
	var steps []TraceStep
	if err := expect("["); err != nil {
		return nil, err
	}
	for {
		switch next() {
		case "]":
			return steps, expect(".")
		case ",":
			continue
		case "#":
			if err := expect("{"); err != nil {
				return nil, err
			}
			m := map[string]int{}
			for {
				k := next()
				if k == "}" {
					break
				}
				if k == "," {
					continue
				}
				if err := expect("=>"); err != nil {
					return nil, err
				}
				v, err := strconv.Atoi(next())
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			steps = append(steps, TraceStep{Marking: m})
		case "[":
			if len(steps) == 0 {
				return nil, fmt.Errorf("a list of transitions before the first marking")
			}
			var ts []string
			for {
				k := next()
				if k == "]" {
					break
				}
				if k != "," {
					ts = append(ts, k)
				}
			}
			steps[len(steps)-1].Enabled = ts
		default:
			return nil, fmt.Errorf("token %d: %q", pos, toks[pos-1])
		}
	}
}

func loadCorpusNet(t *testing.T, name string) *petri.Net {
	t.Helper()
	file := filepath.Join(corpus, "perpetuum", name)
	src, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		t.Skipf("%s is not there (the shared corpus is absent)", file)
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := pnml.Load(file, src)
	if err != nil {
		t.Fatal(err)
	}
	return petri.Compiled(g)
}

// TestPerpetuumTraces replays Perpetuum's traces marking by marking: at
// each step the marking and the set of enabled transitions are those the
// trace lists, and every transition it does not list is refused.
func TestPerpetuumTraces(t *testing.T) {
	for _, name := range []string{"traffic_light_nightly", "kxover_client"} {
		t.Run(name, func(t *testing.T) {
			n := loadCorpusNet(t, name+".pnml")
			src, err := os.ReadFile(filepath.Join(corpus, "perpetuum", name+".test"))
			if err != nil {
				t.Fatal(err)
			}
			steps, err := parseTrace(string(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) < 2 {
				t.Fatalf("trace of %d steps", len(steps))
			}
			m := n.InitialMarking()
			for i, s := range steps {
				got := map[string]int{}
				for p, c := range m {
					if c != 0 {
						got[n.Places[p].ID] = c
					}
				}
				if !mapsEqual(got, s.Marking) {
					t.Fatalf("step %d: marking %v, trace says %v", i, got, s.Marking)
				}
				var enabled []string
				for _, tr := range n.EnabledTransitions(m) {
					enabled = append(enabled, n.Transitions[tr].ID)
				}
				want := slices.Clone(s.Enabled)
				slices.Sort(want)
				slices.Sort(enabled)
				if !slices.Equal(enabled, want) {
					t.Fatalf("step %d at %v: enabled %v, trace says %v", i, s.Marking, enabled, want)
				}
				if len(s.Enabled) == 0 {
					continue
				}
				fire := n.Transition(s.Enabled[0])
				if fire < 0 {
					t.Fatalf("step %d: no transition %q", i, s.Enabled[0])
				}
				n.Fire(m, fire)
			}
			t.Logf("%d markings replayed", len(steps))
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
