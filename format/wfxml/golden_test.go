package wfxml_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the current output")

// dump renders a graph as stable text for golden files.
func dump(g *graph.Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "definition %s (format %s, file %s)\n", g.Name, g.Format, filepath.Base(g.File))
	if g.Custom != nil {
		fmt.Fprintf(&b, "custom %s\n", mapString(g.Custom.Flatten()))
	}
	var starts []string
	for _, n := range g.StartNodes() {
		starts = append(starts, n.QualifiedName())
	}
	fmt.Fprintf(&b, "start nodes: %s\n", strings.Join(starts, ", "))
	b.WriteString("nodes:\n")
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %d %s type=%s join=%s", n.Index, n.QualifiedName(), n.Type, n.Join)
		if n.IsStart {
			b.WriteString(" isStart")
		}
		if n.JoinParam != "" {
			fmt.Fprintf(&b, " joinParam=%q", n.JoinParam)
		}
		if n.Guard != "" {
			fmt.Fprintf(&b, " guard=%q", n.Guard)
		}
		if n.X != 0 || n.Y != 0 {
			fmt.Fprintf(&b, " xy=%d,%d", n.X, n.Y)
		}
		fmt.Fprintf(&b, " at %d:%d", n.Pos.Line, n.Pos.Column)
		if n.Originating != nil {
			fmt.Fprintf(&b, " originating=%s", n.Originating.QualifiedName())
		}
		if env := n.ExternalEnv(); len(env) > 0 {
			fmt.Fprintf(&b, " env=%s", mapString(env))
		}
		if n.Custom != nil {
			fmt.Fprintf(&b, " custom=%s", mapString(n.Custom.Flatten()))
		}
		var out []string
		for _, a := range n.OutArcs() {
			out = append(out, fmt.Sprint(a.Index))
		}
		var in []string
		for _, a := range n.InArcs() {
			in = append(in, fmt.Sprint(a.Index))
		}
		fmt.Fprintf(&b, " out=[%s] in=[%s]\n", strings.Join(out, " "), strings.Join(in, " "))
	}
	b.WriteString("arcs:\n")
	for _, a := range g.Arcs {
		fmt.Fprintf(&b, "  %d %s at %d:%d\n", a.Index, a, a.Pos.Line, a.Pos.Column)
	}
	if len(g.Externals) > 0 {
		b.WriteString("externals:\n")
		for _, e := range g.Externals {
			fmt.Fprintf(&b, "  %s = %s v%d", e.Name, e.Definition, e.Version)
			if e.X != 0 || e.Y != 0 {
				fmt.Fprintf(&b, " xy=%d,%d", e.X, e.Y)
			}
			fmt.Fprintf(&b, " at %d:%d env=%s\n", e.Pos.Line, e.Pos.Column, mapString(e.Env))
		}
	}
	return b.String()
}

func mapString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// loadDir loads a testdata directory into a fresh repository.
func loadDir(t *testing.T, dir string) (*graph.Repository, []*graph.Graph) {
	t.Helper()
	repo := graph.NewRepository()
	l := &wfxml.Loader{Repo: repo}
	added, err := l.LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir(%s): %v", dir, err)
	}
	return repo, added
}

// TestGolden loads the manual's examples and the composition suite and
// compares each graph with its .golden rendering.
func TestGolden(t *testing.T) {
	for _, dir := range []string{"testdata/manual", "testdata/compose"} {
		_, added := loadDir(t, dir)
		files, _ := filepath.Glob(filepath.Join(dir, "*.wf.xml"))
		if len(added) != len(files) {
			t.Errorf("%s: loaded %d graphs from %d files", dir, len(added), len(files))
		}
		for _, g := range added {
			golden := strings.TrimSuffix(g.File, ".wf.xml") + ".golden"
			got := dump(g)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", g.File, golden, got, want)
			}
		}
	}
}
