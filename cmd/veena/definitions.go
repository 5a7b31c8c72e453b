package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
)

// outputFlag is the --output (-o) flag of a command: table (the default)
// or json, unless the command names other formats.
type outputFlag struct{ format string }

func (o *outputFlag) add(cmd *cobra.Command, formats ...string) {
	if len(formats) == 0 {
		formats = []string{"table", "json"}
	}
	cmd.Flags().StringVarP(&o.format, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
}

func (o *outputFlag) check(formats ...string) error {
	if len(formats) == 0 {
		formats = []string{"table", "json"}
	}
	for _, f := range formats {
		if o.format == f {
			return nil
		}
	}
	return fmt.Errorf("veena: output format %q: want %s", o.format, strings.Join(formats, ", "))
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table returns a writer that aligns tab-separated columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func newDefinitionsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:     "definitions",
		Aliases: []string{"definition", "defs", "def"},
		Short:   "Load and list process definitions on the server",
	}
	cf.add(cmd)

	var format string
	var loadOut outputFlag
	load := &cobra.Command{
		Use:   "load FILE|DIR...",
		Short: "Load definition files (a changed file makes a new version)",
		Long: `Load definition files into the server; a file whose content changed makes a new
version of its definition, an unchanged one is left as it is. A directory is
searched recursively for definition files (` + strings.Join(definitionExts, ", ") + `).
Definitions that others import (externals) are loaded first: a file that fails is
tried again once the others are loaded. Each file is named with what became of it.`,
		Example: `  veena definitions load order.wf.xml
  veena definitions load testdata/examples`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := loadOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			files, unreadable := definitionFiles(args)
			type result struct {
				File       string `json:"file"`
				Definition string `json:"definition,omitempty"`
				Version    int    `json:"version,omitempty"`
				Created    bool   `json:"created"`
				Error      string `json:"error,omitempty"`
			}
			loaded, failed := loadEach(files, func(f string) (result, error) {
				d, created, err := loadFile(cmd.Context(), c, f, format)
				if err != nil {
					return result{}, err
				}
				return result{File: f, Definition: d.Name, Version: d.Version, Created: created}, nil
			})
			maps.Copy(failed, unreadable)
			var results []result
			for _, f := range files {
				if r, ok := loaded[f]; ok {
					results = append(results, r)
				}
			}
			for _, f := range slices.Sorted(maps.Keys(failed)) {
				results = append(results, result{File: f, Error: describe(failed[f])})
			}
			out := cmd.OutOrStdout()
			if loadOut.format == "json" {
				if err := printJSON(out, results); err != nil {
					return err
				}
			} else {
				created := 0
				for _, r := range results {
					switch {
					case r.Error != "":
						fmt.Fprintln(cmd.ErrOrStderr(), r.Error)
					case r.Created:
						created++
						fmt.Fprintf(out, "%s: loaded %s version %d\n", r.File, r.Definition, r.Version)
					default:
						fmt.Fprintf(out, "%s: %s version %d is unchanged\n", r.File, r.Definition, r.Version)
					}
				}
				if len(results) > 1 {
					fmt.Fprintf(out, "%d %s: %d loaded, %d unchanged, %d failed\n", len(results), plural(len(results), "file", "files"),
						created, len(loaded)-created, len(failed))
				}
			}
			if len(failed) > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("veena: %d of %d files not loaded", len(failed), len(files)+len(unreadable))}
			}
			return nil
		},
	}
	load.Flags().StringVar(&format, "format", "", "sarasvati, bpmn, pnml or schema (default: sniffed from the content)")
	loadOut.add(load)

	var lo outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List the latest version of every definition",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lo.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var all []veena.Definition
			after := ""
			for {
				var page server.Page[veena.Definition]
				q := url.Values{"limit": {"1000"}}
				if after != "" {
					q.Set("after", after)
				}
				if err := c.getJSON(cmd.Context(), "/api/v1/definitions", q, &page); err != nil {
					return err
				}
				all = append(all, page.Items...)
				if page.Next == "" || page.Next == after {
					break
				}
				after = page.Next
			}
			out := cmd.OutOrStdout()
			if lo.format == "json" {
				if all == nil {
					all = []veena.Definition{}
				}
				return printJSON(out, all)
			}
			if len(all) == 0 {
				fmt.Fprintln(out, "No definitions loaded yet. Load one with: veena definitions load FILE")
				return nil
			}
			tw := table(out)
			fmt.Fprintln(tw, "NAME\tVERSION\tFORMAT\tNODES\tARCS\tLOADED")
			for _, d := range all {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\n", d.Name, d.Version, d.Format, len(d.Nodes), len(d.Arcs), stamp(d.CreatedAt))
			}
			return tw.Flush()
		},
	}
	lo.add(list)

	var version int
	var so outputFlag
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a definition's nodes and arcs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := so.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var d veena.Definition
			if err := c.getJSON(cmd.Context(), definitionPath(args[0], version), nil, &d); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if so.format == "json" {
				return printJSON(out, d)
			}
			fmt.Fprintf(out, "Definition %s, version %d (%s)\n  hash:   %s\n  loaded: %s\n\n", d.Name, d.Version, d.Format, d.Hash, stamp(d.CreatedAt))
			tw := table(out)
			fmt.Fprintln(tw, "NODE\tTYPE\tSTART\tJOIN\tGUARD")
			for _, n := range d.Nodes {
				join := n.Join
				if n.JoinParam != "" {
					join += " " + n.JoinParam
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", qualified(n.External, n.Name), n.Type, yes(n.Start), join, oneLine(n.Guard))
			}
			tw.Flush()
			fmt.Fprintln(out)
			tw = table(out)
			fmt.Fprintln(tw, "ARC\tFROM\tTO")
			for _, a := range d.Arcs {
				name := "(default)"
				if a.Name != nil {
					name = *a.Name
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", name, qualified(a.FromExternal, a.From), qualified(a.ToExternal, a.To))
			}
			return tw.Flush()
		},
	}
	show.Flags().IntVar(&version, "version", 0, "the version (default: the latest)")
	so.add(show)

	var srcVersion int
	source := &cobra.Command{
		Use:   "source NAME",
		Short: "Print the file a definition version was loaded from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			v := srcVersion
			if v == 0 {
				var d veena.Definition
				if err := c.getJSON(cmd.Context(), definitionPath(args[0], 0), nil, &d); err != nil {
					return err
				}
				v = d.Version
			}
			_, err = c.request(cmd.Context(), http.MethodGet, definitionPath(args[0], v)+"/source", nil, nil, "", http.Header{"Accept": {"*/*"}}, cmd.OutOrStdout())
			return err
		},
	}
	source.Flags().IntVar(&srcVersion, "version", 0, "the version (default: the latest)")

	var vo outputFlag
	versions := &cobra.Command{
		Use:   "versions NAME",
		Short: "List every version of a definition",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := vo.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var page server.Page[veena.Definition]
			if err := c.getJSON(cmd.Context(), "/api/v1/definitions/"+url.PathEscape(args[0])+"/versions", url.Values{"limit": {"1000"}}, &page); err != nil {
				return err
			}
			if vo.format == "json" {
				return printJSON(cmd.OutOrStdout(), page.Items)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "VERSION\tHASH\tLOADED")
			for _, d := range page.Items {
				fmt.Fprintf(tw, "%d\t%s\t%s\n", d.Version, short(d.Hash, 12), stamp(d.CreatedAt))
			}
			return tw.Flush()
		},
	}
	vo.add(versions)

	cmd.AddCommand(load, list, show, source, versions)
	return cmd
}

// definitionPath is the API path of a definition, of its latest version
// when version is 0.
func definitionPath(name string, version int) string {
	p := "/api/v1/definitions/" + url.PathEscape(name)
	if version > 0 {
		p += "/versions/" + strconv.Itoa(version)
	}
	return p
}

// loadFile loads one definition file into the server and says whether it
// made a new version. Its problems name the file.
func loadFile(ctx context.Context, c *client, file, format string) (*veena.Definition, bool, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, false, fmt.Errorf("veena: %w", err)
	}
	q := url.Values{"file": {filepath.Base(file)}}
	if format != "" {
		q.Set("format", format)
	}
	fc := *c
	fc.file = file
	var d veena.Definition
	status, err := fc.request(ctx, http.MethodPost, "/api/v1/definitions", q, bytes.NewReader(src), contentTypeOf(file, src), nil, &d)
	if err != nil {
		return nil, false, err
	}
	return &d, status == http.StatusCreated, nil
}

// contentTypeOf is the Content-Type a definition file is sent with, from its
// extension or else its first character.
func contentTypeOf(file string, src []byte) string {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".xml", ".bpmn", ".pnml":
		return "application/xml"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	}
	t := bytes.TrimSpace(src)
	switch {
	case len(t) > 0 && t[0] == '<':
		return "application/xml"
	case len(t) > 0 && t[0] == '{':
		return "application/json"
	}
	return "text/plain"
}

// qualified names a node as external:name when it came from an external.
func qualified(external, name string) string {
	if external == "" {
		return name
	}
	return external + ":" + name
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// oneLine folds s onto one line of at most 60 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return short(s, 60)
}

// short cuts s to n characters, marking the cut with "…".
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
