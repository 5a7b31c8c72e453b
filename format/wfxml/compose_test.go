package wfxml_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
)

func qualifiedNames(ns []*graph.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.QualifiedName())
	}
	return out
}

func arcStrings(as []*graph.Arc) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

func TestComposition(t *testing.T) {
	repo, _ := loadDir(t, "testdata/compose")
	manual, _ := loadDir(t, "testdata/manual")
	tests := []struct {
		repo   *graph.Repository
		name   string
		nodes  []string
		arcs   []string
		starts []string
		// env is each imported node's ExternalEnv.
		env map[string]map[string]string
		// originating maps a node to its Originating node's qualified name.
		originating map[string]string
		out         map[string][]string // out-arcs of some nodes, in order
		in          map[string][]string // in-arcs of some nodes, in order
	}{
		{
			// Two instances of one definition: arcs into, out of and between
			// instances, and from an instance back into itself.
			repo:   repo,
			name:   "twice",
			nodes:  []string{"S", "End", "e1:A", "e1:B", "e2:A", "e2:B"},
			starts: []string{"S"}, // pair's start node A does not start the composite
			arcs: []string{
				"S -> e1:A", "S -> e2:A 'second'", // own node arcs
				"e1:B -> e2:A 'across'", "e1:B -> e1:A 'loop'", "e1:B -> End", "e2:B -> End", // external arcs
				"e1:A -> e1:B", "e2:A -> e2:B", // copied from pair, instance by instance
			},
			env: map[string]map[string]string{
				"e1:A": {},
				"e2:B": {"graphName": "x", "limits.count": "3"},
			},
			out: map[string][]string{"e1:B": {"e1:B -> e2:A 'across'", "e1:B -> e1:A 'loop'", "e1:B -> End"}},
			in: map[string][]string{
				"e1:A": {"S -> e1:A", "e1:B -> e1:A 'loop'"},
				"e2:A": {"S -> e2:A 'second'", "e1:B -> e2:A 'across'"},
				"End":  {"e1:B -> End", "e2:B -> End"},
			},
		},
		{
			// Three levels: top imports mid, which imports leaf.
			repo:   repo,
			name:   "top",
			nodes:  []string{"Start", "End", "m:B1", "m:B2", "m:C1", "m:C2"},
			starts: []string{"Start"},
			arcs: []string{
				"Start -> m:B1",
				"m:B2 -> End 'done'",
				"m:B1 -> m:C1", "m:C2 -> m:B2", "m:C1 -> m:C2", "m:C1 -> m:C2 'retry'",
			},
			env: map[string]map[string]string{
				"m:B1": {"foo": "outer", "deep.x": "2"},
				// mid's instance "inner" set foo, bar and deep.x; top's "m" overrides foo and deep.x.
				"m:C1": {"foo": "outer", "bar": "inner", "deep.x": "2"},
				"m:C2": {"foo": "outer", "bar": "inner", "deep.x": "2"},
			},
			originating: map[string]string{"m:C1": "inner:C1", "m:C2": "inner:C2", "m:B1": ""},
		},
		{
			repo:   repo,
			name:   "mid",
			nodes:  []string{"B1", "B2", "inner:C1", "inner:C2"},
			starts: []string{"B1"},
			arcs:   []string{"B1 -> inner:C1", "inner:C2 -> B2", "inner:C1 -> inner:C2", "inner:C1 -> inner:C2 'retry'"},
			env: map[string]map[string]string{
				"inner:C1": {"foo": "inner", "bar": "inner", "deep.x": "1"},
			},
		},
		{
			repo:   manual,
			name:   "example4",
			nodes:  []string{"P", "Q", "R", "X", "Y", "Z", "1:A", "1:B", "2:A", "2:B"},
			starts: []string{"P", "Q", "R"},
			arcs: []string{
				"P -> 1:A", "Q -> 2:A", "R -> 2:B", "X -> Z", "Y -> Z",
				"1:A -> X", "2:B -> Y",
				"1:A -> 1:B", "2:A -> 2:B",
			},
		},
		{
			repo:   manual,
			name:   "external-env-three",
			nodes:  []string{"C", "two:B", "two:A"},
			starts: []string{"C"},
			arcs:   []string{"C -> two:B", "two:B -> two:A"},
			env: map[string]map[string]string{
				"two:B": {"foo": "goodbye"},
				"two:A": {"foo": "goodbye", "bar": "world"}, // as the manual says
			},
			originating: map[string]string{"two:A": "one:A"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.repo.Latest(tc.name)
			if g == nil {
				t.Fatalf("%s is not loaded", tc.name)
			}
			if got := qualifiedNames(g.Nodes); !slices.Equal(got, tc.nodes) {
				t.Errorf("nodes = %q\nwant %q", got, tc.nodes)
			}
			if got := arcStrings(g.Arcs); !slices.Equal(got, tc.arcs) {
				t.Errorf("arcs = %q\nwant %q", got, tc.arcs)
			}
			if got := qualifiedNames(g.StartNodes()); !slices.Equal(got, tc.starts) {
				t.Errorf("start nodes = %q, want %q", got, tc.starts)
			}
			for q, want := range tc.env {
				n := g.NodeByQualifiedName(q)
				if n == nil {
					t.Fatalf("no node %s", q)
				}
				if got := n.ExternalEnv(); !reflect.DeepEqual(got, want) {
					t.Errorf("%s external env = %v, want %v", q, got, want)
				}
			}
			for q, want := range tc.originating {
				n := g.NodeByQualifiedName(q)
				got := ""
				if n.Originating != nil {
					got = n.Originating.QualifiedName()
				}
				if got != want {
					t.Errorf("%s originating = %q, want %q", q, got, want)
				}
			}
			for q, want := range tc.out {
				if got := arcStrings(g.NodeByQualifiedName(q).OutArcs()); !slices.Equal(got, want) {
					t.Errorf("%s out-arcs = %q, want %q", q, got, want)
				}
			}
			for q, want := range tc.in {
				if got := arcStrings(g.NodeByQualifiedName(q).InArcs()); !slices.Equal(got, want) {
					t.Errorf("%s in-arcs = %q, want %q", q, got, want)
				}
			}
			for _, e := range g.Externals {
				if want := tc.repo.Latest(e.Definition).Version; e.Version != want {
					t.Errorf("external %s version = %d, want %d", e.Name, e.Version, want)
				}
			}
		})
	}
}

func TestNodeAttributes(t *testing.T) {
	repo, _ := loadDir(t, "testdata/compose")
	g := repo.Latest("features")
	type node struct {
		typ     string
		start   bool
		join    graph.JoinType
		param   string
		guard   string
		x, y    int
		line    int
		hasCust bool
	}
	want := map[string]node{
		"a":    {"node", true, graph.JoinOr, "", "Order.isBig or Order.isUrgent", 3, -4, 6, false},
		"ts":   {"node", false, graph.JoinTokenSet, "approvals", "", 0, 0, 14, false}, // <join> wins over joinParam; tokenSetAnd alias
		"attr": {"node", false, graph.JoinTokenSetOr, "onlyAttribute", "", 0, 0, 19, false},
		"both": {"script", false, graph.JoinLang, "require all arcs labelled x", "", 0, 0, 20, true}, // blank guard = accept
		"f":    {"node", false, graph.JoinFirst, "", "", 0, 0, 29, false},
		"cl":   {"node", false, graph.JoinClass, "com.example.MyJoin", "", 0, 0, 30, false},
		"le":   {"node", false, graph.JoinAnd, "", "", 0, 0, 31, false},
	}
	if len(g.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(g.Nodes), len(want))
	}
	for _, n := range g.Nodes {
		w := want[n.Name]
		got := node{n.Type, n.IsStart, n.Join, n.JoinParam, n.Guard, n.X, n.Y, n.Pos.Line, n.Custom != nil}
		if got != w {
			t.Errorf("node %s = %+v\nwant %+v", n.Name, got, w)
		}
	}
	// The arc with name="" is the default arc.
	if got := arcStrings(g.Node("both").OutArcs()); !slices.Equal(got, []string{"both -> attr"}) {
		t.Errorf("both out-arcs = %q", got)
	}
	if got := g.Custom.Flatten(); !reflect.DeepEqual(got, map[string]string{"owner": "ops"}) {
		t.Errorf("definition custom = %v", got)
	}
	// Custom content is kept as a tree and binds onto a node type's properties.
	var props struct {
		Execute     string
		ExecuteType string
		Task        struct{ Name, User string }
	}
	if err := g.Node("both").Custom.Bind(&props); err != nil {
		t.Fatal(err)
	}
	if props.Execute != "token.complete()" || props.ExecuteType != "js" || props.Task.Name != "review" || props.Task.User != "pat" {
		t.Errorf("bound %+v", props)
	}
}

func TestGraphFields(t *testing.T) {
	src, err := os.ReadFile("testdata/compose/pair.wf.xml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := wfxml.Load("dir/pair.wf.xml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if g.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash = %s, want the SHA-256 of the file for a definition without externals", g.Hash)
	}
	if g.Name != "pair" || g.Format != "sarasvati" || g.File != "dir/pair.wf.xml" || g.Version != 0 || !g.CreatedAt.IsZero() {
		t.Errorf("graph = %q %q %q v%d %v", g.Name, g.Format, g.File, g.Version, g.CreatedAt)
	}
	if string(g.Source) != string(src) {
		t.Errorf("Source is not the file's bytes")
	}

	// A definition's hash covers the externals it composes.
	d, err := wfxml.Parse("twice.wf.xml", []byte(readFile(t, "testdata/compose/twice.wf.xml")))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ExternalDefinitions(); !slices.Equal(got, []string{"pair"}) {
		t.Errorf("ExternalDefinitions = %q", got)
	}
	withPair := func(p *graph.Graph) func(string) *graph.Graph {
		return func(name string) *graph.Graph {
			if name == "pair" {
				return p
			}
			return nil
		}
	}
	g1, err := wfxml.Compile(d, withPair(g))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := wfxml.Compile(d, withPair(g))
	if err != nil {
		t.Fatal(err)
	}
	other := *g
	other.Hash = "0000"
	g3, err := wfxml.Compile(d, withPair(&other))
	if err != nil {
		t.Fatal(err)
	}
	if g1.Hash != g2.Hash || g1.Hash == g3.Hash || g1.Hash == g.Hash {
		t.Errorf("hashes: same externals %s %s, changed external %s", g1.Hash, g2.Hash, g3.Hash)
	}
}

// TestAcceptedForms: forms of the format that must load.
func TestAcceptedForms(t *testing.T) {
	tests := []struct {
		name, src string
		guard     string
	}{
		{"schema location", `<process-definition name="p" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"
			xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
			xsi:schemaLocation="http://sarasvati.googlecode.com/ProcessDefinition ProcessDefinition.xsd">
			<node name="a"/></process-definition>`, ""},
		{"prefixed namespace", `<s:process-definition name="p" xmlns:s="http://sarasvati.googlecode.com/ProcessDefinition">
			<s:node name="a"><s:guard>Accept</s:guard></s:node></s:process-definition>`, "Accept"},
		{"comments, processing instructions, CDATA", `<?xml version="1.0" encoding="us-ascii"?><?editor x?><!-- c -->
			<process-definition name="p"><!-- c --><node name="a"><?pi?><guard><![CDATA[a < b]]> <!-- c --> or c</guard></node></process-definition><!-- c -->`, "a < b or c"},
		{"entities and character references", `<process-definition name="p"><node name="a"><guard>x &lt; 3 &amp;&#x20;y</guard></node></process-definition>`, "x < 3 & y"},
		{"custom in any namespace", `<process-definition name="p" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
			<node name="a"><custom><t:task xmlns:t="urn:t" t:user="pat">x</t:task></custom></node></process-definition>`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := wfxml.Load("p.wf.xml", []byte(tc.src), nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := g.Node("a"); n == nil || n.Guard != tc.guard {
				t.Errorf("node a = %+v, want guard %q", n, tc.guard)
			}
		})
	}
	_, err := wfxml.Load("p.wf.xml", []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><process-definition name="p"><node name="a"/></process-definition>`), nil)
	checkProblems(t, err, "p.wf.xml", []problem{{1, 1, `XML error: opening charset "ISO-8859-1": encoding "ISO-8859-1" is not supported; use UTF-8`}})
}
