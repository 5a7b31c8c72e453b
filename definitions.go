package veena

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/veena-wf/veena/format/pnml"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// DefinitionError is a definition that failed to load; its code is
// definition_invalid and LoadError lists every problem with its position.
type DefinitionError struct {
	LoadError *graph.LoadError
}

func (e *DefinitionError) Error() string { return e.LoadError.Error() }

// Unwrap gives both the API sentinel (for Code and errors.Is) and the
// problems (for errors.As with *graph.LoadError).
func (e *DefinitionError) Unwrap() []error { return []error{ErrDefinitionInvalid, e.LoadError} }

func definitionError(err error) error {
	var le *graph.LoadError
	if errors.As(err, &le) {
		return &DefinitionError{LoadError: le}
	}
	return err
}

// sniffFormat names the format of a definition file from its content.
func sniffFormat(src []byte) string {
	head := src
	if len(head) > 4096 {
		head = head[:4096]
	}
	trimmed := bytes.TrimSpace(head)
	switch {
	case bytes.Contains(head, []byte("process-definition")):
		return wfxml.Format
	case bytes.Contains(head, []byte("<pnml")):
		return "pnml"
	case bytes.Contains(head, []byte("definitions")) && bytes.HasPrefix(trimmed, []byte("<")):
		return "bpmn"
	case bytes.HasPrefix(trimmed, []byte("{")):
		return "schema"
	case looksLikeYAMLSchema(head):
		return "schema"
	}
	return wfxml.Format
}

// looksLikeYAMLSchema reports whether a file is a schema written in YAML:
// not XML, with a top-level "schema:" key.
func looksLikeYAMLSchema(head []byte) bool {
	if bytes.HasPrefix(bytes.TrimSpace(head), []byte("<")) {
		return false
	}
	for _, line := range bytes.Split(head, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("schema:")) {
			return true
		}
	}
	return false
}

// compileAll turns a definition file into its graphs (a file may hold
// several definitions: a schema and its children), resolving externals to
// the latest loaded versions. The first graph is the file's main one.
func (e *Engine) compileAll(file string, src []byte, format string) ([]*graph.Graph, error) {
	switch format {
	case wfxml.Format:
		g, err := wfxml.Load(file, src, e.repo.Latest)
		if err != nil {
			return nil, definitionError(err)
		}
		return []*graph.Graph{g}, nil
	case schemaformat.Format:
		gs, err := schemaformat.Load(file, src)
		if err != nil {
			return nil, definitionError(err)
		}
		return gs, nil
	case pnml.Format:
		g, err := pnml.Load(file, src)
		if err != nil {
			return nil, definitionError(err)
		}
		return []*graph.Graph{g}, nil
	case "bpmn":
		return compileBPMN(file, src)
	}
	return nil, &kernel.Error{Code: ErrInvalidArgument.Code, Msg: fmt.Sprintf("unknown definition format %q", format)}
}

// compile turns a stored definition back into its graph: the graph of
// that name among those its file compiles to.
func (e *Engine) compile(file string, src []byte, format, name string) (*graph.Graph, error) {
	gs, err := e.compileAll(file, src, format)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		if g.Name == name {
			return g, nil
		}
	}
	return nil, fmt.Errorf("the file of definition %s compiles to no definition of that name", name)
}

// reloadDefinitions adds to the repository the definitions other engines
// stored since the last sync.
func (e *Engine) reloadDefinitions(ctx context.Context) error {
	e.defMu.Lock()
	defer e.defMu.Unlock()
	return e.syncDefinitions(ctx)
}

// syncDefinitions adds to the repository the definitions stored since the
// last sync, replaying them in load order. The caller holds defMu.
func (e *Engine) syncDefinitions(ctx context.Context) error {
	return e.syncDefinitionsBefore(ctx, 0)
}

// addGraph prepares a compiled graph and stores it as the next version of
// its name, unless the latest version is identical. The caller holds defMu.
func (e *Engine) addGraph(ctx context.Context, g *graph.Graph) (*graph.Graph, bool, error) {
	if err := e.prepareGraph(g); err != nil {
		return nil, false, definitionError(err)
	}
	for attempt := 0; ; attempt++ {
		latest := e.repo.Latest(g.Name)
		if latest != nil && latest.Hash == g.Hash {
			return latest, false, nil
		}
		g.Version = 1
		if latest != nil {
			g.Version = latest.Version + 1
		}
		g.CreatedAt = e.clock().UTC()
		d := &store.Definition{Name: g.Name, Version: g.Version, Format: g.Format, Hash: g.Hash, File: g.File, Source: g.Source, CreatedAt: g.CreatedAt}
		err := e.store.AddDefinition(ctx, d)
		if errors.Is(err, store.ErrConflict) && attempt < 5 {
			// Another engine added this version first: catch up and compare again.
			if err := e.syncDefinitions(ctx); err != nil {
				return nil, false, err
			}
			continue
		}
		if err != nil {
			return nil, false, storeError("store definition", err)
		}
		// Definitions stored by others before ours are replayed first.
		if d.Seq != e.defSeq+1 {
			if err := e.syncDefinitionsBefore(ctx, d.Seq); err != nil {
				return nil, false, err
			}
		}
		e.analyze(g)
		if _, _, err := e.repo.Add(g); err != nil {
			return nil, false, err
		}
		e.defSeq = d.Seq
		return g, true, nil
	}
}

// syncDefinitionsBefore replays, in load order, the stored definitions
// this engine has not seen with Seq below seq (0: all of them). The caller
// holds defMu.
func (e *Engine) syncDefinitionsBefore(ctx context.Context, seq int64) error {
	defs, err := e.store.Definitions(ctx, e.defSeq)
	if err != nil {
		return storeError("read definitions", err)
	}
	for _, d := range defs {
		if seq > 0 && d.Seq >= seq {
			break
		}
		g, err := e.compile(d.File, d.Source, d.Format, d.Name)
		if err != nil {
			return fmt.Errorf("stored definition %s version %d no longer loads: %w", d.Name, d.Version, err)
		}
		if g.Hash != d.Hash {
			e.log.Warn("veena: stored definition compiles to a different hash", "definition", d.Name, "version", d.Version)
		}
		g.Version, g.CreatedAt = d.Version, d.CreatedAt
		e.analyze(g)
		if _, _, err := e.repo.Add(g); err != nil {
			return fmt.Errorf("stored definition %s version %d: %w", d.Name, d.Version, err)
		}
		e.defSeq = d.Seq
	}
	return nil
}

// analyze adds to a graph's warnings what the engine finds in it: cycles a
// token can go round without reaching a wait state.
func (e *Engine) analyze(g *graph.Graph) {
	g.Warnings = append(g.Warnings, e.k.RunawayWarnings(g)...)
}

// LoadDefinition loads one definition file. format "" sniffs it from the
// content ("sarasvati" and "schema" are supported). Content identical to
// the latest version of its name returns that version with created false.
// A file that holds several definitions (a schema with children) loads
// them all and returns the first, the others named in Related. An
// invalid definition fails with a *DefinitionError.
func (e *Engine) LoadDefinition(ctx context.Context, file string, src []byte, format string) (*Definition, bool, error) {
	d, created, added, err := e.loadDefinition(ctx, file, src, format)
	if err != nil {
		return nil, false, err
	}
	// A version's timer start events are armed once it is stored
	// (replacing those of the earlier versions).
	for _, g := range added {
		if g.Version == 1 && !hasTimerStart(g) {
			continue
		}
		if err := e.armStartTimers(ctx, g); err != nil {
			return nil, false, err
		}
	}
	return d, created, nil
}

// loadDefinition loads a file; added are the graphs stored as new versions.
func (e *Engine) loadDefinition(ctx context.Context, file string, src []byte, format string) (*Definition, bool, []*graph.Graph, error) {
	if format == "" {
		format = sniffFormat(src)
	}
	e.defMu.Lock()
	defer e.defMu.Unlock()
	if err := e.syncDefinitions(ctx); err != nil {
		return nil, false, nil, err
	}
	gs, err := e.compileAll(file, src, format)
	if err != nil {
		return nil, false, nil, err
	}
	// Prepare every graph first, so that a file loads whole or not at all.
	for _, g := range gs {
		if err := e.prepareGraph(g); err != nil {
			return nil, false, nil, definitionError(err)
		}
	}
	var first *Definition
	created := false
	var added []*graph.Graph
	for i, g := range gs {
		stored, c, err := e.addGraph(ctx, g)
		if err != nil {
			return nil, false, nil, err
		}
		if c {
			added = append(added, stored)
		}
		if i == 0 {
			first, created = definitionOf(stored), c
		} else {
			first.Related = append(first.Related, stored.Name)
		}
	}
	return first, created, added, nil
}

func (e *Engine) loadDir(ctx context.Context, dir string) error {
	e.defMu.Lock()
	defer e.defMu.Unlock()
	l := &wfxml.Loader{Repo: e.repo, Add: func(g *graph.Graph) (*graph.Graph, bool, error) {
		return e.addGraph(ctx, g)
	}}
	if _, err := l.LoadDir(dir); err != nil {
		return fmt.Errorf("load definitions from %s: %w", dir, definitionError(err))
	}
	return nil
}

// Definitions returns the latest version of every definition, by name.
func (e *Engine) Definitions(ctx context.Context) ([]*Definition, error) {
	if err := e.reloadDefinitions(ctx); err != nil {
		return nil, err
	}
	var out []*Definition
	for _, g := range e.repo.Latests() {
		out = append(out, definitionOf(g))
	}
	return out, nil
}

func (e *Engine) definitionGraph(ctx context.Context, name string, version int) (*graph.Graph, error) {
	if version < 0 {
		return nil, &kernel.Error{Code: ErrInvalidArgument.Code, Msg: fmt.Sprintf("version %d is not a version", version)}
	}
	if version == 0 {
		g := e.repo.Latest(name)
		if g == nil {
			if err := e.reloadDefinitions(ctx); err != nil {
				return nil, err
			}
			g = e.repo.Latest(name)
		}
		if g == nil {
			return nil, &kernel.Error{Code: ErrNotFound.Code, Msg: fmt.Sprintf("definition %s not found", name)}
		}
		return g, nil
	}
	return e.graphOf(ctx, name, version)
}

// Definition returns one version of a definition (0: the latest).
func (e *Engine) Definition(ctx context.Context, name string, version int) (*Definition, error) {
	g, err := e.definitionGraph(ctx, name, version)
	if err != nil {
		return nil, err
	}
	return definitionOf(g), nil
}

// DefinitionVersions returns every version of a definition, oldest first.
func (e *Engine) DefinitionVersions(ctx context.Context, name string) ([]*Definition, error) {
	if err := e.reloadDefinitions(ctx); err != nil {
		return nil, err
	}
	vs := e.repo.Versions(name)
	if len(vs) == 0 {
		return nil, &kernel.Error{Code: ErrNotFound.Code, Msg: fmt.Sprintf("definition %s not found", name)}
	}
	out := make([]*Definition, len(vs))
	for i, g := range vs {
		out[i] = definitionOf(g)
	}
	return out, nil
}

// DefinitionSource returns the original file of a definition version (0: the latest).
func (e *Engine) DefinitionSource(ctx context.Context, name string, version int) ([]byte, error) {
	g, err := e.definitionGraph(ctx, name, version)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(g.Source), nil
}
