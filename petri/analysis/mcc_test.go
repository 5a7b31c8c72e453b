package analysis_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/petri"
	"github.com/veena-wf/veena/petri/analysis"
)

// corpus is where the shared test corpus lives, relative to this package.
const corpus = "../../../shared/corpus/pnml"

// oracle is what the contest's oracle files say about one instance.
type oracle struct {
	formulas map[string]string // examination -> TRUE/FALSE
	space    map[string]int64  // STATES, TRANSITIONS, MAX_TOKEN_IN_PLACE, MAX_TOKEN_PER_MARKING
}

func readOracle(t *testing.T, dir string) oracle {
	t.Helper()
	o := oracle{formulas: map[string]string{}, space: map[string]int64{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.out"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			w := strings.Fields(sc.Text())
			switch {
			case len(w) >= 3 && w[0] == "FORMULA":
				o.formulas[w[1]] = w[2]
			case len(w) >= 3 && w[0] == "STATE_SPACE":
				n, err := strconv.ParseInt(w[2], 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				o.space[w[1]] = n
			}
		}
		fh.Close()
	}
	return o
}

func loadNet(t testing.TB, file string) *petri.Net {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pnml.Load(file, src)
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	return petri.Compiled(g)
}

func mccDirs(t testing.TB) []string {
	dirs, _ := filepath.Glob(filepath.Join(corpus, "mcc", "*"))
	if len(dirs) == 0 {
		t.Skipf("no contest instances in %s (the shared corpus is not there)", corpus)
	}
	return dirs
}

// big instances take seconds and hundreds of megabytes: they run when
// VEENA_PETRI_BIG is set.
var big = map[string]bool{"Kanban-PT-00005": true}

// TestContestOracles checks the analysis of every contest instance in the
// corpus against the oracle's verdicts: ReachabilityDeadlock, OneSafe,
// StableMarking, QuasiLiveness, Liveness, and the state space's size.
func TestContestOracles(t *testing.T) {
	for _, dir := range mccDirs(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if big[name] && os.Getenv("VEENA_PETRI_BIG") == "" {
				t.Skip("set VEENA_PETRI_BIG=1 to explore this instance's state space")
			}
			t.Parallel()
			o := readOracle(t, dir)
			n := loadNet(t, filepath.Join(dir, "model.pnml"))
			r := analysis.Analyze(n, analysis.Options{MaxStates: 5_000_000})
			if !r.Complete {
				t.Fatalf("incomplete: %s", r.Reason)
			}
			check := func(exam string, got *bool) {
				want, ok := o.formulas[exam]
				if !ok || want == "?" {
					return
				}
				if got == nil {
					t.Errorf("%s: no answer, oracle says %s", exam, want)
					return
				}
				if g := strings.ToUpper(strconv.FormatBool(*got)); g != want {
					t.Errorf("%s = %s, oracle says %s", exam, g, want)
				}
			}
			check("ReachabilityDeadlock", ptrNot(r.DeadlockFree))
			check("OneSafe", r.Safe)
			check("StableMarking", r.StableMarking)
			check("QuasiLiveness", r.QuasiLive)
			check("Liveness", r.Live)
			space := map[string]int64{"STATES": *r.States, "TRANSITIONS": *r.Edges, "MAX_TOKEN_IN_PLACE": int64(*r.Bound), "MAX_TOKEN_PER_MARKING": *r.MaxTokensPerMarking}
			for k, want := range o.space {
				if space[k] != want {
					t.Errorf("%s = %d, oracle says %d", k, space[k], want)
				}
			}
			t.Logf("%d states, %d edges, %.1f bytes/state, %v", *r.States, *r.Edges, r.BytesPerState, r.Elapsed)
		})
	}
}

func ptrNot(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := !*b
	return &v
}

func loadNetOrSkip(t *testing.T, file string) *petri.Net {
	t.Helper()
	if _, err := os.Stat(file); os.IsNotExist(err) {
		t.Skipf("%s is not there (the shared corpus is absent)", file)
	}
	return loadNet(t, file)
}
