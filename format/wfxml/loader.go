package wfxml

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/veena-wf/veena/graph"
)

// Suffix is the file name suffix LoadDir looks for.
const Suffix = ".wf.xml"

// Loader loads definition files into a repository. Externals resolve to the
// latest version in Repo.
type Loader struct {
	Repo *graph.Repository
	// Add stores a compiled graph (validating it first); nil means Repo.Add.
	// It returns the stored version and whether it is new.
	Add func(g *graph.Graph) (*graph.Graph, bool, error)
	// Options set the limits used for every file.
	Options []Option
}

func (l *Loader) add(g *graph.Graph) (*graph.Graph, bool, error) {
	if l.Add != nil {
		return l.Add(g)
	}
	if l.Repo == nil {
		return nil, false, errors.New("wfxml: Loader has neither Repo nor Add")
	}
	return l.Repo.Add(g)
}

func (l *Loader) latest(name string) *graph.Graph {
	if l.Repo == nil {
		return nil
	}
	return l.Repo.Latest(name)
}

// LoadBytes loads one definition and stores it. It returns the stored
// version and whether it is new: loading content identical to the latest
// version (externals included) returns that version and false.
func (l *Loader) LoadBytes(file string, src []byte) (*graph.Graph, bool, error) {
	g, err := Load(file, src, l.latest, l.Options...)
	if err != nil {
		return nil, false, err
	}
	stored, isNew, err := l.add(g)
	if err != nil {
		return nil, false, fmt.Errorf("%s: store definition %q: %w", file, g.Name, err)
	}
	return stored, isNew, nil
}

// LoadFile reads a definition file and loads it like LoadBytes.
func (l *Loader) LoadFile(path string) (*graph.Graph, bool, error) {
	src, err := readLimited(path, buildOptions(l.Options).maxBytes)
	if err != nil {
		return nil, false, err
	}
	return l.LoadBytes(path, src)
}

// readLimited reads a file, refusing one larger than max bytes before
// reading it all.
func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read definition: %w", err)
	}
	defer f.Close()
	tooBig := func(n int64) error {
		return &graph.LoadError{File: path, Problems: []graph.Problem{{
			Message: fmt.Sprintf("file is %d bytes or more; the limit is %d bytes", n, max),
		}}}
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > max {
		return nil, tooBig(fi.Size())
	}
	src, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read definition: %w", err)
	}
	if int64(len(src)) > max {
		return nil, tooBig(int64(len(src)))
	}
	return src, nil
}

// dirEntry is one definition file found by LoadDir.
type dirEntry struct {
	path string
	doc  *Document
}

// LoadDir loads every *.wf.xml file under dir (recursively) that is new or
// changed, and every definition of the directory that depends on a changed
// one, in dependency order: a definition after the definitions its
// externals name. It returns the graphs it added, in the order it added
// them; a second call on an unchanged directory returns none.
//
// Before storing anything, LoadDir parses every file and checks that no two
// files define the same name, that every external is defined in the
// directory or already in the repository, and that no definitions depend
// on each other in a cycle. Problems found then are all returned (joined)
// and nothing is stored. Otherwise files are compiled and stored in order;
// the first failure stops the load and is returned with the graphs added
// before it.
func (l *Loader) LoadDir(dir string) ([]*graph.Graph, error) {
	opts := buildOptions(l.Options)
	var paths []string
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && strings.HasSuffix(de.Name(), Suffix) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load definitions from %s: %w", dir, err)
	}
	sort.Strings(paths)

	// Parse everything first.
	var errs []error
	byName := map[string]*dirEntry{}
	var entries []*dirEntry
	for _, path := range paths {
		src, err := readLimited(path, opts.maxBytes)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := Parse(path, src, l.Options...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, dup := byName[d.Name()]; dup {
			errs = append(errs, &graph.LoadError{File: path, Problems: []graph.Problem{{
				Line: d.Pos.Line, Column: d.Pos.Column,
				Message: fmt.Sprintf("definition %q is also defined in %s", d.Name(), first.path),
			}}})
			continue
		}
		e := &dirEntry{path: path, doc: d}
		byName[d.Name()] = e
		entries = append(entries, e)
	}

	// Every external must be in the directory or in the repository.
	for _, e := range entries {
		le := &graph.LoadError{File: e.path}
		for _, x := range e.doc.Externals {
			if byName[x.Definition] == nil && l.latest(x.Definition) == nil {
				le.Add(x.Pos, "external definition %q (instance %q) is not loaded and is not in %s", x.Definition, x.Name, dir)
			}
		}
		if err := le.OrNil(); err != nil {
			errs = append(errs, err)
		}
	}

	// Dependency order, externals first; a cycle is an error.
	order, cycles := dependencyOrder(entries, byName)
	errs = append(errs, cycles...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Compile and store, skipping definitions whose hash is unchanged.
	loaded := map[string]*graph.Graph{}
	resolve := func(name string) *graph.Graph {
		if g := loaded[name]; g != nil {
			return g
		}
		return l.latest(name)
	}
	var added []*graph.Graph
	for _, e := range order {
		name := e.doc.Name()
		if prev := l.latest(name); prev != nil && prev.Hash == hashOf(e.doc, resolve) {
			loaded[name] = prev
			continue
		}
		g, err := Compile(e.doc, resolve)
		if err != nil {
			return added, err
		}
		stored, isNew, err := l.add(g)
		if err != nil {
			return added, fmt.Errorf("%s: store definition %q: %w", e.path, name, err)
		}
		loaded[name] = stored
		if isNew {
			added = append(added, stored)
		}
	}
	return added, nil
}

// dependencyOrder sorts the directory's definitions so that each comes
// after the definitions of the directory it composes. Files are visited in
// path order and externals in document order, so the order is stable. It
// returns one error per dependency cycle found.
func dependencyOrder(entries []*dirEntry, byName map[string]*dirEntry) ([]*dirEntry, []error) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[*dirEntry]int{}
	var order []*dirEntry
	var errs []error
	var stack []*dirEntry
	var visit func(e *dirEntry)
	visit = func(e *dirEntry) {
		switch state[e] {
		case done:
			return
		case visiting:
			i := len(stack) - 1
			for stack[i] != e {
				i--
			}
			var names []string
			for _, s := range stack[i:] {
				names = append(names, s.doc.Name())
			}
			names = append(names, e.doc.Name())
			errs = append(errs, &graph.LoadError{File: e.path, Problems: []graph.Problem{{
				Line: e.doc.Pos.Line, Column: e.doc.Pos.Column,
				Message: "dependency cycle: " + strings.Join(names, " -> "),
			}}})
			return
		}
		state[e] = visiting
		stack = append(stack, e)
		for _, dep := range e.doc.ExternalDefinitions() {
			if de := byName[dep]; de != nil {
				visit(de)
			}
		}
		stack = stack[:len(stack)-1]
		state[e] = done
		order = append(order, e)
	}
	for _, e := range entries {
		visit(e)
	}
	return order, errs
}
