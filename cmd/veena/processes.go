package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/url"
	"slices"
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

// envHelp explains --env values, for the help of the commands that take them.
const envHelp = `--env NAME=VALUE sets an attribute (repeatable). The value keeps its JSON
type: 42 and 1.5 are numbers, true and false booleans, {"date": "2026-05-01T08:00:00Z"}
a date; anything else is a string, and so is a value in double quotes ("42") or a
number an attribute cannot hold exactly (it keeps every digit as text).`

// transientHelp explains --transient, for the commands that take it.
const transientHelp = `--transient NAME=VALUE sets a transient attribute for this command only
(repeatable, typed as --env): the listeners, guards and node types that run in
the command see it; it is never stored nor shown, and the next command runs
without it.`

// addTransient puts the --transient pairs into a command's body.
func addTransient(body map[string]any, pairs []string) error {
	t, err := parseEnv(pairs)
	if err != nil {
		return fmt.Errorf("%w (--transient)", err)
	}
	if t != nil {
		body["transient"] = t
	}
	return nil
}

// idHelp explains shortened ids, for the help of the commands that take them.
const idHelp = `A process id may be shortened to any start of it that only one process has; a
node token id is its process id (or such a start of it), ".n" and the token's
number, as in 0192f7c4-3b1e.n2; task, job and incident ids likewise (.t, .j, .i).`

func newProcessesCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "processes",
		Aliases: []string{"process", "proc", "ps"},
		Short:   "Start, list, show and cancel processes on the server; find waiting work",
		Long:    "Start, list, show and cancel processes on the server; find waiting work.\n\n" + idHelp,
	}
	cf.add(cmd)

	var (
		startEnv     []string
		startContext []string
		startVersion int
		startKey     string
		startOut     outputFlag
		startTrans   []string
	)
	start := &cobra.Command{
		Use:   "start DEFINITION",
		Short: "Start a process; it runs until every token waits",
		Long: `Start a process of a definition (its latest version unless --version); it runs
until every token waits or it ends, and the process is shown.

` + envHelp + `

--context KEY=VALUE gives the process context pairs (repeatable): incoming events
find it by them (veena events send --match KEY=VALUE), and lists by them
(veena processes list --context KEY=VALUE).

` + transientHelp,
		Example: `  veena processes start order --env amount=120 --env express=true --context order=o-1042
  veena processes start order --transient signature=0xbeef`,
		Args: cobra.ExactArgs(1),
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
			if err := addTransient(body, startTrans); err != nil {
				return err
			}
			p, err := c.command(cmd.Context(), "/api/v1/processes", body, startKey)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, startOut.format)
		},
	}
	start.Flags().StringArrayVar(&startEnv, "env", nil, "process attribute NAME=VALUE, repeatable (typed as described above)")
	start.Flags().StringArrayVar(&startContext, "context", nil, "context pair KEY=VALUE that incoming events (veena events send --match) find the process by, repeatable")
	start.Flags().StringArrayVar(&startTrans, "transient", nil, "transient process attribute NAME=VALUE for this command only, repeatable (never stored)")
	start.Flags().IntVar(&startVersion, "version", 0, "definition version (default: the latest)")
	start.Flags().StringVar(&startKey, "idempotency-key", "", "a key that makes a retry of this start return the first result")
	startOut.add(start)

	lf := &listFlags{}
	list := &cobra.Command{
		Use:   "list",
		Short: "List processes, newest first, with where each waits",
		Long: `List processes, newest first (--oldest: oldest first), with the node each waits at
and its context, and how many processes the filters select (counted up to 10000).

Filters (all must hold): --definition (with --version), --state (several separated
by commas), --id (an id or its start), --node (waiting at a node; external:name for
an imported one), --stalled, --context KEY=VALUE (repeatable; ended processes too),
--search (an id's start or any context value), --since and --until (creation time:
a time such as 2026-05-01T08:00:00Z or 2026-05-01, or a duration ago such as 2h).`,
		Example: `  veena processes list --state executing --node approve
  veena processes list --stalled
  veena processes list --context order=o-1042
  veena processes list --since 24h --definition order -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			q, err := lf.query(cmd.Context(), c)
			if err != nil {
				return err
			}
			var page veena.ProcessPage
			if err := readPages(cmd.Context(), c, "/api/v1/processes", q, lf.all, func(raw json.RawMessage) (string, int, error) {
				var p veena.ProcessPage
				if err := json.Unmarshal(raw, &p); err != nil {
					return "", 0, err
				}
				page.Items = append(page.Items, p.Items...)
				page.Next, page.Total, page.TotalCapped = p.Next, p.Total, p.TotalCapped
				return p.Next, len(p.Items), nil
			}); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if page.Items == nil {
				page.Items = []veena.Process{}
			}
			if lf.out.format == "json" {
				return printJSON(out, page)
			}
			if len(page.Items) == 0 {
				fmt.Fprintln(out, "No processes match.")
				return nil
			}
			tw := table(out)
			fmt.Fprintln(tw, "ID\tDEFINITION\tSTATE\tWAITING AT\tCONTEXT\tCREATED")
			for _, p := range page.Items {
				fmt.Fprintf(tw, "%s\t%s v%d\t%s\t%s\t%s\t%s\n", p.ID, p.Definition, p.Version, stateWords(p), oneLine(waitingWords(p.WaitingAt, p.WaitingMore)),
					oneLine(formatPairs(p.Context)), stamp(p.CreatedAt))
			}
			tw.Flush()
			fmt.Fprintf(out, "\n%s\n", countWords(len(page.Items), page.Total, page.TotalCapped, "process", "processes"))
			if page.Next != "" && !lf.all {
				fmt.Fprintf(out, "More: add --after %s (or --all)\n", page.Next)
			}
			return nil
		},
	}
	lf.add(list, true)

	wf := &listFlags{}
	waiting := &cobra.Command{
		Use:   "waiting",
		Short: "List waiting work: every active node token and waiting join, where and since when",
		Long: `List the waiting work of executing processes: every active node token (and
delayed token, and node running a nested process) and every join where arc tokens
wait, with the process, its context, the node and since when. Processes come oldest
first (--newest: newest first); the filters of veena processes list select them
(--node lists only the waits at that node). --limit counts processes.`,
		Example: `  veena processes waiting
  veena processes waiting --node approve --definition order`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			q, err := wf.query(cmd.Context(), c)
			if err != nil {
				return err
			}
			var page veena.WaitingPage
			if err := readPages(cmd.Context(), c, "/api/v1/waiting", q, wf.all, func(raw json.RawMessage) (string, int, error) {
				var p veena.WaitingPage
				if err := json.Unmarshal(raw, &p); err != nil {
					return "", 0, err
				}
				page.Items = append(page.Items, p.Items...)
				page.Next, page.Total, page.TotalCapped = p.Next, p.Total, p.TotalCapped
				return p.Next, len(p.Items), nil
			}); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if page.Items == nil {
				page.Items = []veena.WaitingItem{}
			}
			if wf.out.format == "json" {
				return printJSON(out, page)
			}
			if len(page.Items) == 0 {
				fmt.Fprintln(out, "Nothing waits.")
				return nil
			}
			now := time.Now()
			tw := table(out)
			fmt.Fprintln(tw, "TOKEN OR PROCESS\tDEFINITION\tNODE\tWAITS\tSINCE\tFOR\tCONTEXT")
			for _, it := range page.Items {
				id := it.Token
				if id == "" {
					id = it.Process
				}
				fmt.Fprintf(tw, "%s\t%s v%d\t%s\t%s\t%s\t%s\t%s\n", id, it.Definition, it.Version, qualified(it.External, it.Node),
					waitKindWords(it.Kind, it.Arcs, it.Until, it.Stalled), stamp(it.Since), ago(now, it.Since), oneLine(formatPairs(it.Context)))
			}
			tw.Flush()
			fmt.Fprintf(out, "\n%s\n", countWords(countProcesses(page.Items), page.Total, page.TotalCapped, "process waits", "processes wait"))
			if page.Next != "" && !wf.all {
				fmt.Fprintf(out, "More: add --after %s (or --all)\n", page.Next)
			}
			return nil
		},
	}
	wf.add(waiting, false)

	var showOut outputFlag
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a process: its state, where it waits, why it is stalled, its environment",
		Long:  "Show a process: its state, where it waits (its active node tokens and waiting joins),\nwhy it is stalled if it is, failures of its timers, its context and environment.\n\n" + idHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := showOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var p veena.Process
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id), nil, &p); err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), &p, showOut.format)
		},
	}
	showOut.add(show)

	cancel := cancelAction.command(cf)

	var tokOut outputFlag
	var tokFormat string
	tokens := &cobra.Command{
		Use:   "tokens ID",
		Short: "Show the token history of a process",
		Long: `Show the token history of a process: every node and arc token, in creation order.

-o table (default), json (the API's TokenHistory), or tree: the TestProcess
notation, one node token per line as [n NODE status type (set member)…] followed by
its arc tokens as (status type target); n is the token's creation number, status is
I (incomplete) or C (complete) for node tokens and P (pending), I (waiting) or
C (complete) for arc tokens, whose target is the number of the node token they
completed into, else the node they lead to.

` + idHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tokFormat != "" {
				tokOut.format = tokFormat
			}
			if err := tokOut.check("table", "json", "tree"); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var h veena.TokenHistory
			if err := c.tokens(cmd.Context(), id, &h); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch tokOut.format {
			case "json":
				return printJSON(out, h)
			case "tree":
				_, err := io.WriteString(out, historyTree(&h))
				return err
			}
			return historyTable(out, &h)
		},
	}
	tokOut.add(tokens, "table", "json", "tree")
	tokens.Flags().StringVar(&tokFormat, "format", "", "the same as -o")
	_ = tokens.Flags().MarkHidden("format")

	var (
		follow  bool
		evAfter int64
		evOut   outputFlag
	)
	events := &cobra.Command{
		Use:   "events ID",
		Short: "Show the execution events of a process (--follow: as they fire)",
		Long:  "Show the execution events of a process (--follow: as they fire).\n\n" + idHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if evOut.format == "text" {
				evOut.format = "table"
			}
			if err := evOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return showEvents(cmd.Context(), c, cmd.OutOrStdout(), id, evAfter, follow, evOut.format == "json")
		},
	}
	events.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they fire, until the process completes or is canceled")
	events.Flags().Int64Var(&evAfter, "after", 0, "only events after this sequence number")
	evOut.add(events)

	envCmd := newEnvCmd(cf, "env ID [NAME=VALUE…]",
		"Show the process environment, or merge attributes into it (NAME= with no value removes one)",
		"/api/v1/processes/", resolveProcess)

	cmd.AddCommand(start, list, waiting, show, cancel, tokens, events, envCmd, finalizeAction.command(cf), executeQueuedAction.command(cf), newListenersCmd(cf))
	return cmd
}

// stampLayout is how the command line shows times: the date, the time to
// the second and the zone, in the local zone.
const stampLayout = "2006-01-02 15:04:05Z07:00"

// stamp is a time as stampLayout shows it, "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(stampLayout)
}

// showProcess prints a process with where it waits, why it is stalled, the
// failures of its timers, its context and its environment; as JSON, the
// process as the API gives it (waitingAt, stall and timerFailures carry
// what the text shows).
func showProcess(ctx context.Context, c *client, out io.Writer, p *veena.Process, format string) error {
	if format == "json" {
		return printJSON(out, p)
	}
	fmt.Fprintf(out, "Process %s\n", p.ID)
	fmt.Fprintf(out, "  definition: %s version %d\n", p.Definition, p.Version)
	fmt.Fprintf(out, "  state:      %s\n", stateWords(*p))
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
	if p.Stalled {
		fmt.Fprintln(out, "  STALLED: no active node token, and these joins wait for arcs that nothing will complete:")
		for _, j := range p.Stall {
			fmt.Fprintf(out, "    join %s (%s): arrived from %s; missing from %s\n", qualified(j.External, j.Node), j.Join, arcList(j.Waiting), arcList(j.Missing))
		}
		if cmds := rescueCommands(ctx, c, p); len(cmds) > 0 {
			fmt.Fprintln(out, "    to run a missing branch again, backtrack to the token that ended it, or cancel the process:")
			for _, cmd := range cmds {
				fmt.Fprintf(out, "      %s\n", cmd)
			}
		} else {
			fmt.Fprintln(out, "    backtrack to a completed token to run a branch again (veena node-tokens backtrack), or cancel the process")
		}
	}
	for _, f := range p.TimerFailures {
		fmt.Fprintf(out, "  TIMER FAILED: the guard of token %s on %s failed at %s: %s\n", f.Token, f.Node, stamp(f.At), f.Message)
		if f.Incident != "" {
			fmt.Fprintf(out, "    incident %s is open: fix the cause (veena processes env %s NAME=VALUE), then run the guard again:\n", f.Incident, p.ID)
			fmt.Fprintf(out, "      veena incidents resolve %s\n", f.Incident)
		} else {
			fmt.Fprintf(out, "    %d attempt(s); it is tried again later\n", f.Attempts)
		}
	}
	if len(p.WaitingAt) == 0 {
		if p.State == "executing" {
			fmt.Fprintln(out, "  waits nowhere")
		} else {
			fmt.Fprintf(out, "  waits nowhere: the process is %s\n", p.State)
		}
		return nil
	}
	if slices.ContainsFunc(p.WaitingAt, func(w veena.Wait) bool { return w.Kind == "token" }) {
		fmt.Fprintln(out, "  waiting at (complete a token with: veena node-tokens complete TOKEN):")
	} else {
		fmt.Fprintln(out, "  waiting at:")
	}
	tw := table(out)
	fmt.Fprintln(tw, "    NODE\tWAITS\tSINCE\tTOKEN")
	for _, w := range p.WaitingAt {
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", qualified(w.External, w.Node), waitKindWords(w.Kind, w.Arcs, w.Until, false), stamp(w.Since), w.Token)
	}
	if p.WaitingMore > 0 {
		fmt.Fprintf(tw, "    … and %d more\t\t\t\n", p.WaitingMore)
	}
	return tw.Flush()
}

// rescueCommands are the backtrack commands that run the missing branches
// of a stalled process's joins again: for each missing arc, the last
// completed token of the node it leaves. None when the history cannot be
// read (the caller then gives the general advice).
func rescueCommands(ctx context.Context, c *client, p *veena.Process) []string {
	if c == nil {
		return nil
	}
	var h veena.TokenHistory
	if err := c.tokens(ctx, p.ID, &h); err != nil {
		return nil
	}
	var cmds []string
	for _, j := range p.Stall {
		for _, a := range j.Missing {
			var last *veena.NodeToken
			for i := range h.NodeTokens {
				t := &h.NodeTokens[i]
				if t.Node == a.From && t.External == a.FromExternal && t.Complete && t.ExecutionType == "forward" {
					last = t
				}
			}
			if last == nil {
				continue
			}
			node := qualified(last.External, last.Node)
			why := node + " ended the branch"
			if last.GuardAction != nil && *last.GuardAction == "discard" {
				why = node + "'s guard discarded it; first change what the guard reads (veena processes env)"
			}
			cmd := fmt.Sprintf("veena node-tokens backtrack %s   # for %s->%s: %s", last.ID, qualified(a.FromExternal, a.From), qualified(a.ToExternal, a.To), why)
			if !slices.Contains(cmds, cmd) {
				cmds = append(cmds, cmd)
			}
		}
	}
	return cmds
}

// stateWords is a process's state, marked when it is stalled.
func stateWords(p veena.Process) string {
	if p.Stalled {
		return p.State + " (STALLED)"
	}
	return p.State
}

// waitingWords says where a process waits, in one line.
func waitingWords(ws []veena.Wait, more int) string {
	var parts []string
	for _, w := range ws {
		s := qualified(w.External, w.Node)
		switch w.Kind {
		case "join":
			s += " (join)"
		case "delayed":
			s += " (delayed)"
		case "nested":
			s += " (nested)"
		case "incident":
			s += " (INCIDENT)"
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("+%d more", more))
	}
	return strings.Join(parts, ", ")
}

// waitKindWords says how a token or join waits.
func waitKindWords(kind string, arcs int, until *time.Time, stalled bool) string {
	switch kind {
	case "token":
		return "active token"
	case "nested":
		return "nested process runs"
	case "incident":
		return "incident open"
	case "delayed":
		if until != nil {
			return "delayed until " + stamp(*until)
		}
		return "delayed"
	case "join":
		s := "join, 1 arc arrived"
		if arcs != 1 {
			s = fmt.Sprintf("join, %d arcs arrived", arcs)
		}
		if stalled {
			s += " (STALLED)"
		}
		return s
	}
	return kind
}

// arcList names arcs as from->to (name).
func arcList(as []veena.Arc) string {
	if len(as) == 0 {
		return "none"
	}
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = qualified(a.FromExternal, a.From) + "->" + qualified(a.ToExternal, a.To)
		if a.Name != nil {
			parts[i] += " (" + *a.Name + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// countWords says how many items of how many a listing shows.
func countWords(shown, total int, capped bool, one, many string) string {
	word := many
	if total == 1 {
		word = one
	}
	switch {
	case capped:
		return fmt.Sprintf("%d shown of more than %d %s", shown, total, many)
	case shown == total:
		return fmt.Sprintf("%d %s", total, word)
	}
	return fmt.Sprintf("%d shown of %d %s", shown, total, word)
}

// countProcesses counts the distinct processes of waiting items.
func countProcesses(items []veena.WaitingItem) int {
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.Process] = true
	}
	return len(seen)
}

// ago says how long ago t was, roughly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// listFlags are the filters of processes list and processes waiting.
type listFlags struct {
	definition, state, parent, id, node, search, since, until, after string
	version, limit                                                   int
	stalled, all, oldest, newest                                     bool
	context                                                          []string
	out                                                              outputFlag
}

func (f *listFlags) add(cmd *cobra.Command, withState bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.definition, "definition", "", "only processes of this definition")
	fl.IntVar(&f.version, "version", 0, "with --definition: only this version")
	if withState {
		fl.StringVar(&f.state, "state", "", "only processes in this state: created, executing, pending_completion, completed, pending_cancel, canceled (several separated by commas)")
		fl.BoolVar(&f.oldest, "oldest", false, "oldest first")
	} else {
		fl.BoolVar(&f.newest, "newest", false, "newest process first")
	}
	fl.StringVar(&f.id, "id", "", "only the process with this id or whose id starts with this")
	fl.StringVar(&f.node, "node", "", "only processes waiting at this node (external:name for an imported node)")
	fl.BoolVar(&f.stalled, "stalled", false, "only stalled processes")
	fl.StringArrayVar(&f.context, "context", nil, "only processes with this context pair KEY=VALUE, repeatable")
	fl.StringVarP(&f.search, "search", "q", "", "only processes whose id starts with this or with this as a context value")
	fl.StringVar(&f.since, "since", "", "only processes created since: a time (2026-05-01T08:00:00Z, 2026-05-01) or a duration ago (2h)")
	fl.StringVar(&f.until, "until", "", "only processes created before: a time or a duration ago")
	fl.StringVar(&f.parent, "parent-token", "", "only nested processes of this node token")
	fl.StringVar(&f.after, "after", "", "cursor of the next page")
	fl.IntVar(&f.limit, "limit", 100, "page size, in processes (1-1000)")
	fl.BoolVar(&f.all, "all", false, "read every page")
	f.out.add(cmd)
}

// query is the API query of the flags.
func (f *listFlags) query(ctx context.Context, c *client) (url.Values, error) {
	q := url.Values{"limit": {strconv.Itoa(f.limit)}}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("definition", f.definition)
	set("state", f.state)
	set("id", f.id)
	set("node", f.node)
	set("q", f.search)
	set("after", f.after)
	if f.version > 0 {
		q.Set("version", strconv.Itoa(f.version))
	}
	if f.stalled {
		q.Set("stalled", "true")
	}
	switch {
	case f.oldest:
		q.Set("order", "oldest")
	case f.newest:
		q.Set("order", "newest")
	}
	pairs, err := parsePairs("context", f.context)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(pairs)) {
		q.Add("context", k+"="+pairs[k])
	}
	now := time.Now()
	for flag, v := range map[string]string{"since": f.since, "until": f.until} {
		if v == "" {
			continue
		}
		t, err := parseWhen(v, now)
		if err != nil {
			return nil, fmt.Errorf("veena: --%s %q: %w", flag, v, err)
		}
		name := "createdAfter"
		if flag == "until" {
			name = "createdBefore"
		}
		q.Set(name, t.UTC().Format(time.RFC3339Nano))
	}
	if f.parent != "" {
		tok, err := resolveToken(ctx, c, f.parent)
		if err != nil {
			return nil, err
		}
		q.Set("parentToken", tok)
	}
	return q, nil
}

// parseWhen reads a time (RFC 3339, or a date in the local zone) or a
// duration ago.
func parseWhen(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", v, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02 15:04:05", v, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-05-01T08:00:00Z, a date such as 2026-05-01, or a duration ago such as 2h")
}

// readPages reads a paged list, every page with all, and hands each answer
// to page, which returns the next cursor and how many items it held.
func readPages(ctx context.Context, c *client, path string, q url.Values, all bool, page func(json.RawMessage) (string, int, error)) error {
	for {
		var raw json.RawMessage
		if err := c.getJSON(ctx, path, q, &raw); err != nil {
			return err
		}
		next, _, err := page(raw)
		if err != nil {
			return fmt.Errorf("veena: the server's answer to %s could not be read: %w", path, err)
		}
		if !all || next == "" || next == q.Get("after") {
			return nil
		}
		q.Set("after", next)
	}
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
func newEnvCmd(cf *clientFlags, use, short, base string, resolve func(context.Context, *client, string) (string, error)) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + ".\n\nA value keeps its JSON type as with --env: 42 and 1.5 are numbers, true and false\nbooleans, {\"date\": \"2026-05-01T08:00:00Z\"} a date, anything else a string.\n\n" + idHelp,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			id, err := resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return envCommand(cmd.Context(), c, cmd.OutOrStdout(), base+url.PathEscape(id)+"/env", args[1:], out.format)
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

// eventPage is how many events the CLI reads a request.
const eventPage = 1000

// tokens reads a process's whole token history page by page.
func (c *client) tokens(ctx context.Context, id string, h *veena.TokenHistory) error {
	*h = veena.TokenHistory{NodeTokens: []veena.NodeToken{}, ArcTokens: []veena.ArcToken{}}
	after := ""
	for {
		var page veena.TokenHistory
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		if err := c.getJSON(ctx, "/api/v1/processes/"+url.PathEscape(id)+"/tokens", q, &page); err != nil {
			return err
		}
		h.NodeTokens = append(h.NodeTokens, page.NodeTokens...)
		h.ArcTokens = append(h.ArcTokens, page.ArcTokens...)
		if page.Next == "" || page.Next == after {
			return nil
		}
		after = page.Next
	}
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
		fmt.Fprintf(out, "%5d  %s  %s\n", ev.Seq, ev.At.Local().Format("2006-01-02 15:04:05.000Z07:00"), names.describe(ctx, ev))
	}
	if !follow {
		// Page by page, printing as they come.
		for {
			var evs []veena.Event
			q := url.Values{"limit": {strconv.Itoa(eventPage)}}
			if after > 0 {
				q.Set("after", strconv.FormatInt(after, 10))
			}
			if err := c.getJSON(ctx, path, q, &evs); err != nil {
				return err
			}
			for _, ev := range evs {
				show(ev)
			}
			if len(evs) < eventPage {
				return nil
			}
			after = evs[len(evs)-1].Seq
		}
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
	if n.c.tokens(ctx, n.process, &h) != nil {
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
