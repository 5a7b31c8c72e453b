package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	veena "github.com/veena-wf/veena"
)

// newNetCmd is `veena net`: a Petri net process's marking, firing a
// transition, sending it an event, and an activity's intermediate results.
func newNetCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Petri net processes: marking, fire, events, intermediate results of activities",
	}
	cf.add(cmd)

	var mout outputFlag
	marking := &cobra.Command{
		Use:   "marking PROCESS",
		Short: "Show a net process's marking, enabled transitions, activities and variables",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := mout.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var m veena.Marking
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id0)+"/marking", nil, &m); err != nil {
				return err
			}
			if mout.format == "json" {
				return printJSON(cmd.OutOrStdout(), m)
			}
			return printMarking(cmd, &m)
		},
	}
	mout.add(marking)

	var fKey string
	var fout outputFlag
	fire := &cobra.Command{
		Use:   "fire PROCESS TRANSITION",
		Short: "Fire one transition if it is enabled (transition_not_enabled otherwise)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fout.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var p veena.Process
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/processes/"+url.PathEscape(id0)+"/fire", map[string]any{"transition": args[1]}, &p, fKey); err != nil {
				return err
			}
			return showNetAfter(cmd, cf, &p, fout.format)
		},
	}
	fire.Flags().StringVar(&fKey, "idempotency-key", "", "a key that makes a retry return the first result")
	fout.add(fire)

	var eKey string
	var eout outputFlag
	event := &cobra.Command{
		Use:   "event PROCESS NAME [ARG=VALUE…]",
		Short: "Send an event: the enabled transitions that welcome it fire (match-all)",
		Long: `Send an event to a net process. The transitions annotated with the event's
name that are enabled when it arrives fire, in document order, each if still
enabled. A value argument x welcomes the event when x equals the net's variable
x; a binding argument &x copies x into the variable x. Values as for --env.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := eout.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			a, err := pairsEnv(args[2:])
			if err != nil {
				return err
			}
			var res veena.TransitionEventResult
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/processes/"+url.PathEscape(id0)+"/transition-events", map[string]any{"name": args[1], "args": a}, &res, eKey); err != nil {
				return err
			}
			if eout.format == "json" {
				return printJSON(cmd.OutOrStdout(), res)
			}
			if len(res.Fired) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no transition took %s: the event was ignored\n", args[1])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "fired %s\n", strings.Join(res.Fired, ", "))
			}
			return showNetAfter(cmd, cf, res.Process, eout.format)
		},
	}
	event.Flags().StringVar(&eKey, "idempotency-key", "", "a key that makes a retry return the first result")
	eout.add(event)

	var rWorker, rKey string
	result := &cobra.Command{
		Use:   "result JOB_ID CODE [NAME=VALUE…]",
		Short: "Report an intermediate result of an activity's job I hold; the job runs on",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			envs, err := pairsEnv(args[2:])
			if err != nil {
				return err
			}
			var p veena.Process
			id0, err := resolveJob(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id0)+"/results", map[string]any{"worker": rWorker, "result": args[1], "env": envs}, &p, rKey); err != nil {
				return err
			}
			return showNetAfter(cmd, cf, &p, "")
		},
	}
	result.Flags().StringVar(&rWorker, "worker", env("VEENA_WORKER", hostWorker()), "the worker holding the lease (env VEENA_WORKER)")
	result.Flags().StringVar(&rKey, "idempotency-key", "", "a key that makes a retry return the first result")

	cmd.AddCommand(marking, fire, event, result)
	return cmd
}

// showNetAfter prints a net process after a command: its state and marking.
func showNetAfter(cmd *cobra.Command, cf *clientFlags, p *veena.Process, format string) error {
	if format == "json" {
		return printJSON(cmd.OutOrStdout(), p)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var m veena.Marking
	if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(p.ID)+"/marking", nil, &m); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "process %s of %s v%d: %s\n", p.ID, p.Definition, p.Version, p.State)
	return printMarking(cmd, &m)
}

func printMarking(cmd *cobra.Command, m *veena.Marking) error {
	out := cmd.OutOrStdout()
	var places []string
	for p, n := range m.Places {
		if n != 0 {
			places = append(places, fmt.Sprintf("%s=%d", p, n))
		}
	}
	slices.Sort(places)
	fmt.Fprintf(out, "marking:  %s\n", strings.Join(places, " "))
	fmt.Fprintf(out, "enabled:  %s\n", strings.Join(m.Enabled, ", "))
	for _, a := range m.Activities {
		fmt.Fprintf(out, "activity: %s (job %s, %s)\n", a.Place, a.Job, a.State)
	}
	for t, at := range m.Deferred {
		fmt.Fprintf(out, "deferred: %s until %s\n", t, at)
	}
	for t, why := range m.Blocked {
		fmt.Fprintf(out, "blocked:  %s: %s\n", t, why)
	}
	if len(m.Variables) > 0 {
		w := table(out)
		fmt.Fprintln(w, "VARIABLE\tVALUE")
		for _, k := range sortedValueKeys(m.Variables) {
			b, _ := m.Variables[k].MarshalJSON()
			fmt.Fprintf(w, "%s\t%s\n", k, b)
		}
		return w.Flush()
	}
	return nil
}
