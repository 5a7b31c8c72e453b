package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/petri/translate"
)

// isPNML reports whether a file is a Petri net: by its extension, or by a
// <pnml root near its start.
func isPNML(path string, src []byte) bool {
	if strings.HasSuffix(strings.ToLower(path), ".pnml") {
		return true
	}
	head := src
	if len(head) > 4096 {
		head = head[:4096]
	}
	return strings.Contains(string(head), "<pnml")
}

// loadPNML loads PNML files: each file alone, or all of them as one
// bundle (superposed by name) into the repository.
func loadPNML(repo *graph.Repository, files []string, bundle bool, loaded map[string]*graph.Graph, failed map[string]error) {
	var all []pnml.File
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			failed[f] = err
			continue
		}
		if bundle {
			all = append(all, pnml.File{Name: f, Source: src})
			continue
		}
		g, err := pnml.Load(f, src)
		if err != nil {
			failed[f] = err
			continue
		}
		if _, _, err := repo.Add(g); err != nil {
			failed[f] = err
			continue
		}
		loaded[f] = g
	}
	if bundle && len(all) > 0 {
		g, err := pnml.LoadBundle(all)
		name := strings.Join(files, "+")
		if err != nil {
			failed[name] = err
			return
		}
		if _, _, err := repo.Add(g); err != nil {
			failed[name] = err
			return
		}
		loaded[name] = g
	}
}

// analyse prints the analysis of one definition; it reports whether the
// analysis found a way for its processes to get stuck (a stuck join, an
// unsound workflow, a dead transition of a process graph).
func analyse(w io.Writer, file string, g *graph.Graph, maxStates int, asJSON bool) (bool, error) {
	rep, err := translate.Analyze(g, analysis.Options{MaxStates: maxStates})
	if err != nil {
		return false, err
	}
	bad := len(rep.StuckJoins) > 0 || (rep.Sound != nil && !*rep.Sound)
	if asJSON {
		b, err := json.MarshalIndent(struct {
			File       string `json:"file"`
			Definition string `json:"definition"`
			*translate.Report
		}{file, g.Name, rep}, "", "  ")
		if err != nil {
			return bad, err
		}
		fmt.Fprintln(w, string(b))
		return bad, nil
	}
	kind := "net"
	if rep.Net.Translated {
		kind = "translated into a net"
	}
	fmt.Fprintf(w, "%s: %s (%s %s: %d places, %d transitions)\n", file, g.Name, g.Format, kind, rep.Net.Places, rep.Net.Transitions)
	yes := func(p *bool) string {
		switch {
		case p == nil:
			return "unknown"
		case *p:
			return "yes"
		}
		return "no"
	}
	if rep.Complete {
		if rep.States != nil {
			fmt.Fprintf(w, "  state space: %s states, %s edges (%v)\n", thousands(*rep.States), thousands(*rep.Edges), rep.Elapsed.Round(time.Millisecond))
		}
	} else {
		fmt.Fprintf(w, "  incomplete: %s\n", rep.Reason)
	}
	if rep.Complete && rep.Reason != "" {
		fmt.Fprintf(w, "  %s\n", rep.Reason)
	}
	bound := "unknown"
	if rep.Bound != nil {
		bound = fmt.Sprint(*rep.Bound)
	}
	fmt.Fprintf(w, "  bounded: %s (bound %s), safe: %s\n", yes(rep.Bounded), bound, yes(rep.Safe))
	if len(rep.UnboundedPlaces) > 0 {
		fmt.Fprintf(w, "  unbounded places: %s\n", strings.Join(rep.UnboundedPlaces, ", "))
	}
	fmt.Fprintf(w, "  deadlock-free: %s, quasi-live: %s, live: %s, reversible: %s\n", yes(rep.DeadlockFree), yes(rep.QuasiLive), yes(rep.Live), yes(rep.Reversible))
	for i, d := range rep.Deadlocks {
		m := ""
		if i < len(rep.DeadlockMarkings) {
			m = markingText(rep.DeadlockMarkings[i])
		}
		fmt.Fprintf(w, "  dead marking %s after: %s\n", m, sequenceText(d))
	}
	if len(rep.DeadTransitions) > 0 {
		fmt.Fprintf(w, "  dead transitions: %s\n", strings.Join(rep.DeadTransitions, ", "))
	}
	for _, s := range rep.StuckJoins {
		fmt.Fprintf(w, "  STUCK: the %s join of %s can wait for ever on %s, after: %s\n", s.Join, s.Node, s.Arc, sequenceText(s.Sequence))
	}
	if !rep.Net.Translated {
		for i, s := range rep.Stranded {
			if i == 5 {
				fmt.Fprintf(w, "  (and %d more places where a token can stay for ever)\n", len(rep.Stranded)-i)
				break
			}
			fmt.Fprintf(w, "  a token can stay in %s for ever, after: %s\n", s.Place, sequenceText(s.Sequence))
		}
	}
	if rep.WorkflowNet {
		fmt.Fprintf(w, "  sound: %s", yes(rep.Sound))
		if rep.Net.Translated {
			fmt.Fprintf(w, " (every run can finish: %s)", yes(rep.Completes))
		} else if s := rep.Soundness; s != nil {
			fmt.Fprintf(w, " (workflow net %s -> %s: option to complete %s, proper completion %s, no dead transitions %s)",
				s.Source, s.Sink, yes(s.OptionToComplete), yes(s.ProperCompletion), yes(s.NoDeadTransitions))
			if len(s.Counterexample) > 0 {
				fmt.Fprintf(w, "; counterexample: %s", sequenceText(s.Counterexample))
			}
		}
		fmt.Fprintln(w)
	}
	for _, a := range rep.Approximations {
		fmt.Fprintf(w, "  approximated: %s\n", a)
	}
	return bad, nil
}

func sequenceText(seq []string) string {
	if len(seq) == 0 {
		return "(the start)"
	}
	return strings.Join(seq, ", ")
}

func markingText(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
