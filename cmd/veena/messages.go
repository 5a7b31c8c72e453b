package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

// BPMN messages and signals (API.md "Messages and signals"). They only
// call the HTTP API.

func newMessagesCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "messages",
		Aliases: []string{"message"},
		Short:   "Publish BPMN messages, correlated by name and key",
	}
	cf.add(cmd)
	var (
		key, ttl, id string
		envPairs     []string
		out          outputFlag
	)
	publish := &cobra.Command{
		Use:   "publish NAME [--key KEY] [--env NAME=VALUE]… [--ttl DURATION] [--id MESSAGE-ID]",
		Short: "Publish a message: to the token waiting for it, a message start, or the buffer",
		Long: `Publish a message by name and correlation key. It goes to the one token
waiting for a message of that name and key (a catch event, a receive task, a
boundary event, an event sub-process, an event-based gateway), else it starts
a process at a message start event of that name, else it is kept for --ttl
and given to the first matching subscription that opens meanwhile (with no
--ttl it is dropped). --env attributes are merged into the receiving
process. A --id seen within its TTL is refused (conflict): publishing again
with the same id is safe.`,
		Example: `  veena messages publish "payment received" --key o-1042 --env amount=120
  veena messages publish "payment received" --key o-1043 --ttl 1h --id pay-7781`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if strings.TrimSpace(args[0]) == "" {
				return fmt.Errorf("veena: a message needs a name")
			}
			body := map[string]any{"name": args[0]}
			if key != "" {
				body["correlationKey"] = key
			}
			if ttl != "" {
				body["ttl"] = ttl
			}
			if id != "" {
				body["messageId"] = id
			}
			if e, err := parseEnv(envPairs); err != nil {
				return err
			} else if e != nil {
				body["env"] = e
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var res veena.PublishResult
			if _, err := c.postJSON(cmd.Context(), "/api/v1/messages", body, &res, ""); err != nil {
				return err
			}
			if out.format == "json" {
				return printJSON(cmd.OutOrStdout(), res)
			}
			return showPublish(cmd.OutOrStdout(), res)
		},
	}
	publish.Flags().StringVar(&key, "key", "", "the correlation key")
	publish.Flags().StringArrayVar(&envPairs, "env", nil, "attribute NAME=VALUE merged into the receiving process, repeatable")
	publish.Flags().StringVar(&ttl, "ttl", "", "how long an undelivered message is kept for a subscription to come (1h, PT10M; default: not kept)")
	publish.Flags().StringVar(&id, "id", "", "the message id: the same id again within the TTL is refused")
	out.add(publish)
	cmd.AddCommand(publish)
	return cmd
}

func showPublish(w io.Writer, r veena.PublishResult) error {
	switch {
	case r.Process != nil:
		_, err := fmt.Fprintf(w, "delivered to process %s\n", *r.Process)
		return err
	case r.Buffered:
		_, err := fmt.Fprintln(w, "buffered: no subscription waits for it yet")
		return err
	}
	_, err := fmt.Fprintln(w, "dropped: no subscription waits for it and it has no TTL")
	return err
}

func newSignalsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "signals",
		Aliases: []string{"signal"},
		Short:   "Broadcast BPMN signals",
	}
	cf.add(cmd)
	var (
		envPairs []string
		out      outputFlag
	)
	broadcast := &cobra.Command{
		Use:   "broadcast NAME [--env NAME=VALUE]…",
		Short: "Broadcast a signal to every token waiting for it and every signal start",
		Long: `Broadcast a signal by name: every token waiting for it goes on (--env
attributes merged into each receiving process) and every signal start event of
that name starts a process. A signal nobody waits for is lost.`,
		Example: `  veena signals broadcast shutdown
  veena signals broadcast "price changed" --env price=12.5`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if strings.TrimSpace(args[0]) == "" {
				return fmt.Errorf("veena: a signal needs a name")
			}
			body := map[string]any{"name": args[0]}
			if e, err := parseEnv(envPairs); err != nil {
				return err
			} else if e != nil {
				body["env"] = e
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var res veena.SignalResult
			if _, err := c.postJSON(cmd.Context(), "/api/v1/signals", body, &res, ""); err != nil {
				return err
			}
			if out.format == "json" {
				return printJSON(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "delivered to %d waiting token(s)\n", res.Delivered)
			for _, p := range res.Started {
				fmt.Fprintf(w, "started process %s\n", p)
			}
			return nil
		},
	}
	broadcast.Flags().StringArrayVar(&envPairs, "env", nil, "attribute NAME=VALUE merged into each receiving process, repeatable")
	out.add(broadcast)
	cmd.AddCommand(broadcast)
	return cmd
}
