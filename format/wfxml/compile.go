package wfxml

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"

	"github.com/veena-wf/veena/graph"
)

// Format is the Graph.Format of graphs loaded by this package.
const Format = "sarasvati"

// Resolver returns the latest graph of a definition name, or nil if none is
// loaded.
type Resolver = func(name string) *graph.Graph

// Compile composes a parsed document into one graph, resolving each
// <external> with resolve (nil resolves nothing). The package documentation
// gives the order of nodes and arcs and the hash. The graph is finished
// (graph.Finish) and has Version 0: the repository assigns versions.
//
// On failure the error is a *graph.LoadError listing every problem: externals
// that are not loaded, arcs to nodes an instance does not have, and a
// composed graph over the node or arc limit.
func Compile(d *Document, resolve Resolver) (*graph.Graph, error) {
	if resolve == nil {
		resolve = func(string) *graph.Graph { return nil }
	}
	errs := &graph.LoadError{File: d.File}
	o := d.opts
	if o == (options{}) {
		o = defaultOptions()
	}
	g := &graph.Graph{
		Name:   d.name,
		Format: Format,
		File:   d.File,
		Source: d.Source,
		Custom: d.Custom,
	}

	// The definition's own nodes.
	own := make(map[string]*graph.Node, len(d.Nodes))
	for _, nd := range d.Nodes {
		n := &graph.Node{
			Name:      nd.Name,
			Type:      nd.Type,
			IsStart:   nd.IsStart,
			Join:      nd.Join,
			JoinParam: nd.JoinParam,
			Guard:     nd.Guard,
			X:         nd.X,
			Y:         nd.Y,
			Pos:       nd.Pos,
			Custom:    nd.Custom,
		}
		g.Nodes = append(g.Nodes, n)
		own[n.Name] = n
	}

	// The instances: clone every node of each external's graph.
	type instance struct {
		ext   *graph.External
		graph *graph.Graph
		nodes map[string]*graph.Node // the external graph's own nodes, by name, as cloned here
		clone map[*graph.Node]*graph.Node
	}
	instances := make(map[string]*instance, len(d.Externals))
	var inOrder []*instance
	arcs := 0 // arcs the composite will have
	for _, nd := range d.Nodes {
		arcs += len(nd.Arcs)
	}
	for _, ed := range d.Externals {
		arcs += len(ed.Arcs)
	}
	resolved := map[string]*graph.Graph{} // each definition is resolved once
	tooBig := false
	for _, ed := range d.Externals {
		ext := &graph.External{
			Name:       ed.Name,
			Definition: ed.Definition,
			X:          ed.X,
			Y:          ed.Y,
			Pos:        ed.Pos,
			Env:        ed.Custom.Flatten(),
		}
		g.Externals = append(g.Externals, ext)
		eg, seen := resolved[ed.Definition]
		if !seen {
			eg = resolve(ed.Definition)
			resolved[ed.Definition] = eg
		}
		if eg == nil {
			errs.Add(ed.Pos, "external definition %q (instance %q) is not loaded", ed.Definition, ed.Name)
			continue
		}
		ext.Version = eg.Version
		if tooBig {
			continue
		}
		if len(g.Nodes)+len(eg.Nodes) > o.maxNodes {
			errs.Add(ed.Pos, "composed graph would have more than %d nodes (instance %q of %q adds %d)", o.maxNodes, ed.Name, ed.Definition, len(eg.Nodes))
			tooBig = true
			continue
		}
		arcs += len(eg.Arcs)
		if arcs > o.maxArcs {
			errs.Add(ed.Pos, "composed graph would have more than %d arcs (instance %q of %q adds %d)", o.maxArcs, ed.Name, ed.Definition, len(eg.Arcs))
			tooBig = true
			continue
		}
		in := &instance{
			ext:   ext,
			graph: eg,
			nodes: make(map[string]*graph.Node),
			clone: make(map[*graph.Node]*graph.Node, len(eg.Nodes)),
		}
		for _, src := range eg.Nodes {
			c := &graph.Node{
				Name:      src.Name,
				Type:      src.Type,
				IsStart:   src.IsStart,
				Join:      src.Join,
				JoinParam: src.JoinParam,
				Guard:     src.Guard,
				X:         src.X,
				Y:         src.Y,
				Pos:       src.Pos,
				Custom:    src.Custom,
				External:  ext,
			}
			if src.External != nil {
				c.Originating = src
			} else {
				in.nodes[src.Name] = c
			}
			in.clone[src] = c
			g.Nodes = append(g.Nodes, c)
		}
		instances[ed.Name] = in
		inOrder = append(inOrder, in)
	}

	// target finds the end node of an arc; ok is false when it cannot be
	// found for a reason already reported (an unresolved instance).
	target := func(to, extName string, pos graph.Pos) (*graph.Node, bool) {
		if extName == "" {
			n := own[to]
			if n == nil {
				errs.Add(pos, "arc to unknown node %q", to)
			}
			return n, n != nil
		}
		in := instances[extName]
		if in == nil {
			if !declared(d, extName) {
				errs.Add(pos, "arc to unknown external %q", extName)
			}
			return nil, false
		}
		n := in.nodes[to]
		if n == nil {
			errs.Add(pos, "arc to unknown node %q in external %q (definition %q)", to, extName, in.ext.Definition)
		}
		return n, n != nil
	}

	// 1. Arcs of the definition's own nodes.
	for i, nd := range d.Nodes {
		from := g.Nodes[i]
		for _, ad := range nd.Arcs {
			to, ok := target(ad.To, ad.External, ad.Pos)
			if ok {
				g.Arcs = append(g.Arcs, &graph.Arc{From: from, To: to, Name: ad.Name, Pos: ad.Pos})
			}
		}
	}
	// 2. Arcs declared on the externals.
	for _, ed := range d.Externals {
		in := instances[ed.Name]
		for _, ad := range ed.Arcs {
			var from *graph.Node
			if in != nil {
				from = in.nodes[ad.From]
				if from == nil && ad.From != "" {
					errs.Add(ad.Pos, "arc from unknown node %q in external %q (definition %q)", ad.From, ed.Name, ed.Definition)
				}
			}
			to, ok := target(ad.To, ad.External, ad.Pos)
			if ok && from != nil {
				g.Arcs = append(g.Arcs, &graph.Arc{From: from, To: to, Name: ad.Name, Pos: ad.Pos})
			}
		}
	}
	// 3. Arcs copied from the instances' graphs.
	for _, in := range inOrder {
		for _, a := range in.graph.Arcs {
			from, to := in.clone[a.From], in.clone[a.To]
			if from == nil || to == nil {
				errs.Add(in.ext.Pos, "definition %q (instance %q) has an arc between nodes it does not contain", in.ext.Definition, in.ext.Name)
				break
			}
			g.Arcs = append(g.Arcs, &graph.Arc{From: from, To: to, Name: a.Name, Pos: a.Pos})
		}
	}

	if err := finishProblems(errs); err != nil {
		return nil, err
	}
	g.Hash = hashOf(d, func(name string) *graph.Graph { return resolved[name] })
	g.Finish()
	return g, nil
}

// declared reports whether the document declares an external of that name.
func declared(d *Document, name string) bool {
	for _, e := range d.Externals {
		if e.Name == name {
			return true
		}
	}
	return false
}

// hashOf computes the Hash of the graph the document compiles to, given the
// same resolver. Unresolved externals contribute an empty hash.
func hashOf(d *Document, resolve Resolver) string {
	h := sha256.New()
	h.Write(d.Source)
	for _, e := range d.Externals {
		sub := ""
		if eg := resolve(e.Definition); eg != nil {
			sub = eg.Hash
		}
		// NUL cannot occur in XML names or in hex, so the fields cannot run together.
		io.WriteString(h, "\x00external\x00"+e.Name+"\x00"+e.Definition+"\x00"+sub)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxProblems is how many problems one LoadError lists.
const maxProblems = 100

// finishProblems sorts the problems by position, shortens a very long list
// and returns the error, or nil if there is no problem.
func finishProblems(e *graph.LoadError) error {
	sort.SliceStable(e.Problems, func(i, j int) bool {
		a, b := e.Problems[i], e.Problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	if n := len(e.Problems); n > maxProblems {
		e.Problems = append(e.Problems[:maxProblems:maxProblems], graph.Problem{
			Message: fmt.Sprintf("and %d more problems", n-maxProblems),
		})
	}
	return e.OrNil()
}

// Load parses and compiles one definition file.
func Load(file string, src []byte, resolve Resolver, opts ...Option) (*graph.Graph, error) {
	d, err := Parse(file, src, opts...)
	if err != nil {
		return nil, err
	}
	return Compile(d, resolve)
}
