package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

// parseEnv reads --env NAME=VALUE flags. A value that is a JSON scalar
// (42, 1.5, true, "text", null) or a date object ({"date": "…"}) keeps its
// type; anything else is a string, and so is a number that an attribute
// cannot hold exactly (an integer beyond 64 bits, a decimal with more
// digits than a float keeps), so that no digit is lost.
func parseEnv(pairs []string) (map[string]json.RawMessage, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("veena: --env %q: want NAME=VALUE", p)
		}
		out[k] = envValue(v)
	}
	return out, nil
}

// envValue is the JSON of one --env or NAME=VALUE value, as parseEnv
// describes.
func envValue(v string) json.RawMessage {
	t := strings.TrimSpace(v)
	if t != "" && t[0] != '[' && json.Valid([]byte(t)) {
		switch {
		case t[0] == '{' && !strings.Contains(t, `"date"`):
		case (t[0] == '-' || t[0] >= '0' && t[0] <= '9') && !exactNumber(t):
		default:
			return json.RawMessage(t)
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// exactNumber reports whether a JSON number survives as an attribute: an
// integer within 64 bits, or a decimal that a float64 holds with all its
// digits.
func exactNumber(t string) bool {
	if !strings.ContainsAny(t, ".eE") {
		_, err := strconv.ParseInt(t, 10, 64)
		return err == nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return false
	}
	want, ok := new(big.Rat).SetString(t)
	have, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok && ok2 && want.Cmp(have) == 0
}

func newProcessesCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "processes",
		Aliases: []string{"process", "proc", "ps"},
		Short:   "Start, list, show and cancel processes on the server",
	}
	cf.add(cmd)

	var (
		startEnv     []string
		startContext []string
		startVersion int
		startKey     string
		startOut     outputFlag
	)
	start := &cobra.Command{
		Use:   "start DEFINITION",
		Short: "Start a process; it runs until every token waits",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := startOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			envm, err := parseEnv(startEnv)
			if err != nil {
				return err
			}
			ctxm, err := parsePairs("context", startContext)
			if err != nil {
				return err
			}
			body := map[string]any{"definition": args[0]}
			if startVersion > 0 {
				body["version"] = startVersion
			}
			if envm != nil {
				body["env"] = envm
			}
			if ctxm != nil {
				body["context"] = ctxm
			}
			p, err := c.command(cmd.Context(), "/api/v1/processes", body, startKey)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, startOut.format)
		},
	}
	start.Flags().StringArrayVar(&startEnv, "env", nil, "process attribute NAME=VALUE, repeatable")
	start.Flags().StringArrayVar(&startContext, "context", nil, "context pair KEY=VALUE that incoming events (veena events send --match) find the process by, repeatable")
	start.Flags().IntVar(&startVersion, "version", 0, "definition version (default: the latest)")
	start.Flags().StringVar(&startKey, "idempotency-key", "", "a key that makes a retry of this start return the first result")
	startOut.add(start)

	var (
		listDef, listState, listParent, listAfter string
		listLimit                                 int
		listAll                                   bool
		listOut                                   outputFlag
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List processes, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := listOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var items []veena.Process
			after, next := listAfter, ""
			for {
				q := url.Values{"limit": {strconv.Itoa(listLimit)}}
				for k, v := range map[string]string{"definition": listDef, "state": listState, "parentToken": listParent, "after": after} {
					if v != "" {
						q.Set(k, v)
					}
				}
				var page veena.ProcessPage
				if err := c.getJSON(cmd.Context(), "/api/v1/processes", q, &page); err != nil {
					return err
				}
				items = append(items, page.Items...)
				next = page.Next
				if !listAll || next == "" || next == after {
					break
				}
				after = next
			}
			out := cmd.OutOrStdout()
			if listOut.format == "json" {
				if items == nil {
					items = []veena.Process{}
				}
				return printJSON(out, items)
			}
			if len(items) == 0 {
				fmt.Fprintln(out, "No processes.")
				return nil
			}
			tw := table(out)
			fmt.Fprintln(tw, "ID\tDEFINITION\tVERSION\tSTATE\tCREATED\tUPDATED")
			for _, p := range items {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", p.ID, p.Definition, p.Version, p.State, stamp(p.CreatedAt), stamp(p.UpdatedAt))
			}
			tw.Flush()
			if next != "" && !listAll {
				fmt.Fprintf(out, "\nMore processes: add --after %s (or --all)\n", next)
			}
			return nil
		},
	}
	list.Flags().StringVar(&listDef, "definition", "", "only processes of this definition")
	list.Flags().StringVar(&listState, "state", "", "only processes in this state (created, executing, pending_completion, completed, pending_cancel, canceled)")
	list.Flags().StringVar(&listParent, "parent-token", "", "only nested processes of this node token")
	list.Flags().StringVar(&listAfter, "after", "", "cursor of the next page")
	list.Flags().IntVar(&listLimit, "limit", 100, "page size (1-1000)")
	list.Flags().BoolVar(&listAll, "all", false, "read every page")
	listOut.add(list)

	var showOut outputFlag
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a process, its environment and its active tokens",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := showOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var p veena.Process
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(args[0]), nil, &p); err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), &p, showOut.format)
		},
	}
	showOut.add(show)

	var cancelKey string
	var cancelOut outputFlag
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a process (and its active nested processes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cancelOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			p, err := c.command(cmd.Context(), "/api/v1/processes/"+url.PathEscape(args[0])+"/cancel", struct{}{}, cancelKey)
			if err != nil {
				return err
			}
			if cancelOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), p)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Process %s is %s\n", p.ID, p.State)
			return nil
		},
	}
	cancel.Flags().StringVar(&cancelKey, "idempotency-key", "", "a key that makes a retry return the first result")
	cancelOut.add(cancel)

	var tokFormat string
	tokens := &cobra.Command{
		Use:   "tokens ID",
		Short: "Show the token history of a process",
		Long: `Show the token history of a process: every node and arc token, in creation order.

--format table (default), json (the API's TokenHistory), or tree: the TestProcess
notation, one node token per line as [n NODE status type (set member)…] followed by
its arc tokens as (status type target); n is the token's creation number, status is
I (incomplete) or C (complete) for node tokens and P (pending), I (waiting) or
C (complete) for arc tokens, whose target is the number of the node token they
completed into, else the node they lead to.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var h veena.TokenHistory
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(args[0])+"/tokens", nil, &h); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch tokFormat {
			case "json":
				return printJSON(out, h)
			case "tree":
				_, err := io.WriteString(out, historyTree(&h))
				return err
			case "table":
				return historyTable(out, &h)
			}
			return fmt.Errorf("veena: --format %q: want table, json or tree", tokFormat)
		},
	}
	tokens.Flags().StringVar(&tokFormat, "format", "table", "table, json or tree (TestProcess notation)")

	var (
		follow  bool
		evAfter int64
		evOut   outputFlag
	)
	events := &cobra.Command{
		Use:   "events ID",
		Short: "Show the execution events of a process (--follow: as they fire)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := evOut.check("text", "json"); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			return showEvents(cmd.Context(), c, cmd.OutOrStdout(), args[0], evAfter, follow, evOut.format == "json")
		},
	}
	events.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they fire, until the process completes or is canceled")
	events.Flags().Int64Var(&evAfter, "after", 0, "only events after this sequence number")
	evOut.add(events, "text", "json")

	envCmd := newEnvCmd(cf, "env ID [NAME=VALUE…]",
		"Show the process environment, or merge attributes into it (NAME= with no value removes one)",
		"/api/v1/processes/")

	cmd.AddCommand(start, list, show, cancel, tokens, events, envCmd)
	return cmd
}

// stamp is a time in the local zone to the second, "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// showProcess prints a process with its environment and active node tokens.
func showProcess(ctx context.Context, c *client, out io.Writer, p *veena.Process, format string) error {
	if format == "json" {
		return printJSON(out, p)
	}
	fmt.Fprintf(out, "Process %s\n", p.ID)
	fmt.Fprintf(out, "  definition: %s version %d\n", p.Definition, p.Version)
	fmt.Fprintf(out, "  state:      %s\n", p.State)
	if p.ParentToken != nil {
		fmt.Fprintf(out, "  parent:     node token %s\n", *p.ParentToken)
	}
	if len(p.Context) > 0 {
		fmt.Fprintf(out, "  context:    %s\n", formatPairs(p.Context))
	}
	fmt.Fprintf(out, "  created:    %s\n  updated:    %s\n", stamp(p.CreatedAt), stamp(p.UpdatedAt))
	if len(p.Env) > 0 {
		fmt.Fprintln(out, "  env:")
		printEnv(out, "    ", p.Env)
	}
	var h veena.TokenHistory
	if err := c.getJSON(ctx, "/api/v1/processes/"+url.PathEscape(p.ID)+"/tokens", nil, &h); err != nil {
		return err
	}
	var active []veena.NodeToken
	for _, t := range h.NodeTokens {
		if !t.Complete && !isBacktrackedType(t.ExecutionType) {
			active = append(active, t)
		}
	}
	if len(active) == 0 {
		fmt.Fprintln(out, "  no active node tokens")
		return nil
	}
	fmt.Fprintln(out, "  active node tokens (complete one with: veena tokens complete ID):")
	tw := table(out)
	fmt.Fprintln(tw, "    ID\tNODE\tGUARD\tCREATED")
	for _, t := range active {
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", t.ID, qualified(t.External, t.Node), deref(t.GuardAction), stamp(t.CreatedAt))
	}
	return tw.Flush()
}

func isBacktrackedType(x string) bool {
	return x == "forward_backtracked" || x == "backtracked" || x == "uturn_backtracked"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func printEnv(out io.Writer, indent string, env map[string]veena.Value) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := table(out)
	for _, k := range keys {
		b, _ := json.Marshal(env[k])
		fmt.Fprintf(tw, "%s%s\t= %s\n", indent, k, b)
	}
	tw.Flush()
}

// newEnvCmd makes the env subcommand of processes and tokens: with only an
// ID it prints the environment at base+ID+"/env"; with NAME=VALUE arguments
// it merges them into it and prints the result.
func newEnvCmd(cf *clientFlags, use, short, base string) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			return envCommand(cmd.Context(), c, cmd.OutOrStdout(), base+url.PathEscape(args[0])+"/env", args[1:], out.format)
		},
	}
	out.add(cmd)
	return cmd
}

// envCommand prints the environment at path, after merging sets (NAME=VALUE;
// NAME= removes the attribute) into it when there are any.
func envCommand(ctx context.Context, c *client, out io.Writer, path string, sets []string, format string) error {
	var env map[string]veena.Value
	if len(sets) == 0 {
		if err := c.getJSON(ctx, path, nil, &env); err != nil {
			return err
		}
	} else {
		patch := map[string]json.RawMessage{}
		for _, s := range sets {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" {
				return fmt.Errorf("veena: %q: want NAME=VALUE (NAME= removes the attribute)", s)
			}
			if v == "" {
				patch[k] = json.RawMessage("null")
			} else {
				patch[k] = envValue(v)
			}
		}
		b, _ := json.Marshal(patch)
		if _, err := c.request(ctx, "PATCH", path, nil, strings.NewReader(string(b)), "application/json", nil, &env); err != nil {
			return err
		}
	}
	if format == "json" {
		if env == nil {
			env = map[string]veena.Value{}
		}
		return printJSON(out, env)
	}
	if len(env) == 0 {
		fmt.Fprintln(out, "(no attributes)")
		return nil
	}
	printEnv(out, "", env)
	return nil
}

// showEvents prints events as "seq time TYPE subject"; with follow it reads
// the live stream until the process completes or is canceled.
func showEvents(ctx context.Context, c *client, out io.Writer, id string, after int64, follow, asJSON bool) error {
	path := "/api/v1/processes/" + url.PathEscape(id) + "/events"
	names := &tokenNames{c: c, process: id}
	show := func(ev veena.Event) {
		if asJSON {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(out, "%s\n", b)
			return
		}
		fmt.Fprintf(out, "%5d  %s  %s\n", ev.Seq, ev.At.Local().Format("15:04:05.000"), names.describe(ctx, ev))
	}
	if !follow {
		var evs []veena.Event
		q := url.Values{}
		if after > 0 {
			q.Set("after", strconv.FormatInt(after, 10))
		}
		if err := c.getJSON(ctx, path, q, &evs); err != nil {
			return err
		}
		for _, ev := range evs {
			show(ev)
		}
		return nil
	}
	// The server ends a stream it cannot continue with an "error" event
	// whose data is the reason as a JSON string.
	var streamErr error
	err := c.stream(ctx, path, after, func(se sseEvent) bool {
		if se.name == "error" {
			var reason string
			if json.Unmarshal([]byte(se.data), &reason) != nil {
				reason = se.data
			}
			streamErr = fmt.Errorf("veena: the server could not go on reading the events of process %s: %s", id, reason)
			return false
		}
		var ev veena.Event
		if json.Unmarshal([]byte(se.data), &ev) != nil {
			return true
		}
		show(ev)
		return ev.Type != "PROCESS_COMPLETED" && ev.Type != "PROCESS_CANCELED"
	})
	if err != nil {
		return err
	}
	return streamErr
}

// tokenNames finds node names of the tokens events mention.
type tokenNames struct {
	c       *client
	process string
	nodes   map[string]string
	arcs    map[string]string
}

// refresh reads the token history again. When it cannot, the names stay as
// they were and events show token ids instead.
func (n *tokenNames) refresh(ctx context.Context) {
	var h veena.TokenHistory
	if n.c.getJSON(ctx, "/api/v1/processes/"+url.PathEscape(n.process)+"/tokens", nil, &h) != nil {
		return
	}
	n.nodes, n.arcs = map[string]string{}, map[string]string{}
	for _, t := range h.NodeTokens {
		n.nodes[t.ID] = qualified(t.External, t.Node)
	}
	for _, a := range h.ArcTokens {
		n.arcs[a.ID] = qualified(a.Arc.FromExternal, a.Arc.From) + "->" + qualified(a.Arc.ToExternal, a.Arc.To)
	}
}

// describe is an event as "TYPE node" or "TYPE from->to", with the arcs a
// completion left on.
func (n *tokenNames) describe(ctx context.Context, ev veena.Event) string {
	s := ev.Type
	lookup := func(m *map[string]string, id string) string {
		if _, ok := (*m)[id]; !ok {
			n.refresh(ctx)
		}
		if v, ok := (*m)[id]; ok {
			return v
		}
		return id
	}
	switch {
	case ev.ArcToken != nil:
		s += " " + lookup(&n.arcs, *ev.ArcToken)
	case ev.NodeToken != nil:
		s += " " + lookup(&n.nodes, *ev.NodeToken)
	}
	if len(ev.ArcNames) > 0 && ev.Type == "NODE_TOKEN_COMPLETED" {
		var names []string
		for _, a := range ev.ArcNames {
			if a == nil {
				names = append(names, "(default)")
			} else {
				names = append(names, *a)
			}
		}
		s += " on " + strings.Join(names, ", ")
	}
	return s
}
