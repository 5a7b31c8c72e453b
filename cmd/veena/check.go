package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri/analysis"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store/memstore"
)

// definitionExts are the file names a directory's definitions have: a
// directory given to check, run --definitions or definitions load is
// searched (recursively) for them. A file named on its own may have any name.
var definitionExts = []string{".wf.xml", ".bpmn", ".bpmn20.xml", ".pnml", ".json", ".yaml", ".yml"}

// isDefinitionFile reports whether a file in a directory is a definition.
func isDefinitionFile(name string) bool {
	lower := strings.ToLower(name)
	for _, ext := range definitionExts {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	return false
}

// definitionFiles expands paths (files, and directories searched
// recursively for definition files, in name order) into files. A path that
// cannot be read is reported in failed, under its own name.
func definitionFiles(paths []string) (files []string, failed map[string]error) {
	failed = map[string]error{}
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			failed[p] = err
			continue
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && isDefinitionFile(d.Name()) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			failed[p] = err
			continue
		}
		if len(found) == 0 {
			failed[p] = fmt.Errorf("no definition files (%s) in this directory", strings.Join(definitionExts, ", "))
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return files, failed
}

// loadEach loads files one by one with load, in an order that puts the
// definitions others import first: a file that fails is tried again after
// the others, as long as one more loads each round. It returns each file's
// result and the last error of each that failed.
func loadEach[T any](files []string, load func(file string) (T, error)) (map[string]T, map[string]error) {
	loaded := map[string]T{}
	failed := map[string]error{}
	pending := files
	for len(pending) > 0 {
		var again []string
		for _, f := range pending {
			r, err := load(f)
			if err != nil {
				failed[f] = err
				again = append(again, f)
				continue
			}
			delete(failed, f)
			loaded[f] = r
		}
		if len(again) == len(pending) {
			break
		}
		pending = again
	}
	return loaded, failed
}

// offline is an engine in memory that loads definition files exactly as a
// server does (the format sniffed from the content, the same validation),
// for check and run; what scripts print goes to scripts (nil: nowhere).
func offline(ctx context.Context, scripts io.Writer) (*veena.Engine, error) {
	k := kernel.New()
	k.ScriptOutput = scripts
	// Schemas check without the program that registers their actions.
	rt := schema.New()
	rt.AcceptUnknownActions = true
	rt.Register(k)
	e, err := veena.Open(ctx, veena.Options{Store: memstore.New(), Kernel: k})
	if err == nil {
		rt.Attach(e)
	}
	return e, err
}

// loadOffline loads files into an offline engine.
func loadOffline(ctx context.Context, e *veena.Engine, files []string) (map[string]*veena.Definition, map[string]error) {
	return loadEach(files, func(f string) (*veena.Definition, error) {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d, _, err := e.LoadDefinition(ctx, filepath.Base(f), src, "")
		return d, err
	})
}

// otherDefinitions gives, for each loaded file, the definitions it holds
// besides the one loading answered with (a schema's children, a BPMN
// file's other processes), by name: the offline engine names every
// definition's file as loadOffline gave it.
func otherDefinitions(ctx context.Context, e *veena.Engine, loaded map[string]*veena.Definition) (map[string][]*veena.Definition, error) {
	byBase := map[string]string{}
	for f := range loaded {
		if _, twice := byBase[filepath.Base(f)]; twice {
			byBase[filepath.Base(f)] = "" // two files of one name: which holds what is unknown
			continue
		}
		byBase[filepath.Base(f)] = f
	}
	defs, err := e.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]*veena.Definition{}
	for _, d := range defs {
		g := e.Kernel().Definitions(d.Name)
		if g == nil {
			continue
		}
		f := byBase[g.File]
		if f == "" || loaded[f].Name == d.Name {
			continue
		}
		out[f] = append(out[f], d)
	}
	return out, nil
}

// warningsOf are what a definition that loads from file may still do
// wrong, each as file:line:column: message (file: message when it has no
// place in the file), the form of the problems that fail a load.
func warningsOf(file string, d *veena.Definition) []string {
	var out []string
	start := false
	for _, n := range d.Nodes {
		start = start || n.Start && n.External == ""
	}
	if !start && d.Net == nil {
		out = append(out, fmt.Sprintf("%s: definition %s has no start node: it cannot be started on its own (it can be imported as an external, or run by a nested node)", file, d.Name))
	}
	// The definition's own warnings, as loading reports them (a cycle
	// without a wait state, …).
	for _, w := range d.Warnings {
		if w.Line > 0 {
			out = append(out, fmt.Sprintf("%s:%d:%d: %s", file, w.Line, w.Column, w.Message))
		} else {
			out = append(out, fmt.Sprintf("%s: %s", file, w.Message))
		}
	}
	return out
}

// printLoadErrors writes every problem as file:line:column: message.
func printLoadErrors(w io.Writer, failed map[string]error) {
	for _, f := range slices.Sorted(maps.Keys(failed)) {
		printFileErrors(w, f, failed[f])
	}
}

// printFileErrors writes the problems of one file.
func printFileErrors(w io.Writer, f string, err error) {
	var les []*graph.LoadError
	collectLoadErrors(err, &les)
	if len(les) == 0 {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		fmt.Fprintf(w, "%s: %s\n", f, msg)
		return
	}
	for _, le := range les {
		if len(le.Problems) == 0 {
			fmt.Fprintf(w, "%s: invalid definition\n", f)
		}
		for _, p := range le.Problems {
			if p.Line > 0 {
				fmt.Fprintf(w, "%s:%d:%d: %s\n", f, p.Line, p.Column, p.Message)
			} else {
				fmt.Fprintf(w, "%s: %s\n", f, p.Message)
			}
		}
	}
}

// collectLoadErrors appends the load errors in err to out, looking into
// joined errors one by one.
func collectLoadErrors(err error, out *[]*graph.LoadError) {
	if err == nil {
		return
	}
	if l, ok := err.(*graph.LoadError); ok {
		*out = append(*out, l)
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if l, ok := e.(*graph.LoadError); ok {
				*out = append(*out, l)
				return
			}
		}
		for _, e := range j.Unwrap() {
			collectLoadErrors(e, out)
		}
		return
	}
	var le *graph.LoadError
	if errors.As(err, &le) {
		*out = append(*out, le)
	}
}

// checkResult is what check found in one file.
type checkResult struct {
	File       string   `json:"file"`
	Definition string   `json:"definition,omitempty"`
	Nodes      int      `json:"nodes,omitempty"`
	Arcs       int      `json:"arcs,omitempty"`
	Problems   []string `json:"problems,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

func newCheckCmd() *cobra.Command {
	var (
		quiet, strict bool
		out           outputFlag
		analyseIt     bool
		maxStates     int
	)
	cmd := &cobra.Command{
		Use:   "check FILE|DIR...",
		Short: "Check definition files offline, exactly as loading them into a server would",
		Long: `Check definition files offline: each is loaded as a server loads it (the format
sniffed from the content, every problem the server would refuse it for: XML,
unknown node types, guards and joins that do not compile, externals), in an
engine in memory, externals before the definitions that import them. Problems
are printed as file:line:column: message; warnings (a definition with no start
node, a cycle without a wait state, an unreachable element) as
file:line:column: warning: message, and they do not fail the check unless
--strict.

A directory is searched recursively for definition files (` + strings.Join(definitionExts, ", ") + `),
and each is named on its own line.

With --analyse each definition's state space is explored as the server's
GET /api/v1/definitions/{name}/analysis does: a Petri net's own (boundedness,
deadlocks with a shortest firing sequence, dead transitions, liveness,
reversibility, workflow-net soundness), a process graph's through its
translation into a net (whether an AND join can wait for ever, whether every
run can finish). The exit status is 2 when an analysis finds a way for a
process to get stuck.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			files, unreadable := definitionFiles(args)
			e, err := offline(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer e.Close()
			loaded, failed := loadOffline(cmd.Context(), e, files)
			others, err := otherDefinitions(cmd.Context(), e, loaded)
			if err != nil {
				return err
			}
			var results []checkResult
			for p, err := range unreadable {
				results = append(results, checkResult{File: p, Problems: []string{err.Error()}})
			}
			bad, warned := len(unreadable), 0
			for _, f := range files {
				r := checkResult{File: f}
				if err := failed[f]; err != nil {
					var b strings.Builder
					printFileErrors(&b, f, err)
					r.Problems = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
					bad++
				} else if d := loaded[f]; d != nil {
					r.Definition, r.Nodes, r.Arcs = d.Name, len(d.Nodes), len(d.Arcs)
					r.Warnings = warningsOf(f, d)
					if len(r.Warnings) > 0 {
						warned++
					}
				}
				results = append(results, r)
			}
			sort.SliceStable(results, func(i, j int) bool { return results[i].File < results[j].File })
			total := len(files) + len(unreadable)
			if out.format == "json" {
				if err := printJSON(cmd.OutOrStdout(), results); err != nil {
					return err
				}
			} else {
				w, ew := cmd.OutOrStdout(), cmd.ErrOrStderr()
				for _, r := range results {
					switch {
					case len(r.Problems) > 0:
						for _, p := range r.Problems {
							if !strings.HasPrefix(p, r.File) {
								p = r.File + ": " + p
							}
							fmt.Fprintln(ew, p)
						}
					case !quiet:
						fmt.Fprintf(w, "%s: ok (%s: %d %s, %d %s)\n", r.File, r.Definition, r.Nodes, plural(r.Nodes, "node", "nodes"), r.Arcs, plural(r.Arcs, "arc", "arcs"))
					}
					for _, wn := range r.Warnings {
						// file:line:column: warning: message
						where, msg, _ := strings.Cut(wn[len(r.File):], ": ")
						fmt.Fprintf(ew, "%s%s: warning: %s\n", r.File, where, msg)
					}
				}
			}
			if analyseIt {
				stuck := 0
				for _, f := range files {
					if loaded[f] == nil {
						continue
					}
					// Every definition the file holds: a schema's children,
					// a BPMN file's other processes.
					for _, d := range append([]*veena.Definition{loaded[f]}, others[f]...) {
						rep, err := e.AnalyseDefinition(cmd.Context(), d.Name, d.Version, veena.AnalyseOptions{MaxStates: maxStates})
						if err != nil {
							return fmt.Errorf("veena check: analyse %s: %w", f, err)
						}
						if analysisStuck(rep) {
							stuck++
						}
						if out.format == "json" {
							err = printJSON(cmd.OutOrStdout(), struct {
								File       string `json:"file"`
								Definition string `json:"definition"`
								*veena.Analysis
							}{f, d.Name, rep})
						} else {
							printAnalysis(cmd.OutOrStdout(), f, d.Name, d.Format, rep)
						}
						if err != nil {
							return err
						}
					}
				}
				if stuck > 0 {
					return &exitError{code: 2, msg: fmt.Sprintf("veena check: %d of %d %s can get stuck", stuck, total, plural(total, "definition", "definitions"))}
				}
			}
			summary := fmt.Sprintf("%d of %d %s %s", bad, total, plural(total, "file", "files"), plural(bad, "has problems", "have problems"))
			if warned > 0 {
				summary += fmt.Sprintf(", %d with warnings", warned)
			}
			if bad > 0 || strict && warned > 0 {
				return &exitError{code: 1, msg: "veena check: " + summary}
			}
			if !quiet && out.format != "json" {
				fmt.Fprintf(cmd.OutOrStdout(), "veena check: %d %s ok", total, plural(total, "file", "files"))
				if warned > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), " (%d with warnings)", warned)
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print problems and warnings only")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail on warnings too")
	cmd.Flags().BoolVar(&analyseIt, "analyse", false, "explore each definition's state space and report how its processes can get stuck")
	cmd.Flags().IntVar(&maxStates, "max-states", analysis.DefaultMaxStates, "with --analyse, stop exploring after this many states")
	out.add(cmd)
	return cmd
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// valuesOf turns --env NAME=VALUE flags into attribute values.
func valuesOf(pairs []string) (map[string]any, error) {
	raw, err := parseEnv(pairs)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, r := range raw {
		var v kernel.Value
		if err := v.UnmarshalJSON(r); err != nil {
			return nil, fmt.Errorf("veena: --env %s: %w", k, err)
		}
		if !v.IsNone() {
			out[k] = v
		}
	}
	return out, nil
}

func newRunCmd() *cobra.Command {
	var (
		envPairs []string
		defsDir  string
		noEvents bool
		out      outputFlag
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a definition in memory and print its token tree and events",
		Long: `Run a definition in memory, no server needed: it is loaded as a server loads it,
the process starts and runs until every token waits or it ends. What its scripts
print comes first, then the token history in the TestProcess notation (see veena
processes tokens --help), the events in the order they fired and the process
environment. --definitions DIR loads the externals and nested definitions it uses
first.

` + envHelp,
		Example: `  veena run testdata/examples/split-join.wf.xml --env bigAmount=true`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check("tree", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			env, err := valuesOf(envPairs)
			if err != nil {
				return err
			}
			e, err := offline(ctx, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer e.Close()
			var files []string
			if defsDir != "" {
				var unreadable map[string]error
				if files, unreadable = definitionFiles([]string{defsDir}); len(unreadable) > 0 {
					printLoadErrors(cmd.ErrOrStderr(), unreadable)
					return &exitError{code: 1, msg: "veena run: --definitions could not be read"}
				}
			}
			files = append(slices.DeleteFunc(files, func(f string) bool { return f == args[0] }), args[0])
			loaded, failed := loadOffline(ctx, e, files)
			d := loaded[args[0]]
			if d == nil {
				printLoadErrors(cmd.ErrOrStderr(), failed)
				return &exitError{code: 1, msg: "veena run: the definition could not be loaded"}
			}
			p, err := e.StartProcess(ctx, veena.StartRequest{Definition: d.Name, Version: d.Version, Env: env})
			if err != nil {
				return fmt.Errorf("veena run: %s: %w (%s)", d.Name, err, veena.Code(err))
			}
			return printRun(ctx, e, cmd.OutOrStdout(), p, !noEvents, out.format == "json")
		},
	}
	cmd.Flags().StringArrayVar(&envPairs, "env", nil, "process attribute NAME=VALUE, repeatable (typed as described above)")
	cmd.Flags().StringVar(&defsDir, "definitions", "", "directory of the definitions the file imports or nests")
	cmd.Flags().BoolVar(&noEvents, "no-events", false, "print the token tree only")
	out.add(cmd, "tree", "json")
	return cmd
}

// runResult is what run prints as JSON: each process of the run (the root,
// then the nested ones) with its tokens and events.
type runResult struct {
	Process veena.Process      `json:"process"`
	Tokens  veena.TokenHistory `json:"tokens"`
	Events  []veena.Event      `json:"events"`
}

// printRun prints the processes of a run: the root, then the nested
// processes its tokens started, each with its token tree and events.
func printRun(ctx context.Context, e *veena.Engine, w io.Writer, root *veena.Process, events, asJSON bool) error {
	page, err := e.Processes(ctx, veena.ProcessFilter{Oldest: true, Limit: 1000, NoTotal: true})
	if err != nil {
		return err
	}
	procs := []veena.Process{*root}
	for _, p := range page.Items {
		if p.ID != root.ID {
			procs = append(procs, p)
		}
	}
	var results []runResult
	for i, p := range procs {
		h, err := e.Tokens(ctx, p.ID)
		if err != nil {
			return err
		}
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			return err
		}
		if asJSON {
			results = append(results, runResult{Process: p, Tokens: *h, Events: evs})
			continue
		}
		if i == 0 {
			fmt.Fprintf(w, "process %s of %s: %s\n\n", p.ID, p.Definition, stateWords(p))
		} else {
			fmt.Fprintf(w, "\nnested process %s of %s: %s\n", p.ID, p.Definition, stateWords(p))
		}
		fmt.Fprint(w, historyTree(h))
		if events {
			fmt.Fprintln(w, "\nevents:")
			for _, ev := range evs {
				fmt.Fprintf(w, "  %s\n", eventWords(h, ev))
			}
		}
		if len(p.Env) > 0 {
			fmt.Fprintln(w, "\nenv:")
			printEnv(w, "  ", p.Env)
		}
	}
	if asJSON {
		return printJSON(w, results)
	}
	return nil
}

// eventWords is an event as "TYPE node" or "TYPE from->to".
func eventWords(h *veena.TokenHistory, ev veena.Event) string {
	s := ev.Type
	switch {
	case ev.ArcToken != nil:
		for _, a := range h.ArcTokens {
			if a.ID == *ev.ArcToken {
				s += " " + qualified(a.Arc.FromExternal, a.Arc.From) + "->" + qualified(a.Arc.ToExternal, a.Arc.To)
			}
		}
	case ev.NodeToken != nil:
		for _, t := range h.NodeTokens {
			if t.ID == *ev.NodeToken {
				s += " " + qualified(t.External, t.Node)
			}
		}
	}
	return s
}
