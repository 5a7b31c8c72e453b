package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri/analysis"
)

// loadOffline loads definition files (and directories of *.wf.xml files)
// into an in-memory repository, in an order that puts externals first: a
// file that fails only because a definition it imports is loaded later is
// tried again. It returns the graph of each file and the errors of the
// files that could not be loaded.
func loadOffline(repo *graph.Repository, paths []string) (map[string]*graph.Graph, map[string]error) {
	loader := &wfxml.Loader{Repo: repo}
	loaded := map[string]*graph.Graph{}
	failed := map[string]error{}
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			failed[p] = err
			continue
		}
		if fi.IsDir() {
			gs, err := loader.LoadDir(p)
			if err != nil {
				failed[p] = err
			}
			for _, g := range gs {
				loaded[p+"#"+g.Name] = g
			}
			continue
		}
		files = append(files, p)
	}
	pending := files
	for len(pending) > 0 {
		var again []string
		for _, f := range pending {
			g, _, err := loader.LoadFile(f)
			if err != nil {
				failed[f] = err
				again = append(again, f)
				continue
			}
			delete(failed, f)
			loaded[f] = g
		}
		if len(again) == len(pending) {
			break
		}
		pending = again
	}
	return loaded, failed
}

// printLoadErrors writes every problem as file:line:column: message.
func printLoadErrors(w io.Writer, failed map[string]error) {
	for _, f := range slices.Sorted(maps.Keys(failed)) {
		err := failed[f]
		var les []*graph.LoadError
		collectLoadErrors(err, &les)
		if len(les) == 0 {
			fmt.Fprintf(w, "%s: %v\n", f, err)
			continue
		}
		for _, le := range les {
			file := le.File
			if file == "" {
				file = f
			}
			if len(le.Problems) == 0 {
				fmt.Fprintf(w, "%s: invalid definition\n", file)
			}
			for _, p := range le.Problems {
				if p.Line > 0 {
					fmt.Fprintf(w, "%s:%d:%d: %s\n", file, p.Line, p.Column, p.Message)
				} else {
					fmt.Fprintf(w, "%s: %s\n", file, p.Message)
				}
			}
		}
	}
}

// collectLoadErrors appends the load errors in err to out, looking into
// joined errors (a directory's files) one by one.
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
			collectLoadErrors(e, out)
		}
		return
	}
	var le *graph.LoadError
	if errors.As(err, &le) {
		*out = append(*out, le)
	}
}

func newCheckCmd() *cobra.Command {
	var (
		quiet     bool
		analyseIt bool
		bundle    bool
		asJSON    bool
		maxStates int
	)
	cmd := &cobra.Command{
		Use:   "check FILE|DIR...",
		Short: "Check definition files offline; problems are printed as file:line:column",
		Long: `Check definition files offline; problems are printed as file:line:column.

With --analyse each definition's state space is explored: a Petri net's own
(boundedness, deadlocks with a shortest firing sequence, dead transitions,
liveness, reversibility, workflow-net soundness), a process graph's through
its translation into a net (whether an AND join can wait for ever, whether
every run can finish). The exit status is 2 when an analysis finds a way for
a process to get stuck. --bundle loads all PNML files as one bundle,
superposed by place and transition name.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo := graph.NewRepository()
			loaded, failed := map[string]*graph.Graph{}, map[string]error{}
			var others, nets []string
			for _, a := range args {
				if src, err := readHead(a); err == nil && isPNML(a, src) {
					nets = append(nets, a)
				} else {
					others = append(others, a)
				}
			}
			loadPNML(repo, nets, bundle, loaded, failed)
			if len(others) > 0 {
				l, f := loadOffline(repo, others)
				maps.Copy(loaded, l)
				maps.Copy(failed, f)
			}
			out := cmd.OutOrStdout()
			if analyseIt {
				stuck := 0
				for _, k := range slices.Sorted(maps.Keys(loaded)) {
					bad, err := analyse(out, strings.SplitN(k, "#", 2)[0], loaded[k], maxStates, asJSON)
					if err != nil {
						failed[k] = err
					}
					if bad {
						stuck++
					}
				}
				if len(failed) > 0 {
					printLoadErrors(cmd.ErrOrStderr(), failed)
					return &exitError{code: 1, msg: fmt.Sprintf("veena check: %d of %d files have problems", len(failed), len(args))}
				}
				if stuck > 0 {
					return &exitError{code: 2, msg: fmt.Sprintf("veena check: %d definitions can get stuck", stuck)}
				}
				return nil
			}
			if !quiet {
				for _, k := range slices.Sorted(maps.Keys(loaded)) {
					g := loaded[k]
					fmt.Fprintf(out, "%s: ok (%s: %d nodes, %d arcs)\n", strings.SplitN(k, "#", 2)[0], g.Name, len(g.Nodes), len(g.Arcs))
				}
			}
			if len(failed) > 0 {
				printLoadErrors(cmd.ErrOrStderr(), failed)
				return &exitError{code: 1, msg: fmt.Sprintf("veena check: %d of %d files have problems", len(failed), len(args))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print problems only")
	cmd.Flags().BoolVar(&analyseIt, "analyse", false, "explore each definition's state space and report what can go wrong")
	cmd.Flags().BoolVar(&bundle, "bundle", false, "load the PNML files as one bundle, superposed by name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --analyse, print each analysis as JSON (the API's form)")
	cmd.Flags().IntVar(&maxStates, "max-states", analysis.DefaultMaxStates, "with --analyse, stop exploring after this many states")
	return cmd
}

// readHead reads the start of a file, to sniff its format; a directory
// gives an error.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if n == 0 && err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// kernelEnv builds a kernel environment from --env NAME=VALUE flags.
func kernelEnv(pairs []string) (*kernel.Env, error) {
	e := kernel.NewEnv()
	raw, err := parseEnv(pairs)
	if err != nil {
		return nil, err
	}
	for k, r := range raw {
		var v kernel.Value
		if err := v.UnmarshalJSON(r); err != nil {
			return nil, fmt.Errorf("veena: --env %s: %w", k, err)
		}
		if !v.IsNone() {
			e.Set(k, v)
		}
	}
	return e, nil
}

func newRunCmd() *cobra.Command {
	var (
		envPairs []string
		defsDir  string
		noEvents bool
	)
	cmd := &cobra.Command{
		Use:   "run FILE.wf.xml",
		Short: "Run a definition in memory and print its token tree and events",
		Long: `Run a definition in memory with the kernel, no server and no store: the
process starts and runs until every token waits or it ends. The token history is
printed in the TestProcess notation, then the events in the order they fired.
--definitions DIR loads the externals the definition imports.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo := graph.NewRepository()
			paths := []string{}
			if defsDir != "" {
				paths = append(paths, defsDir)
			}
			paths = append(paths, args[0])
			loaded, failed := loadOffline(repo, paths)
			if err := failed[args[0]]; err != nil || loaded[args[0]] == nil {
				printLoadErrors(cmd.ErrOrStderr(), failed)
				return &exitError{code: 1, msg: "veena run: the definition could not be loaded"}
			}
			g := loaded[args[0]]
			env, err := kernelEnv(envPairs)
			if err != nil {
				return err
			}
			k := kernel.New()
			k.Definitions = repo.Latest
			p, err := k.Engine(time.Now()).Start(g, env)
			if err != nil {
				return fmt.Errorf("veena run: %s: %w (%s)", g.Name, err, codeOf(err))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "process %s of %s: %s\n\n", p.ID, g.Name, p.State)
			fmt.Fprint(out, p.History())
			for _, n := range p.Nested {
				fmt.Fprintf(out, "\nnested process %s of %s: %s\n", n.ID, n.Graph.Name, n.State)
				fmt.Fprint(out, n.History())
			}
			if !noEvents {
				fmt.Fprintln(out, "\nevents:")
				for _, ev := range p.Events {
					fmt.Fprintf(out, "  %s\n", ev.String())
				}
			}
			if names := p.Env.Names(); len(names) > 0 {
				fmt.Fprintln(out, "\nenv:")
				for _, n := range names {
					v, _ := p.Env.Get(n)
					fmt.Fprintf(out, "  %s = %s\n", n, v)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&envPairs, "env", nil, "process attribute NAME=VALUE, repeatable")
	cmd.Flags().StringVar(&defsDir, "definitions", "", "directory of *.wf.xml definitions the file imports as externals")
	cmd.Flags().BoolVar(&noEvents, "no-events", false, "print the token tree only")
	return cmd
}

// codeOf is the stable code of a kernel error, "error" for others.
func codeOf(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return "error"
}
