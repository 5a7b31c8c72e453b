package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

// idAction is a command that acts on one process, node token or arc token,
// named by any unique start of its (process) id: it posts an empty body to
// the action's path below the id and shows the process the answer holds.
// Each has --idempotency-key and -o.
type idAction struct {
	use, short, long, example string
	of                        idKind // what the argument names
	action                    string // the path segment after the id
	// choose, if set, picks the action from the process instead.
	choose func(ctx context.Context, c *client, id string) (string, error)
	// print, if set, shows the answer unless JSON is asked for.
	print func(w io.Writer, p *veena.Process)
}

func (a idAction) command(cf *clientFlags) *cobra.Command {
	var key string
	var out outputFlag
	cmd := &cobra.Command{
		Use:     a.use,
		Short:   a.short,
		Long:    a.long + "\n\n" + idHelp,
		Example: a.example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			id, err := a.of.resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			action := a.action
			if a.choose != nil {
				if action, err = a.choose(ctx, c, id); err != nil {
					return err
				}
			}
			p, err := c.command(ctx, a.of.path+url.PathEscape(id)+"/"+action, struct{}{}, key)
			if err != nil {
				return err
			}
			switch {
			case a.print == nil:
				return showProcess(ctx, c, cmd.OutOrStdout(), p, out.format)
			case out.format == "json":
				return printJSON(cmd.OutOrStdout(), p)
			}
			a.print(cmd.OutOrStdout(), p)
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	out.add(cmd)
	return cmd
}

// idKind is what an idAction's argument names: how its id is completed and
// where the API keeps it.
type idKind struct {
	resolve func(ctx context.Context, c *client, arg string) (string, error)
	path    string
}

var (
	aProcess   = idKind{resolveProcess, "/api/v1/processes/"}
	aNodeToken = idKind{resolveToken, "/api/v1/node-tokens/"}
	anArcToken = idKind{resolveArcToken, "/api/v1/arc-tokens/"}
)

// The operations of Sarasvati's engine beyond start and complete:
// cancelling, backtracking, finalising a process a listener left pending,
// running the arc tokens an asynchronous completion queued, re-evaluating a
// delayed token now, running a node a listener delayed, evaluating a join
// again for an arc token that waits at it.

var cancelAction = idAction{
	use:    "cancel ID",
	short:  "Cancel a process (and its active nested processes)",
	long:   "Cancel a process (and its active nested processes).",
	of:     aProcess,
	action: "cancel",
	print:  func(w io.Writer, p *veena.Process) { fmt.Fprintf(w, "Process %s is %s\n", p.ID, p.State) },
}

var backtrackAction = idAction{
	use:    "backtrack TOKEN_ID",
	short:  "Backtrack the process to a completed node token",
	long:   "Backtrack the process to a completed node token: what followed it is undone and\nthe token's node is active again.",
	of:     aNodeToken,
	action: "backtrack",
}

var finalizeAction = idAction{
	use:   "finalize ID",
	short: "End a process a listener left pending completion or pending cancel",
	long: `End a process that a listener left pending completion (it completes) or pending
cancel (it is canceled): the step a listener delayed when the process reached its
end, or was canceled. A process in any other state is refused
(process_not_executing).`,
	example: `  veena processes finalize 0192f7c4`,
	of:      aProcess,
	choose: func(ctx context.Context, c *client, id string) (string, error) {
		var p veena.Process
		if err := c.getJSON(ctx, "/api/v1/processes/"+url.PathEscape(id), nil, &p); err != nil {
			return "", err
		}
		switch p.State {
		case "pending_completion":
			return "finalize-complete", nil
		case "pending_cancel":
			return "finalize-cancel", nil
		}
		return "", fmt.Errorf("veena: process %s is %s: only a process pending completion or pending cancel can be finalised", id, p.State)
	},
}

var executeQueuedAction = idAction{
	use:   "execute-queued ID",
	short: "Run the arc tokens that asynchronous completions left pending",
	long: `Run the arc tokens that asynchronous completions (veena node-tokens complete
--async) left pending, in the order they were queued; the process runs until
every token waits.`,
	example: `  veena node-tokens complete 0192f7c4.n2 --async
  veena processes execute-queued 0192f7c4`,
	of:     aProcess,
	action: "execute-queued",
}

var reevaluateAction = idAction{
	use:   "reevaluate TOKEN_ID",
	short: "Run a delayed token's guard again now, without waiting for its time",
	long: `Run the guard of a delayed node token again now instead of at the time it was
delayed until: it accepts, discards, skips or delays the token again. A token
that is not delayed is refused (token_not_delayed).`,
	example: `  veena processes env 0192f7c4 ready=true
  veena node-tokens reevaluate 0192f7c4.n2`,
	of:     aNodeToken,
	action: "reevaluate",
}

var executeAction = idAction{
	use:   "execute TOKEN_ID",
	short: "Run the node of a token whose execution a listener delayed",
	long: `Run the node of an accepted node token whose execution a listener delayed
(DelayNodeExecution): the node does its work and the token goes on as it would
have. A token that is not waiting for that is refused.`,
	example: `  veena node-tokens execute 0192f7c4.n4`,
	of:      aNodeToken,
	action:  "execute",
}

var retryAction = idAction{
	use:   "retry ARC_TOKEN_ID",
	short: "Evaluate again the join an arc token waits at",
	long: `Evaluate again the join of the node an arc token waits at (after its
environment changed, say): the node fires if its join is now satisfied, and
the arc token waits on otherwise. An arc token id is its process id (or such a
start of it), ".a" and the token's number, as in 0192f7c4.a3.`,
	example: `  veena processes env 0192f7c4 approved=true
  veena arc-tokens retry 0192f7c4.a3`,
	of:     anArcToken,
	action: "retry",
}

// newArcTokensCmd is "veena arc-tokens": what can be done to an arc token.
func newArcTokensCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{Use: "arc-tokens", Short: "Act on arc tokens (retry the join one waits at)"}
	cf.add(cmd)
	cmd.AddCommand(retryAction.command(cf))
	return cmd
}

// newListenersCmd is "processes listeners": subscribing a process to a
// listener the server has registered (from Go), and unsubscribing it.
func newListenersCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "listeners",
		Short: "Subscribe a process to a registered listener, or unsubscribe it",
		Long: `Subscribe a process to a listener that the program running Veena registered
by name (kernel.Kernel.RegisterListener), for some event types or all, or
unsubscribe it. The subscription is kept with the process.`,
	}
	var events []string
	var key string
	var out outputFlag
	run := func(add bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			id, err := resolveProcess(ctx, c, args[0])
			if err != nil {
				return err
			}
			var p veena.Process
			path := "/api/v1/processes/" + url.PathEscape(id) + "/listeners"
			if add {
				body := map[string]any{"name": args[1]}
				if len(events) > 0 {
					body["events"] = events
				}
				if _, err := c.postJSON(ctx, path, body, &p, key); err != nil {
					return err
				}
			} else {
				q := url.Values{}
				if len(events) > 0 {
					q.Set("events", strings.Join(events, ","))
				}
				hdr := http.Header{}
				if key != "" {
					hdr.Set("Idempotency-Key", key)
				}
				if _, err := c.request(ctx, http.MethodDelete, path+"/"+url.PathEscape(args[1]), q, nil, "", hdr, &p); err != nil {
					return err
				}
			}
			return showProcess(ctx, c, cmd.OutOrStdout(), &p, out.format)
		}
	}
	add := &cobra.Command{
		Use:     "add ID NAME",
		Short:   "Subscribe a process to a registered listener",
		Long:    "Subscribe a process to the listener registered as NAME, for the event types\ngiven with --event (all when none is given).\n\n" + idHelp,
		Example: "  veena processes listeners add 0192f7c4 audit --event NODE_TOKEN_COMPLETED",
		Args:    cobra.ExactArgs(2),
		RunE:    run(true),
	}
	remove := &cobra.Command{
		Use:     "remove ID NAME",
		Short:   "Unsubscribe a process from a listener",
		Long:    "Unsubscribe a process from the listener registered as NAME, for the event\ntypes given with --event (all when none is given).\n\n" + idHelp,
		Example: "  veena processes listeners remove 0192f7c4 audit",
		Args:    cobra.ExactArgs(2),
		RunE:    run(false),
	}
	for _, c := range []*cobra.Command{add, remove} {
		c.Flags().StringArrayVar(&events, "event", nil, "an event type (NODE_TOKEN_COMPLETED, PROCESS_COMPLETED, …), repeatable")
		c.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
		out.add(c)
	}
	cmd.AddCommand(add, remove)
	return cmd
}
