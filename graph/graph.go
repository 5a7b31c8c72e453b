// Package graph holds Veena's process-definition model: a validated graph of
// nodes and named arcs, composed from externals at load time, that every
// definition format compiles into and the kernel executes.
//
// A Graph is immutable once Finish has run; any number of processes may share it.
package graph

import (
	"fmt"
	"strings"
	"time"
)

// JoinType names a join strategy. The built-in ones are the constants below;
// "class" names a strategy registered with the engine through JoinParam.
type JoinType string

// The built-in join types of the Sarasvati format.
const (
	JoinOr         JoinType = "or"
	JoinAnd        JoinType = "and"
	JoinLabelAnd   JoinType = "labelAnd"
	JoinFirst      JoinType = "first"
	JoinTokenSet   JoinType = "tokenSet"
	JoinTokenSetOr JoinType = "tokenSetOr"
	JoinClass      JoinType = "class"
	JoinLang       JoinType = "joinlang"
)

// ParseJoinType maps a joinType attribute value onto a JoinType. The 1.0 name
// tokenSetAnd is an alias of tokenSet. An empty value means or.
func ParseJoinType(s string) (JoinType, error) {
	switch s {
	case "", "or":
		return JoinOr, nil
	case "and":
		return JoinAnd, nil
	case "labelAnd":
		return JoinLabelAnd, nil
	case "first":
		return JoinFirst, nil
	case "tokenSet", "tokenSetAnd":
		return JoinTokenSet, nil
	case "tokenSetOr":
		return JoinTokenSetOr, nil
	case "class":
		return JoinClass, nil
	case "joinlang":
		return JoinLang, nil
	}
	return "", fmt.Errorf("unknown join type %q (want or, and, labelAnd, first, tokenSet, tokenSetOr, class or joinlang)", s)
}

// The built-in node types.
const (
	TypeNode   = "node"
	TypeWait   = "wait"
	TypeScript = "script"
	TypeNested = "nested"
)

// Graph is one version of a process definition, with every external already
// composed into it.
type Graph struct {
	Name      string
	Version   int
	Format    string // "sarasvati", "bpmn", "pnml", "schema"
	Hash      string // hex digest of the source the graph was loaded from
	CreatedAt time.Time
	File      string // the file the graph was loaded from, for messages
	Source    []byte // the original definition file

	Nodes     []*Node     // the definition's own nodes in document order, then imported ones
	Arcs      []*Arc      // in document order
	Externals []*External // the composition instances, in document order
	Custom    *Element    // the process-definition's <custom> element, or nil
	// Warnings are things in the source that loaded but that its author
	// may not have meant (a construct read in a narrower sense than the
	// file's own tool gives it), with their positions.
	Warnings []Problem
	// Runtime is owned by the runtime that executes the graph's format
	// (for Petri nets, the compiled net), set once when it is prepared.
	Runtime any
	// Props are format-specific properties of the whole definition, set by
	// its importer and read by the node types of that format (nil for
	// Sarasvati graphs).
	Props any

	// Label is the definition's display name (a BPMN process's name), "" if none.
	Label string

	startNodes []*Node
	byName     map[string]*Node // own nodes by name
}

// Node is a node of a graph. A node imported through an external has External set.
type Node struct {
	Index     int // position in Graph.Nodes
	Name      string
	Type      string
	IsStart   bool
	Join      JoinType
	JoinParam string
	Guard     string // Rubric program; blank means Accept
	X, Y      int
	Pos       Pos // where the node is declared
	// Label is the node's display name where its format has one apart from
	// its id ("" otherwise); Kind is the node's kind in its format's own
	// words (a schema's "event", a BPMN "userTask"), "" where the type says it.
	Label string
	Kind  string
	// Props are format-specific properties of the node, set by its importer
	// and read by its node type (nil for Sarasvati nodes, which use Custom).
	Props any

	// External is the composition instance this node was imported through, or nil
	// for the definition's own nodes.
	External *External
	// Originating is, for a node the external's definition had itself imported,
	// that inner node (in the external's graph); nil otherwise.
	Originating *Node
	// Custom is the node's <custom> element, or nil. Node types registered from Go
	// have their properties set from it.
	Custom *Element
	// Runtime is owned by the kernel: the node's prepared behaviour (compiled
	// guard, join and node type), set once when the graph is prepared.
	Runtime any

	in, out []*Arc
}

// Arc is a directed, optionally named arc between two nodes.
// The default (unnamed) arc has Name "".
type Arc struct {
	Index    int
	From, To *Node
	Name     string
	Pos      Pos // where the arc is declared
	// Label is the arc's display text where the format has one besides
	// its id; "" when it has none.
	Label string
	// Props holds the arc's properties in its format's own terms (a
	// Petri net arc's weight, kind and result codes); nil for Sarasvati arcs.
	Props any
}

// External is one instance of another definition composed into a graph.
type External struct {
	Name       string
	Definition string
	Version    int // version of the definition that was imported
	X, Y       int
	Pos        Pos
	// Env is the read-only environment from the external's <custom> element:
	// element names (dotted for nesting) to their text.
	Env map[string]string
}

// Element is a generic XML element tree, kept for <custom> content.
type Element struct {
	Name     string
	Attrs    []Attr
	Text     string
	Children []*Element
	Pos      Pos // where the element starts in its file (zero if not from a file)
}

// Attr is one attribute of an Element.
type Attr struct{ Name, Value string }

// Flatten returns the element's leaf values as a map of dotted paths to
// text, the form used for external environments and node properties. An
// attribute on an element adds the element path plus the capitalised
// attribute name (<graph name="x"/> gives "graphName").
func (e *Element) Flatten() map[string]string {
	m := map[string]string{}
	if e == nil {
		return m
	}
	var walk func(prefix string, el *Element)
	walk = func(prefix string, el *Element) {
		path := el.Name
		if prefix != "" {
			path = prefix + "." + el.Name
		}
		for _, a := range el.Attrs {
			if a.Name == "" {
				continue
			}
			m[path+strings.ToUpper(a.Name[:1])+a.Name[1:]] = a.Value
		}
		if len(el.Children) == 0 {
			if len(el.Attrs) == 0 || strings.TrimSpace(el.Text) != "" {
				m[path] = strings.TrimSpace(el.Text)
			}
			return
		}
		for _, c := range el.Children {
			walk(path, c)
		}
	}
	for _, c := range e.Children {
		walk("", c)
	}
	return m
}

// QualifiedName is the node's name prefixed with its external instance, as
// in the TestProcess notation: "E1:N" for imported nodes, "N" otherwise.
func (n *Node) QualifiedName() string {
	if n.External != nil {
		return n.External.Name + ":" + n.Name
	}
	return n.Name
}

// ExternalName is the name of the instance the node was imported through, or "".
func (n *Node) ExternalName() string {
	if n.External == nil {
		return ""
	}
	return n.External.Name
}

// ExternalEnv is the node's read-only external environment: the custom
// values of the instances it was imported through, outer ones overriding
// inner ones. It is empty for the definition's own nodes.
func (n *Node) ExternalEnv() map[string]string {
	m := map[string]string{}
	var chain []*External
	for cur := n; cur != nil && cur.External != nil; cur = cur.Originating {
		chain = append(chain, cur.External)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].Env {
			m[k] = v
		}
	}
	return m
}

// OutArcs are the node's out-arcs in document order.
func (n *Node) OutArcs() []*Arc { return n.out }

// InArcs are the node's input arcs in document order.
func (n *Node) InArcs() []*Arc { return n.in }

// String is the node's qualified name.
func (n *Node) String() string { return n.QualifiedName() }

// String renders the arc as "A -> B 'name'".
func (a *Arc) String() string {
	s := a.From.QualifiedName() + " -> " + a.To.QualifiedName()
	if a.Name != "" {
		s += " '" + a.Name + "'"
	}
	return s
}

// Finish indexes the graph after its nodes and arcs are in place: node and
// arc indexes, each node's input and output arcs, start nodes and names.
// Only the definition's own nodes can be start nodes of the graph.
func (g *Graph) Finish() {
	g.byName = make(map[string]*Node, len(g.Nodes))
	g.startNodes = g.startNodes[:0]
	for i, n := range g.Nodes {
		n.Index = i
		n.in, n.out = nil, nil
		if n.External == nil {
			g.byName[n.Name] = n
			if n.IsStart {
				g.startNodes = append(g.startNodes, n)
			}
		}
	}
	for i, a := range g.Arcs {
		a.Index = i
		a.From.out = append(a.From.out, a)
		a.To.in = append(a.To.in, a)
	}
}

// StartNodes are the definition's own start nodes, in document order.
func (g *Graph) StartNodes() []*Node { return g.startNodes }

// Node returns the definition's own node with that name, or nil.
func (g *Graph) Node(name string) *Node { return g.byName[name] }

// NodeByQualifiedName finds a node by its "E:N" or "N" name, or returns nil.
func (g *Graph) NodeByQualifiedName(q string) *Node {
	for _, n := range g.Nodes {
		if n.QualifiedName() == q {
			return n
		}
	}
	return nil
}

// OutArcsNamed returns the node's out-arcs whose name is one of names, in
// arc order, each arc at most once. "" names the default arcs.
func (n *Node) OutArcsNamed(names ...string) []*Arc {
	var arcs []*Arc
	for _, a := range n.out {
		for _, name := range names {
			if a.Name == name {
				arcs = append(arcs, a)
				break
			}
		}
	}
	return arcs
}

// String is "name v<version>".
func (g *Graph) String() string { return fmt.Sprintf("%s v%d", g.Name, g.Version) }
