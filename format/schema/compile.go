package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/veena-wf/veena/graph"
)

// Parse reads a schema file (JSON or YAML) and validates it, with its
// children. Every problem found is reported, each with its line and
// column, in one *graph.LoadError.
func Parse(file string, src []byte) (*Schema, error) {
	tree, err := parseTree(file, src)
	if err != nil {
		return nil, err
	}
	d := &decoder{lerr: &graph.LoadError{File: file}, exprBudget: MaxExprTotal}
	if tree.kind != kObject {
		d.add(tree.pos, "a schema file holds one object with \"schema\" and \"nodes\", not a %s", tree.describe())
		return nil, d.lerr
	}
	s := d.schema(tree, nil, 0)
	if err := d.lerr.OrNil(); err != nil {
		return nil, err
	}
	s.hash = hashOf(src)
	var walk func(s *Schema, v *value)
	walk = func(s *Schema, v *value) {
		for i, c := range s.Children {
			cv := v.get("children").list[i]
			b, _ := json.Marshal(cv.plain())
			c.hash = hashOf(b)
			walk(c, cv)
		}
	}
	walk(s, tree)
	return s, nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Load reads a schema file and compiles it into graphs: the top-level
// schema first, then its children, depth first, each its own definition
// named "<parent>.<child>". Each graph's Props is its *Schema, each
// node's Props its *Node. Source is the whole file for every graph (a
// child is compiled again from it by name).
func Load(file string, src []byte) ([]*graph.Graph, error) {
	s, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	var out []*graph.Graph
	var walk func(s *Schema)
	walk = func(s *Schema) {
		out = append(out, Compile(s, file, src))
		for _, c := range s.Children {
			walk(c)
		}
	}
	walk(s)
	return out, nil
}

// Compile turns one validated schema into its graph: a node per schema
// node (type "schema.<kind>", the root its start node, or joins) and an
// arc per connection, named by its label or "to:<id>".
func Compile(s *Schema, file string, src []byte) *graph.Graph {
	g := &graph.Graph{Name: s.Name, Format: Format, Hash: s.hash, File: file, Source: src, Props: s}
	byID := map[string]*graph.Node{}
	for _, n := range s.Nodes {
		gn := &graph.Node{
			Name: n.ID, Type: NodeType(n.Kind), IsStart: n.Kind == KindRoot, Join: graph.JoinOr,
			Pos: n.Pos, Label: n.Label, Kind: n.Kind, Props: n,
		}
		g.Nodes = append(g.Nodes, gn)
		byID[n.ID] = gn
	}
	for _, n := range s.Nodes {
		type key struct{ to, name string }
		seen := map[key]bool{}
		for _, x := range n.Next {
			k := key{x.To, x.Arc}
			if seen[k] {
				continue
			}
			seen[k] = true
			g.Arcs = append(g.Arcs, &graph.Arc{From: byID[n.ID], To: byID[x.To], Name: x.Arc, Pos: x.Pos})
		}
	}
	g.Finish()
	return g
}
