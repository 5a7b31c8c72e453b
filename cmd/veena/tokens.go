package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

func newTokensCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "node-tokens",
		Aliases: []string{"tokens", "node-token"},
		Short:   "Complete, backtrack, re-evaluate, execute and show the node tokens of processes (not access tokens: see access-token)",
		Long:    "Complete, backtrack, re-evaluate, execute and show the node tokens of processes. (Access\ntokens, which let clients in, are managed with veena access-token.)\n\n" + idHelp,
	}
	cf.add(cmd)

	var (
		arcs     []string
		noArc    bool
		now      bool
		envPairs []string
		setName  string
		setCount int
		setEnv   []string
		key      string
		compOut  outputFlag
		async    bool
		trans    []string
	)
	complete := &cobra.Command{
		Use:   "complete TOKEN_ID",
		Short: "Complete an active node token; the process runs until every token waits",
		Long: `Complete an active node token; the process runs until every token waits.

Without --arc the token leaves on the default (unnamed) arcs. Each --arc NAME
names arcs to leave on (Sarasvati's completeMany); --arc "" names the default
arcs among others. The names are checked against the node's arcs: an unknown
one (or the default arcs of a node that has none) is refused, listing the valid
names. --no-arc leaves on no arc: the branch ends. --token-set NAME --count N
completes with a new token set on the single arc given (--set-env sets its
attributes). A token its guard delays is refused unless --now: completing it
skips the rest of the delay, and its guard is not evaluated again.

` + envHelp + ` (On the token, before it completes.)

--async completes the token but leaves the arc tokens it creates pending, queued
for veena processes execute-queued (Sarasvati's asynchronous completion).

` + transientHelp + ` (On the token.)

` + idHelp,
		Example: `  veena node-tokens complete 0192f7c4.n2
  veena node-tokens complete 0192f7c4.n2 --arc approved --env amount=120
  veena node-tokens complete 0192f7c4.n3 --arc review --token-set reviewers --count 3
  veena node-tokens complete 0192f7c4.n2 --async --transient signature=0xbeef`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := compOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolveToken(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var tok veena.NodeToken
			if err := c.getJSON(cmd.Context(), "/api/v1/node-tokens/"+url.PathEscape(id), nil, &tok); err != nil {
				return err
			}
			if err := checkDelayed(&tok, now); err != nil {
				return err
			}
			if !noArc {
				if err := checkArcs(cmd.Context(), c, &tok, arcs); err != nil {
					return err
				}
			}
			body := map[string]any{}
			switch {
			case noArc && len(arcs) > 0:
				return fmt.Errorf("veena: --no-arc and --arc exclude each other")
			case noArc:
				body["arcs"] = []string{}
			case len(arcs) > 0:
				list := make([]*string, len(arcs))
				for i := range arcs {
					if arcs[i] != "" {
						list[i] = &arcs[i]
					}
				}
				body["arcs"] = list
			}
			if e, err := parseEnv(envPairs); err != nil {
				return err
			} else if e != nil {
				body["env"] = e
			}
			if setName != "" {
				ts := map[string]any{"name": setName, "count": setCount}
				if e, err := parseEnv(setEnv); err != nil {
					return err
				} else if e != nil {
					ts["env"] = e
				}
				body["tokenSet"] = ts
			}
			if async {
				body["async"] = true
			}
			if err := addTransient(body, trans); err != nil {
				return err
			}
			p, err := c.command(cmd.Context(), "/api/v1/node-tokens/"+url.PathEscape(id)+"/complete", body, key)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, compOut.format)
		},
	}
	complete.Flags().StringArrayVar(&arcs, "arc", nil, "arc name to leave on, repeatable (\"\" = the default arcs)")
	complete.Flags().BoolVar(&noArc, "no-arc", false, "leave on no arc")
	complete.Flags().BoolVar(&now, "now", false, "complete a token its guard delays now, without evaluating the guard again")
	complete.Flags().StringArrayVar(&envPairs, "env", nil, "token attribute NAME=VALUE, repeatable (typed as described above)")
	complete.Flags().StringVar(&setName, "token-set", "", "complete with a new token set of this name")
	complete.Flags().IntVar(&setCount, "count", 1, "members of the new token set")
	complete.Flags().StringArrayVar(&setEnv, "set-env", nil, "token set attribute NAME=VALUE, repeatable")
	complete.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	complete.Flags().BoolVar(&async, "async", false, "leave the new arc tokens pending, for veena processes execute-queued")
	complete.Flags().StringArrayVar(&trans, "transient", nil, "transient token attribute NAME=VALUE for this command only, repeatable (never stored)")
	compOut.add(complete)

	backtrack := backtrackAction.command(cf)

	var showOut outputFlag
	show := &cobra.Command{
		Use:   "show TOKEN_ID",
		Short: "Show a node token",
		Long:  "Show a node token.\n\n" + idHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := showOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolveToken(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var t veena.NodeToken
			if err := c.getJSON(cmd.Context(), "/api/v1/node-tokens/"+url.PathEscape(id), nil, &t); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if showOut.format == "json" {
				return printJSON(out, t)
			}
			state := "active"
			if t.Complete {
				state = "complete"
			}
			fmt.Fprintf(out, "Node token %s\n", t.ID)
			fmt.Fprintf(out, "  process:   %s\n  node:      %s\n  state:     %s (%s)\n", t.Process, qualified(t.External, t.Node), state, t.ExecutionType)
			if t.GuardAction != nil {
				fmt.Fprintf(out, "  guard:     %s\n", *t.GuardAction)
			}
			fmt.Fprintf(out, "  created:   %s\n", stamp(t.CreatedAt))
			if t.CompletedAt != nil {
				fmt.Fprintf(out, "  completed: %s\n", stamp(*t.CompletedAt))
			}
			if t.DelayUntil != nil {
				fmt.Fprintf(out, "  delayed:   until %s, when its guard runs again\n", stamp(*t.DelayUntil))
			}
			for _, s := range t.TokenSets {
				fmt.Fprintf(out, "  token set: %s member %d\n", s.Name, s.Member)
			}
			if len(t.Env) > 0 {
				fmt.Fprintln(out, "  env:")
				printEnv(out, "    ", t.Env)
			}
			return nil
		},
	}
	showOut.add(show)

	envCmd := newEnvCmd(cf, "env TOKEN_ID [NAME=VALUE…]",
		"Show the token's environment, or merge attributes into it (NAME= removes one)",
		"/api/v1/node-tokens/", resolveToken)

	cmd.AddCommand(complete, backtrack, show, envCmd, reevaluateAction.command(cf), executeAction.command(cf))
	return cmd
}

// checkDelayed refuses to complete a token its guard delays, unless now:
// completing it skips the rest of the delay, and its guard is not evaluated
// again (the API allows it, as Sarasvati does).
func checkDelayed(t *veena.NodeToken, now bool) error {
	if now || t.Complete || t.GuardAction == nil || *t.GuardAction != "delay" {
		return nil
	}
	until := ""
	if t.DelayUntil != nil {
		until = " until " + stamp(*t.DelayUntil)
	}
	return fmt.Errorf("veena: token %s on %s is delayed by its guard%s; completing it now skips the guard, which is not evaluated again. Add --now to complete it anyway, or leave it: the engine runs the guard again when the delay ends", t.ID, qualified(t.External, t.Node), until)
}

// checkArcs checks the arc names of a completion against the out-arcs of
// the token's node: an unknown name, or the default arcs (no --arc, or
// --arc "") of a node whose out-arcs all have names, is refused with the
// names the node has. A node with no out-arcs takes the default arcs (its
// branch ends).
func checkArcs(ctx context.Context, c *client, t *veena.NodeToken, names []string) error {
	if t.Complete {
		return nil // the server says why it cannot be completed
	}
	var p veena.Process
	if err := c.getJSON(ctx, "/api/v1/processes/"+url.PathEscape(t.Process), nil, &p); err != nil {
		return err
	}
	var d veena.Definition
	if err := c.getJSON(ctx, definitionPath(p.Definition, p.Version), nil, &d); err != nil {
		return err
	}
	var valid []string
	hasDefault, hasArcs := false, false
	for _, a := range d.Arcs {
		if a.From != t.Node || a.FromExternal != t.External {
			continue
		}
		hasArcs = true
		if a.Name == nil {
			hasDefault = true
		} else if !slices.Contains(valid, *a.Name) {
			valid = append(valid, *a.Name)
		}
	}
	if !hasArcs {
		if len(names) > 0 {
			return fmt.Errorf("veena: node %s has no arcs to leave on; complete it without --arc", qualified(t.External, t.Node))
		}
		return nil
	}
	choices := func() string {
		var cs []string
		for _, n := range valid {
			cs = append(cs, "--arc "+n)
		}
		if hasDefault {
			cs = append(cs, "no --arc (the default arcs)")
		}
		return strings.Join(append(cs, "--no-arc (the branch ends)"), ", ")
	}
	if len(names) == 0 {
		if !hasDefault {
			return fmt.Errorf("veena: node %s has no default arc, so completing it without --arc would end its branch; choose %s", qualified(t.External, t.Node), choices())
		}
		return nil
	}
	for _, n := range names {
		if n == "" && !hasDefault || n != "" && !slices.Contains(valid, n) {
			what := fmt.Sprintf("arc named %q", n)
			if n == "" {
				what = "default arc"
			}
			return fmt.Errorf("veena: node %s has no %s; choose %s", qualified(t.External, t.Node), what, choices())
		}
	}
	return nil
}

var execShort = map[string]string{
	"forward":             "F",
	"forward_backtracked": "FB",
	"backtracked":         "B",
	"uturn":               "U",
	"uturn_backtracked":   "UB",
}

func shortExec(x string) string {
	if s, ok := execShort[x]; ok {
		return s
	}
	return x
}

// historyTree renders a token history in the TestProcess notation: each node
// token as [n NODE status type (set member)…] in creation order, followed by
// its child arc tokens as (status type target). n is the 1-based position in
// the history; the target of a complete arc token is its child's number,
// otherwise the node it leads to.
func historyTree(h *veena.TokenHistory) string {
	num := make(map[string]int, len(h.NodeTokens))
	for i, t := range h.NodeTokens {
		num[t.ID] = i + 1
	}
	arcs := make(map[string]*veena.ArcToken, len(h.ArcTokens))
	for i := range h.ArcTokens {
		arcs[h.ArcTokens[i].ID] = &h.ArcTokens[i]
	}
	var b strings.Builder
	for i, t := range h.NodeTokens {
		status := "I"
		if t.Complete {
			status = "C"
		}
		fmt.Fprintf(&b, "[%d %s %s %s", i+1, qualified(t.External, t.Node), status, shortExec(t.ExecutionType))
		for _, s := range t.TokenSets {
			fmt.Fprintf(&b, " %s %d", s.Name, s.Member)
		}
		b.WriteString("]\n")
		children := t.Children
		if len(children) == 0 {
			// Fall back to the arc tokens that name this token as parent.
			for _, a := range h.ArcTokens {
				if a.Parent == t.ID {
					children = append(children, a.ID)
				}
			}
		}
		for _, id := range children {
			a := arcs[id]
			if a == nil {
				continue
			}
			to := qualified(a.Arc.ToExternal, a.Arc.To)
			switch {
			case a.Complete && a.Child != nil && num[*a.Child] > 0:
				fmt.Fprintf(&b, "  (C %s %d)\n", shortExec(a.ExecutionType), num[*a.Child])
			case a.Pending:
				fmt.Fprintf(&b, "  (P %s %s)\n", shortExec(a.ExecutionType), to)
			default:
				fmt.Fprintf(&b, "  (I %s %s)\n", shortExec(a.ExecutionType), to)
			}
		}
	}
	return b.String()
}

func historyTable(out io.Writer, h *veena.TokenHistory) error {
	num := make(map[string]int, len(h.NodeTokens))
	for i, t := range h.NodeTokens {
		num[t.ID] = i + 1
	}
	ref := func(id *string) string {
		if id == nil {
			return "-"
		}
		if n, ok := num[*id]; ok {
			return fmt.Sprintf("#%d", n)
		}
		return *id
	}
	tw := table(out)
	fmt.Fprintln(tw, "#\tNODE TOKEN\tNODE\tSTATE\tEXECUTION\tGUARD\tSETS\tCREATED\tCOMPLETED")
	for i, t := range h.NodeTokens {
		state := "active"
		if t.Complete {
			state = "complete"
		}
		var sets []string
		for _, s := range t.TokenSets {
			sets = append(sets, fmt.Sprintf("%s/%d", s.Name, s.Member))
		}
		completed := ""
		if t.CompletedAt != nil {
			completed = stamp(*t.CompletedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, t.ID, qualified(t.External, t.Node), state, t.ExecutionType,
			deref(t.GuardAction), strings.Join(sets, ","), stamp(t.CreatedAt), completed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(h.ArcTokens) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	tw = table(out)
	fmt.Fprintln(tw, "ARC TOKEN\tARC\tNAME\tSTATE\tEXECUTION\tFROM\tTO")
	for _, a := range h.ArcTokens {
		state := "waiting"
		switch {
		case a.Complete:
			state = "complete"
		case a.Pending:
			state = "pending"
		}
		name := "(default)"
		if a.Arc.Name != nil {
			name = *a.Arc.Name
		}
		parent := a.Parent
		fmt.Fprintf(tw, "%s\t%s->%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, qualified(a.Arc.FromExternal, a.Arc.From), qualified(a.Arc.ToExternal, a.Arc.To),
			name, state, a.ExecutionType, ref(&parent), ref(a.Child))
	}
	return tw.Flush()
}
