package analysis_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/veena-wf/veena/petri/analysis"
)

func b(v bool) *bool { return &v }

func show(p *bool) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

func TestAnalyze(t *testing.T) {
	cases := []struct {
		name     string
		spec     string
		states   int64 // -1: unbounded
		bound    int
		deadlock *bool
		quasi    *bool
		live     *bool
		rev      *bool
		dead     []string
		paths    [][]string
		wf       bool
		sound    *bool
		unbound  []string
	}{
		{name: "cycle", spec: `
			places: a=1 b c
			t1: a -> b
			t2: b -> c
			t3: c -> a`,
			states: 3, bound: 1, deadlock: b(false), quasi: b(true), live: b(true), rev: b(true)},
		{name: "deadlock after choice", spec: `
			places: a=1 b c
			left: a -> b
			right: a -> c
			back: b -> a`,
			states: 3, bound: 1, deadlock: b(true), quasi: b(true), live: b(false), rev: b(false),
			paths: [][]string{{"right"}}},
		{name: "inhibitor gates a source transition", spec: `
			places: full
			fill: !full -> full
			drain: full ->`,
			states: 2, bound: 1, deadlock: b(false), quasi: b(true), live: b(true), rev: b(true)},
		{name: "weighted inhibitor", spec: `
			places: p
			add: !p*3 -> p`,
			states: 4, bound: 3, deadlock: b(true), quasi: b(true), live: b(false), rev: b(false),
			paths: [][]string{{"add", "add", "add"}}},
		{name: "need and forbid a token: dead transition", spec: `
			places: p=1
			never: p !p -> p
			spin: p -> p`,
			states: 1, bound: 1, deadlock: b(false), quasi: b(false), live: b(false), rev: b(true), dead: []string{"never"}},
		{name: "unbounded source", spec: `
			places: h o w
			addH: -> h
			addO: -> o
			boom: h*2 o -> w`,
			states: -1, quasi: b(true), unbound: []string{"h", "o", "w"}},
		{name: "unbounded with a real deadlock", spec: `
			places: a=1 b
			stop: a ->
			grow: a -> a b`,
			states: -1, deadlock: b(true), live: b(false), quasi: b(true), unbound: []string{"b"}, paths: [][]string{{"stop"}}},
		{name: "sound workflow net", spec: `
			places: i=1 p1 p2 q1 q2 o
			split: i -> p1 p2
			a: p1 -> q1
			b: p2 -> q2
			join: q1 q2 -> o`,
			states: 6, bound: 1, deadlock: b(true), quasi: b(true), live: b(false), rev: b(false), wf: true, sound: b(true),
			paths: [][]string{{"split", "a", "b", "join"}}},
		{name: "unsound: AND join after XOR split", spec: `
			places: i=1 p1 p2 o
			left: i -> p1
			right: i -> p2
			join: p1 p2 -> o`,
			states: 3, bound: 1, deadlock: b(true), quasi: b(false), live: b(false), rev: b(false), wf: true, sound: b(false),
			dead: []string{"join"}, paths: [][]string{{"left"}, {"right"}}},
		{name: "unsound: tokens left behind", spec: `
			places: i=1 p1 p2 o
			split: i -> p1 p2
			done: p1 -> o
			other: p2 -> o`,
			states: 5, bound: 2, deadlock: b(true), quasi: b(true), live: b(false), rev: b(false), wf: true, sound: b(false),
			paths: [][]string{{"split", "done", "other"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := build(t, c.spec)
			r := analysis.Analyze(n, analysis.Options{MaxStates: 10000})
			if !r.Complete {
				t.Fatalf("incomplete: %s", r.Reason)
			}
			if c.states < 0 {
				if r.Bounded == nil || *r.Bounded || r.States != nil || r.Bound != nil {
					t.Errorf("bounded %s states %v bound %v, want unbounded with no counts", show(r.Bounded), r.States, r.Bound)
				}
				if !slices.Equal(r.UnboundedPlaces, c.unbound) {
					t.Errorf("unbounded places %v, want %v", r.UnboundedPlaces, c.unbound)
				}
			} else {
				if r.States == nil || *r.States != c.states || *r.Bound != c.bound || !*r.Bounded {
					t.Errorf("states %v bound %v, want %d and %d", r.States, r.Bound, c.states, c.bound)
				}
				if *r.Safe != (c.bound <= 1) {
					t.Errorf("safe %v with bound %d", *r.Safe, c.bound)
				}
			}
			for _, q := range []struct {
				name      string
				got, want *bool
			}{
				{"deadlock", not(r.DeadlockFree), c.deadlock}, {"quasiLive", r.QuasiLive, c.quasi},
				{"live", r.Live, c.live}, {"reversible", r.Reversible, c.rev}, {"sound", r.Sound, c.sound},
			} {
				if show(q.got) != show(q.want) {
					t.Errorf("%s = %s, want %s", q.name, show(q.got), show(q.want))
				}
			}
			if c.dead != nil && !slices.Equal(r.DeadTransitions, c.dead) {
				t.Errorf("dead transitions %v, want %v", r.DeadTransitions, c.dead)
			}
			if c.paths != nil && fmt.Sprint(r.Deadlocks) != fmt.Sprint(c.paths) {
				t.Errorf("deadlocks %v, want %v", r.Deadlocks, c.paths)
			}
			if r.WorkflowNet != c.wf {
				t.Errorf("workflow net %v, want %v", r.WorkflowNet, c.wf)
			}
		})
	}
}

func not(p *bool) *bool {
	if p == nil {
		return nil
	}
	return b(!*p)
}

// TestStateLimit: an exploration stopped by the limit says so and claims
// only what it has seen.
func TestStateLimit(t *testing.T) {
	n := build(t, `
		places: a=20 b c
		t1: a -> b
		t2: b -> c
		t3: c -> a`)
	r := analysis.Analyze(n, analysis.Options{MaxStates: 50})
	if r.Complete || r.Reason == "" || r.States != nil || r.Live != nil || r.DeadlockFree != nil {
		t.Errorf("limited exploration: %+v", r)
	}
	if r.Safe == nil || *r.Safe {
		t.Errorf("safe %s, want false (a place held 20 tokens)", show(r.Safe))
	}
	if r.Bounded != nil {
		t.Errorf("bounded %s, want unknown", show(r.Bounded))
	}
}

// TestPerpetuumNets analyses Perpetuum's nets from the corpus.
func TestPerpetuumNets(t *testing.T) {
	for _, c := range []struct {
		file     string
		bounded  bool
		deadlock *bool
		dead     []string
	}{
		{"traffic_light_nightly.pnml", true, b(false), []string{}},
		{"traffic_light_nightly_multiple_inhibitor.pnml", true, b(false), []string{}},
		{"traffic_light_nightly_funny.pnml", true, b(false), []string{"dawn", "sunset"}},
		{"MakingWater.pnml", false, nil, []string{}},
		{"kxover_server.pnml", false, nil, nil},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(corpus, "perpetuum", c.file)
			n := loadNetOrSkip(t, path)
			r := analysis.Analyze(n, analysis.Options{})
			if r.Bounded == nil || *r.Bounded != c.bounded {
				t.Fatalf("bounded %s, want %v (%s)", show(r.Bounded), c.bounded, r.Reason)
			}
			if c.deadlock != nil && show(not(r.DeadlockFree)) != show(c.deadlock) {
				t.Errorf("deadlock %s, want %s", show(not(r.DeadlockFree)), show(c.deadlock))
			}
			if c.dead != nil && !slices.Equal(r.DeadTransitions, c.dead) {
				t.Errorf("dead transitions %v, want %v", r.DeadTransitions, c.dead)
			}
			t.Logf("%s: states %s, deadlocks %v, reason %q", c.file, count(r.States), r.Deadlocks, r.Reason)
		})
	}
}

func count(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// TestStrandedAndCompletes: an AND join after a choice strands the token
// of the branch taken; with the final marking given, Completes says
// whether every run can still end there.
func TestStrandedAndCompletes(t *testing.T) {
	// spin keeps the net running, so the token left by the choice is
	// stranded while other transitions fire.
	n := build(t, `
		places: i=1 p1 p2 r=1 o
		left: i -> p1
		right: i -> p2
		join: p1 p2 -> o
		spin: r -> r`)
	r := analysis.Analyze(n, analysis.Options{Final: []int{0, 0, 0, 1, 1}})
	var got []string
	for _, s := range r.Stranded {
		got = append(got, fmt.Sprintf("%s after %v", s.Place, s.Sequence))
	}
	if want := []string{"p1 after [left]", "p2 after [right]"}; !slices.Equal(got, want) {
		t.Errorf("stranded %v, want %v", got, want)
	}
	if r.Completes == nil || *r.Completes {
		t.Errorf("completes %s, want false", show(r.Completes))
	}
	// Without spin the same tokens sit in dead markings: deadlocks, and
	// stranded only when asked for.
	n = build(t, `
		places: i=1 p1 p2 o
		left: i -> p1
		right: i -> p2
		join: p1 p2 -> o`)
	if r := analysis.Analyze(n, analysis.Options{}); len(r.Stranded) != 0 || len(r.Deadlocks) != 2 {
		t.Errorf("dead markings: stranded %v deadlocks %v", r.Stranded, r.Deadlocks)
	}
	if r := analysis.Analyze(n, analysis.Options{DeadStranded: true}); len(r.Stranded) != 2 {
		t.Errorf("dead markings asked for: stranded %v", r.Stranded)
	}
	n = build(t, `
		places: i=1 p1 o
		a: i -> p1
		b: p1 -> o`)
	r = analysis.Analyze(n, analysis.Options{Final: []int{0, 0, 1}, DeadStranded: true})
	if len(r.Stranded) != 0 || r.Completes == nil || !*r.Completes {
		t.Errorf("a line: stranded %v completes %s; want none (a sink keeps its token), and true", r.Stranded, show(r.Completes))
	}
}
