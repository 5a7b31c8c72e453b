package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/schema"
)

// newSchemaCmd is `veena schema`: a schema instance's almanac and node
// instances.
func newSchemaCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Schema instances: their almanac and node instances",
	}
	cf.add(cmd)

	var out outputFlag
	almanac := &cobra.Command{
		Use:   "almanac PROCESS [--set NAME=VALUE]…",
		Short: "Show a schema instance's almanac, or merge keys into it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			sets, _ := cmd.Flags().GetStringArray("set")
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			path := "/api/v1/processes/" + url.PathEscape(id0) + "/almanac"
			var alm map[string]veena.Value
			if len(sets) > 0 {
				patch, err := parseEnv(sets)
				if err != nil {
					return err
				}
				b, err := json.Marshal(patch)
				if err != nil {
					return err
				}
				if _, err := c.request(cmd.Context(), http.MethodPatch, path, nil, bytes.NewReader(b), "application/json", nil, &alm); err != nil {
					return err
				}
			} else if err := c.getJSON(cmd.Context(), path, nil, &alm); err != nil {
				return err
			}
			if out.format == "json" {
				return printJSON(cmd.OutOrStdout(), alm)
			}
			w := table(cmd.OutOrStdout())
			fmt.Fprintln(w, "KEY\tVALUE")
			for _, k := range sortedValueKeys(alm) {
				b, _ := alm[k].MarshalJSON()
				fmt.Fprintf(w, "%s\t%s\n", k, b)
			}
			return w.Flush()
		},
	}
	almanac.Flags().StringArray("set", nil, "almanac key NAME=VALUE to merge (VALUE as for --env; null removes), repeatable")
	out.add(almanac)

	var nout outputFlag
	nodes := &cobra.Command{
		Use:   "nodes PROCESS",
		Short: "Show a schema instance's node instances, one per visit, with their action instances",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nout.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var in schema.Instance
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id0)+"/nodes", nil, &in); err != nil {
				return err
			}
			if nout.format == "json" {
				return printJSON(cmd.OutOrStdout(), in)
			}
			w := table(cmd.OutOrStdout())
			fmt.Fprintln(w, "#\tNODE / ACTION\tSTATE\tATTEMPTS\tRESULT / ERROR")
			for i, n := range in.Nodes {
				note := n.Arc
				if n.Error != "" {
					note = n.Error
				}
				fmt.Fprintf(w, "%d\t%s (%s)\t%s\t\t%s\n", i+1, n.Node, n.Kind, n.State, note)
				for _, a := range n.Actions {
					res := ""
					if a.Result != nil {
						res = fmt.Sprint(a.Result)
					}
					if a.Error != "" {
						res = a.Error
					}
					fmt.Fprintf(w, "\t  %s: %s\t%s\t%d\t%s\n", a.Name, a.Do, a.State, a.Attempts, res)
				}
			}
			if len(in.Queue) > 0 {
				var names []string
				for _, m := range in.Queue {
					names = append(names, m.Name)
				}
				fmt.Fprintf(w, "queued events:\t%s\n", strings.Join(names, ", "))
			}
			return w.Flush()
		},
	}
	nout.add(nodes)
	cmd.AddCommand(almanac, nodes)
	return cmd
}

func sortedValueKeys(m map[string]veena.Value) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
