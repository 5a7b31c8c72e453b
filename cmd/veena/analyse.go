package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	veena "github.com/veena-wf/veena"
)

// analysisStuck reports whether an analysis found a way for a process to
// get stuck: a stuck join, or an unsound workflow.
func analysisStuck(rep *veena.Analysis) bool {
	return len(rep.StuckJoins) > 0 || (rep.Sound != nil && !*rep.Sound)
}

// printAnalysis writes the analysis of one definition for people.
func printAnalysis(w io.Writer, file, name, format string, rep *veena.Analysis) {
	kind := "net"
	if rep.Net.Translated {
		kind = "translated into a net"
	}
	fmt.Fprintf(w, "%s: %s (%s %s: %d places, %d transitions)\n", file, name, format, kind, rep.Net.Places, rep.Net.Transitions)
	yes := func(p *bool) string {
		switch {
		case p == nil:
			return "unknown"
		case *p:
			return "yes"
		}
		return "no"
	}
	switch {
	case !rep.Complete:
		fmt.Fprintf(w, "  incomplete: %s\n", rep.Reason)
	case rep.States != nil:
		fmt.Fprintf(w, "  state space: %s states, %s edges (%v)\n", thousands(*rep.States), thousands(*rep.Edges), rep.Elapsed.Round(time.Millisecond))
		if rep.Reason != "" {
			fmt.Fprintf(w, "  %s\n", rep.Reason)
		}
	default:
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
			m = markingText(rep.DeadlockMarkings[i]) + " "
		}
		fmt.Fprintf(w, "  dead marking %safter: %s\n", m, sequenceText(d))
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
	if len(rep.Approximations) > 0 {
		fmt.Fprintln(w, "  these verdicts are of the translated net, which only approximates the definition here:")
	}
	for _, a := range rep.Approximations {
		fmt.Fprintf(w, "  approximated: %s\n", a)
	}
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
