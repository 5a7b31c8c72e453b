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
	var quiet bool
	cmd := &cobra.Command{
		Use:   "check FILE|DIR...",
		Short: "Check definition files offline; problems are printed as file:line:column",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loaded, failed := loadOffline(graph.NewRepository(), args)
			out := cmd.OutOrStdout()
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
	return cmd
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
