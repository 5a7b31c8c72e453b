package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

// The operations of Sarasvati's engine beyond start, complete, backtrack
// and cancel: finalising a process a listener left pending, running the
// arc tokens an asynchronous completion queued, re-evaluating a delayed
// token now.

// newFinalizeCmd is "processes finalize ID".
func newFinalizeCmd(cf *clientFlags) *cobra.Command {
	var key string
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "finalize ID",
		Short: "End a process a listener left pending completion or pending cancel",
		Long: `End a process that a listener left pending completion (it completes) or pending
cancel (it is canceled): the step a listener delayed when the process reached its
end, or was canceled. A process in any other state is refused
(process_not_executing).

` + idHelp,
		Example: `  veena processes finalize 0192f7c4`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
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
			var op string
			switch p.State {
			case "pending_completion":
				op = "finalize-complete"
			case "pending_cancel":
				op = "finalize-cancel"
			default:
				return fmt.Errorf("veena: process %s is %s: only a process pending completion or pending cancel can be finalised", id, p.State)
			}
			done, err := c.command(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id)+"/"+op, struct{}{}, key)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), done, out.format)
		},
	}
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	out.add(cmd)
	return cmd
}

// newExecuteQueuedCmd is "processes execute-queued ID".
func newExecuteQueuedCmd(cf *clientFlags) *cobra.Command {
	var key string
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "execute-queued ID",
		Short: "Run the arc tokens that asynchronous completions left pending",
		Long: `Run the arc tokens that asynchronous completions (veena node-tokens complete
--async) left pending, in the order they were queued; the process runs until
every token waits.

` + idHelp,
		Example: `  veena node-tokens complete 0192f7c4.n2 --async
  veena processes execute-queued 0192f7c4`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
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
			p, err := c.command(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id)+"/execute-queued", struct{}{}, key)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, out.format)
		},
	}
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	out.add(cmd)
	return cmd
}

// newReevaluateCmd is "node-tokens reevaluate TOKEN_ID".
func newReevaluateCmd(cf *clientFlags) *cobra.Command {
	var key string
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "reevaluate TOKEN_ID",
		Short: "Run a delayed token's guard again now, without waiting for its time",
		Long: `Run the guard of a delayed node token again now instead of at the time it was
delayed until: it accepts, discards, skips or delays the token again. A token
that is not delayed is refused (token_not_delayed).

` + idHelp,
		Example: `  veena processes env 0192f7c4 ready=true
  veena node-tokens reevaluate 0192f7c4.n2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
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
			p, err := c.command(cmd.Context(), "/api/v1/node-tokens/"+url.PathEscape(id)+"/reevaluate", struct{}{}, key)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, out.format)
		},
	}
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	out.add(cmd)
	return cmd
}
