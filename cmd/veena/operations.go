package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

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
