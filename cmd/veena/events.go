package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// parsePairs reads repeatable KEY=VALUE flags (--match, --context) into
// context pairs. The value is taken as it is, always a string; a key given
// twice with different values is an error.
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("veena: --%s %q: want KEY=VALUE", flag, p)
		}
		if prev, dup := out[k]; dup && prev != v {
			return nil, fmt.Errorf("veena: --%s %s is given twice (%q and %q)", flag, k, prev, v)
		}
		out[k] = v
	}
	return out, nil
}

// formatPairs renders context pairs as "k=v, k=v", sorted by key.
func formatPairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

func newEventsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "events",
		Aliases: []string{"event"},
		Short:   "Send incoming events to processes, routed by their context",
	}
	cf.add(cmd)

	var (
		match    []string
		node     string
		envPairs []string
		key      string
		out      outputFlag
		name     string
		payload  string
		trans    []string
	)
	send := &cobra.Command{
		Use:   "send --match KEY=VALUE [--match KEY=VALUE]… [--node NODE] [--env NAME=VALUE]…",
		Short: "Deliver an event to the one executing process whose context matches",
		Long: `Deliver an incoming event to the one executing process whose context holds
every --match pair (a process gets its context when it starts:
veena processes start DEFINITION --context KEY=VALUE).

--env attributes are merged into the process environment, then the process's
active node token on --node (or, without --node, its only active node token) is
completed and the process runs until every token waits. No matching process or
token is an error (not_found), as is more than one (conflict).

` + transientHelp + ` (On the process.)`,
		Example: `  veena processes start order --context order=o-1042
  veena events send --match order=o-1042 --node await-payment --env paid=true --env amount=120
  veena events send --name chat.message --match channel=web --match userId=u42 --payload '{"text": "/order"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			m, err := parsePairs("match", match)
			if err != nil {
				return err
			}
			if name != "" {
				// A named event for schema instances, routed by its context.
				if node != "" || len(envPairs) > 0 {
					return fmt.Errorf("veena: a named event carries --match (its context) and --payload; --node and --env are for unnamed events")
				}
				if len(trans) > 0 {
					return fmt.Errorf("veena: --transient is for unnamed events (a named event carries --match and --payload)")
				}
				body := map[string]any{"name": name, "context": m}
				if payload != "" {
					var x any
					if err := json.Unmarshal([]byte(payload), &x); err != nil {
						return fmt.Errorf("veena: --payload is not JSON: %v", err)
					}
					body["payload"] = json.RawMessage(payload)
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				p, err := c.command(cmd.Context(), "/api/v1/events", body, key)
				if err != nil {
					return err
				}
				return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, out.format)
			}
			if payload != "" {
				return fmt.Errorf("veena: --payload is for named events: give --name")
			}
			if len(m) == 0 {
				return fmt.Errorf("veena: events send needs at least one --match KEY=VALUE to find the process")
			}
			body := map[string]any{"match": m}
			if node != "" {
				body["node"] = node
			}
			if e, err := parseEnv(envPairs); err != nil {
				return err
			} else if e != nil {
				body["env"] = e
			}
			if err := addTransient(body, trans); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			p, err := c.command(cmd.Context(), "/api/v1/events", body, key)
			if err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), p, out.format)
		},
	}
	send.Flags().StringArrayVar(&match, "match", nil, "context pair KEY=VALUE the process must hold, repeatable (at least one)")
	send.Flags().StringVar(&node, "node", "", "the node whose active token the event completes (default: the process's only active token)")
	send.Flags().StringArrayVar(&envPairs, "env", nil, "process attribute NAME=VALUE, repeatable")
	send.Flags().StringArrayVar(&trans, "transient", nil, "transient process attribute NAME=VALUE for this command only, repeatable (never stored; unnamed events)")
	send.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	send.Flags().StringVar(&name, "name", "", "the event's name: an event for schema instances, routed by --match (its context)")
	send.Flags().StringVar(&payload, "payload", "", "a named event's payload, as JSON")
	out.add(send)

	cmd.AddCommand(send)
	return cmd
}
